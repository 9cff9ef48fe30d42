//! The rules of a `percsim-history/1` history, one entry each in a table in
//! report order, and the loop that runs them over the index, each into a
//! sink of its own (so the order they run in changes nothing in a rule's
//! report).

use crate::both::{PARALLEL_FROM_TXNS, both};
use crate::class::Rule;
use crate::ctx::Ctx;
use crate::cycles::{self, GraphStats};
use crate::observers::Observers;
use crate::report::Sink;
use crate::{AllowedAnomalies, RuleReport};
use crate::{atomicity, conflicts, notifications, observer_once, scans, snapshot, timestamps};

/// Where a rule runs. The report lists the rules in the table's order,
/// whatever their phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// First, or on a large history beside the others (each phase on a
    /// thread of its own, after the graph's first part, see
    /// [`run_all_with`]): the dependency graph, the rule that takes the
    /// most time and memory. Run first, its memory is taken before the other rules'
    /// temporaries have been freed, and theirs fit in what it freed.
    First,
    /// After the rules of [`Phase::First`] (or beside them), in the
    /// table's order.
    Then,
}

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
        run: |s, sink| s.graph = cycles::check(s.ctx, s.prepared.take(), sink, &mut s.allowed),
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
    /// What the dependency-graph rule works out first, when it was worked
    /// out before the phase (see [`run_all_with`]).
    prepared: Option<cycles::Prepared<'c>>,
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

/// Runs every rule over the index, each into its own sink; the reports
/// come back in the table's order. On a history of at least
/// [`PARALLEL_FROM_TXNS`] transactions the dependency graph's first part
/// runs on both cores, then the rest of it (the rules of [`Phase::First`])
/// and the other rules run side by side, on a thread each.
pub(crate) fn run_all(ctx: &Ctx<'_>) -> Verdicts {
    run_all_with(ctx, ctx.h.txns.len() >= PARALLEL_FROM_TXNS)
}

/// [`run_all`], on two threads when `parallel` is set: the dependency
/// graph's version orders and judged reads ([`cycles::prepare`]) are
/// worked out first, in halves, then the rest of the graph runs on this
/// thread beside the other rules on the second. With all of it beside
/// them, the graph would finish long after the other rules. The rules share
/// nothing they change (each phase has its own [`Shared`]), and the halves
/// are joined in order, so the reports are the same either way.
fn run_all_with(ctx: &Ctx<'_>, parallel: bool) -> Verdicts {
    let prepared = parallel.then(|| cycles::prepare(ctx, true));
    let (first, then) = both(
        parallel,
        || run_phase(ctx, Phase::First, prepared),
        || run_phase(ctx, Phase::Then, None),
    );
    let reports = first.reports.into_iter().zip(then.reports);
    Verdicts {
        // Every entry has one of the phases, so every report is there.
        rules: reports.filter_map(|(a, b)| a.or(b)).collect(),
        allowed: first.shared.allowed.into_allowed(),
        graph: first.shared.graph,
    }
}

/// What one phase's rules gave: the report of each rule of the phase (at
/// its place in the table), and what they left in their [`Shared`].
struct PhaseRun<'c, 'a> {
    reports: [Option<RuleReport>; RULES.len()],
    shared: Shared<'c, 'a>,
}

/// Runs the rules of `phase` over `ctx`, in the table's order, with what
/// the dependency graph's rule worked out before, if it did.
fn run_phase<'c, 'a>(
    ctx: &'c Ctx<'a>,
    phase: Phase,
    prepared: Option<cycles::Prepared<'c>>,
) -> PhaseRun<'c, 'a> {
    let mut shared = Shared {
        ctx,
        observers: None,
        allowed: Sink::new(cycles::ID),
        graph: GraphStats::default(),
        prepared,
    };
    let mut reports: [Option<RuleReport>; RULES.len()] = Default::default();
    for (entry, report) in RULES.iter().zip(&mut reports) {
        if entry.phase == phase {
            let mut sink = Sink::new(entry.id);
            (entry.run)(&mut shared, &mut sink);
            *report = Some(sink.into_rule(entry.name));
        }
    }
    PhaseRun { reports, shared }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table lists each rule of a `percsim-history/1` history once, in
    /// the order of [`Rule::ALL`] (the report's), and only the dependency
    /// graph runs in the first phase.
    #[test]
    fn the_table_is_in_report_order_and_only_the_graph_runs_apart() {
        let ids: Vec<Rule> = RULES.iter().map(|e| e.id).collect();
        assert_eq!(ids, Rule::ALL[..RULES.len()]);
        assert!(!ids.contains(&Rule::ConsistentLists));
        let first: Vec<Rule> = RULES
            .iter()
            .filter(|e| e.phase == Phase::First)
            .map(|e| e.id)
            .collect();
        assert_eq!(first, [Rule::NoDependencyCycles]);
    }

    /// Every percsim history among the fixtures, valid or not, gets the
    /// same verdicts with its index built and its rules run on two threads
    /// as on one (each fixture fails a different rule, so every rule's
    /// findings are compared).
    #[test]
    fn the_rules_give_the_same_verdicts_on_two_threads_as_on_one() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut judged = 0;
        let mut failing = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let Ok(h) = crate::parse(&text) else { continue };
            let compact = || {
                let mut c = crate::compact::Compact::from_history(&h);
                c.renumber_cells();
                let store = c.take_store();
                (c, store)
            };
            let ((c1, s1), (c2, s2)) = (compact(), compact());
            let one = Ctx::build_with(&c1, s1, false);
            let two = Ctx::build_with(&c2, s2, true);
            let (a, b) = (run_all_with(&one, false), run_all_with(&two, true));
            assert_eq!(a.rules, b.rules, "{}", path.display());
            assert_eq!(a.allowed, b.allowed, "{}", path.display());
            let edges = |v: &Verdicts| (v.graph.edges, v.graph.unique_cells);
            assert_eq!(edges(&a), edges(&b), "{}", path.display());
            judged += 1;
            failing += usize::from(a.rules.iter().any(|r| !r.passed));
        }
        assert!(
            judged >= 30 && failing >= 20,
            "{judged} judged, {failing} failing"
        );
    }
}
