//! The vocabulary shared by the coordinator, the brokers and the clients.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A transaction's identity: the coordinator that owns it and a sequence
/// number that coordinator never hands out twice, not even across restarts
/// (the sequence is recovered from the transaction log). Pulsar's TxnID is
/// 128 bits, the most significant part the coordinator's partition id and
/// the rest a per-coordinator counter (reference text, "Transaction ID";
/// Pulsar docs, "How transactions work?").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TxnId {
    /// The coordinator's id (its partition of the coordinator topic).
    pub coordinator: u16,
    /// The coordinator's sequence number for this transaction.
    pub seq: u64,
}

impl fmt::Display for TxnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({},{})", self.coordinator, self.seq)
    }
}

/// A producer session as Kafka names it: a producer id and an epoch. Pulsar
/// markers name the transaction by [`TxnId`]; this pair exists so the
/// `marker-by-producer-epoch` ablation can name it the Kafka way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ProducerRef {
    /// The producer's id.
    pub producer_id: u64,
    /// Its epoch (not bumped between transactions, as in the Kafka flaw).
    pub epoch: u32,
}

/// One partition of a topic, owned by one broker at a time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Partition {
    /// The topic's name.
    pub topic: String,
    /// The partition's index in the topic.
    pub index: u32,
}

impl Partition {
    /// Partition `index` of `topic`.
    pub fn new(topic: &str, index: u32) -> Self {
        Partition {
            topic: topic.to_string(),
            index,
        }
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-partition-{}", self.topic, self.index)
    }
}

/// A subscription on one partition (its cursor and pending-ack state live
/// with the partition's owner).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SubscriptionKey {
    /// The partition subscribed to.
    pub partition: Partition,
    /// The subscription's name.
    pub name: String,
}

impl SubscriptionKey {
    /// Subscription `name` on `partition`.
    pub fn new(partition: Partition, name: &str) -> Self {
        SubscriptionKey {
            partition,
            name: name.to_string(),
        }
    }
}

impl fmt::Display for SubscriptionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.partition, self.name)
    }
}

/// How a transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TxnAction {
    /// Make its messages visible and its acks final.
    Commit,
    /// Discard its messages and release its acks.
    Abort,
}

/// A participant of a transaction: a partition it produced to or a
/// subscription it acknowledged on. The coordinator sends each one marker.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Participant {
    /// A partition (its transaction buffer gets the marker).
    Partition(Partition),
    /// A subscription (its pending-ack state gets the marker).
    Subscription(SubscriptionKey),
}

/// The end of a transaction as the coordinator tells one participant
/// (Pulsar's `END_TXN_ON_PARTITION` / `END_TXN_ON_SUBSCRIPTION`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Marker {
    /// The transaction.
    pub txn: TxnId,
    /// The producer session that opened it (used only under the
    /// `marker-by-producer-epoch` ablation).
    pub producer: ProducerRef,
    /// Commit or abort.
    pub action: TxnAction,
    /// Who the marker is for.
    pub to: Participant,
}

/// A message as a producer sends it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Message {
    /// The transaction it belongs to, if any.
    pub txn: Option<TxnId>,
    /// The producer session that sent it.
    pub producer: ProducerRef,
    /// The producer's number for it: one more than its previous message's,
    /// the same on a resend (what the brokers' producer deduplication
    /// keys on, with the producer).
    #[serde(default)]
    pub sequence_id: u64,
    /// Its content (a batch entry's first message: index 0).
    pub payload: String,
    /// The further messages of a batch entry, indices 1 and up: a producer
    /// that batches sends several messages as one log entry, and each
    /// keeps its own identity (entry position and batch index). Empty for
    /// a message sent alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub batch: Vec<String>,
}

impl Message {
    /// How many messages the entry holds (1 unless it is a batch).
    pub fn batch_size(&self) -> u32 {
        1 + self.batch.len() as u32
    }

    /// The content of message `index` of the entry, if it has one.
    pub fn payload_at(&self, index: u32) -> Option<&str> {
        match index {
            0 => Some(&self.payload),
            i => self.batch.get(i as usize - 1).map(String::as_str),
        }
    }

    /// Message `index` of the entry alone (what a consumer gets once its
    /// client has split the batch), if the entry has one.
    pub fn single(&self, index: u32) -> Option<Message> {
        Some(Message {
            payload: self.payload_at(index)?.to_string(),
            batch: Vec::new(),
            ..self.clone()
        })
    }

    /// Where message `index` of this entry sits in its batch: `None` for a
    /// message sent alone.
    pub fn batch_index(&self, index: u32) -> Option<BatchIndex> {
        (self.batch_size() > 1).then_some(BatchIndex {
            index,
            size: self.batch_size(),
        })
    }
}

/// One message's place in a batch entry: its index and the batch's size
/// (Pulsar's `MessageId` batch index and batch size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BatchIndex {
    /// Its index in the batch, from 0.
    pub index: u32,
    /// How many messages the batch holds.
    pub size: u32,
}

/// One message's position: the log entry's offset and its index in the
/// entry (0 for a message sent alone). Ordered as the log is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MsgPos {
    /// The entry's offset in the partition's log.
    pub offset: u64,
    /// The message's index in the entry.
    pub index: u32,
}

/// How the consumers of a subscription share it (Pulsar's subscription
/// types; Key_Shared is not modelled).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum SubscriptionType {
    /// Every consumer gets messages; each message goes to one of them.
    #[default]
    Shared,
    /// One consumer only: another one is refused while it is attached.
    Exclusive,
    /// Many consumers, one active (the first attached): the others get
    /// nothing until it closes.
    Failover,
}

impl SubscriptionType {
    /// Whether it is [`SubscriptionType::Shared`] (the default).
    pub fn is_shared(&self) -> bool {
        *self == SubscriptionType::Shared
    }
}

/// A consumer as a broker's dispatcher knows it: a name stable across the
/// client process's restarts and the session (connection) it reads on. A
/// read on a higher session of the same name means the earlier connection
/// closed: the dispatcher takes back what it had handed that connection
/// (Pulsar redelivers a closed consumer's unacknowledged messages to the
/// subscription's other consumers).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ConsumerRef {
    /// Stable across restarts (the simulator: the client and its task).
    pub name: String,
    /// Grows with each restart of the process (its incarnation).
    pub session: u64,
}

#[cfg(test)]
mod tests {
    use super::{Partition, SubscriptionKey, TxnId};

    #[test]
    fn ids_display_as_histories_spell_them() {
        let txn = TxnId {
            coordinator: 1,
            seq: 2,
        };
        assert_eq!(txn.to_string(), "(1,2)");
        let p = Partition::new("in", 3);
        assert_eq!(p.to_string(), "in-partition-3");
        assert_eq!(SubscriptionKey::new(p, "s").to_string(), "in-partition-3/s");
    }
}
