//! Recover: a broker that takes over a partition rebuilds each
//! subscription's acks and pending acks from its durable log (reference
//! text, "Pending Acknowledge State": a new broker recovers the ack state
//! from the cursor log).

use super::state::{SubRecord, Subscription};

/// Rebuild the subscription whose durable log is `log`.
pub fn recover(log: &[SubRecord]) -> Subscription {
    let mut sub = Subscription::default();
    for record in log {
        sub.apply_record(record);
    }
    sub
}

#[cfg(test)]
mod tests {
    use crate::pulsar::test_util::*;
    use crate::pulsar::types::TxnAction;

    #[test]
    fn restart_keeps_acks_pending_acks_and_ends() {
        let mut b = Broker::default();
        for p in ["a", "b", "c"] {
            b.must_send(None, p);
        }
        b.ack("s", 0, None).unwrap();
        b.ack("s", 1, Some(txn(1))).unwrap();
        b.ack("s", 2, Some(txn(2))).unwrap();
        b.end_sub("s", txn(2), TxnAction::Commit);
        let before = b.sub("s").clone();
        b.restart();
        assert_eq!(b.sub("s"), &before);
        assert_eq!(b.sub("s").pending_txn(1), Some(txn(1)));
        assert!(b.sub("s").is_acked(2));
    }
}
