//! `monotonic_offsets`: offsets only grow for each consumer and producer on
//! each partition, and name what the log holds ("nonmonotonic" polls and
//! sends and "inconsistent offsets" in Jepsen's Redpanda analysis).

use crate::stream::history::{AckOp, MarkerKind, OpResult, ReceiveOp, StreamOp};
use crate::stream::index::{Ix, receipt_desc};
use crate::stream::report::Collector;
use crate::stream::{StreamFindingClass, StreamRule};
use crate::units::Ms;
use std::collections::{BTreeMap, BTreeSet};

pub(crate) const ID: StreamRule = StreamRule::MonotonicOffsets;
pub(crate) const NAME: &str = "each consumer receives, and each producer is told, strictly increasing offsets \
     per partition, and an offset names the message the log holds there";

/// Three classes:
/// * `nonmonotonic_receive`: one consumer session received, on one
///   partition, an offset not above the one it received before;
/// * `nonmonotonic_send`: one producer was told, for successive successful
///   sends to one partition, an offset not above the one before;
/// * `inconsistent_offset`: a receipt or a send's reply says message m is at
///   offset o, but the final log holds another entry at o, or holds m
///   elsewhere and nothing at o.
///
/// A receipt of an offset the consumer received before and that its
/// subscription had not acknowledged by then is a redelivery (a broker
/// redelivers unacknowledged messages without the client asking), not a
/// step back; the consumer's position stays where it was.
pub(crate) fn check(ix: &Ix, c: &mut Collector) {
    let mut last_recv: BTreeMap<(&str, &str), (u64, String)> = BTreeMap::new();
    let mut last_send: BTreeMap<(String, &str), (u64, String)> = BTreeMap::new();
    let mut seen = Delivered::default();
    for op in &ix.h.ops {
        match op {
            StreamOp::Receive(r) => {
                let key = (r.consumer.as_str(), r.partition.as_str());
                let redelivery = seen.is_redelivery(r);
                seen.received.insert((key.0, key.1, r.offset));
                if redelivery {
                    inconsistent(ix, &r.partition, r.offset, &r.message, receipt_desc(r), c);
                    continue;
                }
                if let Some((prev, prev_desc)) = last_recv.get(&key)
                    && r.offset <= *prev
                {
                    c.add(StreamFindingClass::NonmonotonicReceive, || {
                        (
                            format!("consumer {} went from offset {prev} to {} on {}", r.consumer, r.offset, r.partition),
                            ix.txn_of(&r.message).into_iter().collect(),
                            vec![
                                prev_desc.clone(),
                                receipt_desc(r),
                                "one consumer session must receive a partition's messages in increasing offset order \
                                 (a redelivery starts a new session)".to_string(),
                            ],
                        )
                    });
                }
                last_recv.insert(key, (r.offset, receipt_desc(r)));
                inconsistent(ix, &r.partition, r.offset, &r.message, receipt_desc(r), c);
            }
            StreamOp::Send(s) => {
                let Some(off) = s.offset.filter(|_| s.result == OpResult::Ok) else {
                    continue;
                };
                let desc = format!(
                    "client {} was told {:?} went to {}@{off} (sent at {})",
                    s.client,
                    s.message,
                    s.partition,
                    Ms(s.t_ns)
                );
                let producer = s
                    .producer
                    .clone()
                    .unwrap_or_else(|| format!("client {}", s.client));
                let key = (producer, s.partition.as_str());
                if let Some((prev, prev_desc)) = last_send.get(&key)
                    && off <= *prev
                {
                    c.add(StreamFindingClass::NonmonotonicSend, || {
                        (
                            format!("producer {} was told offset {off} after {prev} on {}", key.0, s.partition),
                            s.txn.into_iter().collect(),
                            vec![
                                prev_desc.clone(),
                                desc.clone(),
                                "a producer's successive sends to one partition are appended in order".to_string(),
                            ],
                        )
                    });
                }
                last_send.insert(key, (off, desc.clone()));
                inconsistent(ix, &s.partition, off, &s.message, desc, c);
            }
            StreamOp::Ack(a) => seen.ack(a),
        }
    }
}

/// What each consumer has received, and what each subscription had
/// acknowledged (confirmed acknowledgments, cumulative ones included), so far.
#[derive(Default)]
struct Delivered<'a> {
    /// (consumer, partition, offset) received.
    received: BTreeSet<(&'a str, &'a str, u64)>,
    /// (subscription, partition) to (every offset below acknowledged, further
    /// offsets acknowledged one by one).
    acked: BTreeMap<(&'a str, &'a str), (u64, BTreeSet<u64>)>,
}

impl<'a> Delivered<'a> {
    fn ack(&mut self, a: &'a AckOp) {
        if a.result != OpResult::Ok {
            return;
        }
        let (below, one_by_one) = self
            .acked
            .entry((a.subscription.as_str(), a.partition.as_str()))
            .or_default();
        if a.cumulative {
            *below = (*below).max(a.offset + 1);
        } else {
            one_by_one.insert(a.offset);
        }
    }

    /// Whether `r` delivers again, to the same consumer, an offset its
    /// subscription had not acknowledged.
    fn is_redelivery(&self, r: &ReceiveOp) -> bool {
        let again = self
            .received
            .contains(&(r.consumer.as_str(), r.partition.as_str(), r.offset));
        let acked = self
            .acked
            .get(&(r.subscription.as_str(), r.partition.as_str()))
            .is_some_and(|(below, set)| r.offset < *below || set.contains(&r.offset));
        again && !acked
    }
}

fn inconsistent(
    ix: &Ix,
    partition: &str,
    offset: u64,
    message: &str,
    claim: String,
    c: &mut Collector,
) {
    let held = ix.entries.get(&(partition, offset));
    let elsewhere = ix
        .in_log
        .get(message)
        .and_then(|v| v.iter().find(|l| l.partition == partition));
    let log = match (held, elsewhere) {
        (Some(e), _) if e.message.as_deref() == Some(message) => return,
        (Some(e), _) => match (&e.message, e.marker) {
            (Some(m), _) => format!("the final log holds message {m:?} at {partition}@{offset}"),
            (None, k) => {
                let kind = if k == Some(MarkerKind::Abort) {
                    "abort"
                } else {
                    "commit"
                };
                format!(
                    "the final log holds T{}'s {kind} marker at {partition}@{offset}",
                    e.txn.unwrap_or(0)
                )
            }
        },
        (None, Some(l)) => format!(
            "the final log holds nothing at {partition}@{offset} and {message:?} at offset {}",
            l.offset
        ),
        (None, None) => return,
    };
    c.add(StreamFindingClass::InconsistentOffset, || {
        (
            format!("{message:?} was reported at {partition}@{offset}, but the log disagrees"),
            ix.txn_of(message).into_iter().collect(),
            vec![
                claim,
                log,
                "an offset names one entry of the log, for good".to_string(),
            ],
        )
    });
}
