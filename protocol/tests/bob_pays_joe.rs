//! The Bob-pays-Joe-7 example (`percolator-transaction-model.zh.txt`, paper
//! Figure 4): the columns of both rows at every step of the transaction.

use percsim_protocol::percolator::actions::{Prewrite, RowReply, RowRequest, execute};
use percsim_protocol::percolator::row::Row;
use percsim_protocol::percolator::{Ablations, CellKey, Lock, MutationKind, SessionId, Ts, TxnTs};
use std::collections::BTreeMap;

const COL: &str = "bal";

struct Store(BTreeMap<String, Row>);

impl Store {
    fn step(&mut self, row: &str, req: RowRequest) -> RowReply {
        let r = self.0.entry(row.to_string()).or_default();
        let (reply, m) = execute(r, row, &req, Ablations::NONE);
        r.apply(&m);
        reply
    }

    fn prewrite(&mut self, row: &str, value: &str, start_ts: u64) {
        let req = RowRequest::Prewrite(Prewrite {
            col: COL.into(),
            start_ts: Ts(start_ts),
            value: Some(value.into()),
            lock: Lock {
                primary: CellKey::new("Bob", COL),
                kind: MutationKind::Put,
                wall_ms: 0,
                owner: SessionId(1),
            },
            notify: false,
        });
        assert_eq!(self.step(row, req), RowReply::Prewrite(Ok(())));
    }

    fn commit(&mut self, row: &str, start_ts: u64, commit_ts: u64) {
        let ts = TxnTs {
            start_ts: Ts(start_ts),
            commit_ts: Ts(commit_ts),
        };
        let req = RowRequest::Commit {
            col: COL.into(),
            ts,
        };
        assert_eq!(self.step(row, req), RowReply::Commit(Ok(Ts(commit_ts))));
    }

    fn get(&mut self, row: &str, start_ts: u64) -> String {
        let req = RowRequest::Get {
            col: COL.into(),
            start_ts: Ts(start_ts),
        };
        format!("{:?}", self.step(row, req))
    }

    fn render(&self) -> String {
        self.0.iter().map(|(k, r)| r.render(k)).collect()
    }
}

#[test]
fn bob_pays_joe_seven() {
    let mut s = Store(BTreeMap::new());
    // Initial state: Bob has $10 and Joe $2, written at 5 and committed at 6.
    s.prewrite("Bob", "10", 5);
    s.commit("Bob", 5, 6);
    s.prewrite("Joe", "2", 5);
    s.commit("Joe", 5, 6);
    let step1 = "\
Bob   6: bal:data=       bal:lock=               bal:write=Put@5
Bob   5: bal:data=10     bal:lock=               bal:write=
Joe   6: bal:data=       bal:lock=               bal:write=Put@5
Joe   5: bal:data=2      bal:lock=               bal:write=
";
    assert_eq!(s.render(), step1);

    // The transfer starts at 7; Bob's cell is the primary: lock it, write $3.
    s.prewrite("Bob", "3", 7);
    let step2 = "\
Bob   7: bal:data=3      bal:lock=primary        bal:write=
Bob   6: bal:data=       bal:lock=               bal:write=Put@5
Bob   5: bal:data=10     bal:lock=               bal:write=
Joe   6: bal:data=       bal:lock=               bal:write=Put@5
Joe   5: bal:data=2      bal:lock=               bal:write=
";
    assert_eq!(s.render(), step2);

    // Joe's cell is a secondary: its lock points at the primary.
    s.prewrite("Joe", "9", 7);
    let step3 = "\
Bob   7: bal:data=3      bal:lock=primary        bal:write=
Bob   6: bal:data=       bal:lock=               bal:write=Put@5
Bob   5: bal:data=10     bal:lock=               bal:write=
Joe   7: bal:data=9      bal:lock=primary@Bob/bal bal:write=
Joe   6: bal:data=       bal:lock=               bal:write=Put@5
Joe   5: bal:data=2      bal:lock=               bal:write=
";
    assert_eq!(s.render(), step3);
    // A reader at 10 must not guess: it meets the lock.
    assert!(s.get("Bob", 10).contains("Locked"));

    // Commit point: the primary's lock becomes a write record at 8.
    s.commit("Bob", 7, 8);
    let step4 = "\
Bob   8: bal:data=       bal:lock=               bal:write=Put@7
Bob   7: bal:data=3      bal:lock=               bal:write=
Bob   6: bal:data=       bal:lock=               bal:write=Put@5
Bob   5: bal:data=10     bal:lock=               bal:write=
Joe   7: bal:data=9      bal:lock=primary@Bob/bal bal:write=
Joe   6: bal:data=       bal:lock=               bal:write=Put@5
Joe   5: bal:data=2      bal:lock=               bal:write=
";
    assert_eq!(s.render(), step4);
    assert_eq!(s.get("Bob", 10), r#"Get(Value(Some("3")))"#);

    // Second phase: the secondary gets its write record too.
    s.commit("Joe", 7, 8);
    let step5 = "\
Bob   8: bal:data=       bal:lock=               bal:write=Put@7
Bob   7: bal:data=3      bal:lock=               bal:write=
Bob   6: bal:data=       bal:lock=               bal:write=Put@5
Bob   5: bal:data=10     bal:lock=               bal:write=
Joe   8: bal:data=       bal:lock=               bal:write=Put@7
Joe   7: bal:data=9      bal:lock=               bal:write=
Joe   6: bal:data=       bal:lock=               bal:write=Put@5
Joe   5: bal:data=2      bal:lock=               bal:write=
";
    assert_eq!(s.render(), step5);
    assert_eq!(s.get("Joe", 10), r#"Get(Value(Some("9")))"#);
    // A snapshot before the commit still sees the old balances.
    assert_eq!(s.get("Bob", 7), r#"Get(Value(Some("10")))"#);
    assert_eq!(s.get("Joe", 7), r#"Get(Value(Some("2")))"#);
}
