//! Snapshot: the transaction buffer of a partition periodically writes its
//! aborted-transaction index and its max-read-position, with the log
//! position they describe, to durable storage apart from the partition's
//! log (Pulsar: the `__transaction_buffer_snapshot` system topic, one
//! snapshot kept per topic; PR #9490). Recovery then loads the latest
//! snapshot and replays the log only from the snapshot's max-read-position
//! on ([`super::recover_from_snapshot`]).

use super::state::{TbSnapshot, TbState};

/// Take a snapshot of `tb` if one is due: `every` entries (0: never) have
/// been learnt since the latest snapshot, which described the log's first
/// `last_taken_at` entries. Pulsar takes one after
/// `transactionBufferSnapshotMaxTransactionCount` transactions or
/// `transactionBufferSnapshotMinTimeInMillis`; the model counts entries.
pub fn snapshot(tb: &TbState, last_taken_at: u64, every: u64) -> Option<TbSnapshot> {
    if every == 0 || tb.len() < last_taken_at.saturating_add(every) {
        return None;
    }
    Some(tb.to_snapshot())
}

#[cfg(test)]
mod tests {
    use super::snapshot;
    use crate::pulsar::test_util::*;
    use crate::pulsar::types::TxnAction;

    #[test]
    fn a_snapshot_is_due_every_n_entries_and_never_when_off() {
        let mut b = Broker::default();
        b.must_send(Some(txn(1)), "x");
        assert_eq!(snapshot(&b.tb, 0, 2), None);
        b.must_send(None, "y");
        let s = snapshot(&b.tb, 0, 2).expect("due after two entries");
        assert_eq!((s.taken_at, s.max_read_position), (2, 0));
        assert_eq!(snapshot(&b.tb, 2, 2), None);
        assert_eq!(snapshot(&b.tb, 0, 0), None, "0 switches snapshots off");
        b.must_mark(txn(1), TxnAction::Abort);
        b.must_send(None, "z");
        let s = snapshot(&b.tb, 2, 2).expect("due again");
        assert_eq!((s.taken_at, s.max_read_position), (4, 4));
        assert!(s.aborted.contains(&txn(1)));
    }
}
