//! What a Pulsar workload's driver may do while it runs (a script's
//! faults, wait conditions and store assertions): everything the world's
//! [`FaultControl`] offers, targeted message rules, server points armed
//! for one transaction or partition, and the durable logs as they stand.
//! Reading never changes the schedule: no message is sent, no task is woken.

use crate::pulsar::Cluster;
use crate::pulsar::ids::kinds;
use crate::world::FaultControl;
use crate::world::faults::Fault;
use crate::world::intercept::{Rule, RuleId};
use crate::world::node::NodeName;
use percsim_protocol::pulsar::buffer::Entry;
use percsim_protocol::pulsar::coordinator::LogRecord;
use percsim_protocol::pulsar::points::ServerPoint;
use percsim_protocol::pulsar::subscription::SubRecord;
use percsim_protocol::pulsar::types::{Partition, TxnId};
use std::sync::Arc;

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
    /// A client reads (dispatch or replay) from a subscription.
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

/// Lets a Pulsar workload's driver inject faults and read the cluster
/// while it runs.
pub struct PulsarControl {
    faults: FaultControl,
    cluster: Arc<Cluster>,
}

impl PulsarControl {
    pub(crate) fn new(faults: FaultControl, cluster: Arc<Cluster>) -> Self {
        PulsarControl { faults, cluster }
    }

    /// Apply `fault` now.
    pub fn inject(&self, fault: &Fault) {
        self.faults.inject(fault);
    }

    /// Whether `node` is up: neither killed nor paused.
    pub fn node_up(&self, node: &str) -> bool {
        self.faults.node_up(node)
    }

    /// The run's counter `name` (0 if never bumped).
    pub fn counter(&self, name: &str) -> u64 {
        self.faults.counter(name)
    }

    /// Heal every partition in force now.
    pub fn heal_partitions(&self) {
        self.faults.heal_partitions();
    }

    /// Install a targeted message rule (its call one of [`calls`], its
    /// transaction a [`TxnId`]'s `seq`, its items partition names
    /// `topic-partition-N`); it acts on messages sent from now on.
    pub fn intercept(&self, rule: Rule) -> RuleId {
        self.cluster.world.intercept(rule)
    }

    /// Lift a message rule and deliver what it holds; returns how many
    /// messages it acted on.
    pub fn release(&self, rule: RuleId) -> u32 {
        self.cluster.world.release(rule)
    }

    /// The partition `index` of `topic`, if the cluster has it.
    pub fn partition(&self, topic: &str, index: u32) -> Option<Partition> {
        let p = Partition::new(topic, index);
        self.cluster.partitions.contains(&p).then_some(p)
    }

    /// A partition's durable log (messages and markers, by offset).
    pub fn partition_log(&self, p: &Partition) -> Vec<Entry> {
        let d = self.cluster.durable();
        d.partitions
            .get(p)
            .map(|s| s.log.clone())
            .unwrap_or_default()
    }

    /// A subscription's durable log (acks, pending acks, ends).
    pub fn subscription_log(&self, p: &Partition, sub: &str) -> Vec<SubRecord> {
        let d = self.cluster.durable();
        d.partitions
            .get(p)
            .and_then(|s| s.subs.get(sub).cloned())
            .unwrap_or_default()
    }

    /// The coordinator's durable transaction log.
    pub fn coordinator_log(&self) -> Vec<LogRecord> {
        self.cluster.durable().tc_log.clone()
    }

    /// Arm a server point. Errors when the node is not a broker of the
    /// cluster (coordinator and broker points are reached by brokers).
    pub fn arm(&self, armed: ArmedPoint) -> Result<(), String> {
        let never = || {
            format!(
                "node {:?} never reaches point {} (only brokers do: broker-0..broker-{})",
                armed.node,
                armed.point.name(),
                self.cluster.cfg.brokers.saturating_sub(1)
            )
        };
        let name = NodeName::parse(&armed.node, &kinds::ALL).map_err(|_| never())?;
        if name.kind() != kinds::BROKER || name.index().unwrap_or(0) >= self.cluster.cfg.brokers {
            return Err(never());
        }
        crate::world::lock(&self.cluster.armed).push(armed);
        Ok(())
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
