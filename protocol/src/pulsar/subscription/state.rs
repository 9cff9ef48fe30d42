//! A subscription's durable records and the acknowledgment state built
//! from them.

use crate::pulsar::types::{ConsumerRef, SubscriptionType, TxnAction, TxnId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One durable record of a subscription. Pulsar keeps plain acks in the
/// cursor's ledger and transactional ones in a pending-ack log (reference
/// text, "Pending Acknowledge State": it relies on the cursor log so a new
/// broker recovers the ack state); the model keeps both in one log.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubRecord {
    /// A plain (non-transactional) acknowledgment.
    Ack {
        /// The message's offset.
        offset: u64,
    },
    /// An acknowledgment inside a transaction, pending until it ends.
    PendingAck {
        /// The message's offset.
        offset: u64,
        /// The transaction.
        txn: TxnId,
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
    /// No message has this offset in the partition.
    #[error("no message at offset {0}")]
    NoSuchMessage(u64),
}

/// The acknowledgment state of one subscription: acked messages, pending
/// acks by transaction, and the transactions that ended here; and, in
/// memory only, the dispatcher's: which consumer holds each message handed
/// out and not yet acknowledged, and each consumer name's latest session
/// (see [`super::dispatch`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subscription {
    acked: BTreeSet<u64>,
    pending: BTreeMap<u64, TxnId>,
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
    /// Whether the message at `offset` is acknowledged for good.
    pub fn is_acked(&self, offset: u64) -> bool {
        self.acked.contains(&offset)
    }

    /// The transaction holding a pending ack on `offset`, if any.
    pub fn pending_txn(&self, offset: u64) -> Option<TxnId> {
        self.pending.get(&offset).copied()
    }

    /// The offsets `txn` holds pending here, in order.
    pub fn pending_of(&self, txn: TxnId) -> impl Iterator<Item = u64> + '_ {
        self.pending
            .iter()
            .filter(move |(_, t)| **t == txn)
            .map(|(o, _)| *o)
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

    /// Whether the message at `offset` may be handed to `reader`: it is not
    /// acknowledged, not pending in a transaction, and no other consumer
    /// holds it (an earlier session of the reader's own name does not
    /// count: reading on a new session closes the old one).
    pub fn available_to(&self, offset: u64, reader: &ConsumerRef) -> bool {
        if self.is_acked(offset) || self.pending_txn(offset).is_some() || self.is_closed(reader) {
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
            SubRecord::Ack { offset } => {
                self.acked.insert(*offset);
                self.dispatched.remove(offset);
            }
            SubRecord::PendingAck { offset, txn } => {
                // Held by the transaction now: its abort releases the
                // message to every consumer (Pulsar redelivers it).
                self.pending.insert(*offset, *txn);
                self.dispatched.remove(offset);
            }
            SubRecord::End { txn, action } => {
                let mine: Vec<u64> = self.pending_of(*txn).collect();
                for offset in mine {
                    self.pending.remove(&offset);
                    if *action == TxnAction::Commit {
                        self.acked.insert(offset);
                    }
                }
                self.ended.insert(*txn, *action);
            }
        }
    }
}
