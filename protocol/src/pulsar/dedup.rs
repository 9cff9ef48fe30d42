//! Producer deduplication on a partition, as Pulsar's broker does it when
//! message deduplication is enabled (`brokerDeduplicationEnabled`): every
//! message carries its producer's name and a sequence id the producer
//! increments per message; the partition remembers the highest sequence id
//! persisted for each producer, and a message whose sequence id is not
//! above it is a duplicate (a resend of a message whose reply was lost, or
//! a copy the network delivered twice or late) and is not written again.
//!
//! The table is memory rebuilt from the partition's log when a broker
//! takes the partition over (Pulsar: a snapshot kept in a cursor, plus the
//! entries after it; the model replays the whole log, which gives the same
//! table), so it survives a broker restart and a topic move.

use super::buffer::Entry;
use super::types::Message;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The last message persisted of one producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Persisted {
    /// Its sequence id (the producer's highest persisted).
    pub sequence_id: u64,
    /// The offset it landed at.
    pub offset: u64,
}

/// What the table says of a message about to be appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DedupCheck {
    /// Its sequence id is above its producer's highest: append it.
    New,
    /// The producer's last persisted message again (its reply was lost and
    /// the producer resent it): answer with the offset it landed at.
    Resent(Persisted),
    /// A copy of an older message than the producer's last persisted one.
    Stale {
        /// The producer's last persisted message.
        last: Persisted,
    },
}

/// One partition's deduplication table: each producer's last persisted
/// message, by producer id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerDedup {
    last: BTreeMap<u64, Persisted>,
}

impl ProducerDedup {
    /// The table of a partition whose log is `log` (a broker taking the
    /// partition over).
    pub fn recover(log: &[Entry]) -> Self {
        let mut table = ProducerDedup::default();
        for (offset, entry) in log.iter().enumerate() {
            table.record(entry, offset as u64);
        }
        table
    }

    /// Whether `message` is new, a resend of its producer's last persisted
    /// message, or an older copy.
    pub fn check(&self, message: &Message) -> DedupCheck {
        match self.last.get(&message.producer.producer_id) {
            Some(last) if message.sequence_id == last.sequence_id => DedupCheck::Resent(*last),
            Some(last) if message.sequence_id < last.sequence_id => {
                DedupCheck::Stale { last: *last }
            }
            _ => DedupCheck::New,
        }
    }

    /// Remember `entry`, persisted at `offset` (markers change nothing).
    pub fn record(&mut self, entry: &Entry, offset: u64) {
        if let Entry::Message(m) = entry {
            let last = Persisted {
                sequence_id: m.sequence_id,
                offset,
            };
            let slot = self.last.entry(m.producer.producer_id).or_insert(last);
            if m.sequence_id >= slot.sequence_id {
                *slot = last;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pulsar::test_util::PRODUCER;
    use crate::pulsar::types::{ProducerRef, TxnAction};

    fn message(producer_id: u64, sequence_id: u64) -> Message {
        Message {
            txn: None,
            producer: ProducerRef {
                producer_id,
                ..PRODUCER
            },
            sequence_id,
            payload: format!("{producer_id}.{sequence_id}"),
            batch: Vec::new(),
        }
    }

    #[test]
    fn a_resend_gets_its_offset_an_older_copy_is_stale_and_producers_are_apart() {
        let mut t = ProducerDedup::default();
        assert_eq!(t.check(&message(1, 0)), DedupCheck::New);
        t.record(&Entry::Message(message(1, 0)), 0);
        t.record(&Entry::Message(message(2, 0)), 1);
        t.record(&Entry::Message(message(1, 1)), 2);
        let last = Persisted {
            sequence_id: 1,
            offset: 2,
        };
        assert_eq!(t.check(&message(1, 1)), DedupCheck::Resent(last));
        assert_eq!(t.check(&message(1, 0)), DedupCheck::Stale { last });
        assert_eq!(t.check(&message(1, 2)), DedupCheck::New);
        assert_eq!(t.check(&message(3, 0)), DedupCheck::New);
        assert!(matches!(t.check(&message(2, 0)), DedupCheck::Resent(_)));
    }

    #[test]
    fn the_table_is_rebuilt_from_the_log() {
        let log = vec![
            Entry::Message(message(1, 0)),
            Entry::Marker {
                txn: crate::pulsar::test_util::txn(1),
                action: TxnAction::Commit,
            },
            Entry::Message(message(1, 1)),
        ];
        let t = ProducerDedup::recover(&log);
        let last = Persisted {
            sequence_id: 1,
            offset: 2,
        };
        assert_eq!(t.check(&message(1, 1)), DedupCheck::Resent(last));
        assert_eq!(t.check(&message(1, 0)), DedupCheck::Stale { last });
    }
}
