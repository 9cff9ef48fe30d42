//! Recover: a broker that takes over a partition (after a restart or its
//! owner's death) rebuilds the transaction buffer from the partition's
//! durable log. Pulsar recovers from a snapshot plus the log after it; the
//! model replays the whole log, which gives the same state.

use super::state::{Entry, TbState};

/// Rebuild the transaction buffer of the partition whose log is `log`.
pub fn recover(log: &[Entry]) -> TbState {
    let mut tb = TbState::default();
    for entry in log {
        tb.apply(entry);
    }
    tb
}

#[cfg(test)]
mod tests {
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
}
