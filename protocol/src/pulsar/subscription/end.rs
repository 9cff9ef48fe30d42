//! End on a subscription: the coordinator's marker commits the
//! transaction's pending acks (the messages are acknowledged for good) or
//! aborts them (the messages can be delivered again) (Pulsar's
//! `END_TXN_ON_SUBSCRIPTION`).

use super::state::{SubMutation, SubRecord, Subscription};
use crate::pulsar::types::{TxnAction, TxnId};

/// End `txn` on `sub` with `action`. Returns the durable record to log, or
/// nothing if it already ended here (a retried marker; the first wins).
pub fn end(sub: &Subscription, txn: TxnId, action: TxnAction) -> SubMutation {
    if sub.ended(txn).is_some() {
        return SubMutation::none();
    }
    SubMutation {
        durable: vec![SubRecord::End { txn, action }],
        volatile: vec![],
    }
}

#[cfg(test)]
mod tests {
    use crate::pulsar::test_util::*;
    use crate::pulsar::types::TxnAction;

    #[test]
    fn abort_releases_and_commit_acks() {
        let mut b = Broker::default();
        b.must_send(None, "a");
        b.must_send(None, "b");
        b.ack("s", 0, Some(txn(1))).unwrap();
        b.ack("s", 1, Some(txn(2))).unwrap();
        assert!(b.end_sub("s", txn(1), TxnAction::Abort));
        assert!(b.end_sub("s", txn(2), TxnAction::Commit));
        assert!(
            !b.end_sub("s", txn(2), TxnAction::Abort),
            "the first marker wins"
        );
        let s = b.sub("s");
        assert_eq!((s.is_acked(0), s.pending_txn(0)), (false, None));
        assert!(s.is_acked(1));
    }
}
