//! `lost_write`: a committed message is durable and visible, and reaches
//! every drained subscription of its topic ("lost write" in Jepsen's
//! Redpanda and Bufstream analyses).

use crate::Outcome;
use crate::stream::history::{AckOp, OpResult, SendOp, StreamOp};
use crate::stream::index::Ix;
use crate::stream::report::Collector;
use crate::stream::{StreamFindingClass, StreamRule};

pub(crate) const ID: StreamRule = StreamRule::LostWrite;
pub(crate) const NAME: &str = "every committed message is visible in its partition's log and, by the end of \
     the healed phase, delivered to every drained subscription of its topic";

/// Three classes:
/// * `not_visible`: a plain send the producer was told succeeded, or a send
///   (not refused) of a transaction its client was told committed, whose
///   message is not visible in its partition's final log. A transaction with
///   some message visible is left to `torn_transaction`.
/// * `never_delivered`: a visible message of a topic that a subscription
///   declared `drained` follows, which no consumer of it ever received.
/// * `lost_ack`: an acknowledgment (not refused) of a transaction its client
///   was told committed, which the subscription's final state does not
///   hold, in a transaction none of whose effects took effect (a
///   transaction with some effect is left to `torn_transaction`).
pub(crate) fn check(ix: &Ix, c: &mut Collector) {
    lost_acks(ix, c);
    for op in &ix.h.ops {
        let StreamOp::Send(s) = op else { continue };
        if promised(ix, s)
            && !visible_in(ix, &s.message, &s.partition)
            && !partly_visible(ix, s.txn)
        {
            c.add(StreamFindingClass::NotVisible, || {
                let promise = match s.txn {
                    Some(t) => format!(
                        "T{t}'s client was told it committed, so the message must be visible"
                    ),
                    None => {
                        "the producer was told the send succeeded, so the message must be visible"
                            .to_string()
                    }
                };
                (
                    format!(
                        "committed message {:?} is not visible in {}",
                        s.message, s.partition
                    ),
                    s.txn.into_iter().collect(),
                    vec![ix.send_desc(&s.message), promise, ix.log_desc(&s.message)],
                )
            });
        }
    }
    if !ix.subs.values().any(|s| s.drained) {
        c.note(
            "no drained subscription declared: delivery is not judged, only visibility".to_string(),
        );
    }
    for sub in ix.subs.values().filter(|s| s.drained) {
        for part in ix.parts.values().filter(|p| p.topic == sub.topic) {
            for e in &part.entries {
                let Some(m) = &e.message else { continue };
                if !visible_in(ix, m, &part.name)
                    || ix.receipts.contains_key(&(sub.name.as_str(), m.as_str()))
                {
                    continue;
                }
                c.add(StreamFindingClass::NeverDelivered, || {
                    (
                        format!("{m:?} ({}@{}) never reached drained subscription {:?}", part.name, e.offset, sub.name),
                        e.txn.into_iter().collect(),
                        vec![
                            ix.send_desc(m),
                            ix.log_desc(m),
                            format!("subscription {:?} follows topic {:?} and its consumers kept receiving until the end \
                                of the healed phase, yet none received {m:?}", sub.name, sub.topic),
                        ],
                    )
                });
            }
        }
    }
}

/// Whether the producer was promised that the message is durable.
fn promised(ix: &Ix, s: &SendOp) -> bool {
    match s.txn {
        None => s.result == OpResult::Ok,
        Some(t) => {
            s.result != OpResult::Failed
                && ix
                    .txns
                    .get(&t)
                    .is_some_and(|x| x.outcome == Outcome::Committed)
        }
    }
}

fn visible_in(ix: &Ix, message: &str, partition: &str) -> bool {
    ix.in_log
        .get(message)
        .is_some_and(|v| v.iter().any(|l| l.partition == partition && l.visible))
}

/// Whether some message of the transaction is visible somewhere.
fn partly_visible(ix: &Ix, txn: Option<u64>) -> bool {
    txn.is_some_and(|t| ix.visible_txns.contains(&t))
}

/// `lost_ack`, see [`check`].
fn lost_acks(ix: &Ix, c: &mut Collector) {
    let ack_held = |a: &AckOp| ix.is_acked(&a.subscription, &a.partition, a.offset);
    let with_held_ack: std::collections::BTreeSet<u64> =
        ix.h.ops
            .iter()
            .filter_map(|o| match o {
                StreamOp::Ack(a) if ack_held(a) => a.txn,
                _ => None,
            })
            .collect();
    let any_ack_held = |t: u64| with_held_ack.contains(&t);
    for op in &ix.h.ops {
        let StreamOp::Ack(a) = op else { continue };
        let Some(t) = a.txn else { continue };
        if !ix.ack_committed(a) || ack_held(a) || partly_visible(ix, Some(t)) || any_ack_held(t) {
            continue;
        }
        c.add(StreamFindingClass::LostAck, || {
            (
                format!(
                    "the acknowledgment of {:?} on {} by T{t} never took effect",
                    a.message, a.subscription
                ),
                vec![t],
                vec![
                    ix.txn_desc(t),
                    crate::stream::index::ack_desc(a),
                    format!(
                        "{} does not hold {}@{} at the end, and no other effect of T{t} took effect: \
                         T{t}'s client was told it committed, so its acknowledgment must be durable",
                        a.subscription, a.partition, a.offset
                    ),
                ],
            )
        });
    }
}
