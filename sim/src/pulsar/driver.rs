//! The handle a Pulsar workload's driver (a script) holds while the
//! workload phase runs: inject faults, install message rules, arm server
//! points, and read the durable logs.

use crate::pulsar::Cluster;
use crate::pulsar::control::ArmedPoint;
use crate::pulsar::ids::kinds;
use crate::world::driver::FaultControl;
use crate::world::faults::Fault;
use crate::world::intercept::{Rule, RuleId};
use crate::world::node::NodeName;
use percsim_protocol::pulsar::buffer::Entry;
use percsim_protocol::pulsar::coordinator::LogRecord;
use percsim_protocol::pulsar::ownership::Resource;
use percsim_protocol::pulsar::subscription::SubLogs;
use percsim_protocol::pulsar::types::Partition;
use std::sync::Arc;

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

    /// Install a targeted message rule (its call one of `control::calls`, its
    /// transaction a `TxnId`'s `seq`, its items partition names
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

    /// A subscription's durable logs (the cursor's acks; the pending-ack
    /// store's pending acks and ends).
    pub fn subscription_log(&self, p: &Partition, sub: &str) -> SubLogs {
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

    /// Unload `resource` (a partition with its subscriptions, or the
    /// coordinator) from the broker that owns it, with no process dying
    /// (Pulsar's topic unload): the metadata service places it again at its
    /// next scan, at the next epoch, and the new owner (maybe the same
    /// broker) fences the logs and recovers the buffer and pending acks
    /// from them. Returns the broker that owned it; an error if nobody
    /// owns it now.
    pub fn unload(&self, resource: &Resource) -> Result<usize, String> {
        self.cluster.unload(resource)
    }

    /// The nodes of the points armed by [`PulsarControl::arm`] that no
    /// server has reached yet (one entry per point still armed).
    pub fn armed_left(&self) -> Vec<String> {
        crate::world::lock(&self.cluster.armed)
            .iter()
            .map(|a| a.node.clone())
            .collect()
    }

    /// Arm a server point. Errors when the node never reaches it: a
    /// client's point (`after_end_sent`) is reached by a client of the
    /// cluster, every other point by a broker (coordinator points by the
    /// broker hosting the coordinator).
    pub fn arm(&self, armed: ArmedPoint) -> Result<(), String> {
        let (kind, count) = match armed.point.on_client() {
            true => (kinds::CLIENT, self.cluster.clients),
            false => (kinds::BROKER, self.cluster.cfg.brokers),
        };
        let never = || {
            format!(
                "node {:?} never reaches point {} (only {}s do: {}..{})",
                armed.node,
                armed.point.name(),
                kind.label,
                kind.nth(0),
                kind.nth(count.saturating_sub(1))
            )
        };
        let name = NodeName::parse(&armed.node, &kinds::ALL).map_err(|_| never())?;
        if name.kind() != kind || name.index().unwrap_or(0) >= count {
            return Err(never());
        }
        crate::world::lock(&self.cluster.armed).push(armed);
        Ok(())
    }
}
