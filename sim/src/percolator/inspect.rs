//! What a Percolator workload's driver may do while it runs (a script's
//! faults, wait conditions and store assertions): everything the world's
//! [`FaultControl`] offers, plus one cell as the durable store holds it.
//! Reading never changes the schedule: no message is sent, no task is woken.

use crate::percolator::Cluster;
use crate::percolator::ids::kinds;
use crate::percolator::points::{PointAction, node_kind};
use crate::percolator::tags::MessageFault;
use crate::world::FaultControl;
use crate::world::faults::Fault;
use crate::world::intercept::RuleId;
use crate::world::node::NodeName;
use percsim_protocol::percolator::client::{Point, PointNode};
use percsim_protocol::percolator::row::Column;
use std::sync::Arc;

/// One cell as the durable store holds it now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellView {
    /// Its data, lock and write columns.
    pub column: Column,
    /// Its entry in the row's `notify` column, if any (the value that set it).
    pub notify: Option<u64>,
}

/// Lets a workload's driver inject faults and read the cluster while it
/// runs.
pub struct Controller {
    faults: FaultControl,
    cluster: Arc<Cluster>,
}

impl Controller {
    pub(crate) fn new(faults: FaultControl, cluster: Arc<Cluster>) -> Self {
        Controller { faults, cluster }
    }

    /// Apply `fault` now.
    pub fn inject(&self, fault: &Fault) {
        self.faults.inject(fault);
    }

    /// The cell `row`/`col` as the store holds it now.
    pub fn cell(&self, row: &str, col: &str) -> CellView {
        let durable = self.cluster.durable();
        let Some(r) = durable.rows.get(row) else {
            return CellView::default();
        };
        CellView {
            column: r.col(col).clone(),
            notify: r.notify.get(col).copied(),
        }
    }

    /// Kill or freeze `node` (a node name) the next time it reaches
    /// `point`. Errors when the node is not of the kind that reaches it.
    pub fn arm_point(&self, point: Point, node: &str, action: PointAction) -> Result<(), String> {
        let count = match point.node() {
            PointNode::Client => self.cluster.cfg.clients,
            PointNode::TabletServer => self.cluster.cfg.tablet_servers,
            PointNode::Oracle => 1,
        };
        let never = || format!("node {node:?} never reaches point {}", point.name());
        let name = NodeName::parse(node, &kinds::ALL).map_err(|e| format!("{}: {e}", never()))?;
        let index = name.index().unwrap_or(0);
        if name.kind() != node_kind(point) || index >= count {
            return Err(never());
        }
        self.cluster.arm_point(point, index, action);
        Ok(())
    }

    /// The nodes whose stops armed by [`Controller::arm_point`] have not
    /// happened yet (one entry per stop still armed), as the world names them.
    pub fn armed_points_left(&self) -> Vec<String> {
        self.cluster.armed_points_left()
    }

    /// Whether `node` is up: neither killed nor paused.
    pub fn node_up(&self, node: &str) -> bool {
        self.faults.node_up(node)
    }

    /// The run's counter `name` (0 if never bumped), as `RunSummary` reports them.
    pub fn counter(&self, name: &str) -> u64 {
        self.faults.counter(name)
    }

    /// Install a targeted message fault now; it acts on messages sent from now on.
    pub fn intercept(&self, fault: &MessageFault) -> RuleId {
        self.cluster.world.intercept(fault.rule())
    }

    /// Lift a targeted message fault and deliver what it holds; returns
    /// how many messages it acted on.
    pub fn release(&self, rule: RuleId) -> u32 {
        self.cluster.world.release(rule)
    }

    /// Heal every partition in force now.
    pub fn heal_partitions(&self) {
        self.faults.heal_partitions();
    }
}
