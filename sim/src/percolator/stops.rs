//! Where Percolator's nodes stop at named points: the faults armed or
//! scheduled for a point (see [`crate::percolator::points`]), and what a
//! stopped server does.

use crate::percolator::Cluster;
use crate::percolator::ids::PercolatorEvent;
use crate::percolator::points::{PointAction, node_name, point_counter};
use crate::world::Control;
use crate::world::explore::ExploreStop;
use crate::world::ids::FaultKind;
use crate::world::serve::AfterHandler;
use percsim_protocol::percolator::client::Point;
use serde_json::json;

impl Cluster {
    /// Node `node` reached `point` once more: the fault armed for its next
    /// stop there or scheduled for this occurrence, if any, and which
    /// occurrence it is (0 when no `point_faults` count them).
    pub(crate) fn point_reached(&self, point: Point, node: usize) -> Option<(PointAction, u64)> {
        let planned = self.point_planned(point, node);
        if planned.is_some() || !self.world.exploring() {
            return planned;
        }
        let name = node_name(point, node).to_string();
        let action = match self.world.explore_stop(&name, point.name())? {
            ExploreStop::Crash { restart_after_ms } => PointAction::Crash {
                restart_after_ms: Some(restart_after_ms),
            },
            ExploreStop::Pause { duration_ms } => PointAction::Pause { duration_ms },
        };
        Some((action, 0))
    }

    /// The fault armed or scheduled for this reach of `point` by `node`.
    fn point_planned(&self, point: Point, node: usize) -> Option<(PointAction, u64)> {
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

    /// The nodes of the stops armed by a script and not yet happened.
    pub(crate) fn armed_points_left(&self) -> Vec<String> {
        self.lock(&self.armed_points)
            .iter()
            .map(|(p, n, _)| node_name(*p, *n).to_string())
            .collect()
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
