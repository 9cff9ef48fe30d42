//! Read: dispatch messages of a partition to a read-committed consumer of
//! one subscription, or redeliver (replay) the ones it has not acknowledged.

use super::state::{Entry, TbState};
use crate::pulsar::ablation::{PulsarAblation, PulsarAblations};
use crate::pulsar::subscription::Subscription;
use crate::pulsar::types::{ConsumerRef, Message, MsgPos};
use serde::{Deserialize, Serialize};

/// How a read walks the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadMode {
    /// Normal dispatch from the consumer's read position onwards.
    Dispatch,
    /// Redelivery of unacknowledged messages below `until` (the consumer's
    /// read position): after a consumer restart, a negative ack or an
    /// aborted transactional ack.
    Replay {
        /// Redeliver below this offset.
        until: u64,
    },
}

/// One message handed to a consumer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivered {
    /// Its entry's offset in the partition.
    pub offset: u64,
    /// Its index in a batch entry (0 for a message sent alone).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub index: u32,
    /// The message (one message of a batch entry, split out as Pulsar's
    /// consumer splits a batch).
    pub message: Message,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// What a read returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    /// The messages, in offset order.
    pub messages: Vec<Delivered>,
    /// Where the next read of the same mode should start.
    pub next: u64,
}

/// Read at most `max` messages of `log` (whose buffer is `tb`) for
/// consumer `reader` of the subscription `sub`, from offset `from`.
/// Markers, messages of aborted transactions, messages acknowledged (or
/// pending-acknowledged) on the subscription and messages the dispatcher
/// handed to another consumer are skipped; a reader whose session was
/// replaced gets nothing ([`Subscription::available_to`]). Dispatch never reads at or past the
/// max-read-position, so a message of a still-open transaction is never
/// delivered and every transactional message below it is decided.
///
/// With [`PulsarAblation::NoMaxReadPosition`] dispatch reads to the end of
/// the log; with [`PulsarAblation::ReplayIgnoresAborted`] a replay does not
/// consult the aborted index (Pulsar #19814: "Consumer can receive txn
/// aborted message when readType is replay").
#[allow(clippy::too_many_arguments)]
pub fn read(
    log: &[Entry],
    tb: &TbState,
    sub: &Subscription,
    reader: &ConsumerRef,
    from: u64,
    mode: ReadMode,
    max: usize,
    ablations: PulsarAblations,
) -> Delivery {
    let visible_end = match ablations.has(PulsarAblation::NoMaxReadPosition) {
        true => log.len() as u64,
        false => tb.max_read_position().min(log.len() as u64),
    };
    let (limit, filter_aborted) = match mode {
        ReadMode::Dispatch => (visible_end, true),
        ReadMode::Replay { until } => (
            until.min(visible_end),
            !ablations.has(PulsarAblation::ReplayIgnoresAborted),
        ),
    };
    let mut messages = Vec::new();
    if sub.is_closed(reader) {
        return Delivery {
            messages,
            next: from,
        };
    }
    let mut offset = from;
    while offset < limit && messages.len() < max {
        if let Entry::Message(m) = &log[offset as usize] {
            let aborted = m.txn.is_some_and(|t| tb.is_aborted(t));
            let taken = !sub.available_to(offset, reader);
            if !(taken || (aborted && filter_aborted)) {
                messages.extend(unsettled(sub, offset, m));
            }
        }
        offset += 1;
    }
    Delivery {
        messages,
        next: offset,
    }
}

/// The messages of the entry at `offset` (a batch's, one by one) that are
/// neither acknowledged nor pending on `sub`: a batch entry is dispatched
/// whole, with the indices already acknowledged, and the consumer drops
/// those (PIP-54).
fn unsettled<'a>(
    sub: &'a Subscription,
    offset: u64,
    m: &'a Message,
) -> impl Iterator<Item = Delivered> + 'a {
    (0..m.batch_size()).filter_map(move |index| {
        let pos = MsgPos { offset, index };
        if sub.is_settled(pos) {
            return None;
        }
        Some(Delivered {
            offset,
            index,
            message: m.single(index)?,
        })
    })
}

#[cfg(test)]
mod tests {
    use crate::pulsar::ablation::PulsarAblation;
    use crate::pulsar::test_util::*;
    use crate::pulsar::types::TxnAction;

    fn one_open_transaction(b: &mut Broker) {
        b.must_send(None, "a");
        b.must_send(Some(txn(1)), "open");
        b.must_send(None, "b");
    }

    #[test]
    fn dispatch_stops_at_the_first_message_of_an_open_transaction() {
        let mut b = Broker::default();
        one_open_transaction(&mut b);
        assert_eq!(b.must_read("s", 0, 10), vec![(0, "a".to_string())]);
        b.must_mark(txn(1), TxnAction::Commit);
        let all: Vec<u64> = b.must_read("s", 0, 10).iter().map(|m| m.0).collect();
        assert_eq!(all, vec![0, 1, 2]);
    }

    #[test]
    fn ablated_dispatch_reads_an_open_transaction() {
        let mut b = Broker::ablated(PulsarAblation::NoMaxReadPosition);
        one_open_transaction(&mut b);
        // Read uncommitted: "open" is delivered before any marker; if the
        // transaction then aborts, it was an aborted read.
        let got: Vec<String> = b.must_read("s", 0, 10).into_iter().map(|m| m.1).collect();
        assert_eq!(got, vec!["a", "open", "b"]);
    }

    fn aborted_then_replayed(b: &mut Broker) -> Vec<String> {
        b.must_send(Some(txn(1)), "aborted");
        b.must_send(None, "plain");
        b.must_mark(txn(1), TxnAction::Abort);
        assert_eq!(b.must_read("s", 0, 10), vec![(1, "plain".to_string())]);
        // The consumer restarts without acking: everything below its read
        // position (4) is redelivered.
        b.must_replay("s", 4).into_iter().map(|m| m.1).collect()
    }

    #[test]
    fn replay_filters_aborted_messages() {
        let mut b = Broker::default();
        assert_eq!(aborted_then_replayed(&mut b), vec!["plain"]);
    }

    #[test]
    fn ablated_replay_delivers_aborted_messages() {
        let mut b = Broker::ablated(PulsarAblation::ReplayIgnoresAborted);
        assert_eq!(aborted_then_replayed(&mut b), vec!["aborted", "plain"]);
    }

    #[test]
    fn acked_and_pending_messages_are_not_dispatched_again() {
        let mut b = Broker::default();
        b.must_send(None, "a");
        b.must_send(None, "b");
        b.must_send(None, "c");
        b.ack("s", 0, None).unwrap();
        b.ack("s", 1, Some(txn(5))).unwrap();
        assert_eq!(b.must_replay("s", 3), vec![(2, "c".to_string())]);
        b.end_sub("s", txn(5), TxnAction::Abort);
        let offsets: Vec<u64> = b.must_replay("s", 3).iter().map(|m| m.0).collect();
        assert_eq!(
            offsets,
            vec![1, 2],
            "an aborted ack makes the message deliverable again"
        );
    }
}
