//! What a Percolator campaign should exercise (its coverage items and its
//! named points) and its sections of a campaign's summary (cleanups,
//! aborts by reason).

use crate::coverage::CoverageItem;
use crate::summary::prefixed_rows;
use crate::system::SummarySection;
use percsim_protocol::percolator::client::{AbortReason, Point};
use percsim_sim::{Counter, FaultKind, PercolatorCounter as P, PercolatorEvent, point_counter};
use std::collections::BTreeMap;

percsim_sim::identities! {
    /// An event of Percolator's protocol a campaign of it should exercise.
    pub enum PercolatorCoverage {
        /// A dead owner's commit rolled forward.
        RollForward => ("roll_forward", "roll forward of a dead owner's commit"),
        /// An abandoned lock rolled back.
        RollBack => ("roll_back", "roll back of an abandoned lock"),
        /// A cleanup after the owner's token expired.
        RollBackTokenGone => ("roll_back_token_gone", "cleanup after the owner's token expired"),
        /// A cleanup of a stale lock of a live owner.
        RollBackStale => ("roll_back_stale", "cleanup of a stale lock of a live owner"),
        /// A late prewrite met a rollback record.
        LatePrewriteRejected => ("late_prewrite_rejected", "late prewrite rejected by a rollback record"),
        /// A prewrite was delivered to a cell where its transaction had
        /// already been rolled back (the store's count, kept whether or not
        /// a rollback record refused it).
        LatePrewriteAfterRollback => ("late_prewrite_after_rollback", "late prewrite after rollback"),
        /// A primary commit timed out and was never applied.
        PrimaryRequestLost => ("primary_request_lost", "primary commit timed out, request never applied"),
        /// A primary commit was applied but every reply was lost.
        PrimaryReplyLost => ("primary_reply_lost", "primary commit applied, every reply lost"),
        /// An outcome unknown to the client was committed in the store.
        UnknownReplyLost => ("unknown_reply_lost", "outcome unknown to the client, committed in the store"),
        /// A node was killed at a named protocol point.
        CrashAtStep => ("crash_at_step", "node killed at a named protocol point"),
        /// A node was frozen at a named protocol point.
        PauseAtStep => ("pause_at_step", "node frozen at a named protocol point"),
        /// A tablet moved to a live server.
        TabletMoved => ("tablet_moved", "tablet moved to a live server"),
        /// A session expired under a live owner.
        SessionReopened => ("session_reopened", "session expired under a live owner"),
        /// A read waited on a lock.
        LockWait => ("lock_wait", "read waited on a lock"),
        /// A write conflict aborted a transaction.
        WriteConflict => ("write_conflict", "write conflict"),
        /// An owner found itself rolled back.
        RolledBack => ("rolled_back", "owner found itself rolled back"),
        /// A commit's outcome stayed unknown.
        Unknown => ("unknown", "commit outcome unknown"),
        /// An observer run committed.
        ObserverRan => ("observer_ran", "observer run committed"),
        /// A notification was found already processed.
        ObserverNothingNew => ("observer_nothing_new", "notification found already processed"),
        /// A scanner jumped away from a taken row.
        ScanJump => ("scan_jump", "scanner jumped away from a taken row"),
    }
}

impl PercolatorCoverage {
    /// The run counter this item reads.
    pub fn counter(self) -> String {
        use PercolatorCoverage as C;
        let abort = |r: AbortReason| format!("abort.{}", r.name());
        match self {
            C::RollForward => P::RollForward.name().into(),
            C::RollBack => P::RollBack.name().into(),
            C::RollBackTokenGone => P::RollBackTokenGone.name().into(),
            C::RollBackStale => P::RollBackStale.name().into(),
            C::LatePrewriteRejected => P::StoreLatePrewriteRejected.name().into(),
            C::LatePrewriteAfterRollback => P::StoreLatePrewriteAfterRollback.name().into(),
            C::PrimaryRequestLost => P::CommitPrimaryRequestLost.name().into(),
            C::PrimaryReplyLost => P::CommitPrimaryReplyLost.name().into(),
            C::UnknownReplyLost => P::TxnUnknownReplyLost.name().into(),
            C::CrashAtStep => PercolatorEvent::CrashAtStep.counter(),
            C::PauseAtStep => FaultKind::PauseAtStep.counter(),
            C::TabletMoved => PercolatorEvent::TabletMoved.counter(),
            C::SessionReopened => PercolatorEvent::SessionReopened.counter(),
            C::LockWait => P::ClientLockWaits.name().into(),
            C::WriteConflict => abort(AbortReason::WriteConflict),
            C::RolledBack => abort(AbortReason::RolledBack),
            C::Unknown => Counter::TxnUnknown.name().into(),
            C::ObserverRan => P::ObserverRan.name().into(),
            C::ObserverNothingNew => P::ObserverNothingNew.name().into(),
            C::ScanJump => P::ScanJumps.name().into(),
        }
    }
}

/// Percolator's coverage items.
pub fn items() -> Vec<CoverageItem> {
    PercolatorCoverage::ALL
        .iter()
        .map(|c| CoverageItem {
            name: c.name(),
            description: c.describe(),
            counter: c.counter(),
            class: match c {
                PercolatorCoverage::CrashAtStep => Some(FaultKind::CrashAtStep.name()),
                PercolatorCoverage::PauseAtStep => Some(FaultKind::PauseAtStep.name()),
                _ => None,
            },
        })
        .collect()
}

/// Percolator's named crash and pause points, each with its counter of
/// stops.
pub fn points() -> Vec<CoverageItem> {
    Point::ALL
        .into_iter()
        .map(|p| CoverageItem {
            name: p.name(),
            description: p.describe(),
            counter: point_counter(p),
            // Stopped at by either class of stops at points.
            class: None,
        })
        .collect()
}

/// Its sections of a campaign's summary: every cleanup kind with its
/// count, and aborts by reason.
pub fn sections(counters: &BTreeMap<String, u64>) -> Vec<SummarySection> {
    let cleanups = P::CLEANUPS
        .iter()
        .map(|c| {
            let name = c.name().trim_start_matches("cleanup.").to_string();
            (name, counters.get(c.name()).copied().unwrap_or(0))
        })
        .collect();
    vec![
        SummarySection {
            title: "cleanups",
            rows: cleanups,
        },
        SummarySection {
            title: "aborts by reason",
            rows: prefixed_rows(counters, "abort."),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::{SeedResult, Verdict};
    use crate::coverage::WorldCoverage;
    use crate::summary::Summary;

    fn result(system: &str, workload: &str) -> SeedResult {
        SeedResult {
            system: system.into(),
            seed: 1,
            verdict: Verdict::Pass,
            workload: workload.into(),
            committed: 2,
            aborted: 1,
            unknown: 0,
            sim_ms: 10,
            violated_rules: Vec::new(),
            explanation: None,
            counters: BTreeMap::from([("fault.pause".to_string(), 1)]),
            wall_ms: 5,
            capsule: None,
            not_fired: Vec::new(),
        }
    }

    fn item(c: PercolatorCoverage) -> CoverageItem {
        items()
            .into_iter()
            .find(|i| i.name == c.name())
            .expect("listed")
    }

    #[test]
    fn names_are_unique_and_counters_keep_their_on_disk_names() {
        let mut names: Vec<&str> = items().iter().map(|c| c.name).collect();
        names.extend(WorldCoverage::ALL.iter().map(|w| w.name()));
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "an item's name is the world's or twice");
        let counters: Vec<String> = items().into_iter().map(|c| c.counter).collect();
        for want in [
            "cleanup.roll_forward",
            "cleanup.roll_back.token_gone",
            "store.late_prewrite_rejected",
            "store.late_prewrite_after_rollback",
            "net.commit_primary.request_lost",
            "net.commit_primary.reply_lost",
            "txn.unknown.reply_lost",
            "event.crash_at_step",
            "fault.pause_at_step",
            "event.tablet_moved",
            "event.session_reopened",
            "client.lock_waits",
            "abort.write_conflict",
            "txn.unknown",
            "observer.nothing_new",
            "scan.jumps",
        ] {
            assert!(counters.iter().any(|c| c == want), "{want}");
        }
    }

    #[test]
    fn a_percolator_campaign_lists_its_items_points_and_sections() {
        let mut s = Summary::default();
        s.add(&result(super::super::NAME, "bank"));
        let missing = s.never_happened();
        assert!(missing.contains(&item(PercolatorCoverage::RollForward)));
        assert!(missing.contains(&WorldCoverage::KillLiveness.item()));
        assert!(!s.points_never_hit().is_empty());
        let text = s.render();
        for section in ["cleanups:", "aborts by reason:", "crash and pause points"] {
            assert!(text.contains(section), "{section}: {text}");
        }
        assert!(text.contains("tablet_after_apply"), "{text}");
    }

    #[test]
    fn a_point_never_hit_is_printed_as_a_finding() {
        let mut r = result(super::super::NAME, "bank");
        for p in Point::ALL {
            r.counters.insert(point_counter(p), 2);
        }
        let mut all = Summary::default();
        all.add(&r);
        assert!(all.points_never_hit().is_empty());
        assert!(!all.render().contains("finding:"), "{}", all.render());
        r.counters.remove(&point_counter(Point::TabletAfterApply));
        let mut some = Summary::default();
        some.add(&r);
        let never: Vec<&str> = some.points_never_hit().iter().map(|p| p.name).collect();
        assert_eq!(never, vec![Point::TabletAfterApply.name()]);
        let text = some.render();
        assert!(
            text.contains("finding: crash/pause point tablet_after_apply was never hit"),
            "{text}"
        );
        assert!(text.contains("roll_back_between_cells"), "{text}");
    }

    /// A campaign in which no late prewrite reached a rolled-back cell says
    /// so; one in which it happened counts it.
    #[test]
    fn a_campaign_without_a_late_prewrite_after_rollback_flags_it() {
        let late = item(PercolatorCoverage::LatePrewriteAfterRollback);
        let line = |n: u64| format!("  {:<44} {n:>8}", late.description);
        let mut r = result(super::super::NAME, "bank");
        let mut none = Summary::default();
        none.add(&r);
        assert!(none.never_happened().contains(&late));
        assert!(
            none.render()
                .contains(&format!("{}   <-- never happened", line(0)))
        );
        r.counters
            .insert("store.late_prewrite_after_rollback".into(), 3);
        let mut some = Summary::default();
        some.add(&r);
        assert!(!some.never_happened().contains(&late));
        assert!(some.render().contains(&format!("{}\n", line(3))));
    }
}
