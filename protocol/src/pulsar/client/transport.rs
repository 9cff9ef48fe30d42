//! What the Pulsar client procedures need from the world around them.

use crate::client::RpcError;
use crate::pulsar::buffer::{AppendError, Delivery, ReadMode};
use crate::pulsar::coordinator::TcError;
use crate::pulsar::subscription::AckError;
use crate::pulsar::types::{
    ConsumerRef, Message, Participant, Partition, ProducerRef, SubscriptionKey, TxnAction, TxnId,
};
use serde::{Deserialize, Serialize};
use std::future::Future;

/// A request to a transaction coordinator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TcRequest {
    /// Open a transaction (the transport picks the coordinator, as
    /// Pulsar's client does through the lookup of
    /// `transaction_coordinator_assign`).
    Open {
        /// The client's producer session.
        producer: ProducerRef,
        /// The transaction's timeout.
        timeout_ms: u64,
    },
    /// Register a participant (goes to `txn.coordinator`).
    AddParticipant {
        /// The transaction.
        txn: TxnId,
        /// The partition or subscription.
        participant: Participant,
    },
    /// Commit or abort (goes to `txn.coordinator`).
    End {
        /// The transaction.
        txn: TxnId,
        /// Commit or abort.
        action: TxnAction,
    },
}

/// A coordinator's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TcReply {
    /// The transaction is open (OPEN is durable).
    Opened(TxnId),
    /// The participant is registered (durably).
    Added,
    /// The transaction ended this way.
    Ended(TxnAction),
    /// The coordinator refused.
    Refused(TcError),
}

/// A request to the broker owning a partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum BrokerRequest {
    /// Append a message to the partition.
    Send(Message),
    /// Read for a subscription.
    Read {
        /// The subscription's name.
        subscription: String,
        /// The consumer reading (the dispatcher hands it what no other
        /// consumer holds).
        consumer: ConsumerRef,
        /// From this offset.
        from: u64,
        /// Dispatch or replay.
        mode: ReadMode,
        /// At most this many messages.
        max: usize,
    },
    /// Acknowledge a message on a subscription.
    Ack {
        /// The subscription's name.
        subscription: String,
        /// The message's offset.
        offset: u64,
        /// Inside this transaction, if any.
        txn: Option<TxnId>,
    },
}

/// A broker's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum BrokerReply {
    /// The message is durable at this offset.
    Sent(u64),
    /// The message was refused.
    SendRefused(AppendError),
    /// Messages read.
    Delivery(Delivery),
    /// The ack is durable (or was a no-op).
    Acked,
    /// The ack was refused.
    AckRefused(AckError),
}

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

/// Client-side settings. Missing fields take their defaults; unknown ones
/// are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PulsarClientConfig {
    /// The transaction timeout asked for at open (Pulsar's client default
    /// is 3 hours; simulated runs need seconds).
    pub txn_timeout_ms: u64,
    /// How many times an idempotent request (register, ack, end) is retried
    /// after no answer.
    pub retries: u32,
    /// Pause between retries.
    pub retry_backoff_ms: u64,
}

impl Default for PulsarClientConfig {
    fn default() -> Self {
        PulsarClientConfig {
            txn_timeout_ms: 5_000,
            retries: 3,
            retry_backoff_ms: 50,
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
        /// Where it landed.
        offset: Option<u64>,
    },
    /// A consumer received a message.
    Received {
        /// The subscription it was read for.
        subscription: SubscriptionKey,
        /// Its offset.
        offset: u64,
        /// The message.
        message: Message,
        /// Whether it came from a replay (redelivery).
        replay: bool,
    },
    /// An ack was accepted.
    Acked {
        /// The subscription.
        subscription: SubscriptionKey,
        /// The message's offset.
        offset: u64,
        /// The transaction it is pending in, if any.
        txn: Option<TxnId>,
    },
    /// The client learnt a transaction's outcome.
    Finished {
        /// The transaction.
        txn: TxnId,
        /// Its outcome.
        outcome: super::TxnOutcome,
    },
}

/// The world as a Pulsar client sees it. Futures are `Send` so the
/// simulator can spawn client tasks.
pub trait PulsarTransport: Send + Sync {
    /// Client-side settings.
    fn config(&self) -> &PulsarClientConfig;
    /// This client's producer session.
    fn producer(&self) -> ProducerRef;
    /// This client's consumer, as brokers' dispatchers know it.
    fn consumer(&self) -> ConsumerRef;
    /// Send a request to a coordinator (routed as [`TcRequest`] says).
    fn coordinator(&self, req: TcRequest)
    -> impl Future<Output = Result<TcReply, RpcError>> + Send;
    /// Send a request to the broker owning `partition` now.
    fn broker(
        &self,
        partition: &Partition,
        req: BrokerRequest,
    ) -> impl Future<Output = Result<BrokerReply, RpcError>> + Send;
    /// Sleep on this client's timers.
    fn sleep_ms(&self, ms: u64) -> impl Future<Output = ()> + Send;
    /// The client reached `point` (of transaction `txn`, if one is open); a
    /// fault schedule may stop it here.
    fn reached(&self, txn: Option<TxnId>, point: ClientPoint) -> impl Future<Output = ()> + Send;
    /// Record what happened.
    fn event(&self, event: ClientEvent);
}
