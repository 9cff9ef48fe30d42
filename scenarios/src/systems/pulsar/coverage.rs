//! What a Pulsar campaign should exercise (its coverage items and its
//! named points) and its section of a campaign's summary (the aborts it
//! counts by reason).

use crate::coverage::CoverageItem;
use crate::system::SummarySection;
use percsim_protocol::pulsar::client::ClientPoint;
use percsim_protocol::pulsar::points::ServerPoint;
use percsim_sim::{
    FaultKind, PulsarCounter, PulsarEvent, pulsar_point_reached, pulsar_point_stopped,
};
use std::collections::BTreeMap;

percsim_sim::identities! {
    /// An event of Pulsar's protocol a campaign of it should exercise.
    pub enum PulsarCoverage {
        /// The coordinator or a partition moved to another broker session.
        OwnershipMoved => ("ownership_moved", "ownership moved to another broker"),
        /// A stale owner's append was refused by a log's fence.
        StaleOwnerFenced => ("stale_owner_fenced", "a stale owner's append fenced"),
        /// A broker was killed at one of its named points.
        KillAtPoint => ("kill_at_point", "broker killed at a named point"),
        /// A broker was frozen at one of its named points.
        PauseAtPoint => ("pause_at_point", "broker frozen at a named point"),
        /// A client was killed at one of its procedures' named points.
        ClientCrashAtPoint => ("client_crash_at_point", "client killed at a named point"),
        /// The load manager unloaded a resource from its live owner.
        Unload => ("unload", "resource unloaded from its owner, no broker dying"),
    }
}

impl PulsarCoverage {
    /// The name of the fault class whose injection alone produces it, if
    /// one does: a world class, or Pulsar's own `unload`.
    pub fn fault_class(self) -> Option<&'static str> {
        match self {
            PulsarCoverage::KillAtPoint | PulsarCoverage::ClientCrashAtPoint => {
                Some(FaultKind::CrashAtStep.name())
            }
            PulsarCoverage::PauseAtPoint => Some(FaultKind::PauseAtStep.name()),
            PulsarCoverage::Unload => Some(super::campaign::UNLOAD),
            PulsarCoverage::OwnershipMoved | PulsarCoverage::StaleOwnerFenced => None,
        }
    }

    /// The run counter this item reads.
    pub fn counter(self) -> String {
        match self {
            PulsarCoverage::OwnershipMoved => PulsarEvent::OwnershipMoved.counter(),
            PulsarCoverage::StaleOwnerFenced => PulsarEvent::StaleOwnerFenced.counter(),
            PulsarCoverage::KillAtPoint => PulsarCounter::BrokerKilledAtPoint.name().into(),
            PulsarCoverage::PauseAtPoint => PulsarCounter::BrokerPausedAtPoint.name().into(),
            PulsarCoverage::ClientCrashAtPoint => PulsarEvent::ClientCrashAtPoint.counter(),
            PulsarCoverage::Unload => PulsarCounter::Unload.name().into(),
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
            class: c.fault_class(),
        })
        .collect()
}

/// Pulsar's named points a campaign stops nodes at, each with its counter
/// of stops (kills and pauses): the servers' points a campaign draws
/// ([`super::campaign::stop_points`]), then the pipeline processors'
/// (where a client dies).
pub fn points() -> Vec<CoverageItem> {
    let item = |name: &'static str, description, class| CoverageItem {
        name,
        description,
        counter: pulsar_point_stopped(name),
        class,
    };
    // A broker is stopped at its points by either class of stops at
    // points; a processor is only ever killed at its own.
    let servers = super::campaign::stop_points()
        .into_iter()
        .map(|p| item(p.name(), p.describe(), None));
    let kill = Some(FaultKind::CrashAtStep.name());
    let clients = ClientPoint::ALL
        .iter()
        .map(|p| item(p.name(), p.describe(), kill));
    servers.chain(clients).collect()
}

/// The workloads that alone reach the coverage item or named point
/// `name`: the pipeline's processors are the only clients that stop at
/// their named points ([`ClientPoint`]), and the only ones that ack inside
/// a transaction (a pending ack, `after_pending_ack_logged`), so a
/// campaign of the plain `stream` workload reaches none of them.
pub fn reached_by(name: &str) -> Option<&'static [&'static str]> {
    let processors = name == PulsarCoverage::ClientCrashAtPoint.name()
        || name == ServerPoint::AfterPendingAckLogged.name()
        || ClientPoint::ALL.iter().any(|p| p.name() == name);
    processors.then_some(&["stream-pipeline"][..])
}

/// The counter of reaches of the named point `point`, if it is one of
/// Pulsar's ([`points`]).
pub fn reach_counter(point: &str) -> Option<String> {
    points()
        .iter()
        .any(|p| p.name == point)
        .then(|| pulsar_point_reached(point))
}

/// A run's line of its named points (`percsim run`): each point its nodes
/// reached, the script's points too, as `name=reached/stopped`; `none`
/// when none was reached.
pub fn points_line(counters: &BTreeMap<String, u64>) -> String {
    let prefix = pulsar_point_reached("");
    let items: Vec<String> = counters
        .iter()
        .filter_map(|(k, reached)| {
            let name = k.strip_prefix(&prefix)?;
            let stopped = counters.get(&pulsar_point_stopped(name)).unwrap_or(&0);
            Some(format!("{name}={reached}/{stopped}"))
        })
        .collect();
    if items.is_empty() {
        "none".into()
    } else {
        format!("{} (reached/stopped)", items.join(" "))
    }
}

/// The prefix of the counters of aborts by reason
/// ([`PulsarCounter::abort`]).
const ABORT_PREFIX: &str = "pulsar.abort.";

/// Pulsar's section of a campaign's summary: the aborts its clients
/// learnt of, by reason (every reason listed, a zero too), and the
/// coordinator's own aborts on its timeout (which a client may learn of
/// later as `timed_out`, or never).
pub fn sections(counters: &BTreeMap<String, u64>) -> Vec<SummarySection> {
    let count = |c: PulsarCounter| counters.get(c.name()).copied().unwrap_or(0);
    let mut rows: Vec<(String, u64)> = PulsarCounter::ALL
        .iter()
        .filter_map(|c| {
            let reason = c.name().strip_prefix(ABORT_PREFIX)?;
            Some((reason.to_string(), count(*c)))
        })
        .collect();
    rows.push((
        "coordinator timeout (at the coordinator)".to_string(),
        count(PulsarCounter::TxnTimedOut),
    ));
    vec![SummarySection {
        title: "aborts by reason",
        rows,
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
            // The pipeline: its processors reach their named points.
            workload: "stream-pipeline".into(),
            committed: 2,
            aborted: 1,
            unknown: 0,
            sim_ms: 10,
            violated_rules: Vec::new(),
            explanation: None,
            counters: counters.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            wall_ms: 5,
            capsule: None,
            not_fired: Vec::new(),
        }
    }

    fn item(c: PulsarCoverage) -> CoverageItem {
        items()
            .into_iter()
            .find(|i| i.name == c.name())
            .expect("listed")
    }

    use crate::system::SystemDef;

    /// A Pulsar-only campaign: its pauses at named points count as pauses
    /// at points (not as kills), no Percolator section or point is printed,
    /// its aborts are listed by reason, and its own items are flagged when
    /// they never happened.
    #[test]
    fn a_pulsar_campaign_counts_its_point_stops_and_prints_no_other_section() {
        let mut s = Summary::default();
        s.add(&result(&[
            ("event.crash_at_point", 4),
            ("pulsar.broker_paused_at_point", 4),
            ("fault.pause_at_step", 4),
            ("pulsar.txn_timed_out", 2),
            ("pulsar.abort.ack_conflict", 5),
        ]));
        let missing = s.never_happened();
        assert!(
            !missing.contains(&item(PulsarCoverage::PauseAtPoint)),
            "{missing:?}"
        );
        assert!(
            missing.contains(&item(PulsarCoverage::KillAtPoint)),
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
        let text = s.render();
        let line = |what: &str| {
            text.lines()
                .find(|l| l.contains(what))
                .unwrap_or_else(|| panic!("{what} listed: {text}"))
                .to_string()
        };
        assert!(
            line(item(PulsarCoverage::PauseAtPoint).description).ends_with(" 4"),
            "{text}"
        );
        assert!(line("  pause_at_step ").ends_with(" 4"), "{text}");
        assert!(line("  ack_conflict ").ends_with(" 5"), "{text}");
        assert!(line("  unavailable ").ends_with(" 0"), "{text}");
        assert!(line("  coordinator timeout").ends_with(" 2"), "{text}");
        for absent in [
            "cleanups:",
            "node frozen at a named protocol point",
            "roll forward",
            "before_commit_primary",
            "only timeouts",
        ] {
            assert!(!text.contains(absent), "{absent}: {text}");
        }
        assert!(
            line("ownership moved").ends_with("0   <-- never happened"),
            "{text}"
        );
    }

    /// Each of Pulsar's named points is listed with its stops and its
    /// reaches, read from its own counters: a point stopped at is not
    /// flagged, one reached but never stopped at is "never hit" (a
    /// finding), one never reached "never reached"; a campaign that
    /// enables neither class of stops at points lists none.
    #[test]
    fn named_points_list_their_stops_and_reaches() {
        let mut s = Summary::default();
        s.add(&result(&[
            ("pulsar.reached.after_open_logged", 7),
            ("pulsar.stopped.after_open_logged", 2),
            ("pulsar.reached.after_end_logged", 5),
            ("pulsar.reached.after_ack", 3),
            ("pulsar.stopped.after_ack", 1),
        ]));
        let never: Vec<&str> = s.points_never_hit().iter().map(|p| p.name).collect();
        for hit in ["after_open_logged", "after_ack"] {
            assert!(!never.contains(&hit), "{hit}: {never:?}");
        }
        for missed in ["after_end_logged", "append_in_flight", "before_commit"] {
            assert!(never.contains(&missed), "{missed}: {never:?}");
        }
        let text = s.render();
        let line = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(&format!("  {name} ")))
                .unwrap_or_else(|| panic!("{name} listed: {text}"))
                .to_string()
        };
        assert!(
            line("after_open_logged").ends_with(" 2   reached 7"),
            "{text}"
        );
        assert!(line("after_ack").ends_with(" 1   reached 3"), "{text}");
        assert!(
            line("after_end_logged").ends_with(" 0   reached 5   <-- never hit"),
            "{text}"
        );
        assert!(
            line("append_in_flight").ends_with(" 0   reached 0   <-- never reached"),
            "{text}"
        );
        assert!(
            text.contains("finding: crash/pause point after_end_logged was never hit"),
            "{text}"
        );
        let mut without = Summary {
            classes: vec!["duplicate".into()],
            ..Summary::default()
        };
        without.add(&result(&[("pulsar.stopped.after_open_logged", 2)]));
        assert!(without.points_never_hit().is_empty());
        assert!(!without.render().contains("after_open_logged"));
    }

    /// A run's points line names each point reached with its reaches and
    /// stops, in the counters' order; none reached reads `none`.
    #[test]
    fn a_runs_points_line_counts_reaches_and_stops() {
        let counters: BTreeMap<String, u64> = [
            ("pulsar.reached.after_open_logged", 4),
            ("pulsar.stopped.after_open_logged", 1),
            ("pulsar.reached.append_in_flight", 9),
            ("pulsar.stopped.after_end_logged", 0),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
        assert_eq!(
            points_line(&counters),
            "after_open_logged=4/1 append_in_flight=9/0 (reached/stopped)"
        );
        assert_eq!(points_line(&BTreeMap::new()), "none");
    }

    /// Unloads are a fault class of their own: a campaign that leaves
    /// `unload` out does not expect one, a campaign with it flags none
    /// happening, and the unloads that happened are listed among the
    /// faults injected, by their class.
    #[test]
    fn unloads_are_a_fault_class_with_their_coverage_item() {
        let unload = item(PulsarCoverage::Unload);
        assert_eq!(unload.class, Some("unload"));
        let mut without = Summary {
            classes: vec!["crash_at_step".into()],
            ..Summary::default()
        };
        without.add(&result(&[]));
        assert!(!without.never_happened().contains(&unload));
        let mut with = Summary::default();
        with.add(&result(&[]));
        assert!(with.never_happened().contains(&unload));
        let mut happened = Summary::default();
        happened.add(&result(&[("fault.unload", 2)]));
        assert!(!happened.never_happened().contains(&unload));
        let text = happened.render();
        assert!(
            text.lines()
                .any(|l| l.starts_with("  unload ") && l.ends_with(" 2")),
            "{text}"
        );
    }
}
