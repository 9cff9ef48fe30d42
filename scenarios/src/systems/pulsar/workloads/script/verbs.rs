//! The words of a Pulsar script: its verbs, counts, wait conditions,
//! message rules and points, as a script file spells them.

use crate::script::{Countable, MsgFate, MsgLeg, SystemVerb};
use percsim_protocol::pulsar::client::AbortReason;
use percsim_protocol::pulsar::points::ServerPoint;
use percsim_sim::{Counter, PulsarCounter, PulsarEvent};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

fn is_false(b: &bool) -> bool {
    !*b
}

/// How a consumer shares its subscription (Pulsar's subscription types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SubscriptionType {
    /// Every consumer gets messages; each message goes to one of them.
    #[default]
    Shared,
    /// One consumer only: the broker refuses another while it is attached.
    Exclusive,
    /// One active consumer (the first attached), the others on standby
    /// until it closes.
    Failover,
    /// Messages spread by key (not modelled: refused).
    KeyShared,
}

impl SubscriptionType {
    /// The model's type, if it has it.
    pub fn modelled(self) -> Option<percsim_protocol::pulsar::types::SubscriptionType> {
        use percsim_protocol::pulsar::types::SubscriptionType as Model;
        match self {
            SubscriptionType::Shared => Some(Model::Shared),
            SubscriptionType::Exclusive => Some(Model::Exclusive),
            SubscriptionType::Failover => Some(Model::Failover),
            SubscriptionType::KeyShared => None,
        }
    }
}

/// What a `commit` step expects the client to be told: the engine's
/// outcome ([`crate::script::Outcome`]; `aborted` with `reason`, if given).
pub use crate::script::Outcome as Told;

/// What a `send` or `ack` step expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Answered {
    /// The server accepted it.
    #[default]
    Accepted,
    /// The server refused it, or no answer came.
    Failed,
}

/// A coordinator's record of a transaction, as `assert_txn` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TxnRecord {
    /// Not in the coordinator's log.
    Absent,
    /// OPEN.
    Open,
    /// COMMITTING.
    Committing,
    /// ABORTING.
    Aborting,
    /// COMMITTED.
    Committed,
    /// ABORTED.
    Aborted,
}

fn default_quiet_ms() -> u64 {
    100
}

fn default_within_ms() -> u64 {
    2_000
}

/// A `recv` step's expectation (at most one of them; none: receive for
/// `quiet_ms` and leave the judgment to the stream checker).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RecvExpect {
    /// Exactly these values, in this order, then nothing for `quiet_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Vec<String>>,
    /// These values in any order (a value may come more than once: a
    /// redelivery), and nothing else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_set: Option<Vec<String>>,
    /// Nothing for `quiet_ms`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub expect_none: bool,
    /// The broker refuses the consumer (another consumer holds the
    /// subscription exclusively, or its consumers share it another way).
    #[serde(default, skip_serializing_if = "is_false")]
    pub expect_refused: bool,
}

/// Pulsar's verbs. An actor (a producer or a consumer, named by `actor`,
/// the engine's thread) runs its steps in order on its client's node, so
/// the client's crash ends it; transactions are named by `txn` and begun
/// by an actor, which sends, acknowledges and ends them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case", deny_unknown_fields)]
pub enum PulsarVerb {
    /// Declare a producer on client `client`.
    Producer {
        /// The actor's name.
        actor: String,
        /// The client it runs on.
        client: usize,
    },
    /// Declare a consumer of `subscription` on partition `partition`, on
    /// client `client`.
    Consumer {
        /// The actor's name.
        actor: String,
        /// The client it runs on.
        client: usize,
        /// The partition of the script's topic.
        partition: u32,
        /// The subscription's name.
        subscription: String,
        /// How it shares the subscription (`key_shared` is not modelled).
        #[serde(default)]
        subscription_type: SubscriptionType,
        /// How many messages one read fetches at most (default 1000).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        receiver_queue: Option<usize>,
    },
    /// The actor begins transaction `txn`.
    Begin {
        /// The actor.
        actor: String,
        /// The transaction's name (unique in the script).
        txn: String,
        /// Its timeout (else the client's configured one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// The actor sends `value` to partition `partition`, in `txn` if given.
    Send {
        /// The actor.
        actor: String,
        /// The partition of the script's topic.
        partition: u32,
        /// The message's content.
        value: String,
        /// Further messages sent with it as one batch entry (indices 1 and
        /// up; `value` is index 0).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        batch: Vec<String>,
        /// The transaction (else a plain send).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        txn: Option<String>,
        /// What the broker must answer (default: accepted).
        #[serde(default)]
        expect: Answered,
        /// The offset its entry must land at.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect_offset: Option<u64>,
    },
    /// The consumer receives until its expectation is met or `within_ms`
    /// passes.
    Recv {
        /// The consumer.
        actor: String,
        /// What it must receive.
        #[serde(flatten)]
        expect: RecvExpect,
        /// How long nothing more may come (for `expect` and `expect_none`).
        #[serde(default = "default_quiet_ms")]
        quiet_ms: u64,
        /// How long to wait for the expected messages.
        #[serde(default = "default_within_ms")]
        within_ms: u64,
    },
    /// The consumer acknowledges the message it received with `value` (one
    /// message of a batch: a batch-index ack), in `txn` if given.
    Ack {
        /// The consumer.
        actor: String,
        /// The received message's value.
        value: String,
        /// The transaction (else a plain ack).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        txn: Option<String>,
        /// Acknowledge every message of the partition up to and including
        /// it (Exclusive and Failover consumers only).
        #[serde(default, skip_serializing_if = "is_false")]
        cumulative: bool,
        /// What the broker must answer (default: accepted).
        #[serde(default)]
        expect: Answered,
    },
    /// The consumer asks for its unacknowledged messages again: from now
    /// on a read that finds nothing new replays them.
    Redeliver {
        /// The consumer.
        actor: String,
    },
    /// The consumer reconnects on a new session from the partition's
    /// start; the dispatcher takes back what its old session held.
    Reopen {
        /// The consumer.
        actor: String,
    },
    /// Close the consumer: the broker detaches it and hands what it held
    /// to the subscription's other consumers; it receives nothing more
    /// until `reopen`.
    Close {
        /// The consumer.
        actor: String,
    },
    /// The actor asks the coordinator to commit `txn`.
    Commit {
        /// The actor.
        actor: String,
        /// The transaction.
        txn: String,
        /// What the client must be told.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect: Option<Told>,
        /// With `aborted`: why.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<AbortReason>,
        /// Go on with the next step without waiting for this one.
        #[serde(default, skip_serializing_if = "is_false")]
        no_wait: bool,
    },
    /// The actor aborts `txn`.
    Abort {
        /// The actor.
        actor: String,
        /// The transaction.
        txn: String,
        /// Go on with the next step without waiting for this one.
        #[serde(default, skip_serializing_if = "is_false")]
        no_wait: bool,
    },
    /// Unload partition `partition` of the script's topic (with its
    /// subscriptions), or with `coordinator` the transaction coordinator,
    /// from the broker that owns it, with no process dying: the metadata
    /// service places it again at the next epoch, and its new owner (maybe
    /// the same broker) recovers the buffer and pending acks from the logs.
    Unload {
        /// The partition to unload.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<u32>,
        /// Unload the transaction coordinator instead.
        #[serde(default, skip_serializing_if = "is_false")]
        coordinator: bool,
    },
    /// A partition's durable log now: each entry a message's value or a
    /// marker, `<commit T1>` / `<abort T1>`.
    AssertLog {
        /// The partition of the script's topic.
        partition: u32,
        /// Its entries, by offset.
        entries: Vec<String>,
    },
    /// A subscription's durable state now.
    AssertSubscription {
        /// The partition of the script's topic.
        partition: u32,
        /// The subscription.
        subscription: String,
        /// The mark-delete position: the first offset not acknowledged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mark_delete: Option<u64>,
        /// Every offset acknowledged for good.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        acked: Option<Vec<u64>>,
        /// The pending acks of each transaction not ended.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pending: Option<BTreeMap<String, Vec<u64>>>,
    },
    /// The coordinator's durable record of `txn` now.
    AssertTxn {
        /// The transaction.
        txn: String,
        /// Its state.
        state: TxnRecord,
    },
}

/// The do-words of [`PulsarVerb`].
pub const VERBS: &[&str] = &[
    "producer",
    "consumer",
    "begin",
    "send",
    "recv",
    "ack",
    "redeliver",
    "reopen",
    "close",
    "commit",
    "abort",
    "unload",
    "assert_log",
    "assert_subscription",
    "assert_txn",
];

impl PulsarVerb {
    /// The actor it runs on, if any.
    pub fn actor(&self) -> Option<&str> {
        match self {
            PulsarVerb::Producer { actor, .. }
            | PulsarVerb::Consumer { actor, .. }
            | PulsarVerb::Begin { actor, .. }
            | PulsarVerb::Send { actor, .. }
            | PulsarVerb::Recv { actor, .. }
            | PulsarVerb::Ack { actor, .. }
            | PulsarVerb::Redeliver { actor }
            | PulsarVerb::Reopen { actor }
            | PulsarVerb::Close { actor }
            | PulsarVerb::Commit { actor, .. }
            | PulsarVerb::Abort { actor, .. } => Some(actor),
            _ => None,
        }
    }
}

impl SystemVerb for PulsarVerb {
    fn thread(&self) -> Option<&str> {
        self.actor()
    }

    fn opens(&self) -> Option<usize> {
        match self {
            PulsarVerb::Producer { client, .. } | PulsarVerb::Consumer { client, .. } => {
                Some(*client)
            }
            _ => None,
        }
    }

    fn no_wait(&self) -> bool {
        match self {
            PulsarVerb::Commit { no_wait, .. } | PulsarVerb::Abort { no_wait, .. } => *no_wait,
            _ => false,
        }
    }

    fn is_assertion(&self) -> bool {
        matches!(
            self,
            PulsarVerb::AssertLog { .. }
                | PulsarVerb::AssertSubscription { .. }
                | PulsarVerb::AssertTxn { .. }
        )
    }
}

percsim_sim::identities! {
    /// What a Pulsar script's `assert_count` counts.
    pub enum PulsarCount {
        /// The coordinator aborted a transaction past its timeout.
        TxnTimedOut => ("txn_timed_out", "the coordinator aborted a transaction past its timeout"),
        /// A broker answered that it does not own a resource.
        NotOwner => ("not_owner", "a broker answered that it does not own a resource"),
        /// A server was killed or frozen at a named point.
        CrashAtPoint => ("crash_at_point", "a server was killed or frozen at a named point"),
        /// A message rule acted on a message.
        Intercepted => ("intercepted", "a message rule dropped, delayed, held or duplicated a message"),
        /// A broker took over a resource: it fenced the logs and recovered from them.
        OwnershipTaken => ("ownership_taken", "a broker fenced a resource's logs and recovered from them"),
        /// A driver unloaded a resource from its owner.
        Unloaded => ("unloaded", "a resource was unloaded from its owner with no broker dying"),
        /// A broker or the coordinator answered that it is still recovering.
        NotReady => ("not_ready", "a broker or the coordinator answered that it is still recovering"),
        /// A partition's transaction buffer wrote a snapshot.
        SnapshotWritten => ("snapshot_written", "a transaction buffer wrote a snapshot"),
        /// Log entries replayed by recoveries.
        RecoveryReplayed => ("recovery_replayed", "log entries replayed by recoveries"),
    }
}

impl Serialize for PulsarCount {
    fn serialize<Z: serde::Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for PulsarCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        PulsarCount::from_name(&name).ok_or_else(|| {
            let known: Vec<&str> = PulsarCount::ALL.iter().map(|c| c.name()).collect();
            serde::de::Error::custom(format!(
                "unknown count {name:?} (known: {})",
                known.join(", ")
            ))
        })
    }
}

impl Countable for PulsarCount {
    fn counter(self) -> String {
        match self {
            PulsarCount::TxnTimedOut => PulsarCounter::TxnTimedOut.name().into(),
            PulsarCount::NotOwner => PulsarCounter::NotOwner.name().into(),
            PulsarCount::CrashAtPoint => PulsarEvent::CrashAtPoint.counter(),
            PulsarCount::Intercepted => Counter::NetIntercepted.name().into(),
            PulsarCount::OwnershipTaken => PulsarEvent::OwnershipTaken.counter(),
            PulsarCount::Unloaded => PulsarEvent::Unloaded.counter(),
            PulsarCount::NotReady => PulsarCounter::NotReady.name().into(),
            PulsarCount::SnapshotWritten => PulsarCounter::SnapshotWritten.name().into(),
            PulsarCount::RecoveryReplayed => PulsarCounter::RecoveryReplayed.name().into(),
        }
    }
}

/// Pulsar's conditions of a `wait` step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PulsarWait {
    /// The transaction's client was told its outcome.
    TxnFinished(String),
    /// The coordinator's log holds the transaction in this state.
    TxnState {
        /// The transaction.
        txn: String,
        /// The state.
        state: TxnRecord,
    },
}

/// The calls a message rule can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PulsarCall {
    /// A client opens a transaction.
    Open,
    /// A client registers a partition or subscription with its transaction.
    AddParticipant,
    /// A client asks for a commit or an abort.
    EndTxn,
    /// A client sends a message.
    Send,
    /// A client acknowledges a message.
    Ack,
    /// A client reads.
    Read,
    /// The coordinator sends a marker to a partition or subscription.
    Marker,
}

impl PulsarCall {
    /// The call's tag on the wire.
    pub fn tag(self) -> &'static str {
        use percsim_sim::pulsar_calls as c;
        match self {
            PulsarCall::Open => c::OPEN,
            PulsarCall::AddParticipant => c::ADD_PARTICIPANT,
            PulsarCall::EndTxn => c::END_TXN,
            PulsarCall::Send => c::SEND,
            PulsarCall::Ack => c::ACK,
            PulsarCall::Read => c::READ,
            PulsarCall::Marker => c::MARKER,
        }
    }
}

fn request() -> MsgLeg {
    MsgLeg::Request
}

/// An `intercept` step of a Pulsar script: messages of one call, for one
/// transaction, partition or client, or any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PulsarRule {
    /// The rule's name, for its `release` step.
    pub name: String,
    /// The call it matches.
    pub call: PulsarCall,
    /// The transaction whose messages it matches (begun before the rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn: Option<String>,
    /// The partition whose messages it matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<u32>,
    /// The client whose messages it matches (not for markers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<usize>,
    /// Request (the default) or reply.
    #[serde(default = "request")]
    pub leg: MsgLeg,
    /// What happens to a matched message.
    pub fate: MsgFate,
    /// How many messages it acts on at most (else every one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
}

crate::intercept_rule!(PulsarRule);

/// Where `stop_at` stops a broker: a named point, for one transaction
/// and one partition if given (`"after_end_logged"` or
/// `{"at": "after_marker_logged", "txn": "T1", "partition": 1}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PulsarPoint {
    /// The next time any transaction reaches it.
    Any(ServerPoint),
    /// The next time one transaction (or partition) reaches it.
    Targeted {
        /// The point.
        at: ServerPoint,
        /// The transaction (begun before the `stop_at` step).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        txn: Option<String>,
        /// The partition of the script's topic.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<u32>,
    },
}

impl PulsarPoint {
    /// The point, its transaction and its partition.
    pub fn parts(&self) -> (ServerPoint, Option<&str>, Option<u32>) {
        match self {
            PulsarPoint::Any(p) => (*p, None, None),
            PulsarPoint::Targeted { at, txn, partition } => (*at, txn.as_deref(), *partition),
        }
    }
}

/// What `stop_at` does to a broker at its point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PulsarPointFault {
    /// Kill it; restart it this long after (else at the healed phase).
    Kill {
        /// The restart delay, in simulated ms.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        restart_after_ms: Option<u64>,
    },
    /// Freeze it this long.
    Pause {
        /// How long, in simulated ms.
        ms: u64,
    },
}
