//! Percolator's named crash and pause points: every place between two
//! steps of a procedure where a node can die or freeze. Client points are
//! reached through [`super::Ledger::reached`] (as a [`StepPoint`]); the
//! oracle's and the tablet servers' points are offered by the simulator
//! between a durable write and its reply.

use super::transport::StepPoint;
use serde::{Deserialize, Serialize};

/// A named crash or pause point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Point {
    /// Commit was called; nothing is written yet.
    BeforePrewrite,
    /// The primary's prewrite has left the client; the secondaries' are
    /// issued in the same instant (all at once, the primary's first); no
    /// reply yet.
    PrewritePrimarySent,
    /// The primary's lock is granted; the secondaries' prewrites are sent
    /// and may still be unanswered.
    AfterPrewritePrimary,
    /// The k-th secondary's lock is granted; the other prewrites are sent
    /// and may still be unanswered.
    AfterPrewriteSecondary,
    /// Every cell is locked and the commit timestamp is known.
    BeforeCommitPrimary,
    /// The primary's first commit request has left the client; no reply yet.
    CommitPrimarySent,
    /// The primary is committed (the commit point); no secondary is.
    AfterCommitPrimary,
    /// The k-th secondary is committed, the next is not.
    AfterCommitSecondary,
    /// A reader found a dead owner's primary committed; the lock it met is
    /// not rolled forward yet.
    RollForwardBetweenCells,
    /// A reader rolled a dead owner's primary back; the lock it met is not
    /// rolled back yet.
    RollBackBetweenCells,
    /// An observer's body buffered its writes; its acknowledgment is not
    /// buffered and nothing is committed.
    ObserverAfterWrites,
    /// An observer's writes and acknowledgment are committed; the notify
    /// entry is not cleared.
    ObserverBeforeClear,
    /// The oracle persisted a new range end; the timestamps are not sent.
    OracleAfterPersist,
    /// A tablet server applied a row mutation; its reply is not sent.
    TabletAfterApply,
}

/// Which kind of node reaches a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointNode {
    /// A client (a transaction, a cleaning reader, an observer).
    Client,
    /// The timestamp oracle.
    Oracle,
    /// A tablet server.
    TabletServer,
}

impl Point {
    /// Every point, in the order of a transaction's life.
    pub const ALL: [Point; 14] = [
        Point::BeforePrewrite,
        Point::PrewritePrimarySent,
        Point::AfterPrewritePrimary,
        Point::AfterPrewriteSecondary,
        Point::BeforeCommitPrimary,
        Point::CommitPrimarySent,
        Point::AfterCommitPrimary,
        Point::AfterCommitSecondary,
        Point::RollForwardBetweenCells,
        Point::RollBackBetweenCells,
        Point::ObserverAfterWrites,
        Point::ObserverBeforeClear,
        Point::OracleAfterPersist,
        Point::TabletAfterApply,
    ];

    /// The point's name, as scenario files, counters and reports spell it.
    pub fn name(self) -> &'static str {
        match self {
            Point::BeforePrewrite => "before_prewrite",
            Point::PrewritePrimarySent => "prewrite_primary_sent",
            Point::AfterPrewritePrimary => "after_prewrite_primary",
            Point::AfterPrewriteSecondary => "after_prewrite_secondary",
            Point::BeforeCommitPrimary => "before_commit_primary",
            Point::CommitPrimarySent => "commit_primary_sent",
            Point::AfterCommitPrimary => "after_commit_primary",
            Point::AfterCommitSecondary => "after_commit_secondary",
            Point::RollForwardBetweenCells => "roll_forward_between_cells",
            Point::RollBackBetweenCells => "roll_back_between_cells",
            Point::ObserverAfterWrites => "observer_after_writes",
            Point::ObserverBeforeClear => "observer_before_clear",
            Point::OracleAfterPersist => "oracle_after_persist",
            Point::TabletAfterApply => "tablet_after_apply",
        }
    }

    /// What has happened and what has not when a node stops here.
    pub fn describe(self) -> &'static str {
        match self {
            Point::BeforePrewrite => "commit was called; nothing is written",
            Point::PrewritePrimarySent => {
                "the primary's prewrite is on the wire, the secondaries' issued with it; no reply has come back"
            }
            Point::AfterPrewritePrimary => {
                "the primary is locked; every secondary's prewrite is sent, maybe unanswered"
            }
            Point::AfterPrewriteSecondary => {
                "the k-th secondary is locked; the other prewrites are sent, maybe unanswered"
            }
            Point::BeforeCommitPrimary => "every cell is locked; the commit_ts is known",
            Point::CommitPrimarySent => {
                "the primary's first commit request is on the wire; no reply has come back"
            }
            Point::AfterCommitPrimary => "the primary is committed; no secondary is",
            Point::AfterCommitSecondary => "the k-th secondary is committed, the next is not",
            Point::RollForwardBetweenCells => {
                "a reader found the dead owner's primary committed; the lock it met is not rolled forward"
            }
            Point::RollBackBetweenCells => {
                "a reader rolled the dead owner's primary back; the lock it met is not rolled back"
            }
            Point::ObserverAfterWrites => "an observer buffered its writes; no acknowledgment yet",
            Point::ObserverBeforeClear => {
                "an observer committed its writes and acknowledgment; the notify entry is set"
            }
            Point::OracleAfterPersist => "the oracle persisted a range end; no timestamp is sent",
            Point::TabletAfterApply => "a tablet server applied a row mutation; no reply is sent",
        }
    }

    /// The point named `name`.
    pub fn from_name(name: &str) -> Option<Point> {
        Point::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Which kind of node reaches it.
    pub fn node(self) -> PointNode {
        match self {
            Point::OracleAfterPersist => PointNode::Oracle,
            Point::TabletAfterApply => PointNode::TabletServer,
            _ => PointNode::Client,
        }
    }
}

impl StepPoint {
    /// The named point this step is at (the k of a secondary dropped).
    pub fn point(self) -> Point {
        match self {
            StepPoint::BeforePrewrite => Point::BeforePrewrite,
            StepPoint::PrewritePrimarySent => Point::PrewritePrimarySent,
            StepPoint::AfterPrewritePrimary => Point::AfterPrewritePrimary,
            StepPoint::AfterPrewriteSecondary(_) => Point::AfterPrewriteSecondary,
            StepPoint::BeforeCommitPrimary => Point::BeforeCommitPrimary,
            StepPoint::CommitPrimarySent => Point::CommitPrimarySent,
            StepPoint::AfterCommitPrimary => Point::AfterCommitPrimary,
            StepPoint::AfterCommitSecondary(_) => Point::AfterCommitSecondary,
            StepPoint::RollForwardBetweenCells => Point::RollForwardBetweenCells,
            StepPoint::RollBackBetweenCells => Point::RollBackBetweenCells,
            StepPoint::ObserverAfterWrites => Point::ObserverAfterWrites,
            StepPoint::ObserverBeforeClear => Point::ObserverBeforeClear,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut names: Vec<&str> = Point::ALL.iter().map(|p| p.name()).collect();
        for p in Point::ALL {
            assert_eq!(Point::from_name(p.name()), Some(p));
            // serde (scenario files) spells the same name.
            let json = serde_json::to_value(p).unwrap();
            assert_eq!(json.as_str(), Some(p.name()));
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Point::ALL.len());
        assert_eq!(Point::from_name("after_lunch"), None);
    }

    #[test]
    fn step_points_keep_the_point_names() {
        for (step, point) in [
            (
                StepPoint::AfterPrewriteSecondary(3),
                Point::AfterPrewriteSecondary,
            ),
            (
                StepPoint::AfterCommitSecondary(1),
                Point::AfterCommitSecondary,
            ),
            (StepPoint::RollBackBetweenCells, Point::RollBackBetweenCells),
            (StepPoint::ObserverBeforeClear, Point::ObserverBeforeClear),
        ] {
            assert_eq!(step.point(), point);
            let json = serde_json::to_string(&step).unwrap();
            assert!(json.contains(point.name()), "{json}");
        }
        assert_eq!(Point::TabletAfterApply.node(), PointNode::TabletServer);
        assert_eq!(Point::OracleAfterPersist.node(), PointNode::Oracle);
        assert_eq!(Point::RollForwardBetweenCells.node(), PointNode::Client);
    }

    #[test]
    fn every_point_has_its_own_description() {
        let mut texts: Vec<&str> = Point::ALL.iter().map(|p| p.describe()).collect();
        assert_eq!(
            Point::AfterCommitPrimary.describe(),
            "the primary is committed; no secondary is"
        );
        texts.sort();
        texts.dedup();
        assert_eq!(texts.len(), Point::ALL.len());
    }
}
