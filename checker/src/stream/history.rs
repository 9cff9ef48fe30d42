//! The `percsim-stream-history/1` document as Rust types (specified in
//! `docs/history-format.md`, section "Stream histories").

use crate::Outcome;
use serde::{Deserialize, Serialize};

/// The `format` tag of a stream history.
pub const STREAM_FORMAT: &str = "percsim-stream-history/1";

/// A whole stream history: what clients did and observed, and what the
/// brokers' durable logs and subscriptions hold at the end of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamHistory {
    /// Exactly [`STREAM_FORMAT`].
    pub format: String,
    /// The seed of the run, informational.
    #[serde(default)]
    pub seed: u64,
    /// How the producer describes the run, informational.
    #[serde(default)]
    pub scenario: serde_json::Value,
    /// The subscriptions the run created and what they promise.
    #[serde(default)]
    pub subscriptions: Vec<SubscriptionDecl>,
    /// Every transaction any client began, in the order begun.
    pub transactions: Vec<StreamTxn>,
    /// Every send, receive and acknowledgment, in time order.
    pub ops: Vec<StreamOp>,
    /// The brokers' durable state after the healed phase.
    pub final_state: StreamFinalState,
    /// Fault, cluster and protocol events (kills, restarts, ownership
    /// moves, ...) in time order, as the transaction format has them: for
    /// context, never judged by the safety rules (the liveness rule reads
    /// the thresholds, the kills, the faults and the heal). Absent in files written before it
    /// existed, and left out when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<crate::Event>,
}

/// A subscription: a named cursor over every partition of one topic,
/// starting at the earliest message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscriptionDecl {
    /// Unique within the history.
    pub name: String,
    /// The topic it follows.
    pub topic: String,
    /// Each message is to be processed exactly once (a transactional
    /// consume-transform-produce processor consumes it).
    #[serde(default)]
    pub exactly_once: bool,
    /// Its consumers kept receiving until the end of the healed phase, so
    /// every committed message of its topic should have reached one of them.
    #[serde(default)]
    pub drained: bool,
}

/// One transaction, as its client saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamTxn {
    /// Unique within the history; ops and log entries name it.
    pub id: u64,
    /// The system's own name for it (a Pulsar TxnID such as `"(0,17)"`), shown in explanations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The client that ran it.
    pub client: u64,
    /// When the client asked for it.
    pub invoke_ns: u64,
    /// When the client asked to commit it; null if it never did.
    #[serde(default)]
    pub commit_request_ns: Option<u64>,
    /// When the client learnt the outcome; null if it never did.
    #[serde(default)]
    pub complete_ns: Option<u64>,
    /// What the client was told.
    pub outcome: Outcome,
    /// Why it aborted, informational.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_reason: Option<String>,
    /// What the coordinator decided on its own, observed at the coordinator
    /// rather than by the client (a timeout abort); absent if nothing was
    /// recorded there. `outcome` stays what the client was told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinator: Option<CoordinatorDecision>,
    /// When the coordinator's log durably held its decision to commit
    /// (Pulsar's COMMITTING, Kafka's PrepareCommit), observed at the
    /// coordinator; absent if not recorded. From then on the transaction
    /// must commit: a coordinator that recovers the log finishes the commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_logged_ns: Option<u64>,
    /// When the coordinator's log durably held its decision to abort
    /// (Pulsar's ABORTING, on the client's request or a timeout), observed
    /// at the coordinator; absent if not recorded. From then on the
    /// transaction is no longer open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_logged_ns: Option<u64>,
    /// The timeout the client asked for when it opened the transaction,
    /// observed at the coordinator; absent if not recorded (then the
    /// `txn_timeout_ms` of the history's `liveness_thresholds` event is its
    /// timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// An outcome a transaction coordinator decided and the history recorded at
/// the coordinator (Pulsar's timeout abort: the client may never hear of
/// it). The checker takes it as a claim to check against the partition
/// logs' markers, never as a fact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoordinatorDecision {
    /// `"committed"` or `"aborted"` (never `"unknown"`).
    pub outcome: Outcome,
    /// When the coordinator decided (its decision was durable).
    pub t_ns: u64,
    /// Why, informational (`"timeout"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One client operation, tagged by `f`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "f", rename_all = "snake_case")]
pub enum StreamOp {
    /// A producer sent a message.
    Send(SendOp),
    /// A consumer received a message.
    Receive(ReceiveOp),
    /// A consumer acknowledged a message on its subscription.
    Ack(AckOp),
}

/// What the client was told about a send or an acknowledgment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpResult {
    /// The broker confirmed it.
    Ok,
    /// The broker refused it: it did not happen.
    Failed,
    /// The client could not tell.
    Unknown,
}

/// Which input message an output message was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// The subscription the input was consumed through.
    pub subscription: String,
    /// The input message.
    pub message: String,
}

/// A send of one message to one partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendOp {
    /// The producing client.
    pub client: u64,
    /// When the send was issued.
    pub t_ns: u64,
    /// The transaction it belongs to; null for a plain send.
    #[serde(default)]
    pub txn: Option<u64>,
    /// The topic partition.
    pub partition: String,
    /// The message, unique within the history.
    pub message: String,
    /// What the producer was told.
    pub result: OpResult,
    /// The offset the broker returned, when it did.
    #[serde(default)]
    pub offset: Option<u64>,
    /// For a processor's output, the input it was made from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// The producer (a client's producer session, Pulsar's producer name)
    /// that sent it: successive sends are ordered per producer and
    /// partition. Absent: the client's one producer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer: Option<String>,
}

/// What a consumer may be shown of open and aborted transactions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConsumerIsolation {
    /// Only messages of committed transactions, never past an open one
    /// (Kafka's `read_committed`, Pulsar's transactional consumers).
    #[default]
    ReadCommitted,
    /// Every message as soon as it is in the log, open or aborted
    /// transactions' included (Kafka's `read_uncommitted`): the
    /// `aborted_read` and `read_uncommitted` rules do not judge it.
    ReadUncommitted,
}

impl ConsumerIsolation {
    /// Whether this is the default, [`ConsumerIsolation::ReadCommitted`].
    pub fn is_read_committed(&self) -> bool {
        *self == ConsumerIsolation::ReadCommitted
    }
}

/// A message delivered to a consumer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiveOp {
    /// The receiving client.
    pub client: u64,
    /// The consumer session: a new name whenever the client re-creates its
    /// consumer, seeks or asks for redelivery.
    pub consumer: String,
    /// The subscription it consumes through.
    pub subscription: String,
    /// The topic partition.
    pub partition: String,
    /// The offset the message was delivered with.
    pub offset: u64,
    /// The message delivered.
    pub message: String,
    /// When it was delivered.
    pub t_ns: u64,
    /// The consumer's isolation level; absent: `read_committed`.
    #[serde(default, skip_serializing_if = "ConsumerIsolation::is_read_committed")]
    pub isolation: ConsumerIsolation,
}

/// An acknowledgment of one message on one subscription.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckOp {
    /// The acknowledging client.
    pub client: u64,
    /// The subscription.
    pub subscription: String,
    /// The topic partition of the message.
    pub partition: String,
    /// The offset of the message.
    pub offset: u64,
    /// The message acknowledged.
    pub message: String,
    /// When the acknowledgment was issued.
    pub t_ns: u64,
    /// The transaction it belongs to; null for a plain acknowledgment.
    #[serde(default)]
    pub txn: Option<u64>,
    /// What the consumer was told.
    pub result: OpResult,
    /// A cumulative acknowledgment: of every offset of the partition up to
    /// and including `offset`, not only of `offset`. Absent: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cumulative: bool,
}

/// The brokers' durable state after the healed phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamFinalState {
    /// Every topic partition's log.
    pub partitions: Vec<PartitionLog>,
    /// Every subscription's acknowledged positions, per partition.
    #[serde(default)]
    pub acks: Vec<AckedPositions>,
}

/// One topic partition and its log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionLog {
    /// Unique within the history, e.g. `in-0`.
    pub name: String,
    /// The topic it belongs to.
    pub topic: String,
    /// The log in offset order: messages and transaction markers.
    pub entries: Vec<LogEntry>,
}

/// A transaction marker's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkerKind {
    /// The transaction's messages before it in this partition are visible.
    Commit,
    /// The transaction's messages before it in this partition are discarded.
    Abort,
}

/// One log entry: a message (with `message`) or a marker (with `marker`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEntry {
    /// Its offset, increasing along the log.
    pub offset: u64,
    /// The message, for a message entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The marker's decision, for a marker entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker: Option<MarkerKind>,
    /// The transaction the broker recorded for it (required for a marker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn: Option<u64>,
}

/// A subscription's durable acknowledgments on one partition: every offset
/// below `acked_below` (Pulsar's mark-delete position plus one) and each
/// offset in `offsets`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckedPositions {
    /// The subscription.
    pub subscription: String,
    /// The topic partition.
    pub partition: String,
    /// Every offset below this one is acknowledged.
    #[serde(default)]
    pub acked_below: u64,
    /// Further acknowledged offsets, individually.
    #[serde(default)]
    pub offsets: Vec<u64>,
}
