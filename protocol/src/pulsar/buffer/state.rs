//! A partition's durable log entries and the transaction buffer's state
//! built from them.

use crate::pulsar::types::{Message, ProducerRef, TxnAction, TxnId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One entry of a partition's durable log; its offset is its index. In
/// Pulsar 2.8 transactional messages go straight into the partition's own
/// log and markers are written there too (reference text, "Transection
/// Buffer": no second copy, consumers filter by transaction state).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Entry {
    /// A message, transactional or not.
    Message(Message),
    /// The end of a transaction on this partition.
    Marker {
        /// The transaction ended.
        txn: TxnId,
        /// Commit or abort.
        action: TxnAction,
    },
}

/// Why a partition refused a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AppendError {
    /// The message's transaction has already ended here: it is a late or
    /// duplicated copy (written, it would open a transaction that no marker
    /// ends and block the max-read-position for ever; Kafka's KIP-890
    /// describes this hanging transaction).
    #[error("transaction {txn} already ended here ({action:?})")]
    TxnEnded {
        /// The transaction.
        txn: TxnId,
        /// How it ended.
        action: TxnAction,
    },
    /// A copy of a message older than its producer's last persisted one
    /// (producer deduplication drops it: a copy the network delivered late).
    #[error(
        "producer {producer_id}'s message {sequence_id} is older than its last persisted one ({last})"
    )]
    Duplicate {
        /// The producer.
        producer_id: u64,
        /// The copy's sequence id.
        sequence_id: u64,
        /// The producer's highest persisted sequence id.
        last: u64,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Ongoing {
    first_offset: u64,
    producer: ProducerRef,
}

/// The transaction buffer of one partition: the transactions still open
/// here (with their first offset), the index of aborted transactions and
/// the set of committed ones. In memory; rebuilt from the log by
/// [`super::recover`] (Pulsar keeps ongoing and aborted transactions in
/// memory and recovers them from the partition and a snapshot).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TbState {
    len: u64,
    ongoing: BTreeMap<TxnId, Ongoing>,
    aborted: BTreeSet<TxnId>,
    committed: BTreeSet<TxnId>,
}

impl TbState {
    /// The offset the next entry gets (the log's length).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The max-read-position: the offset of the first message of the
    /// oldest transaction still open here, or the log's end. No dispatch
    /// reads at or past it.
    pub fn max_read_position(&self) -> u64 {
        self.ongoing
            .values()
            .map(|o| o.first_offset)
            .min()
            .unwrap_or(self.len)
    }

    /// Whether `txn` is in the aborted-transaction index.
    pub fn is_aborted(&self, txn: TxnId) -> bool {
        self.aborted.contains(&txn)
    }

    /// How `txn` ended here, if it did.
    pub fn ended(&self, txn: TxnId) -> Option<TxnAction> {
        if self.committed.contains(&txn) {
            Some(TxnAction::Commit)
        } else if self.aborted.contains(&txn) {
            Some(TxnAction::Abort)
        } else {
            None
        }
    }

    /// Whether `txn` has messages here and no marker yet.
    pub fn is_ongoing(&self, txn: TxnId) -> bool {
        self.ongoing.contains_key(&txn)
    }

    /// The oldest transaction still open here whose producer is `producer`.
    pub(crate) fn ongoing_of(&self, producer: ProducerRef) -> Option<TxnId> {
        self.ongoing
            .iter()
            .filter(|(_, o)| o.producer == producer)
            .min_by_key(|(_, o)| o.first_offset)
            .map(|(t, _)| *t)
    }

    /// Apply `entry`, appended at offset [`TbState::len`].
    pub fn apply(&mut self, entry: &Entry) {
        match entry {
            Entry::Message(m) => {
                if let Some(txn) = m.txn {
                    self.ongoing.entry(txn).or_insert(Ongoing {
                        first_offset: self.len,
                        producer: m.producer,
                    });
                }
            }
            Entry::Marker { txn, action } => {
                self.ongoing.remove(txn);
                match action {
                    TxnAction::Commit => self.committed.insert(*txn),
                    TxnAction::Abort => self.aborted.insert(*txn),
                };
            }
        }
        self.len += 1;
    }

    /// The snapshot of this buffer: its max-read-position, the entries it
    /// has learnt, and the transactions ended here.
    pub(crate) fn to_snapshot(&self) -> TbSnapshot {
        TbSnapshot {
            max_read_position: self.max_read_position(),
            taken_at: self.len,
            aborted: self.aborted.clone(),
            committed: self.committed.clone(),
        }
    }

    /// The buffer a recovery starts from: the snapshot's ended
    /// transactions, positioned at its max-read-position (no transaction
    /// open yet; replaying the log from there finds them).
    pub fn from_snapshot(s: &TbSnapshot) -> TbState {
        TbState {
            len: s.max_read_position,
            ongoing: BTreeMap::new(),
            aborted: s.aborted.clone(),
            committed: s.committed.clone(),
        }
    }

    /// The same buffer taken to describe a log of `len` entries with
    /// nothing learnt past its own (a stale state taken as current).
    #[cfg(test)]
    pub(crate) fn stretched_to(mut self, len: u64) -> TbState {
        self.len = len;
        self
    }
}

/// What a snapshot holds: the buffer as it was when its memory had learnt
/// the log's first `taken_at` entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TbSnapshot {
    /// The max-read-position then: every transaction with a message below
    /// it had ended, so recovery replays the log from here.
    pub max_read_position: u64,
    /// How many of the log's entries the buffer had learnt then.
    pub taken_at: u64,
    /// The aborted-transaction index then.
    pub aborted: BTreeSet<TxnId>,
    /// The transactions committed here then (Pulsar keeps no such set; the
    /// model keeps it so a late message of a committed transaction stays
    /// refused after a recovery from a snapshot, as after a full replay).
    pub committed: BTreeSet<TxnId>,
}
