//! Recover: a broker that takes over a partition (after a restart or its
//! owner's death) rebuilds the transaction buffer from the latest snapshot
//! and the partition's durable log after the snapshot's max-read-position
//! (Pulsar's `TopicTransactionBufferRecover`: read the snapshot, then the
//! entries from its max read position on). With no snapshot the whole log
//! is replayed. Either way the state is the one a full replay gives.

use super::state::TbSnapshot;
use super::state::{Entry, TbState};

/// A recovered buffer and how many of the log's entries were replayed to
/// rebuild it (what a recovery's time is proportional to).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// The transaction buffer.
    pub tb: TbState,
    /// Entries replayed from the log.
    pub replayed: u64,
}

/// Rebuild the transaction buffer of the partition whose log is `log`,
/// replaying all of it.
pub fn recover(log: &[Entry]) -> TbState {
    recover_from_snapshot(None, log).tb
}

/// Rebuild the transaction buffer from `snapshot` (the latest one taken,
/// if any) and the entries of `log` from the snapshot's max-read-position
/// on. A snapshot describing more entries than the log holds (it cannot
/// happen: a snapshot is taken of entries already durable) is ignored and
/// the whole log replayed.
pub fn recover_from_snapshot(snapshot: Option<&TbSnapshot>, log: &[Entry]) -> Recovered {
    let usable = snapshot.filter(|s| s.taken_at <= log.len() as u64);
    let mut tb = usable.map(TbState::from_snapshot).unwrap_or_default();
    let from = tb.len() as usize;
    for entry in &log[from..] {
        tb.apply(entry);
    }
    Recovered {
        tb,
        replayed: (log.len() - from) as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::recover_from_snapshot;
    use crate::pulsar::buffer::{TbSnapshot, TbState, snapshot};
    use crate::pulsar::test_util::*;
    use crate::pulsar::types::TxnAction;

    #[test]
    fn restart_rebuilds_ongoing_aborted_and_committed() {
        let mut b = Broker::default();
        b.must_send(Some(txn(1)), "x");
        b.must_send(Some(txn(2)), "y");
        b.must_send(Some(txn(3)), "z");
        b.must_mark(txn(1), TxnAction::Abort);
        b.must_mark(txn(3), TxnAction::Commit);
        let before = b.tb.clone();
        b.restart();
        assert_eq!(b.tb, before);
        assert!(b.tb.is_aborted(txn(1)));
        assert_eq!(b.tb.max_read_position(), 1);
        assert!(b.tb.is_ongoing(txn(2)));
        assert_eq!(b.tb.ended(txn(3)), Some(TxnAction::Commit));
    }

    /// T1 aborted and T2 committed before the snapshot; T3 open across
    /// it; T4 sent and aborted after it.
    fn history_around_a_snapshot(b: &mut Broker) -> TbSnapshot {
        b.must_send(Some(txn(1)), "t1");
        b.must_send(None, "plain");
        b.must_mark(txn(1), TxnAction::Abort);
        b.must_send(Some(txn(2)), "t2");
        b.must_send(Some(txn(3)), "t3");
        b.must_mark(txn(2), TxnAction::Commit);
        let snap = snapshot(&b.tb, 0, 1).expect("due");
        b.must_send(Some(txn(4)), "t4");
        b.must_mark(txn(4), TxnAction::Abort);
        b.must_mark(txn(3), TxnAction::Commit);
        snap
    }

    #[test]
    fn recovery_from_a_snapshot_replays_only_after_it_and_rebuilds_the_same_buffer() {
        let mut b = Broker::default();
        let snap = history_around_a_snapshot(&mut b);
        assert_eq!((snap.max_read_position, snap.taken_at), (4, 6));
        let r = recover_from_snapshot(Some(&snap), &b.log);
        assert_eq!(r.tb, b.tb, "the same buffer as the full replay");
        assert_eq!(r.replayed, 5, "entries 4..9, not the whole log of 9");
        let full = recover_from_snapshot(None, &b.log);
        assert_eq!((full.tb, full.replayed), (b.tb.clone(), 9));
        let later = snapshot(&b.tb, 6, 1).expect("due");
        assert_eq!(recover_from_snapshot(Some(&later), &b.log).replayed, 0);
    }

    /// The failure a snapshot makes possible: a stale snapshot taken as
    /// the state of the whole log (the log after it not replayed) does not
    /// know T4 aborted, and dispatch hands out T4's message. The faithful
    /// recovery, from the same snapshot, does not.
    #[test]
    fn a_stale_snapshot_without_the_log_after_it_exposes_an_aborted_message() {
        let mut b = Broker::default();
        let snap = history_around_a_snapshot(&mut b);
        b.tb = recover_from_snapshot(Some(&snap), &b.log).tb;
        let read: Vec<String> = b.must_read("s", 0, 10).into_iter().map(|m| m.1).collect();
        assert_eq!(read, vec!["plain", "t2", "t3"]);
        b.tb = TbState::from_snapshot(&snap).stretched_to(b.log.len() as u64);
        let read: Vec<String> = b.must_read("s", 0, 10).into_iter().map(|m| m.1).collect();
        assert!(read.contains(&"t4".to_string()), "{read:?}");
    }

    #[test]
    fn a_snapshot_past_the_logs_end_is_ignored() {
        let mut b = Broker::default();
        let snap = history_around_a_snapshot(&mut b);
        let r = recover_from_snapshot(Some(&snap), &b.log[..3]);
        assert_eq!((r.replayed, r.tb.len()), (3, 3));
    }
}
