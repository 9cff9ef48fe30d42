//! What a Pulsar client records as its procedures run (the history's raw
//! material), and the named points it reaches, where a fault schedule may
//! stop it.

use super::outcome::TxnOutcome;
use super::transport::PulsarTransport;
use crate::pulsar::types::{Message, Partition, SubscriptionKey, TxnId};
use serde::{Deserialize, Serialize};
use std::future::Future;

/// Named points of the client procedures where a fault schedule can stop a
/// client for good (a processor that crashes mid-transaction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientPoint {
    /// The processor received its input; no transaction yet.
    AfterReceive,
    /// Every output is sent inside the transaction; the input is not acked.
    AfterProduce,
    /// The input is pending-acked; commit not asked for.
    AfterAck,
    /// Commit is about to be asked for.
    BeforeCommit,
}

impl ClientPoint {
    /// Every one, in a processor's order.
    pub const ALL: [ClientPoint; 4] = [
        ClientPoint::AfterReceive,
        ClientPoint::AfterProduce,
        ClientPoint::AfterAck,
        ClientPoint::BeforeCommit,
    ];

    /// Its name, as events and counters spell it.
    pub fn name(self) -> &'static str {
        match self {
            ClientPoint::AfterReceive => "after_receive",
            ClientPoint::AfterProduce => "after_produce",
            ClientPoint::AfterAck => "after_ack",
            ClientPoint::BeforeCommit => "before_commit",
        }
    }

    /// What a processor killed here leaves behind, in a sentence.
    pub fn describe(self) -> &'static str {
        match self {
            ClientPoint::AfterReceive => "a processor holds its input, no transaction is open",
            ClientPoint::AfterProduce => {
                "a processor's outputs are sent in its open transaction, its input not acked"
            }
            ClientPoint::AfterAck => {
                "a processor's input is pending-acked in its open transaction, no commit asked"
            }
            ClientPoint::BeforeCommit => "a processor is about to ask for its commit",
        }
    }
}

/// What a client reports, as it happens (the history's raw material).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientEvent {
    /// A transaction was opened.
    Begun {
        /// Its id.
        txn: TxnId,
    },
    /// A send returned (`offset` is `None` if no answer came: the message
    /// may or may not be in the partition).
    Sent {
        /// Its transaction, if any.
        txn: Option<TxnId>,
        /// Where it was sent.
        partition: Partition,
        /// Its content.
        payload: String,
        /// Where it landed (its entry's offset).
        offset: Option<u64>,
        /// Its index in the batch it was sent in (0 if sent alone).
        index: u32,
    },
    /// A consumer received a message.
    Received {
        /// The subscription it was read for.
        subscription: SubscriptionKey,
        /// Its entry's offset.
        offset: u64,
        /// Its index in a batch entry (0 for a message sent alone).
        index: u32,
        /// The message.
        message: Message,
        /// Whether it came from a replay (redelivery).
        replay: bool,
    },
    /// An ack was accepted.
    Acked {
        /// The subscription.
        subscription: SubscriptionKey,
        /// The message's entry offset.
        offset: u64,
        /// The message's index in a batch entry; `None`: every message of
        /// the entry.
        index: Option<u32>,
        /// Every message up to and including it.
        cumulative: bool,
        /// The transaction it is pending in, if any.
        txn: Option<TxnId>,
    },
    /// The client learnt a transaction's outcome.
    Finished {
        /// The transaction.
        txn: TxnId,
        /// Its outcome.
        outcome: TxnOutcome,
    },
}

/// A Pulsar client's bookkeeping, kept apart from its [`PulsarTransport`]:
/// what the procedures report and the points they reach.
pub trait PulsarLedger: Send + Sync {
    /// The client reached `point` (of transaction `txn`, if one is open); a
    /// fault schedule may stop it here.
    fn reached(&self, txn: Option<TxnId>, point: ClientPoint) -> impl Future<Output = ()> + Send;
    /// Record what happened.
    fn event(&self, event: ClientEvent);
}

/// A Pulsar client as its procedures see it: its [`PulsarTransport`] and
/// its [`PulsarLedger`]. Every type with both is one.
pub trait PulsarHost: PulsarTransport + PulsarLedger {}

impl<T: PulsarTransport + PulsarLedger> PulsarHost for T {}
