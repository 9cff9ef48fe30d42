//! A campaign's aggregates, printed by `percsim fuzz` and `percsim merge`.
//! Only counts and the failing seeds are kept, so a campaign of any length
//! runs in flat memory; each seed's full result goes to the JSON lines as it
//! finishes.

use crate::campaign::{SeedResult, Verdict};
use crate::coverage::{CoverageItem, WorldCoverage};
use crate::system::{SummarySection, SystemDef};
use percsim_sim::FaultKind;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;
use std::time::Duration;

/// A seed that did not pass, as the summary lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// How it ended.
    pub verdict: Verdict,
    /// Checker rules that failed.
    pub violated_rules: Vec<String>,
    /// The capsule saved for it, if one was.
    pub capsule: Option<String>,
}

/// Transactions summed over every seed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Transactions {
    /// Committed.
    pub committed: u64,
    /// Aborted.
    pub aborted: u64,
    /// Outcome unknown to the client.
    pub unknown: u64,
}

/// What a campaign found: aggregates over every seed judged.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Seeds judged.
    pub seeds: u64,
    /// Seeds by verdict.
    pub verdicts: BTreeMap<Verdict, u64>,
    /// Seeds by system.
    pub systems: BTreeMap<String, u64>,
    /// Seeds by workload.
    pub workloads: BTreeMap<String, u64>,
    /// Seeds by violated rule, of the seeds whose verdict is not liveness
    /// (a safety rule, a workload invariant, a failed expectation).
    pub rules: BTreeMap<String, u64>,
    /// Seeds with a liveness verdict by the liveness rule that found it:
    /// kept apart from [`Summary::rules`], so that a run that did not
    /// converge or left a transaction open is never counted as a safety
    /// violation.
    pub liveness_rules: BTreeMap<String, u64>,
    /// Transactions summed over every seed.
    pub transactions: Transactions,
    /// Simulated time summed over every seed, in ms.
    pub sim_ms: u64,
    /// Counters (events, cleanups, aborts by reason) summed over every seed.
    pub counters: BTreeMap<String, u64>,
    /// Every seed that did not pass, by system and seed.
    pub failures: BTreeMap<(String, u64), Failure>,
    /// The seeds in which a fault the scenario configured never fired
    /// (`fuzz --scenario`), by system and seed, with the entries: listed
    /// apart from the failures (such a seed tested less, it broke nothing).
    pub not_fired: BTreeMap<(String, u64), Vec<String>>,
    /// Wall time of the campaign (for a merge: the seeds' wall times summed).
    pub wall: Duration,
    /// The fault classes the campaign enabled (`--faults`, by their names
    /// now); empty: every class each system honours. Coverage items of a
    /// class left out are not listed, nor named points when neither class
    /// that stops nodes at them is enabled.
    pub classes: Vec<String>,
}

impl Summary {
    /// Count one seed's result in.
    pub fn add(&mut self, r: &SeedResult) {
        self.seeds += 1;
        *self.verdicts.entry(r.verdict).or_default() += 1;
        *self.systems.entry(r.system.clone()).or_default() += 1;
        *self.workloads.entry(r.workload.clone()).or_default() += 1;
        let rules = match r.verdict {
            Verdict::Liveness => &mut self.liveness_rules,
            _ => &mut self.rules,
        };
        for rule in &r.violated_rules {
            *rules.entry(rule.clone()).or_default() += 1;
        }
        self.transactions.committed += r.committed;
        self.transactions.aborted += r.aborted;
        self.transactions.unknown += r.unknown;
        self.sim_ms += r.sim_ms;
        for (k, v) in &r.counters {
            *self.counters.entry(k.clone()).or_default() += v;
        }
        if !r.not_fired.is_empty() {
            self.not_fired
                .insert((r.system.clone(), r.seed), r.not_fired.clone());
        }
        if r.verdict != Verdict::Pass {
            self.failures.insert(
                (r.system.clone(), r.seed),
                Failure {
                    verdict: r.verdict,
                    violated_rules: r.violated_rules.clone(),
                    capsule: r.capsule.clone(),
                },
            );
        }
    }

    /// The worst verdict (safety over crash over nondeterminism over stuck
    /// over a failed expectation over liveness).
    /// `Verdict`'s own order is this ranking.
    pub fn worst(&self) -> Verdict {
        self.verdicts.keys().copied().max().unwrap_or(Verdict::Pass)
    }

    /// Coverage items that never happened (of the systems the campaign ran).
    pub fn never_happened(&self) -> Vec<CoverageItem> {
        self.coverage()
            .into_iter()
            .filter(|c| self.count(&c.counter) == 0)
            .collect()
    }

    /// The registered systems the campaign ran seeds of, and the names of
    /// those this build does not know (merged from another build's lines).
    fn ran(&self) -> (Vec<&'static dyn SystemDef>, Vec<&str>) {
        let mut known = Vec::new();
        let mut unknown = Vec::new();
        for name in self.systems.keys() {
            match crate::systems::find(name) {
                Ok(s) => known.push(s),
                Err(_) => unknown.push(name.as_str()),
            }
        }
        (known, unknown)
    }

    /// The coverage items of the systems the campaign ran: the world's
    /// that apply to one of them and each one's own, less those of a fault
    /// class the campaign left out.
    fn coverage(&self) -> Vec<CoverageItem> {
        let mut items = coverage_items(&self.ran().0);
        items.retain(|c| self.class_enabled(c) && self.reachable(c.name));
        items
    }

    /// Whether the campaign enabled the fault class that alone produces
    /// coverage item or named point `c` (true when no single class does).
    fn class_enabled(&self, c: &CoverageItem) -> bool {
        c.class.is_none_or(|k| self.enabled_named(k))
    }

    /// Whether a workload the campaign ran can reach the coverage item or
    /// named point `name` ([`SystemDef::reached_by`]).
    fn reachable(&self, name: &str) -> bool {
        self.ran().0.iter().all(|s| {
            s.reached_by(name)
                .is_none_or(|ws| ws.iter().any(|w| self.workloads.contains_key(*w)))
        })
    }

    /// Whether the campaign enabled fault class `kind`.
    fn enabled(&self, kind: FaultKind) -> bool {
        self.enabled_named(kind.name())
    }

    /// Whether the campaign enabled the fault class named `class`.
    fn enabled_named(&self, class: &str) -> bool {
        self.classes.is_empty() || self.classes.iter().any(|c| c == class)
    }

    /// Named points no node stopped at, of the systems the campaign ran:
    /// each is a finding (a step of the protocol the campaign never tested
    /// a failure at).
    pub fn points_never_hit(&self) -> Vec<CoverageItem> {
        self.points()
            .into_iter()
            .filter(|p| self.count(&p.counter) == 0)
            .collect()
    }

    /// The named points of the systems the campaign ran that its
    /// workloads can reach and its fault classes stop nodes at (none when
    /// it enabled neither class that stops nodes at points; a point only
    /// one class stops at, when it enabled that class).
    fn points(&self) -> Vec<CoverageItem> {
        let mut out: Vec<CoverageItem> = Vec::new();
        if !self.enabled(FaultKind::CrashAtStep) && !self.enabled(FaultKind::PauseAtStep) {
            return out;
        }
        for s in self.ran().0 {
            for p in s.named_points() {
                if !out.contains(&p) && self.class_enabled(&p) && self.reachable(p.name) {
                    out.push(p);
                }
            }
        }
        out
    }

    /// The campaign's total of counter `name` (0 if it never moved).
    fn count(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }

    /// The summary table, coverage and failures, as text.
    pub fn render(&self) -> String {
        let secs = self.wall.as_secs_f64().max(1e-9);
        let mut o = String::new();
        let _ = writeln!(o, "== campaign summary ==");
        let _ = writeln!(
            o,
            "seeds               {} in {:.1} s wall ({:.0} seeds/min)",
            self.seeds,
            secs,
            self.seeds as f64 * 60.0 / secs
        );
        let w: Vec<String> = self
            .workloads
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(o, "workloads           {}", w.join(" "));
        let t = &self.transactions;
        let _ = writeln!(
            o,
            "transactions        {} committed, {} aborted, {} unknown",
            t.committed, t.aborted, t.unknown
        );
        let _ = writeln!(
            o,
            "simulated time      {:.1} s",
            self.sim_ms as f64 / 1000.0
        );
        self.render_counters(&mut o);
        let _ = writeln!(o, "verdicts:");
        for (k, v) in &self.verdicts {
            let name = format!("{k:?}").to_lowercase();
            let _ = writeln!(o, "  {name:<44} {v:>8}");
        }
        let _ = writeln!(o, "coverage (how often each interesting event happened):");
        for c in self.coverage() {
            let n = self.count(&c.counter);
            let flag = if n == 0 { "   <-- never happened" } else { "" };
            let _ = writeln!(o, "  {:<44} {n:>8}{flag}", c.description);
        }
        for name in self.ran().1 {
            let _ = writeln!(
                o,
                "system {name} is unknown to this build: its coverage, points and sections are not listed"
            );
        }
        self.render_points(&mut o);
        self.render_not_fired(&mut o);
        for ((system, seed), f) in &self.failures {
            let replay = f
                .capsule
                .as_ref()
                .map_or("no capsule saved".to_string(), |c| {
                    format!("percsim replay {c}")
                });
            let _ = writeln!(
                o,
                "failure: {system} seed {seed} {:?} [{}] -> {replay}",
                f.verdict,
                f.violated_rules.join(", ")
            );
        }
        o
    }

    /// The seeds whose configured faults never fired, when there are any:
    /// their count, then one line per seed naming the entries.
    fn render_not_fired(&self, o: &mut String) {
        if self.not_fired.is_empty() {
            return;
        }
        let _ = writeln!(
            o,
            "configured faults that never fired: {} of {} seeds (not failures: the run never reached what the entry is keyed to)",
            self.not_fired.len(),
            self.seeds
        );
        for ((system, seed), entries) in &self.not_fired {
            let _ = writeln!(o, "not fired: {system} seed {seed}: {}", entries.join("; "));
        }
    }

    /// The named points of the systems that ran (listed only when one
    /// has any), each never hit flagged and reported as a finding.
    fn render_points(&self, o: &mut String) {
        let points = self.points();
        if points.is_empty() {
            return;
        }
        let _ = writeln!(o, "crash and pause points (nodes stopped at each):");
        for p in &points {
            let n = self.count(&p.counter);
            let reached = self.reach_counter(p).map(|c| self.count(&c));
            let flag = match (n, reached) {
                (0, Some(0)) => "   <-- never reached",
                (0, _) => "   <-- never hit",
                _ => "",
            };
            let reached = reached.map_or(String::new(), |r| format!("   reached {r}"));
            let _ = writeln!(o, "  {:<44} {n:>8}{reached}{flag}", p.name);
        }
        for p in self.points_never_hit() {
            let _ = writeln!(
                o,
                "finding: crash/pause point {} was never hit ({})",
                p.name, p.description
            );
        }
    }

    /// The counter of reaches of named point `p`, if the system that
    /// lists it counts them ([`SystemDef::point_reach_counter`]).
    fn reach_counter(&self, p: &CoverageItem) -> Option<String> {
        self.ran()
            .0
            .into_iter()
            .filter(|s| s.named_points().contains(p))
            .find_map(|s| s.point_reach_counter(p.name))
    }

    fn render_counters(&self, o: &mut String) {
        let mut sections = vec![self.faults_section()];
        for s in self.ran().0 {
            sections.extend(s.campaign_sections(&self.counters));
        }
        let rules = self.rules.iter().map(|(k, v)| (k.clone(), *v)).collect();
        sections.push(SummarySection {
            title: "violations by rule",
            rows: rules,
        });
        if !self.liveness_rules.is_empty() {
            let rows = self.liveness_rules.iter().map(|(k, v)| (k.clone(), *v));
            sections.push(SummarySection {
                title: "liveness findings by rule",
                rows: rows.collect(),
            });
        }
        for section in sections {
            let _ = writeln!(o, "{}:", section.title);
            if section.rows.is_empty() {
                let _ = writeln!(o, "  (none)");
            }
            for (k, v) in section.rows {
                let _ = writeln!(o, "  {k:<44} {v:>8}");
            }
        }
    }

    /// The world's faults injected, by class: a campaign of one system
    /// names its kills by the role they kill (`kill:broker`).
    fn faults_section(&self) -> SummarySection {
        let mut rows = prefixed_rows(&self.counters, "fault.");
        let (known, unknown) = self.ran();
        if let ([system], true) = (known.as_slice(), unknown.is_empty()) {
            let roles = system.roles();
            for (class, _) in &mut rows {
                *class = crate::faultmix::display(class, &roles);
            }
        }
        SummarySection {
            title: "faults injected by class",
            rows,
        }
    }

    /// Merge the JSON lines of several shards, read as streams (a seed of
    /// a system seen twice is counted once, the first time), with no check
    /// that they make up a campaign (`percsim merge` checks, see
    /// [`crate::shardfile::merge`]); header and completion lines are
    /// skipped. `inputs` pairs a name for error messages with a reader.
    pub fn merge_jsonl<R: BufRead>(inputs: Vec<(String, R)>) -> Result<Summary, String> {
        let mut merge = LineMerge::default();
        for (name, reader) in inputs {
            for (i, line) in reader.lines().enumerate() {
                let at = format!("{name}:{}", i + 1);
                let line = line.map_err(|e| format!("{at}: cannot read: {e}"))?;
                let marker = line.starts_with("{\"campaign\"") || line.starts_with("{\"complete\"");
                if !line.trim().is_empty() && !marker {
                    merge.add_line(&at, &line)?;
                }
            }
        }
        Ok(merge.finish())
    }
}

/// Seed lines merged into one summary as they are read: a seed of a
/// system seen twice is counted once, the first time.
#[derive(Default)]
pub(crate) struct LineMerge {
    seen: BTreeMap<String, SeedSet>,
    summary: Summary,
    wall_ms: u64,
}

impl LineMerge {
    /// Count one seed line in (`at` names it in errors) and return it.
    pub(crate) fn add_line(&mut self, at: &str, line: &str) -> Result<SeedResult, String> {
        let mut r: SeedResult =
            serde_json::from_str(line).map_err(|e| format!("{at}: not a seed result: {e}"))?;
        if r.system.is_empty() {
            r.system = system_of_workload(&r.workload);
        }
        rename_old_counters(&mut r);
        if self
            .seen
            .entry(r.system.clone())
            .or_default()
            .insert(r.seed)
        {
            self.wall_ms += r.wall_ms;
            self.summary.add(&r);
        }
        Ok(r)
    }

    /// The summary of every line added (its wall time: theirs summed).
    pub(crate) fn finish(mut self) -> Summary {
        self.summary.wall = Duration::from_millis(self.wall_ms);
        self.summary
    }
}

/// The coverage items of a campaign over `systems`: the world's items that
/// apply to at least one of them, in the world's order, then each system's
/// own in turn (an item two systems declare alike is listed once).
fn coverage_items(systems: &[&dyn SystemDef]) -> Vec<CoverageItem> {
    let mut out: Vec<CoverageItem> = WorldCoverage::ALL
        .iter()
        .filter(|w| systems.iter().any(|s| s.world_coverage().contains(w)))
        .map(|w| w.item())
        .collect();
    for s in systems {
        for item in s.coverage() {
            if !out.contains(&item) {
                out.push(item);
            }
        }
    }
    out
}

/// The counters named `prefix` and one more part, as rows labelled by
/// that part (a system's campaign section may use it).
pub fn prefixed_rows(counters: &BTreeMap<String, u64>, prefix: &str) -> Vec<(String, u64)> {
    counters
        .iter()
        .filter_map(|(k, v)| {
            let rest = k.strip_prefix(prefix)?;
            (!rest.contains('.')).then(|| (rest.to_string(), *v))
        })
        .collect()
}

/// A seed line written before the fault classes were named by role counts
/// their kills under the old names: count them under the new ones.
fn rename_old_counters(r: &mut SeedResult) {
    for (old, new) in crate::faultmix::OLD_NAMES {
        if let Some(n) = r.counters.remove(&format!("fault.{old}")) {
            *r.counters.entry(format!("fault.{new}")).or_default() += n;
        }
    }
}

/// The system a seed line written before lines named their system ran:
/// the one whose workload it ran (the registry's default if none).
fn system_of_workload(workload: &str) -> String {
    let systems = crate::systems::all();
    let owner = systems
        .iter()
        .find(|s| s.workloads().contains(&workload))
        .copied()
        .unwrap_or_else(crate::systems::default_system);
    owner.name().to_string()
}

/// A set of seeds in about one bit per seed for dense ranges: 4,096-seed
/// blocks of bits, kept only for blocks that hold a seed.
#[derive(Default)]
struct SeedSet(BTreeMap<u64, Box<[u64; 64]>>);

impl SeedSet {
    /// Add `seed`; false if it was already there.
    fn insert(&mut self, seed: u64) -> bool {
        let block = self
            .0
            .entry(seed >> 12)
            .or_insert_with(|| Box::new([0; 64]));
        let (word, bit) = (((seed >> 6) & 63) as usize, seed & 63);
        let new = block[word] & (1 << bit) == 0;
        block[word] |= 1 << bit;
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(seed: u64, verdict: Verdict) -> SeedResult {
        SeedResult {
            system: crate::systems::default_system().name().into(),
            seed,
            verdict,
            workload: "bank".into(),
            committed: 2,
            aborted: 1,
            unknown: 0,
            sim_ms: 10,
            violated_rules: if verdict == Verdict::Safety {
                vec!["snapshot_reads".into()]
            } else {
                Vec::new()
            },
            explanation: None,
            counters: BTreeMap::from([("fault.pause".to_string(), 1)]),
            wall_ms: 5,
            capsule: (verdict != Verdict::Pass).then(|| format!("failures/seed-{seed}.json")),
            not_fired: Vec::new(),
        }
    }

    /// A coverage item whose counter never moved is flagged; one whose
    /// counter moved is counted.
    #[test]
    fn an_item_whose_counter_never_moved_is_flagged() {
        let mut none = Summary::default();
        let mut r = result(1, Verdict::Pass);
        r.counters.clear();
        none.add(&r);
        let late = WorldCoverage::Late.item();
        assert!(none.never_happened().contains(&late));
        let line = |n: u64| format!("  {:<44} {n:>8}", late.description);
        let text = none.render();
        assert!(
            text.contains(&format!("{}   <-- never happened", line(0))),
            "{text}"
        );
        r.counters.insert(late.counter.clone(), 3);
        let mut some = Summary::default();
        some.add(&r);
        assert!(!some.never_happened().contains(&late));
        assert!(some.render().contains(&format!("{}\n", line(3))));
    }

    /// A campaign narrowed to some fault classes lists only their items:
    /// a class left out is not reported "never happened", nor are named
    /// points when no class stops nodes at them.
    #[test]
    fn coverage_lists_only_the_enabled_classes_items() {
        let mut r = result(1, Verdict::Pass);
        r.counters.clear();
        let narrowed = |classes: &[&str]| {
            let mut s = Summary {
                classes: classes.iter().map(|c| c.to_string()).collect(),
                ..Summary::default()
            };
            s.add(&r);
            s
        };
        let s = narrowed(&["partition"]);
        let missing = s.never_happened();
        assert!(missing.contains(&WorldCoverage::Partition.item()));
        for left_out in [WorldCoverage::KillClient, WorldCoverage::Pause] {
            assert!(!missing.contains(&left_out.item()), "{left_out}");
        }
        assert!(
            missing
                .iter()
                .all(|c| c.class.is_none() || c.name == "partition")
        );
        assert!(s.points_never_hit().is_empty());
        let text = s.render();
        assert!(!text.contains("client killed"), "{text}");
        assert!(!text.contains("crash and pause points"), "{text}");
        let s = narrowed(&["pause_at_step"]);
        assert!(!s.points_never_hit().is_empty());
        assert!(
            !s.never_happened()
                .contains(&WorldCoverage::Partition.item())
        );
        let all = narrowed(&[]);
        assert!(
            all.never_happened()
                .contains(&WorldCoverage::KillClient.item())
        );
    }

    /// A campaign of Pulsar's plain `stream` workload lists none of the
    /// pipeline processors' named points, nor their kills, as never
    /// reached: no workload it ran has a processor. One that ran the
    /// pipeline lists them.
    #[test]
    fn points_only_other_workloads_reach_are_not_listed() {
        let summary = |workload: &str| {
            let mut s = Summary::default();
            let mut r = result(1, Verdict::Pass);
            r.system = "pulsar".into();
            r.workload = workload.into();
            s.add(&r);
            s
        };
        let processor = |name: &str| {
            percsim_protocol::pulsar::client::ClientPoint::ALL
                .iter()
                .any(|p| p.name() == name)
        };
        let stream = summary("stream");
        let never = stream.points_never_hit();
        assert!(!never.is_empty() && !never.iter().any(|p| processor(p.name)));
        let missing = stream.never_happened();
        assert!(!missing.iter().any(|c| c.name == "client_crash_at_point"));
        let text = stream.render();
        assert!(!text.contains("after_receive"), "{text}");
        assert!(!text.contains("after_pending_ack_logged"), "{text}");
        assert!(!text.contains("client killed at a named point"), "{text}");
        let pipeline = summary("stream-pipeline");
        assert!(
            pipeline
                .points_never_hit()
                .iter()
                .any(|p| processor(p.name))
        );
        let missing = pipeline.never_happened();
        assert!(missing.iter().any(|c| c.name == "client_crash_at_point"));
    }

    /// A Pulsar pipeline campaign that only freezes nodes at points lists
    /// the brokers' points but not the processors' (a processor is only
    /// ever killed at its points); one that kills at points lists both.
    #[test]
    fn points_only_a_left_out_class_stops_at_are_not_listed() {
        let mut r = result(1, Verdict::Pass);
        r.system = "pulsar".into();
        r.workload = "stream-pipeline".into();
        let narrowed = |class: &str| {
            let mut s = Summary {
                classes: vec![class.to_string()],
                ..Summary::default()
            };
            s.add(&r);
            s.points_never_hit()
        };
        let processor = |p: &CoverageItem| {
            percsim_protocol::pulsar::client::ClientPoint::ALL
                .iter()
                .any(|c| c.name() == p.name)
        };
        let freezes = narrowed("pause_at_step");
        assert!(!freezes.is_empty() && !freezes.iter().any(processor));
        let kills = narrowed("crash_at_step");
        assert!(kills.iter().any(processor) && kills.len() > freezes.len());
    }

    /// A seed of a system this build does not know is said so, not
    /// silently given another system's coverage.
    #[test]
    fn a_system_unknown_to_the_build_is_named() {
        let mut s = Summary::default();
        let mut r = result(1, Verdict::Pass);
        r.system = "elsewhere".into();
        s.add(&r);
        assert!(s.never_happened().is_empty());
        assert!(s.points_never_hit().is_empty());
        let text = s.render();
        assert!(
            text.contains("system elsewhere is unknown to this build"),
            "{text}"
        );
        assert!(!text.contains("never happened"), "{text}");
    }

    /// A run that did not converge, whose liveness rules named what
    /// stayed undone, is counted under the liveness findings, never among
    /// the safety violations; a safety violation still is.
    #[test]
    fn liveness_findings_are_not_counted_as_violations() {
        let mut s = Summary::default();
        let mut stuck = result(1, Verdict::Liveness);
        stuck.violated_rules = vec!["dead_client_txn_open".into()];
        s.add(&stuck);
        s.add(&result(2, Verdict::Safety));
        assert_eq!(s.rules.keys().collect::<Vec<_>>(), ["snapshot_reads"]);
        assert_eq!(
            s.liveness_rules.keys().collect::<Vec<_>>(),
            ["dead_client_txn_open"]
        );
        let text = s.render();
        let violations = text
            .split("violations by rule:\n")
            .nth(1)
            .and_then(|t| t.split("liveness findings by rule:\n").next())
            .expect("the violations section");
        assert!(violations.contains("snapshot_reads"), "{text}");
        assert!(!violations.contains("dead_client_txn_open"), "{text}");
        assert!(
            text.contains("liveness findings by rule:\n  dead_client_txn_open"),
            "{text}"
        );
    }

    /// A failed script expectation ranks below a safety violation and
    /// above a liveness failure.
    #[test]
    fn a_failed_expectation_ranks_between_safety_and_liveness() {
        let mut s = Summary::default();
        s.add(&result(1, Verdict::Liveness));
        s.add(&result(2, Verdict::ExpectationFailed));
        assert_eq!(s.worst(), Verdict::ExpectationFailed);
        assert_eq!(s.worst().exit_code(), 7);
        s.add(&result(3, Verdict::Safety));
        assert_eq!(s.worst(), Verdict::Safety);
    }

    #[test]
    fn seed_sets_tell_new_seeds_from_seen_ones() {
        let mut s = SeedSet::default();
        for seed in [0, 63, 64, 4095, 4096, u64::MAX] {
            assert!(s.insert(seed), "{seed} is new");
            assert!(!s.insert(seed), "{seed} was seen");
        }
        assert!(s.insert(1));
    }

    #[test]
    fn merge_counts_a_repeated_seed_once_and_lists_failures_with_replays() {
        let line = |r: &SeedResult| serde_json::to_string(r).unwrap() + "\n";
        let a = line(&result(1, Verdict::Pass)) + &line(&result(2, Verdict::Safety));
        let b = line(&result(2, Verdict::Safety)) + "\n" + &line(&result(3, Verdict::Pass));
        let s = Summary::merge_jsonl(vec![
            ("a".to_string(), a.as_bytes()),
            ("b".to_string(), b.as_bytes()),
        ])
        .unwrap();
        assert_eq!(s.seeds, 3);
        assert_eq!(s.transactions.committed, 6);
        assert_eq!(s.counters["fault.pause"], 3);
        assert_eq!(s.worst(), Verdict::Safety);
        assert_eq!(s.wall, Duration::from_millis(15));
        let text = s.render();
        let default = crate::systems::default_system().name();
        let want = format!(
            "failure: {default} seed 2 Safety [snapshot_reads] -> percsim replay failures/seed-2.json"
        );
        assert!(text.contains(&want), "{text}");
        // A line written before lines named their system: its workload says.
        let mut old = serde_json::to_value(result(9, Verdict::Pass)).unwrap();
        old.as_object_mut().unwrap().remove("system");
        let other = crate::systems::all()[1];
        old["workload"] = other.workloads()[0].into();
        let s = Summary::merge_jsonl(vec![(
            "old.jsonl".to_string(),
            format!("{old}\n").as_bytes(),
        )])
        .unwrap();
        assert_eq!(s.systems.keys().collect::<Vec<_>>(), vec![other.name()]);
        // Its kills under a class's old name count under the new one.
        let mut old = serde_json::to_value(result(10, Verdict::Pass)).unwrap();
        old["counters"] = serde_json::json!({"fault.kill_oracle": 2});
        let s = Summary::merge_jsonl(vec![(
            "old.jsonl".to_string(),
            format!("{old}\n").as_bytes(),
        )])
        .unwrap();
        assert_eq!(s.counters.get("fault.kill_coordinator"), Some(&2));
        assert!(!s.counters.contains_key("fault.kill_oracle"));
        let bad = Summary::merge_jsonl(vec![("c.jsonl".to_string(), "{}\n".as_bytes())]);
        assert!(bad.unwrap_err().starts_with("c.jsonl:1: not a seed result"));
    }
}
