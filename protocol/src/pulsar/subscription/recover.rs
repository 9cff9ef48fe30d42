//! Recover: a broker that takes over a partition rebuilds each
//! subscription's acks and pending acks from its durable log (reference
//! text, "Pending Acknowledge State": a new broker recovers the ack state
//! from the cursor log).

use super::state::{SubLog, SubRecord, Subscription};
use serde::{Deserialize, Serialize};

/// A subscription's two durable logs: the cursor's and the pending-ack
/// store's (Pulsar's `MLPendingAckStore`, a managed ledger per
/// subscription).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubLogs {
    /// The cursor's log: acknowledgments for good.
    pub cursor: Vec<SubRecord>,
    /// The pending-ack store's log: transactional acks and ends.
    pub pending: Vec<SubRecord>,
}

impl SubLogs {
    /// Append `record` to the log it belongs to.
    pub fn append(&mut self, record: SubRecord) {
        match record.log() {
            SubLog::Cursor => self.cursor.push(record),
            SubLog::PendingAck => self.pending.push(record),
        }
    }

    /// Every record, the cursor's first.
    pub fn records(&self) -> impl Iterator<Item = &SubRecord> {
        self.cursor.iter().chain(&self.pending)
    }
}

/// Rebuild the subscription whose durable logs are `logs`: the cursor's
/// acknowledgments, then the pending-ack store's replay (pending acks, and
/// each end: a commit mark acknowledges its messages for good even if the
/// broker died before it appended them to the cursor's log, as Pulsar's
/// pending-ack replay acknowledges the cursor for every commit mark it
/// finds).
pub fn recover(logs: &SubLogs) -> Subscription {
    let mut sub = Subscription::default();
    for record in logs.records() {
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
