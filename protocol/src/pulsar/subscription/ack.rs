//! Ack: a consumer acknowledges a message, plainly or inside a transaction
//! (reference text, "確認事務消息"; Pulsar added a reply to acks so the client
//! knows whether a transactional ack took).

use super::state::{AckError, SubMutation, SubRecord, Subscription};
use crate::pulsar::ablation::{PulsarAblation, PulsarAblations};
use crate::pulsar::types::TxnId;

/// Acknowledge the message at `offset` on `sub`, inside `txn` if given.
///
/// A transactional ack becomes a pending ack, logged durably before the
/// reply, and stays pending until the transaction ends; a message pending
/// in one transaction cannot be acked by another ([`AckError::Conflict`]).
/// A plain ack of a message pending in a transaction is ignored, as
/// Pulsar's first pending-ack change did (apache/pulsar#4265).
///
/// With [`PulsarAblation::PendingAckNotDurable`] the pending ack is kept in
/// memory only: after a broker restart while it is pending it is gone,
/// another transaction can ack the same message, and the message is
/// processed twice. (Its commit, with no restart in between, still logs the
/// ack: `subscription::end`.)
pub fn ack(
    sub: &Subscription,
    offset: u64,
    txn: Option<TxnId>,
    ablations: PulsarAblations,
) -> Result<SubMutation, AckError> {
    let holder = sub.pending_txn(offset);
    let Some(txn) = txn else {
        if holder.is_some() || sub.is_acked(offset) {
            return Ok(SubMutation::none());
        }
        return Ok(SubMutation {
            durable: vec![SubRecord::Ack { offset }],
            volatile: vec![],
        });
    };
    if sub.ended(txn).is_some() {
        return Err(AckError::TxnEnded(txn));
    }
    if sub.is_acked(offset) {
        return Err(AckError::AlreadyAcked(offset));
    }
    match holder {
        Some(h) if h == txn => return Ok(SubMutation::none()),
        Some(h) => return Err(AckError::Conflict { offset, holder: h }),
        None => {}
    }
    let record = SubRecord::PendingAck { offset, txn };
    Ok(match ablations.has(PulsarAblation::PendingAckNotDurable) {
        true => SubMutation {
            durable: vec![],
            volatile: vec![record],
        },
        false => SubMutation {
            durable: vec![record],
            volatile: vec![],
        },
    })
}

#[cfg(test)]
mod tests {
    use crate::pulsar::ablation::PulsarAblation;
    use crate::pulsar::subscription::AckError;
    use crate::pulsar::test_util::*;
    use crate::pulsar::types::TxnAction;

    #[test]
    fn pending_ack_blocks_other_transactions_until_the_end() {
        let mut b = Broker::default();
        b.must_send(None, "m");
        b.ack("s", 0, Some(txn(1))).unwrap();
        b.ack("s", 0, Some(txn(1))).unwrap();
        assert_eq!(
            b.ack("s", 0, Some(txn(2))),
            Err(AckError::Conflict {
                offset: 0,
                holder: txn(1)
            })
        );
        // A plain ack is ignored while the message is pending.
        b.ack("s", 0, None).unwrap();
        assert!(!b.sub("s").is_acked(0));
        b.end_sub("s", txn(1), TxnAction::Commit);
        assert!(b.sub("s").is_acked(0));
        assert_eq!(b.ack("s", 0, Some(txn(2))), Err(AckError::AlreadyAcked(0)));
        assert_eq!(b.ack("s", 0, Some(txn(1))), Err(AckError::TxnEnded(txn(1))));
    }

    fn ack_then_restart(b: &mut Broker) -> Result<(), AckError> {
        b.must_send(None, "m");
        b.ack("s", 0, Some(txn(1))).unwrap();
        b.restart();
        b.ack("s", 0, Some(txn(2)))
    }

    #[test]
    fn pending_ack_survives_a_restart() {
        let mut b = Broker::default();
        assert_eq!(
            ack_then_restart(&mut b),
            Err(AckError::Conflict {
                offset: 0,
                holder: txn(1)
            })
        );
    }

    #[test]
    fn ablated_pending_ack_is_forgotten_by_a_restart() {
        let mut b = Broker::ablated(PulsarAblation::PendingAckNotDurable);
        // Transaction 2 takes the message transaction 1 is processing:
        // if both commit, the message was processed twice.
        assert_eq!(ack_then_restart(&mut b), Ok(()));
        assert_eq!(b.sub("s").pending_txn(0), Some(txn(2)));
    }
}
