//! The rules of a `percsim-history/1` history, one entry each in a table in
//! report order, and the loop that runs them over the index, each into a
//! sink of its own (so the order they run in changes nothing in a rule's
//! report).

use crate::class::Rule;
use crate::ctx::Ctx;
use crate::cycles::{self, GraphStats};
use crate::observers::Observers;
use crate::report::Sink;
use crate::{AllowedAnomalies, RuleReport};
use crate::{atomicity, conflicts, notifications, observer_once, scans, snapshot, timestamps};

/// When a rule runs. The report lists the rules in the table's order,
/// whatever their phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Right after the index, before any other rule: the dependency graph,
    /// the rule that takes the most memory. Its memory is then taken before
    /// the other rules' temporaries have been freed (an allocator keeps
    /// freed pages a while, and the peak is the largest sum), and theirs fit
    /// in what it freed.
    First,
    /// After the rules of [`Phase::First`], in the table's order.
    Then,
}

/// The phases, in the order they run.
const PHASES: [Phase; 2] = [Phase::First, Phase::Then];

/// One rule: its id, its name in the report, when it runs, and what runs
/// it (into the sink given, with what the rules share).
struct Entry {
    id: Rule,
    name: &'static str,
    phase: Phase,
    run: Run,
}

/// What runs a rule.
type Run = fn(&mut Shared<'_, '_>, &mut Sink);

impl Entry {
    /// A rule that runs in [`Phase::Then`].
    const fn then(id: Rule, name: &'static str, run: Run) -> Entry {
        let phase = Phase::Then;
        Entry {
            id,
            name,
            phase,
            run,
        }
    }
}

/// Every rule, in report order.
const RULES: [Entry; 8] = [
    Entry::then(snapshot::ID, snapshot::NAME, |s, k| {
        snapshot::check(s.ctx, k)
    }),
    Entry::then(conflicts::ID, conflicts::NAME, |s, k| {
        conflicts::check(s.ctx, k)
    }),
    Entry::then(timestamps::ID, timestamps::NAME, |s, k| {
        timestamps::check(s.ctx, k)
    }),
    Entry::then(atomicity::ID, atomicity::NAME, |s, k| {
        atomicity::check(s.ctx, k)
    }),
    Entry {
        id: cycles::ID,
        name: cycles::NAME,
        phase: Phase::First,
        run: |s, sink| s.graph = cycles::check(s.ctx, sink, &mut s.allowed),
    },
    Entry::then(observer_once::ID, observer_once::NAME, |s, k| {
        observer_once::check(s.ctx, s.observers(), k)
    }),
    Entry::then(notifications::ID, notifications::NAME, |s, k| {
        notifications::check(s.ctx, s.observers(), k)
    }),
    Entry::then(scans::ID, scans::NAME, |s, k| scans::check(s.ctx, k)),
];

/// What the rules run over, and what some of them share or leave for the
/// report.
struct Shared<'c, 'a> {
    ctx: &'c Ctx<'a>,
    /// The observer runs the two observer rules share, indexed when the
    /// first of them runs.
    observers: Option<Observers<'a>>,
    /// The anomalies snapshot isolation allows (the dependency-graph rule
    /// files them).
    allowed: Sink,
    /// The dependency graph's sizes (zero until its rule has run).
    graph: GraphStats,
}

impl<'a> Shared<'_, 'a> {
    /// The observer runs, indexed on the first call.
    fn observers(&mut self) -> &Observers<'a> {
        let ctx = self.ctx;
        self.observers.get_or_insert_with(|| Observers::build(ctx))
    }
}

/// What running the rules gives the report.
pub(crate) struct Verdicts {
    /// Each rule's report, in report order.
    pub rules: Vec<RuleReport>,
    /// The anomalies snapshot isolation allows, as the dependency-graph
    /// rule found them.
    pub allowed: AllowedAnomalies,
    /// The dependency graph's sizes, for the statistics.
    pub graph: GraphStats,
}

/// Runs every rule over the index, phase by phase (see [`Phase`]), each
/// into its own sink; the reports come back in the table's order.
pub(crate) fn run_all(ctx: &Ctx<'_>) -> Verdicts {
    let mut shared = Shared {
        ctx,
        observers: None,
        allowed: Sink::new(cycles::ID),
        graph: GraphStats::default(),
    };
    let mut reports: [Option<RuleReport>; RULES.len()] = Default::default();
    for phase in PHASES {
        for (entry, report) in RULES.iter().zip(&mut reports) {
            if entry.phase == phase {
                let mut sink = Sink::new(entry.id);
                (entry.run)(&mut shared, &mut sink);
                *report = Some(sink.into_rule(entry.name));
            }
        }
    }
    Verdicts {
        // Every entry has one of the phases, so every report is there.
        rules: reports.into_iter().flatten().collect(),
        allowed: shared.allowed.into_allowed(),
        graph: shared.graph,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table lists each rule of a `percsim-history/1` history once, in
    /// the order of [`Rule::ALL`] (the report's), and only the dependency
    /// graph runs first.
    #[test]
    fn the_table_is_in_report_order_and_the_graph_runs_first() {
        let ids: Vec<Rule> = RULES.iter().map(|e| e.id).collect();
        assert_eq!(ids, Rule::ALL[..RULES.len()]);
        assert!(!ids.contains(&Rule::ConsistentLists));
        let first: Vec<Rule> = RULES
            .iter()
            .filter(|e| e.phase == Phase::First)
            .map(|e| e.id)
            .collect();
        assert_eq!(first, [Rule::NoDependencyCycles]);
        assert_eq!(PHASES[0], Phase::First);
    }
}
