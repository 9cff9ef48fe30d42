//! Crash and pause points by occurrence: `cluster.point_faults` kills or
//! freezes a node the n-th time it reaches a named [`Point`] (any
//! transaction), and every stop at a point is counted (`point.<name>`) so a
//! campaign can tell which points it reached.

use crate::percolator::ids::kinds;
use crate::world::node::{NodeKind, NodeName};
use percsim_protocol::percolator::client::{Point, PointNode};
use serde::{Deserialize, Serialize};

/// What happens to a node at a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PointAction {
    /// Kill the node; restart it after this long (else at the healed phase).
    Crash {
        /// Restart delay.
        #[serde(default)]
        restart_after_ms: Option<u64>,
    },
    /// Freeze the node for this long.
    Pause {
        /// How long it stays frozen.
        duration_ms: u64,
    },
}

/// Kill or freeze a node the n-th time it reaches a named point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointFault {
    /// The point.
    pub point: Point,
    /// The node: a client's index for a client's point, a tablet server's
    /// index for `tablet_after_apply`, 0 for the oracle.
    pub node: usize,
    /// Which time it reaches the point (1-based, over the whole run,
    /// restarts included).
    pub nth: u64,
    /// What happens there.
    pub fault: PointAction,
}

impl PointFault {
    /// The name of the node it stops (`client-0`, `tablet-1`, `oracle`),
    /// as its stop event names it.
    pub fn node_name(&self) -> String {
        node_name(self.point, self.node).to_string()
    }
}

/// The counter of stops (crashes and pauses) at `point`.
pub fn point_counter(point: Point) -> String {
    format!("point.{}", point.name())
}

/// The kind of node that reaches `point`.
pub(crate) fn node_kind(point: Point) -> NodeKind {
    match point.node() {
        PointNode::Client => kinds::CLIENT,
        PointNode::Oracle => kinds::ORACLE,
        PointNode::TabletServer => kinds::TABLET,
    }
}

/// The node name of `node` of the kind that reaches `point`.
pub(crate) fn node_name(point: Point, node: usize) -> NodeName {
    let kind = node_kind(point);
    match kind.numbered {
        true => kind.nth(node),
        false => kind.single(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn point_faults_read_as_documented() {
        let f: PointFault = serde_json::from_str(
            r#"{"point": "tablet_after_apply", "node": 1, "nth": 3,
                "fault": {"crash": {"restart_after_ms": 500}}}"#,
        )
        .unwrap();
        assert_eq!(f.point, Point::TabletAfterApply);
        assert_eq!(
            f.fault,
            PointAction::Crash {
                restart_after_ms: Some(500)
            }
        );
        let bad = serde_json::from_str::<PointFault>(
            r#"{"point": "after_lunch", "node": 0, "nth": 1, "fault": {"pause": {"duration_ms": 1}}}"#,
        );
        assert!(bad.unwrap_err().to_string().contains("after_lunch"));
        assert_eq!(
            node_name(Point::OracleAfterPersist, 0).to_string(),
            "oracle"
        );
        assert_eq!(
            node_name(Point::RollBackBetweenCells, 2).to_string(),
            "client-2"
        );
        assert_eq!(
            node_name(Point::TabletAfterApply, 1).to_string(),
            "tablet-1"
        );
        assert_eq!(
            point_counter(Point::TabletAfterApply),
            "point.tablet_after_apply"
        );
    }
}
