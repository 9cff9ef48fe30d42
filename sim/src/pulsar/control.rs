//! The words of a Pulsar workload's driver (the cluster's
//! [`super::PulsarControl`] takes them): the call kinds Pulsar's messages
//! are tagged with for message rules, and server points armed for one
//! transaction or partition.

use percsim_protocol::pulsar::points::ServerPoint;
use percsim_protocol::pulsar::types::{Partition, TxnId};

/// The call kinds Pulsar's messages are tagged with, for message rules.
pub mod calls {
    /// A client opens a transaction at the coordinator.
    pub const OPEN: &str = "open";
    /// A client registers a partition or subscription with its transaction.
    pub const ADD_PARTICIPANT: &str = "add_participant";
    /// A client asks the coordinator to commit or abort.
    pub const END_TXN: &str = "end_txn";
    /// A client sends a message to a partition.
    pub const SEND: &str = "send";
    /// A client acknowledges a message on a subscription.
    pub const ACK: &str = "ack";
    /// A client reads (dispatch or replay) from a subscription, or closes
    /// its consumer.
    pub const READ: &str = "read";
    /// The coordinator sends a transaction's marker to a participant.
    pub const MARKER: &str = "marker";
}

/// What an armed point does to the server that reaches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointAction {
    /// Kill it; restart it this long after (`None`: at the healed phase).
    Kill {
        /// The restart delay, in simulated ms.
        restart_after_ms: Option<u64>,
    },
    /// Freeze it this long.
    Pause {
        /// How long, in simulated ms.
        pause_ms: u64,
    },
}

/// A server point armed by a driver: the first time `node` reaches `point`
/// while handling `txn` (if given) on `partition` (if given), `action`
/// happens to it; then the point is disarmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArmedPoint {
    /// The point.
    pub point: ServerPoint,
    /// The server (`broker-N`).
    pub node: String,
    /// Only while handling this transaction.
    pub txn: Option<TxnId>,
    /// Only while handling this partition (its log or a subscription on it).
    pub partition: Option<Partition>,
    /// What happens there.
    pub action: PointAction,
}

/// What a server was handling when it reached a point.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct At {
    /// The transaction, if one.
    pub txn: Option<TxnId>,
    /// The partition, if one.
    pub partition: Option<Partition>,
}

impl ArmedPoint {
    pub(crate) fn matches(&self, node: &str, point: ServerPoint, at: &At) -> bool {
        self.point == point
            && self.node == node
            && self.txn.is_none_or(|t| at.txn == Some(t))
            && self
                .partition
                .as_ref()
                .is_none_or(|p| at.partition.as_ref() == Some(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(seq: u64) -> TxnId {
        TxnId {
            coordinator: 0,
            seq,
        }
    }

    fn armed() -> ArmedPoint {
        ArmedPoint {
            point: ServerPoint::AfterMarkerLogged,
            node: "broker-1".into(),
            txn: Some(txn(3)),
            partition: Some(Partition::new("t", 1)),
            action: PointAction::Kill {
                restart_after_ms: None,
            },
        }
    }

    #[test]
    fn an_armed_point_matches_only_its_point_node_transaction_and_partition() {
        let at = |t: u64, p: u32| At {
            txn: Some(txn(t)),
            partition: Some(Partition::new("t", p)),
        };
        let a = armed();
        assert!(a.matches("broker-1", ServerPoint::AfterMarkerLogged, &at(3, 1)));
        assert!(!a.matches("broker-0", ServerPoint::AfterMarkerLogged, &at(3, 1)));
        assert!(!a.matches("broker-1", ServerPoint::AfterAppendLogged, &at(3, 1)));
        assert!(!a.matches("broker-1", ServerPoint::AfterMarkerLogged, &at(4, 1)));
        assert!(!a.matches("broker-1", ServerPoint::AfterMarkerLogged, &at(3, 0)));
        let any = ArmedPoint {
            txn: None,
            partition: None,
            ..armed()
        };
        assert!(any.matches("broker-1", ServerPoint::AfterMarkerLogged, &At::default()));
    }
}
