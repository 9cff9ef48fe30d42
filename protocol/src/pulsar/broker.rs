//! One request to the broker owning a partition, run against the
//! partition's transaction buffer and its subscriptions: the reply and the
//! single durable write to make before replying (the counterpart of
//! [`crate::percolator::actions::execute`] for this system).

use super::ablation::PulsarAblations;
use super::buffer::{self, AppendError, Entry, TbState};
use super::client::{BrokerReply, BrokerRequest};
use super::dedup::{DedupCheck, ProducerDedup};
use super::subscription::{self, AckTarget, Dispatch, SubMutation, Subscription};
use super::types::{ConsumerRef, Marker, Message, Participant};
use std::collections::BTreeMap;

/// What a broker must write before it replies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokerWrite {
    /// Nothing.
    Nothing,
    /// Append this entry to the partition's log, then apply it to the
    /// buffer ([`TbState::apply`]).
    Partition(Entry),
    /// Append the mutation's durable records to subscription `name`'s log,
    /// then apply it ([`Subscription::apply`]).
    Subscription {
        /// The subscription's name.
        name: String,
        /// The change.
        mutation: SubMutation,
    },
    /// Nothing durable: record in subscription `name`'s memory which
    /// consumer now holds what it was handed ([`Subscription::dispatch`]).
    Dispatch {
        /// The subscription's name.
        name: String,
        /// Who holds what.
        dispatch: Dispatch,
    },
    /// Nothing durable: a consumer of subscription `name` closed
    /// ([`Subscription::close`]).
    Close {
        /// The subscription's name.
        name: String,
        /// The consumer.
        consumer: ConsumerRef,
    },
}

impl BrokerWrite {
    /// Whether it appends to a durable log (a partition's or a
    /// subscription's).
    pub fn is_durable(&self) -> bool {
        matches!(
            self,
            BrokerWrite::Partition(_) | BrokerWrite::Subscription { .. }
        )
    }
}

/// The state of one partition as its owner holds it in memory.
#[derive(Debug, Clone, Copy)]
pub struct PartitionView<'a> {
    /// The partition's durable log.
    pub log: &'a [Entry],
    /// Its transaction buffer.
    pub tb: &'a TbState,
    /// Its subscriptions by name (a missing one is new and empty).
    pub subs: &'a BTreeMap<String, Subscription>,
    /// Its producer deduplication table, `None` when deduplication is off
    /// (every message sent is appended, resends and copies included).
    pub dedup: Option<&'a ProducerDedup>,
}

impl PartitionView<'_> {
    fn sub(&self, name: &str) -> Subscription {
        self.subs.get(name).cloned().unwrap_or_default()
    }
}

/// Run a client's request on the partition `view`.
pub fn execute(
    view: PartitionView<'_>,
    req: &BrokerRequest,
    ablations: PulsarAblations,
) -> (BrokerReply, BrokerWrite) {
    match req {
        BrokerRequest::Send(m) => send(view, m),
        BrokerRequest::Read {
            subscription,
            consumer,
            from,
            mode,
            max,
            kind,
        } => {
            let sub = view.sub(subscription);
            let active = match sub.admit(consumer, *kind) {
                Ok(active) => active,
                Err(e) => return (BrokerReply::ReadRefused(e), BrokerWrite::Nothing),
            };
            // A Failover subscription's standby consumer is handed nothing.
            let max = if active { *max } else { 0 };
            let d = buffer::read(
                view.log, view.tb, &sub, consumer, *from, *mode, max, ablations,
            );
            let mut offsets: Vec<u64> = d.messages.iter().map(|m| m.offset).collect();
            offsets.dedup();
            let dispatch = subscription::dispatch(&sub, consumer, offsets, *kind);
            let write = BrokerWrite::Dispatch {
                name: subscription.clone(),
                dispatch,
            };
            (BrokerReply::Delivery(d), write)
        }
        BrokerRequest::Close {
            subscription,
            consumer,
        } => (
            BrokerReply::Closed,
            BrokerWrite::Close {
                name: subscription.clone(),
                consumer: consumer.clone(),
            },
        ),
        BrokerRequest::Ack {
            subscription,
            offset,
            txn,
            index,
            cumulative,
            kind,
        } => {
            let target = AckTarget {
                offset: *offset,
                index: *index,
                cumulative: *cumulative,
                kind: *kind,
            };
            let sub = view.sub(subscription);
            match subscription::ack(&sub, view.log, target, *txn, ablations) {
                Ok(mutation) => (
                    BrokerReply::Acked,
                    BrokerWrite::Subscription {
                        name: subscription.clone(),
                        mutation,
                    },
                ),
                Err(e) => (BrokerReply::AckRefused(e), BrokerWrite::Nothing),
            }
        }
    }
}

/// Append `m`, unless producer deduplication knows it: a resend of the
/// producer's last persisted message is answered with the offset it
/// landed at, an older copy is refused; neither is written again.
fn send(view: PartitionView<'_>, m: &Message) -> (BrokerReply, BrokerWrite) {
    match view.dedup.map(|d| d.check(m)) {
        Some(DedupCheck::Resent(last)) => {
            return (BrokerReply::Sent(last.offset), BrokerWrite::Nothing);
        }
        Some(DedupCheck::Stale { last }) => {
            let e = AppendError::Duplicate {
                producer_id: m.producer.producer_id,
                sequence_id: m.sequence_id,
                last: last.sequence_id,
            };
            return (BrokerReply::SendRefused(e), BrokerWrite::Nothing);
        }
        Some(DedupCheck::New) | None => {}
    }
    match buffer::append(view.tb, m) {
        // The offset it lands at: the log's end (memory may lag the log
        // while a marker's update is held back).
        Ok(e) => (
            BrokerReply::Sent(view.log.len() as u64),
            BrokerWrite::Partition(e),
        ),
        Err(e) => (BrokerReply::SendRefused(e), BrokerWrite::Nothing),
    }
}

/// Apply a coordinator's marker to the partition `view` (or one of its
/// subscriptions). The broker acknowledges the marker once the write is
/// durable; [`BrokerWrite::Nothing`] (a repeated marker) is acknowledged at
/// once.
pub fn deliver_marker(
    view: PartitionView<'_>,
    marker: &Marker,
    ablations: PulsarAblations,
) -> BrokerWrite {
    match &marker.to {
        Participant::Partition(_) => match buffer::end(view.tb, marker, ablations) {
            Some(e) => BrokerWrite::Partition(e),
            None => BrokerWrite::Nothing,
        },
        Participant::Subscription(s) => {
            let mutation =
                subscription::end(&view.sub(&s.name), marker.txn, marker.action, ablations);
            if mutation.is_empty() {
                return BrokerWrite::Nothing;
            }
            BrokerWrite::Subscription {
                name: s.name.clone(),
                mutation,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::BrokerWrite;
    use crate::pulsar::client::{BrokerReply, BrokerRequest};
    use crate::pulsar::subscription::AckError;
    use crate::pulsar::test_util::*;
    use crate::pulsar::types::{Marker, Message, TxnAction};

    #[test]
    fn send_answers_the_offset_and_a_repeated_marker_writes_nothing() {
        let mut b = Broker::default();
        b.must_send(None, "a");
        let m = Message {
            txn: Some(txn(1)),
            producer: PRODUCER,
            sequence_id: 1,
            payload: "b".into(),
            batch: Vec::new(),
        };
        assert_eq!(b.execute(&BrokerRequest::Send(m)), BrokerReply::Sent(1));
        let marker = Marker {
            txn: txn(1),
            producer: PRODUCER,
            action: TxnAction::Commit,
            to: part(0),
        };
        assert!(matches!(
            super::deliver_marker(b_view(&b), &marker, b.ablations),
            BrokerWrite::Partition(_)
        ));
        assert!(b.deliver(&marker));
        assert_eq!(
            super::deliver_marker(b_view(&b), &marker, b.ablations),
            BrokerWrite::Nothing
        );
    }

    #[test]
    fn ack_of_a_marker_or_past_the_end_is_refused() {
        let mut b = Broker::default();
        b.must_send(Some(txn(1)), "a");
        b.must_mark(txn(1), TxnAction::Commit);
        for offset in [1, 2] {
            assert_eq!(
                b.ack("s", offset, None),
                Err(AckError::NoSuchMessage(offset))
            );
        }
        assert_eq!(b.ack("s", 0, None), Ok(()));
    }

    fn b_view(b: &Broker) -> super::PartitionView<'_> {
        super::PartitionView {
            log: &b.log,
            tb: &b.tb,
            subs: &b.subs,
            dedup: Some(&b.dedup),
        }
    }
}
