//! What the Pulsar client procedures reach in the world around them: the
//! coordinators, the brokers, the client's timers, and their settings.

use crate::common::RpcError;
use crate::pulsar::buffer::{AppendError, Delivery, ReadMode};
use crate::pulsar::coordinator::TcError;
use crate::pulsar::subscription::{AckError, SubscribeError};
use crate::pulsar::types::{
    ConsumerRef, Message, Participant, Partition, ProducerRef, SubscriptionType, TxnAction, TxnId,
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
        /// How the consumer shares the subscription (it attaches with it).
        #[serde(default)]
        kind: SubscriptionType,
    },
    /// The consumer closes: the dispatcher detaches it and takes back
    /// what it holds (they go to the subscription's other consumers).
    Close {
        /// The subscription's name.
        subscription: String,
        /// The consumer closing.
        consumer: ConsumerRef,
    },
    /// Acknowledge a message on a subscription.
    Ack {
        /// The subscription's name.
        subscription: String,
        /// The message's (entry's) offset.
        offset: u64,
        /// Inside this transaction, if any.
        txn: Option<TxnId>,
        /// The message's index in a batch entry (a batch-index ack);
        /// `None`: every message of the entry.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        index: Option<u32>,
        /// Acknowledge every message up to and including this one.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cumulative: bool,
        /// How the acking consumer shares the subscription.
        #[serde(default, skip_serializing_if = "SubscriptionType::is_shared")]
        kind: SubscriptionType,
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
    /// The read was refused: the consumer may not attach.
    ReadRefused(SubscribeError),
    /// The consumer is closed.
    Closed,
}

/// Client-side settings. A missing field takes its default (the
/// documented one: `txn_timeout_ms` 1000, `retries` 3, `retry_backoff_ms`
/// 50), whichever other fields are given; unknown ones are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PulsarClientConfig {
    /// The transaction timeout asked for at open (Pulsar's client default
    /// is 3 hours; simulated runs need seconds).
    pub txn_timeout_ms: u64,
    /// How many times a request is retried after no answer: register,
    /// ack and end (idempotent), and send (resent with its sequence id,
    /// which the brokers' producer deduplication recognises).
    pub retries: u32,
    /// Pause between retries.
    pub retry_backoff_ms: u64,
}

impl Default for PulsarClientConfig {
    fn default() -> Self {
        PulsarClientConfig {
            txn_timeout_ms: 1_000,
            retries: 3,
            retry_backoff_ms: 50,
        }
    }
}

/// The world a Pulsar client's procedures reach: their settings, the
/// client's producer and consumer, the coordinators and brokers, and the
/// client's timers. Futures are `Send` so the simulator can spawn client
/// tasks. What the procedures record is the client's [`super::PulsarLedger`].
pub trait PulsarTransport: Send + Sync {
    /// Client-side settings.
    fn config(&self) -> &PulsarClientConfig;
    /// This client's producer session.
    fn producer(&self) -> ProducerRef;
    /// The sequence id of this producer's next message: one more than the
    /// last one handed out (each message gets its own; a resend keeps it).
    fn next_sequence_id(&self) -> u64;
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
}

#[cfg(test)]
mod tests {
    use super::PulsarClientConfig;

    /// The documented defaults (`docs/scenario-format.md`, the `pulsar`
    /// section's `client` row).
    const DOCUMENTED: PulsarClientConfig = PulsarClientConfig {
        txn_timeout_ms: 1_000,
        retries: 3,
        retry_backoff_ms: 50,
    };

    fn parse(text: &str) -> PulsarClientConfig {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn the_default_is_the_documented_one() {
        assert_eq!(PulsarClientConfig::default(), DOCUMENTED);
        assert_eq!(parse("{}"), DOCUMENTED);
    }

    /// Each field given alone keeps the documented default of the others.
    #[test]
    fn a_partial_object_keeps_the_documented_default_of_every_missing_field() {
        let with = |f: fn(&mut PulsarClientConfig)| {
            let mut c = DOCUMENTED;
            f(&mut c);
            c
        };
        assert_eq!(
            parse(r#"{"txn_timeout_ms": 7}"#),
            with(|c| c.txn_timeout_ms = 7)
        );
        assert_eq!(parse(r#"{"retries": 7}"#), with(|c| c.retries = 7));
        assert_eq!(
            parse(r#"{"retry_backoff_ms": 7}"#),
            with(|c| c.retry_backoff_ms = 7)
        );
    }

    #[test]
    fn an_unknown_field_is_refused_by_name() {
        let e = serde_json::from_str::<PulsarClientConfig>(r#"{"retry": 1}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `retry`"), "{e}");
    }
}
