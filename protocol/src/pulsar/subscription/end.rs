//! End on a subscription: the coordinator's marker commits the
//! transaction's pending acks (the messages are acknowledged for good) or
//! aborts them (the messages can be delivered again) (Pulsar's
//! `END_TXN_ON_SUBSCRIPTION`).

use super::state::{SubMutation, SubRecord, Subscription};
#[cfg(doc)]
use crate::pulsar::ablation::PulsarAblation;
use crate::pulsar::ablation::PulsarAblations;
use crate::pulsar::types::{TxnAction, TxnId};

/// End `txn` on `sub` with `action`. Returns the durable records to log, or
/// nothing if it already ended here (a retried marker; the first wins).
///
/// A commit appends its mark to the pending-ack log, then acknowledges
/// each message it held pending on the cursor's log (Pulsar's
/// `PendingAckHandleImpl` commits: `appendCommitMark`, then the cursor's
/// `acknowledgeMessage`). The two records go to two logs
/// ([`SubRecord::log`]); a broker that dies between the two appends leaves
/// the commit mark with no cursor ack, and recovery acknowledges the
/// messages from the mark ([`super::recover`]). An abort appends its mark
/// only.
///
/// Under [`PulsarAblation::PendingAckNotDurable`] the transaction's pending
/// acks were never logged; the commit's cursor acks still are, so the
/// planted bug loses a pending ack only to a restart while it is pending,
/// never an ack its transaction has committed.
pub fn end(
    sub: &Subscription,
    txn: TxnId,
    action: TxnAction,
    _ablations: PulsarAblations,
) -> SubMutation {
    if sub.ended(txn).is_some() {
        return SubMutation::none();
    }
    let mut durable = vec![SubRecord::End { txn, action }];
    if action == TxnAction::Commit {
        durable.extend(sub.pending_acks_of(txn));
    }
    SubMutation {
        durable,
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

    /// `pending-ack-not-durable` loses a pending ack only to a restart
    /// while it is pending: once its transaction commits here (no restart
    /// in between), the ack is as durable as a faithful one.
    #[test]
    fn ablated_commit_still_makes_the_acks_durable() {
        use crate::pulsar::ablation::PulsarAblation;
        for mut b in [
            Broker::default(),
            Broker::ablated(PulsarAblation::PendingAckNotDurable),
        ] {
            b.must_send(None, "a");
            b.must_send(None, "b");
            b.ack("s", 0, Some(txn(1))).unwrap();
            b.ack("s", 1, Some(txn(2))).unwrap();
            assert!(b.end_sub("s", txn(1), TxnAction::Commit));
            assert!(b.end_sub("s", txn(2), TxnAction::Abort));
            b.restart();
            let s = b.sub("s");
            assert!(s.is_acked(0), "the committed ack survives the restart");
            assert_eq!((s.is_acked(1), s.pending_txn(1)), (false, None));
        }
    }
}
