//! A subscription's durable records and the acknowledgment state built
//! from them.

use crate::pulsar::types::{BatchIndex, ConsumerRef, MsgPos, SubscriptionType, TxnAction, TxnId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One durable record of a subscription. Pulsar keeps them in two logs:
/// the cursor's (its mark-delete position and individually deleted
/// messages, with batch indices: plain acks and committed transactional
/// ones) and the pending-ack store's, a managed ledger of its own per
/// subscription (`MLPendingAckStore`: transactional acks and the
/// transactions' commit and abort marks). [`SubRecord::log`] says which
/// log a record goes to; [`super::recover`] rebuilds the state from both.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubRecord {
    /// A plain (non-transactional) acknowledgment, or a committed
    /// transaction's, in the cursor's log.
    Ack {
        /// The entry's offset.
        offset: u64,
        /// The one message of a batch entry it acknowledges (a batch-index
        /// ack); `None`: the whole entry.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        batch: Option<BatchIndex>,
    },
    /// An acknowledgment inside a transaction, pending until it ends.
    PendingAck {
        /// The entry's offset.
        offset: u64,
        /// The transaction.
        txn: TxnId,
        /// The one message of a batch entry it acknowledges; `None`: the
        /// whole entry.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        batch: Option<BatchIndex>,
    },
    /// The transaction ended: its pending acks become acks (commit) or are
    /// released (abort).
    End {
        /// The transaction.
        txn: TxnId,
        /// How it ended.
        action: TxnAction,
    },
}

/// Which of a subscription's two logs a record goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubLog {
    /// The cursor's: acknowledgments for good.
    Cursor,
    /// The pending-ack store's: transactional acks and ends.
    PendingAck,
}

impl SubRecord {
    /// The log this record is appended to.
    pub fn log(&self) -> SubLog {
        match self {
            SubRecord::Ack { .. } => SubLog::Cursor,
            SubRecord::PendingAck { .. } | SubRecord::End { .. } => SubLog::PendingAck,
        }
    }
}

/// What a read changes in the dispatcher's memory (nothing durable).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dispatch {
    /// The consumer that read.
    pub consumer: ConsumerRef,
    /// The offsets now handed to it.
    pub offsets: Vec<u64>,
    /// How it shares the subscription (it attaches with it).
    pub kind: SubscriptionType,
}

/// Why a consumer may not attach to a subscription (Pulsar refuses its
/// subscribe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum SubscribeError {
    /// Another consumer holds the subscription exclusively
    /// (`ConsumerBusyException`).
    #[error("another consumer holds the exclusive subscription")]
    ConsumerBusy,
    /// The subscription's attached consumers share it another way
    /// (`SubscriptionBusyException`: "subscription is of different type").
    #[error("the subscription is {has:?}, not {asked:?}")]
    TypeMismatch {
        /// How its attached consumers share it.
        has: SubscriptionType,
        /// How this consumer asked to.
        asked: SubscriptionType,
    },
}

/// What an ack or end step changes: `durable` records are appended to the
/// subscription's log (and waited for) before the reply; `volatile` ones
/// only change memory (used by the `pending-ack-not-durable` ablation).
/// Apply both with [`Subscription::apply`] once `durable` is written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubMutation {
    /// Records to log.
    pub durable: Vec<SubRecord>,
    /// Records kept in memory only.
    pub volatile: Vec<SubRecord>,
}

impl SubMutation {
    /// Nothing to change.
    pub fn none() -> Self {
        SubMutation::default()
    }

    /// Whether there is nothing to change.
    pub fn is_empty(&self) -> bool {
        self.durable.is_empty() && self.volatile.is_empty()
    }
}

/// Why an ack was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AckError {
    /// Another open transaction holds a pending ack on the message (Pulsar
    /// docs, "Pending acknowledge state": it cannot be acknowledged by
    /// other transactions; Pulsar's `TransactionConflictException`).
    #[error("message {offset} is pending-acked by transaction {holder}")]
    Conflict {
        /// The message's offset.
        offset: u64,
        /// The transaction holding it.
        holder: TxnId,
    },
    /// The message is already acknowledged for good.
    #[error("message {0} is already acknowledged")]
    AlreadyAcked(u64),
    /// The transaction already ended on this subscription (a late copy).
    #[error("transaction {0} already ended here")]
    TxnEnded(TxnId),
    /// No message has this offset in the partition (or the entry has no
    /// message at the batch index asked for).
    #[error("no message at offset {0}")]
    NoSuchMessage(u64),
    /// A cumulative ack on a Shared subscription: its consumers get
    /// messages out of order, so "everything up to here" means nothing
    /// (Pulsar refuses it: cumulative acks are for Exclusive and Failover
    /// subscriptions only).
    #[error("a cumulative ack needs an exclusive or failover subscription")]
    CumulativeOnShared,
}

/// The acknowledgment state of one subscription: acked messages, pending
/// acks by transaction, and the transactions that ended here; and, in
/// memory only, the dispatcher's: which consumer holds each message handed
/// out and not yet acknowledged, and each consumer name's latest session
/// (see [`super::dispatch`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subscription {
    /// Entries acknowledged for good: every message of them.
    acked: BTreeSet<u64>,
    /// The acknowledged batch indices of batch entries not yet wholly
    /// acknowledged (PIP-54: the cursor deletes an entry only when every
    /// index is acknowledged).
    partial: BTreeMap<u64, BTreeSet<u32>>,
    /// Messages pending in a transaction, with their place in their batch.
    pending: BTreeMap<MsgPos, (TxnId, Option<BatchIndex>)>,
    ended: BTreeMap<TxnId, TxnAction>,
    dispatched: BTreeMap<u64, ConsumerRef>,
    sessions: BTreeMap<String, u64>,
    /// The names of the consumers attached, in the order they attached
    /// (the first is a Failover subscription's active one), and how they
    /// share it.
    attached: Vec<String>,
    kind: Option<SubscriptionType>,
}

impl Subscription {
    /// Whether the entry at `offset` is acknowledged for good (every
    /// message of it, for a batch).
    pub fn is_acked(&self, offset: u64) -> bool {
        self.acked.contains(&offset)
    }

    /// Whether the message at `pos` is acknowledged for good.
    pub fn is_acked_at(&self, pos: MsgPos) -> bool {
        self.is_acked(pos.offset)
            || self
                .partial
                .get(&pos.offset)
                .is_some_and(|i| i.contains(&pos.index))
    }

    /// The transaction holding a pending ack on a message of the entry at
    /// `offset`, if any (the first, for a batch).
    pub fn pending_txn(&self, offset: u64) -> Option<TxnId> {
        self.pending_on(offset).next().map(|(_, t)| t)
    }

    /// The transaction holding a pending ack on the message at `pos`.
    pub fn pending_at(&self, pos: MsgPos) -> Option<TxnId> {
        self.pending.get(&pos).map(|(t, _)| *t)
    }

    /// The pending acks on the entry at `offset`: each message's position
    /// and its transaction.
    pub fn pending_on(&self, offset: u64) -> impl Iterator<Item = (MsgPos, TxnId)> + '_ {
        let from = MsgPos { offset, index: 0 };
        self.pending
            .range(from..)
            .take_while(move |(p, _)| p.offset == offset)
            .map(|(p, (t, _))| (*p, *t))
    }

    /// Whether the message at `pos` is acknowledged or pending in a
    /// transaction (no consumer is to be given it).
    pub fn is_settled(&self, pos: MsgPos) -> bool {
        self.is_acked_at(pos) || self.pending.contains_key(&pos)
    }

    /// The entries acknowledged for good, in order.
    pub fn acked_entries(&self) -> impl Iterator<Item = u64> + '_ {
        self.acked.iter().copied()
    }

    /// Every pending ack: the message's position and its transaction, in
    /// log order.
    pub fn pending_acks(&self) -> impl Iterator<Item = (MsgPos, TxnId)> + '_ {
        self.pending.iter().map(|(p, (t, _))| (*p, *t))
    }

    /// The entry offsets `txn` holds pending here, in order (once each).
    pub fn pending_of(&self, txn: TxnId) -> impl Iterator<Item = u64> + '_ {
        let mut last = None;
        self.pending
            .iter()
            .filter(move |(_, (t, _))| *t == txn)
            .map(|(p, _)| p.offset)
            .filter(move |o| last.replace(*o) != Some(*o))
    }

    /// The records that acknowledge for good what `txn` holds pending here
    /// (a commit appends them to the cursor's log).
    pub fn pending_acks_of(&self, txn: TxnId) -> Vec<SubRecord> {
        self.pending
            .iter()
            .filter(|(_, (t, _))| *t == txn)
            .map(|(p, (_, batch))| SubRecord::Ack {
                offset: p.offset,
                batch: *batch,
            })
            .collect()
    }

    /// How `txn` ended on this subscription, if it did.
    pub fn ended(&self, txn: TxnId) -> Option<TxnAction> {
        self.ended.get(&txn).copied()
    }

    /// The consumer the dispatcher handed `offset` to, if it still holds it.
    pub fn holder(&self, offset: u64) -> Option<&ConsumerRef> {
        self.dispatched.get(&offset)
    }

    /// Whether `reader` reads on a session a later one of its name has
    /// replaced (a closed connection: it is handed nothing).
    pub fn is_closed(&self, reader: &ConsumerRef) -> bool {
        self.sessions
            .get(&reader.name)
            .is_some_and(|s| *s > reader.session)
    }

    /// Whether the entry at `offset` may be handed to `reader`: it is not
    /// acknowledged for good, the reader's session is not closed, and no
    /// other consumer holds it (an earlier session of the reader's own
    /// name does not count: reading on a new session closes the old one).
    /// Which of its messages are handed out is the read's to filter
    /// ([`Subscription::is_settled`]).
    pub fn available_to(&self, offset: u64, reader: &ConsumerRef) -> bool {
        if self.is_acked(offset) || self.is_closed(reader) {
            return false;
        }
        self.holder(offset)
            .is_none_or(|h| h == reader || (h.name == reader.name && h.session < reader.session))
    }

    /// Whether `reader` may attach sharing the subscription as `kind`, and
    /// if so whether it is handed messages now (a Failover subscription's
    /// standby consumers are not). Memory only: a restarted broker
    /// forgets who was attached, as its consumers reconnect.
    pub fn admit(
        &self,
        reader: &ConsumerRef,
        kind: SubscriptionType,
    ) -> Result<bool, SubscribeError> {
        let others = self.attached.iter().any(|n| *n != reader.name);
        match self.kind {
            Some(has) if has != kind && others => {
                return Err(SubscribeError::TypeMismatch { has, asked: kind });
            }
            _ => {}
        }
        if kind == SubscriptionType::Exclusive && others {
            return Err(SubscribeError::ConsumerBusy);
        }
        let first = self.attached.first();
        Ok(kind != SubscriptionType::Failover || first.is_none_or(|n| *n == reader.name))
    }

    /// The names of the consumers attached, in the order they attached.
    pub fn attached(&self) -> &[String] {
        &self.attached
    }

    /// Close `consumer` (memory only): it is detached, the dispatcher takes
    /// back what any session of its name holds, and a read on its session
    /// (or an earlier one) is handed nothing; a reopened consumer reads on
    /// a later session.
    pub fn close(&mut self, consumer: &ConsumerRef) {
        self.attached.retain(|n| *n != consumer.name);
        if self.attached.is_empty() {
            self.kind = None;
        }
        self.dispatched.retain(|_, h| h.name != consumer.name);
        let next = consumer.session + 1;
        let s = self.sessions.entry(consumer.name.clone()).or_insert(next);
        *s = (*s).max(next);
    }

    /// Apply a dispatch (memory only): a newer session of the consumer's
    /// name takes back what its earlier sessions held, then it holds
    /// `offsets`; the consumer is attached (if it was not).
    pub fn dispatch(&mut self, d: &Dispatch) {
        if self.is_closed(&d.consumer) {
            return;
        }
        let c = &d.consumer;
        if !self.attached.contains(&c.name) {
            self.attached.push(c.name.clone());
        }
        self.kind = Some(d.kind);
        if self.sessions.insert(c.name.clone(), c.session) != Some(c.session) {
            self.dispatched
                .retain(|_, h| h.name != c.name || h.session == c.session);
        }
        for offset in &d.offsets {
            self.dispatched.insert(*offset, c.clone());
        }
    }

    /// Apply a mutation (its durable part already written).
    pub fn apply(&mut self, m: &SubMutation) {
        for r in m.durable.iter().chain(&m.volatile) {
            self.apply_record(r);
        }
    }

    /// Apply one record.
    pub fn apply_record(&mut self, record: &SubRecord) {
        match record {
            SubRecord::Ack { offset, batch } => self.ack_for_good(*offset, *batch),
            SubRecord::PendingAck { offset, txn, batch } => {
                let index = batch.map_or(0, |b| b.index);
                let pos = MsgPos {
                    offset: *offset,
                    index,
                };
                self.pending.insert(pos, (*txn, *batch));
                // Held by the transaction now: its abort releases the
                // message to every consumer (Pulsar redelivers it).
                if self.all_settled(*offset, *batch) {
                    self.dispatched.remove(offset);
                }
            }
            SubRecord::End { txn, action } => {
                let mine: Vec<(MsgPos, Option<BatchIndex>)> = self
                    .pending
                    .iter()
                    .filter(|(_, (t, _))| t == txn)
                    .map(|(p, (_, b))| (*p, *b))
                    .collect();
                for (pos, batch) in mine {
                    self.pending.remove(&pos);
                    if *action == TxnAction::Commit {
                        self.ack_for_good(pos.offset, batch);
                    }
                }
                self.ended.insert(*txn, *action);
            }
        }
    }

    /// Acknowledge the entry at `offset` for good, or one index of it: the
    /// entry is deleted once every index is.
    fn ack_for_good(&mut self, offset: u64, batch: Option<BatchIndex>) {
        if let Some(b) = batch {
            let indices = self.partial.entry(offset).or_default();
            indices.insert(b.index);
            if (indices.len() as u32) < b.size {
                if self.all_settled(offset, batch) {
                    self.dispatched.remove(&offset);
                }
                return;
            }
        }
        self.partial.remove(&offset);
        self.acked.insert(offset);
        self.dispatched.remove(&offset);
    }

    /// Whether every message of the entry at `offset` (of the batch `batch`
    /// names, or alone) is acknowledged or pending.
    fn all_settled(&self, offset: u64, batch: Option<BatchIndex>) -> bool {
        let size = batch.map_or(1, |b| b.size);
        (0..size).all(|index| self.is_settled(MsgPos { offset, index }))
    }
}
