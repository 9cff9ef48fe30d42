//! The recovery cases the paper describes, each a script scenario shipped
//! under `scenarios/examples/recovery/`, with its exact outcome asserted.

mod common;

use percsim_checker::{History, Outcome, Transaction, VersionKind};
use percsim_scenarios::Scenario;

fn run(name: &str) -> History {
    let path = format!(
        "{}/examples/recovery/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let scenario = Scenario::load(std::path::Path::new(&path)).expect("example scenario");
    common::run_and_check(&scenario, "recovery")
        .history
        .into_transactions()
        .expect("a transaction history")
}

/// The transaction whose first write is to `row`, excluding the initial load.
fn writer<'h>(h: &'h History, row: &str, value: &str) -> &'h Transaction {
    h.transactions
        .iter()
        .find(|t| {
            t.client != percsim_sim::LOADER_CLIENT
                && t.ops.iter().any(|op| matches!(op, percsim_checker::Op::Write { row: r, value: v, .. } if r == row && v == value))
        })
        .unwrap_or_else(|| panic!("no transaction wrote {row}={value}"))
}

fn events<'h>(h: &'h History, kind: &str) -> Vec<&'h percsim_checker::Event> {
    h.events.iter().filter(|e| e.kind == kind).collect()
}

/// Committed versions of a cell, as (start_ts, commit_ts, value).
fn committed(h: &History, row: &str) -> Vec<(u64, u64, Option<String>)> {
    h.final_state
        .cells
        .iter()
        .filter(|c| c.row == row)
        .flat_map(|c| c.versions.iter())
        .filter(|v| v.kind != VersionKind::Rollback)
        .map(|v| (v.start_ts, v.commit_ts, v.value.clone()))
        .collect()
}

fn rolled_back(h: &History, row: &str, start_ts: u64) -> bool {
    h.final_state
        .cells
        .iter()
        .filter(|c| c.row == row)
        .flat_map(|c| c.versions.iter())
        .any(|v| v.kind == VersionKind::Rollback && v.start_ts == start_ts)
}

#[test]
fn client_dies_after_prewriting_some_cells() {
    let h = run("dead-after-prewrite");
    let t1 = writer(&h, "a", "a1");
    assert_eq!(t1.outcome, Outcome::Unknown, "T1's client died mid-commit");
    assert_eq!(events(&h, "crash_at_step").len(), 1);
    // A reader rolled back the primary and the one prewritten secondary.
    let rb = events(&h, "roll_back");
    let rows: Vec<&str> = rb
        .iter()
        .filter_map(|e| e.fields.get("row")?.as_str())
        .collect();
    assert!(
        rows.contains(&"a") && rows.contains(&"b"),
        "roll_back events: {rb:?}"
    );
    assert!(rolled_back(&h, "a", t1.start_ts) && rolled_back(&h, "b", t1.start_ts));
    // Nothing of T1 is visible anywhere.
    for row in ["a", "b", "c"] {
        assert!(
            committed(&h, row).iter().all(|(s, _, _)| *s != t1.start_ts),
            "T1 committed {row}"
        );
    }
    // The later writer of b committed after the cleanup.
    assert_eq!(writer(&h, "b", "b3").outcome, Outcome::Committed);
}

#[test]
fn client_dies_after_committing_the_primary() {
    let h = run("dead-after-commit-primary");
    let t1 = writer(&h, "bob", "3");
    assert_eq!(
        t1.outcome,
        Outcome::Unknown,
        "the client died before it could report"
    );
    let rf = events(&h, "roll_forward");
    assert_eq!(
        rf.len(),
        1,
        "exactly the secondary is rolled forward: {rf:?}"
    );
    assert_eq!(rf[0].fields["row"], "joe");
    // Both cells committed with the primary's commit_ts: the transaction counts as committed.
    let bob: Vec<_> = committed(&h, "bob")
        .into_iter()
        .filter(|v| v.0 == t1.start_ts)
        .collect();
    let joe: Vec<_> = committed(&h, "joe")
        .into_iter()
        .filter(|v| v.0 == t1.start_ts)
        .collect();
    assert_eq!(bob.len(), 1);
    assert_eq!(joe.len(), 1);
    assert_eq!(bob[0].1, joe[0].1, "one commit_ts for both cells");
    assert_eq!(rf[0].fields["commit_ts"], bob[0].1);
    assert_eq!(joe[0].2.as_deref(), Some("9"));
}

#[test]
fn paused_owner_resumes_and_fails_to_commit() {
    let h = run("paused-owner-resumes");
    let t1 = writer(&h, "x", "x1");
    assert_eq!(t1.outcome, Outcome::Aborted);
    assert_eq!(t1.abort_reason.as_deref(), Some("rolled_back"));
    assert!(!events(&h, "roll_back").is_empty());
    assert!(!events(&h, "resume").is_empty());
    for row in ["x", "y"] {
        assert!(
            committed(&h, row).iter().all(|(s, _, _)| *s != t1.start_ts),
            "T1's {row} became visible"
        );
    }
}

#[test]
fn oracle_restart_keeps_timestamps_increasing() {
    let h = run("oracle-restart");
    let restarts: Vec<_> = events(&h, "restart")
        .into_iter()
        .filter(|e| e.fields["node"] == "oracle")
        .collect();
    assert_eq!(restarts.len(), 2);
    let mut ts: Vec<(u64, u64)> = h
        .transactions
        .iter()
        .filter(|t| t.client != percsim_sim::LOADER_CLIENT)
        .map(|t| (t.invoke_ns, t.start_ts))
        .collect();
    ts.sort();
    for w in ts.windows(2) {
        assert!(w[1].1 > w[0].1, "start timestamps went backwards: {ts:?}");
    }
    // Each transaction started after the previous one's commit.
    let t2 = writer(&h, "k", "2");
    let t1 = writer(&h, "k", "1");
    assert!(
        t2.start_ts > t1.commit_ts.unwrap(),
        "T2 {} vs T1 commit {:?}",
        t2.start_ts,
        t1.commit_ts
    );
    let t3 = h.transactions.iter().rfind(|t| t.client == 0).unwrap();
    assert!(t3.start_ts > t2.commit_ts.unwrap());
}

#[test]
fn tablet_server_dies_mid_commit() {
    let h = run("tablet-server-dies-mid-commit");
    let t1 = writer(&h, "a", "a1");
    assert_eq!(t1.outcome, Outcome::Committed);
    assert!(
        !events(&h, "tablet_moved").is_empty(),
        "the dead server's tablet moved"
    );
    assert!(!events(&h, "tablet_unavailable").is_empty());
    let b: Vec<_> = committed(&h, "b")
        .into_iter()
        .filter(|v| v.0 == t1.start_ts)
        .collect();
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].1, t1.commit_ts.unwrap());
}
