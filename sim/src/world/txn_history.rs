//! The `percsim-history/1` format's builder: a system whose clients read
//! and write cells under timestamps (Percolator, and any system judged by
//! the transaction checker) records here what each transaction did in the
//! format's terms (its start and commit timestamps, reads, writes, scans,
//! the observer it ran for), and writes its history from these and the
//! world's records of who ran each transaction, when, and how it ended.
//!
//! It is a world utility rather than Percolator's own so that every system
//! whose history is this format writes it the same way, without depending
//! on Percolator. A system with another history format never touches it.
//!
//! The format has no place for a transaction that never took a start
//! timestamp (it did nothing the checker can judge): such a transaction is
//! left out of the history and counted in [`Built::unwritten`], never
//! dropped silently.

use crate::world::recorder::{Finish, Recorder};
use percsim_checker as history;

/// The client id the initial load is recorded under.
pub const LOADER_CLIENT: u64 = 1_000_000;

/// The format's fields of one transaction.
#[derive(Debug, Clone, Default)]
struct TxnFields {
    start_ts: Option<u64>,
    commit_ts: Option<u64>,
    ops: Vec<history::Op>,
    scans: Vec<history::Scan>,
    observer: Option<history::ObserverRun>,
}

/// How a transaction ended, with the commit timestamp its client learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnFinish<'a> {
    /// Committed (at `commit_ts`, when the client knows it).
    Committed {
        /// The commit timestamp, if known.
        commit_ts: Option<u64>,
    },
    /// Aborted for a named reason.
    Aborted {
        /// The reason's name (also the counter `abort.<reason>`).
        reason: &'a str,
    },
    /// The client did not learn the outcome.
    Unknown,
}

/// The transactions of a `percsim-history/1` history, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    /// The transactions the format holds, in the order begun.
    pub transactions: Vec<history::Transaction>,
    /// Transactions left out because they never took a start timestamp
    /// (an abort before one was granted, or a client that died waiting).
    pub unwritten: u64,
}

/// The format's fields of every transaction, by the world's transaction id.
#[derive(Debug, Default)]
pub struct TxnHistory {
    txns: Vec<TxnFields>,
}

impl TxnHistory {
    fn fields(&mut self, id: u64) -> &mut TxnFields {
        let i = id as usize;
        if self.txns.len() <= i {
            self.txns.resize_with(i + 1, TxnFields::default);
        }
        &mut self.txns[i]
    }

    /// The initial load: one transaction committed outside any client,
    /// under [`LOADER_CLIENT`], writing `ops`.
    pub fn bootstrap(
        &mut self,
        rec: &mut Recorder,
        start_ts: u64,
        commit_ts: u64,
        ops: Vec<history::Op>,
    ) {
        let id = rec.loaded(LOADER_CLIENT);
        *self.fields(id) = TxnFields {
            start_ts: Some(start_ts),
            commit_ts: Some(commit_ts),
            ops,
            ..TxnFields::default()
        };
    }

    /// Transaction `id` got its start timestamp.
    pub fn started(&mut self, id: u64, start_ts: u64) {
        self.fields(id).start_ts = Some(start_ts);
    }

    /// The start timestamp of transaction `id`, once it has one.
    pub fn start_ts(&self, id: u64) -> Option<u64> {
        self.txns.get(id as usize)?.start_ts
    }

    /// Transaction `id` is an observer run.
    pub fn observer(&mut self, id: u64, run: history::ObserverRun) {
        self.fields(id).observer = Some(run);
    }

    /// Transaction `id` read or buffered a write.
    pub fn op(&mut self, id: u64, op: history::Op) {
        self.fields(id).ops.push(op);
    }

    /// Transaction `id` scanned a range.
    pub fn scan(&mut self, id: u64, scan: history::Scan) {
        self.fields(id).scans.push(scan);
    }

    /// Transaction `id` took its commit timestamp. Kept if the outcome
    /// stays unknown: the store must then hold the transaction at exactly
    /// this timestamp, or not at all.
    pub fn commit_ts(&mut self, id: u64, commit_ts: u64) {
        self.fields(id).commit_ts = Some(commit_ts);
    }

    /// Transaction `id` ended as its client learnt it at `now_ns`: its
    /// commit timestamp is the one the client learnt (none if it aborted),
    /// and the world records the outcome (see [`Recorder::finish`]).
    pub fn finish(&mut self, rec: &mut Recorder, id: u64, finish: TxnFinish<'_>, now_ns: u64) {
        let neutral = match finish {
            TxnFinish::Committed { commit_ts } => {
                self.fields(id).commit_ts = commit_ts;
                Finish::Committed
            }
            TxnFinish::Aborted { reason } => {
                self.fields(id).commit_ts = None;
                Finish::Aborted { reason }
            }
            TxnFinish::Unknown => Finish::Unknown,
        };
        rec.finish(id, neutral, now_ns);
    }

    /// The transactions as the format has them, from the world's records
    /// `rec`: those that never learnt an outcome are unknown; those that
    /// never took a start timestamp are counted in [`Built::unwritten`] and
    /// reported to the world (see [`Recorder::unwritten`]). Called once, at
    /// the end.
    pub fn build(&self, rec: &mut Recorder) -> Built {
        let mut built = Built {
            transactions: Vec::new(),
            unwritten: 0,
        };
        for (id, t) in rec.txns().iter().enumerate() {
            let fields = self.txns.get(id);
            let Some(start_ts) = fields.and_then(|f| f.start_ts) else {
                built.unwritten += 1;
                continue;
            };
            let f = fields.cloned().unwrap_or_default();
            built.transactions.push(history::Transaction {
                id: id as u64,
                client: t.client,
                start_ts,
                commit_ts: f.commit_ts,
                invoke_ns: t.invoke_ns,
                complete_ns: t.complete_ns,
                outcome: t.outcome.unwrap_or(history::Outcome::Unknown),
                abort_reason: t.abort_reason.clone(),
                ops: f.ops,
                scans: f.scans,
                observer: f.observer,
            });
        }
        rec.note_unwritten(built.unwritten);
        built
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use percsim_checker::Outcome;

    fn write(value: &str) -> history::Op {
        history::Op::Write {
            row: "r".into(),
            col: "c".into(),
            value: value.into(),
        }
    }

    #[test]
    fn a_transaction_without_a_start_ts_is_counted_not_lost() {
        let (mut rec, mut h) = (Recorder::default(), TxnHistory::default());
        h.bootstrap(&mut rec, 1, 2, vec![write("init")]);
        // Aborted before the oracle granted a start timestamp.
        let (refused, _) = rec.begin(0, 10);
        h.finish(
            &mut rec,
            refused,
            TxnFinish::Aborted {
                reason: "unavailable",
            },
            20,
        );
        // Its client died while it waited for one.
        let (waiting, _) = rec.begin(1, 15);
        rec.orphan(1);
        let (ran, n) = rec.begin(0, 30);
        assert_eq!(n, 2, "the client's second transaction");
        h.started(ran, 5);
        h.op(ran, write("x"));
        h.commit_ts(ran, 6);
        h.finish(
            &mut rec,
            ran,
            TxnFinish::Committed { commit_ts: Some(6) },
            40,
        );

        let built = h.build(&mut rec);
        assert_eq!(rec.unwritten(), 2);
        assert_eq!(built.unwritten, 2, "{refused} and {waiting} are counted");
        let ids: Vec<u64> = built.transactions.iter().map(|t| t.id).collect();
        assert_eq!(ids, [0, ran]);
        let loader = &built.transactions[0];
        assert_eq!(
            (loader.client, loader.start_ts, loader.commit_ts),
            (LOADER_CLIENT, 1, Some(2))
        );
        let t = &built.transactions[1];
        assert_eq!((t.client, t.start_ts, t.commit_ts), (0, 5, Some(6)));
        assert_eq!((t.invoke_ns, t.complete_ns), (30, Some(40)));
        assert_eq!(
            (t.outcome, t.ops.clone()),
            (Outcome::Committed, vec![write("x")])
        );
        // The world counted the refusal and the commit, not the load.
        assert_eq!(rec.counters().get("abort.unavailable"), Some(&1));
        assert_eq!(rec.counters().get("txn.committed"), Some(&1));
    }

    #[test]
    fn an_abort_drops_the_commit_ts_and_an_unknown_outcome_keeps_it() {
        let (mut rec, mut h) = (Recorder::default(), TxnHistory::default());
        let (aborted, _) = rec.begin(0, 1);
        let (unknown, _) = rec.begin(0, 1);
        let (running, _) = rec.begin(1, 1);
        for id in [aborted, unknown, running] {
            h.started(id, 3);
            h.commit_ts(id, 4);
        }
        h.finish(
            &mut rec,
            aborted,
            TxnFinish::Aborted { reason: "conflict" },
            9,
        );
        h.finish(&mut rec, unknown, TxnFinish::Unknown, 9);
        let built = h.build(&mut rec);
        let end: Vec<_> = built
            .transactions
            .iter()
            .map(|t| {
                (
                    t.outcome,
                    t.commit_ts,
                    t.complete_ns,
                    t.abort_reason.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            end,
            [
                (Outcome::Aborted, None, Some(9), Some("conflict")),
                (Outcome::Unknown, Some(4), None, None),
                (Outcome::Unknown, Some(4), None, None),
            ]
        );
        assert_eq!(built.unwritten, 0);
        assert_eq!(rec.unwritten(), 0);
    }
}
