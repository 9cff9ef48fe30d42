//! Crash and pause points by occurrence: `cluster.point_faults` kills or
//! freezes a node the n-th time it reaches a named [`Point`] (any
//! transaction), and every stop at a point is counted (`point.<name>`) so a
//! campaign can tell which points it reached.

use crate::percolator::Cluster;
use crate::percolator::ids::{PercolatorEvent, kinds};
use crate::world::Control;
use crate::world::ids::FaultKind;
use crate::world::node::{NodeKind, NodeName};
use crate::world::serve::AfterHandler;
use percsim_protocol::percolator::client::{Point, PointNode};
use serde::{Deserialize, Serialize};
use serde_json::json;

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

impl Cluster {
    /// Node `node` reached `point` once more: the fault armed for its next
    /// stop there or scheduled for this occurrence, if any, and which
    /// occurrence it is (0 when no `point_faults` count them).
    pub(crate) fn point_reached(&self, point: Point, node: usize) -> Option<(PointAction, u64)> {
        let armed = {
            let mut armed = self.lock(&self.armed_points);
            let at = armed.iter().position(|(p, n, _)| *p == point && *n == node);
            at.map(|i| armed.remove(i).2)
        };
        if self.cfg.point_faults.is_empty() {
            return armed.map(|a| (a, 0));
        }
        let nth = {
            let mut hits = self.lock(&self.point_hits);
            let n = hits.entry((point, node)).or_default();
            *n += 1;
            *n
        };
        let scheduled = self
            .cfg
            .point_faults
            .iter()
            .find(|f| f.point == point && f.node == node && f.nth == nth)
            .map(|f| f.fault);
        armed.or(scheduled).map(|a| (a, nth))
    }

    /// Stop node `node` the next time it reaches `point` (a script's
    /// `stop_at`).
    pub(crate) fn arm_point(&self, point: Point, node: usize, action: PointAction) {
        self.lock(&self.armed_points).push((point, node, action));
    }

    /// Record a stop at `point` (`fields` say who stopped and where).
    pub(crate) fn record_stop(&self, point: Point, crash: bool, mut fields: serde_json::Value) {
        let (kind, event) = if crash {
            (FaultKind::CrashAtStep, PercolatorEvent::CrashAtStep)
        } else {
            (FaultKind::PauseAtStep, PercolatorEvent::PauseAtStep)
        };
        {
            let mut rec = self.recorder();
            rec.bump(&kind.counter());
            rec.bump(&point_counter(point));
        }
        fields["point"] = json!(point.name());
        self.event(event, fields);
    }

    /// A server handler reached `point` (after its durable write, before
    /// its reply): stop the server if a fault is scheduled here.
    pub(crate) fn server_point(&self, point: Point, node: usize) -> AfterHandler {
        let Some((action, nth)) = self.point_reached(point, node) else {
            return AfterHandler::Reply;
        };
        let name = node_name(point, node);
        let fields = json!({"node": name, "nth": nth});
        match action {
            PointAction::Crash { restart_after_ms } => {
                self.record_stop(point, true, fields);
                self.world.request(Control::Kill {
                    node: name.to_string(),
                    restart_after_ms,
                });
                AfterHandler::Halt
            }
            PointAction::Pause { duration_ms } => {
                self.record_stop(point, false, fields);
                self.world.request(Control::Pause {
                    node: name.to_string(),
                    duration_ms: Some(duration_ms),
                });
                AfterHandler::Yield
            }
        }
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
