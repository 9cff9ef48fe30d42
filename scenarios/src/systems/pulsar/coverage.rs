//! What a Pulsar campaign should exercise (its coverage items) and its
//! section of a campaign's summary (the aborts it counts by reason).

use crate::coverage::CoverageItem;
use crate::system::SummarySection;
use percsim_sim::{PulsarCounter, PulsarEvent};
use std::collections::BTreeMap;

percsim_sim::identities! {
    /// An event of Pulsar's protocol a campaign of it should exercise.
    pub enum PulsarCoverage {
        /// The coordinator or a partition moved to another broker session.
        OwnershipMoved => ("ownership_moved", "ownership moved to another broker"),
        /// A stale owner's append was refused by a log's fence.
        StaleOwnerFenced => ("stale_owner_fenced", "a stale owner's append fenced"),
        /// A broker was killed or frozen at one of its named points.
        StopAtPoint => ("stop_at_point", "broker killed or frozen at a named point"),
        /// A client was killed at one of its procedures' named points.
        ClientCrashAtPoint => ("client_crash_at_point", "client killed at a named point"),
    }
}

impl PulsarCoverage {
    /// The run counter this item reads.
    pub fn counter(self) -> String {
        match self {
            PulsarCoverage::OwnershipMoved => PulsarEvent::OwnershipMoved.counter(),
            PulsarCoverage::StaleOwnerFenced => PulsarEvent::StaleOwnerFenced.counter(),
            PulsarCoverage::StopAtPoint => PulsarEvent::CrashAtPoint.counter(),
            PulsarCoverage::ClientCrashAtPoint => PulsarEvent::ClientCrashAtPoint.counter(),
        }
    }
}

/// Pulsar's coverage items.
pub fn items() -> Vec<CoverageItem> {
    PulsarCoverage::ALL
        .iter()
        .map(|c| CoverageItem {
            name: c.name(),
            description: c.describe(),
            counter: c.counter(),
        })
        .collect()
}

/// The aborts Pulsar counts by reason: only the coordinator's timeouts
/// (a client's own aborts are not counted by reason), so the section's
/// title says so.
pub fn sections(counters: &BTreeMap<String, u64>) -> Vec<SummarySection> {
    let c = PulsarCounter::TxnTimedOut;
    let n = counters.get(c.name()).copied().unwrap_or(0);
    vec![SummarySection {
        title: "aborts by reason (only timeouts are counted)",
        rows: vec![("coordinator timeout".to_string(), n)],
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::{SeedResult, Verdict};
    use crate::coverage::WorldCoverage;
    use crate::summary::Summary;

    fn result(counters: &[(&str, u64)]) -> SeedResult {
        SeedResult {
            system: super::super::PULSAR.name().into(),
            seed: 1,
            verdict: Verdict::Pass,
            workload: "stream".into(),
            committed: 2,
            aborted: 1,
            unknown: 0,
            sim_ms: 10,
            violated_rules: Vec::new(),
            explanation: None,
            counters: counters.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            wall_ms: 5,
            capsule: None,
        }
    }

    fn item(c: PulsarCoverage) -> CoverageItem {
        items()
            .into_iter()
            .find(|i| i.name == c.name())
            .expect("listed")
    }

    use crate::system::SystemDef;

    /// A Pulsar-only campaign: its pauses at named points count as covered,
    /// no Percolator section or point is printed, and its own items are
    /// flagged when they never happened.
    #[test]
    fn a_pulsar_campaign_counts_its_point_stops_and_prints_no_other_section() {
        let mut s = Summary::default();
        s.add(&result(&[
            ("event.crash_at_point", 4),
            ("pulsar.txn_timed_out", 2),
        ]));
        let missing = s.never_happened();
        assert!(
            !missing.contains(&item(PulsarCoverage::StopAtPoint)),
            "{missing:?}"
        );
        assert!(
            missing.contains(&item(PulsarCoverage::OwnershipMoved)),
            "{missing:?}"
        );
        assert!(
            missing.contains(&WorldCoverage::Duplicated.item()),
            "{missing:?}"
        );
        // Fault classes it does not honour are not its to exercise.
        assert!(
            !missing.contains(&WorldCoverage::KillLiveness.item()),
            "{missing:?}"
        );
        assert!(s.points_never_hit().is_empty());
        let text = s.render();
        let line = text
            .lines()
            .find(|l| l.contains(item(PulsarCoverage::StopAtPoint).description))
            .expect("listed");
        assert!(line.ends_with(" 4"), "{line}");
        for absent in [
            "cleanups:",
            "\naborts by reason:",
            "crash and pause points",
            "node frozen at a named protocol point",
            "roll forward",
            "never hit",
        ] {
            assert!(!text.contains(absent), "{absent}: {text}");
        }
        assert!(text.contains("  coordinator timeout"), "{text}");
        let line = text
            .lines()
            .find(|l| l.contains("ownership moved"))
            .expect("listed");
        assert!(line.ends_with("0   <-- never happened"), "{line}");
    }
}
