//! Ack: a consumer acknowledges a message, plainly or inside a transaction
//! (reference text, "確認事務消息"; Pulsar added a reply to acks so the client
//! knows whether a transactional ack took).

use super::state::{AckError, SubMutation, SubRecord, Subscription};
use crate::pulsar::ablation::{PulsarAblation, PulsarAblations};
use crate::pulsar::buffer::Entry;
use crate::pulsar::types::{BatchIndex, MsgPos, SubscriptionType, TxnId};
use serde::{Deserialize, Serialize};

/// What an ack names: one message (a batch-index ack when `index` is
/// given), a whole entry, or, `cumulative`, every message up to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckTarget {
    /// The entry's offset.
    pub offset: u64,
    /// The message's index in a batch entry; `None`: every message of the
    /// entry (up to its last, for a cumulative ack).
    pub index: Option<u32>,
    /// Acknowledge every message of the partition up to and including it.
    pub cumulative: bool,
    /// How the acking consumer shares the subscription (a cumulative ack
    /// needs Exclusive or Failover).
    pub kind: SubscriptionType,
}

impl AckTarget {
    /// An individual ack of the whole entry at `offset` by a Shared
    /// consumer.
    pub fn entry(offset: u64) -> Self {
        AckTarget {
            offset,
            index: None,
            cumulative: false,
            kind: SubscriptionType::Shared,
        }
    }
}

/// The messages `target` covers in `log`, each with its place in its
/// batch; `Err(NoSuchMessage)` if the target names no message.
pub fn covered(
    log: &[Entry],
    target: AckTarget,
) -> Result<Vec<(MsgPos, Option<BatchIndex>)>, AckError> {
    let Some(Entry::Message(m)) = log.get(target.offset as usize) else {
        return Err(AckError::NoSuchMessage(target.offset));
    };
    let last = target.index.unwrap_or(m.batch_size() - 1);
    if last >= m.batch_size() {
        return Err(AckError::NoSuchMessage(target.offset));
    }
    let first = match (target.cumulative, target.index) {
        (true, _) => MsgPos {
            offset: 0,
            index: 0,
        },
        (false, Some(i)) => MsgPos {
            offset: target.offset,
            index: i,
        },
        (false, None) => MsgPos {
            offset: target.offset,
            index: 0,
        },
    };
    let upto = MsgPos {
        offset: target.offset,
        index: last,
    };
    let mut out = Vec::new();
    for (offset, e) in log.iter().enumerate().skip(first.offset as usize) {
        let Entry::Message(m) = e else { continue };
        for index in 0..m.batch_size() {
            let pos = MsgPos {
                offset: offset as u64,
                index,
            };
            if pos >= first && pos <= upto {
                out.push((pos, m.batch_index(index)));
            }
        }
        if offset as u64 >= target.offset {
            break;
        }
    }
    Ok(out)
}

/// Acknowledge what `target` names on `sub` (whose partition's log is
/// `log`), inside `txn` if given.
///
/// A transactional ack becomes a pending ack of each message it covers,
/// logged durably before the reply, and stays pending until the
/// transaction ends. It is refused ([`AckError::Conflict`]) if a message it
/// covers is pending in another transaction: the same message, or the
/// same batch index of a batch (Pulsar's `PendingAckHandleImpl` compares
/// ack sets), or, for a cumulative ack, any message up to its position; and
/// ([`AckError::AlreadyAcked`]) if an individually acked message, or a
/// cumulative ack's own position, is already acknowledged for good.
/// A plain ack of a message pending in a transaction is ignored, as
/// Pulsar's first pending-ack change did (apache/pulsar#4265); a plain
/// cumulative ack that would cross a message pending in a transaction is
/// refused, since the transaction's abort must be able to redeliver it. A
/// cumulative ack on a Shared subscription is refused
/// ([`AckError::CumulativeOnShared`]).
///
/// With [`PulsarAblation::PendingAckNotDurable`] the pending ack is kept in
/// memory only: after a broker restart while it is pending it is gone,
/// another transaction can ack the same message, and the message is
/// processed twice. (Its commit, with no restart in between, still logs the
/// ack: `subscription::end`.)
pub fn ack(
    sub: &Subscription,
    log: &[Entry],
    target: AckTarget,
    txn: Option<TxnId>,
    ablations: PulsarAblations,
) -> Result<SubMutation, AckError> {
    if target.cumulative && target.kind == SubscriptionType::Shared {
        return Err(AckError::CumulativeOnShared);
    }
    let covered = covered(log, target)?;
    let Some(txn) = txn else {
        return plain(sub, &covered, target.cumulative);
    };
    if sub.ended(txn).is_some() {
        return Err(AckError::TxnEnded(txn));
    }
    let mut records = Vec::new();
    let own = covered.last().map(|(p, _)| *p);
    for (pos, batch) in covered {
        let acked = sub.is_acked_at(pos);
        if acked && (!target.cumulative || Some(pos) == own) {
            return Err(AckError::AlreadyAcked(pos.offset));
        }
        match sub.pending_at(pos) {
            Some(h) if h != txn => {
                return Err(AckError::Conflict {
                    offset: pos.offset,
                    holder: h,
                });
            }
            Some(_) => {}
            None if !acked => records.push(SubRecord::PendingAck {
                offset: pos.offset,
                txn,
                batch,
            }),
            None => {}
        }
    }
    Ok(match ablations.has(PulsarAblation::PendingAckNotDurable) {
        true => SubMutation {
            durable: vec![],
            volatile: records,
        },
        false => SubMutation {
            durable: records,
            volatile: vec![],
        },
    })
}

/// A plain ack of `covered`: messages already acknowledged are skipped;
/// one pending in a transaction is skipped by an individual ack and
/// refuses a cumulative one.
fn plain(
    sub: &Subscription,
    covered: &[(MsgPos, Option<BatchIndex>)],
    cumulative: bool,
) -> Result<SubMutation, AckError> {
    let mut durable = Vec::new();
    for (pos, batch) in covered {
        match sub.pending_at(*pos) {
            Some(holder) if cumulative => {
                return Err(AckError::Conflict {
                    offset: pos.offset,
                    holder,
                });
            }
            Some(_) => continue,
            None if sub.is_acked_at(*pos) => continue,
            None => durable.push(SubRecord::Ack {
                offset: pos.offset,
                batch: *batch,
            }),
        }
    }
    Ok(SubMutation {
        durable,
        volatile: vec![],
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
