//! Percolator's kill table: for each ablation, run the default campaign until the
//! first failure or a seed budget, and report whether (and how fast) the
//! checker caught it. Without any ablation the same budget must show no
//! failure. A safety ablation is caught only by a safety verdict, a
//! liveness-only one only by a liveness verdict. With `--ranges`, each
//! ablation runs over that many disjoint seed ranges, each until its first
//! catch, and the table gives the median and maximum seeds to it.

use crate::campaign::{self, Mix, SeedResult, Verdict};
use crate::judge::judge;
use percsim_protocol::percolator::Ablation;
use percsim_protocol::percolator::client::AbortReason;
use percsim_sim::{PointAction, PointFault};
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One line of the kill table.
#[derive(Debug, Clone)]
pub struct KillRow {
    /// The ablation (`None`: the faithful protocol).
    pub ablation: Option<Ablation>,
    /// Seeds run.
    pub seeds: u64,
    /// The first failing seed and its result, if any.
    pub first_failure: Option<SeedResult>,
    /// How many seeds ran up to and including the first failure.
    pub seeds_to_failure: Option<u64>,
    /// Wall time to the first failure (or for the whole budget).
    pub wall: Duration,
    /// A description of the shrunk failing scenario.
    pub shrunk: Option<String>,
    /// Aborted transactions / all finished transactions over the seeds run.
    pub abort_rate: f64,
    /// Owners that found themselves rolled back by another's cleanup, per
    /// thousand finished transactions (the liveness cost of stale-lock rules).
    pub rolled_back_per_mille: f64,
    /// Seeds with a safety verdict among those run (for a liveness-only
    /// ablation, a false alarm).
    pub safety_failures: u64,
}

/// Whether `r` catches `ablation`: a safety ablation only by a safety
/// verdict, a liveness-only one only by a liveness verdict; for the
/// faithful protocol (`None`), any verdict but a pass is a failure.
fn catches(ablation: Option<Ablation>, r: &SeedResult) -> bool {
    match ablation {
        Some(a) if a.is_safety() => r.verdict == Verdict::Safety,
        Some(_) => r.verdict == Verdict::Liveness,
        None => r.verdict != Verdict::Pass,
    }
}

/// Run seeds `first..first + budget` of `mix` with `jobs` threads, until
/// the first that catches `ablation` when `stop_at_failure`; returns the
/// per-seed results run so far, by seed.
fn until_failure(
    (mix, ablation): (&Mix, Option<Ablation>),
    (first, budget): (u64, u64),
    jobs: usize,
    stop_at_failure: bool,
) -> (Vec<SeedResult>, Duration) {
    let started = Instant::now();
    let first_fail = AtomicU64::new(u64::MAX);
    let results: Mutex<Vec<SeedResult>> = Mutex::default();
    crate::pool::for_each(
        jobs,
        budget,
        |i| !(stop_at_failure && i > first_fail.load(Ordering::Relaxed)),
        |i| judge(&campaign::generate(first + i, mix), false).result,
        |i, r| {
            if catches(ablation, &r) {
                first_fail.fetch_min(i, Ordering::Relaxed);
            }
            results.lock().unwrap_or_else(|e| e.into_inner()).push(r);
        },
    );
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|r| r.seed);
    (results, started.elapsed())
}

/// The mix of the default campaign with `ablation` switched on.
fn mix(ablation: Option<Ablation>) -> Mix {
    Mix {
        systems: vec![super::NAME.to_string()],
        ablations: ablation
            .map(|a| vec![a.name().to_string()])
            .unwrap_or_default(),
        ..Mix::default()
    }
}

/// Measure one ablation (or the baseline with `None`) over seeds
/// `0..budget`; a liveness-only ablation runs them all (every one may
/// raise a false safety alarm).
pub fn measure(
    ablation: Option<Ablation>,
    budget: u64,
    jobs: usize,
    shrink_budget: usize,
) -> KillRow {
    let stop = ablation.is_some_and(|a| a.is_safety());
    measure_range(ablation, (0, budget), jobs, shrink_budget, stop)
}

/// [`measure`] over seeds `first..first + budget`, stopping at the first
/// catch when `stop`; its seeds to the first failure count from `first`.
pub fn measure_range(
    ablation: Option<Ablation>,
    (first_seed, budget): (u64, u64),
    jobs: usize,
    shrink_budget: usize,
    stop: bool,
) -> KillRow {
    let mix = mix(ablation);
    let (mut results, wall) = until_failure((&mix, ablation), (first_seed, budget), jobs, stop);
    let first = results.iter().find(|r| catches(ablation, r)).cloned();
    let safety_in = |rs: &[SeedResult]| rs.iter().filter(|r| r.verdict == Verdict::Safety).count();
    // Without a stop every seed ran: a false alarm after the first failure counts.
    let every_safety = safety_in(&results);
    // The seeds up to the first failure, and no more: the threads may have
    // run a few seeds past it before they stopped, how many depends on
    // timing, and the row's rates must not.
    if let Some(f) = &first {
        results.retain(|r| r.seed <= f.seed);
    }
    let safety_failures = if stop {
        safety_in(&results)
    } else {
        every_safety
    } as u64;
    let (aborted, finished) = results.iter().fold((0, 0), |(a, f), r| {
        (a + r.aborted, f + r.aborted + r.committed)
    });
    let rolled_back: u64 = results
        .iter()
        .map(|r| {
            r.counters
                .get(&format!("abort.{}", AbortReason::RolledBack.name()))
                .copied()
                .unwrap_or(0)
        })
        .sum();
    let shrunk = shrink(first.as_ref(), &mix, shrink_budget);
    KillRow {
        ablation,
        seeds: results.len() as u64,
        seeds_to_failure: first.as_ref().map(|f| f.seed - first_seed + 1),
        first_failure: first,
        wall,
        shrunk,
        abort_rate: aborted as f64 / finished.max(1) as f64,
        rolled_back_per_mille: 1000.0 * rolled_back as f64 / finished.max(1) as f64,
        safety_failures,
    }
}

/// The first failure `first` shrunk with at most `budget` runs, described
/// (workload, clients x workers, workload-phase length, fault classes on).
fn shrink(first: Option<&SeedResult>, mix: &Mix, budget: usize) -> Option<String> {
    match (first, budget) {
        (Some(f), b) if b > 0 => {
            let crashes = |f: &PointFault| matches!(f.fault, PointAction::Crash { .. });
            let (s, runs) = campaign::shrink(&super::PERCOLATOR, f.seed, mix, f, b);
            let p = super::PercolatorSpec::of(&s)
                .expect("Percolator's campaign makes Percolator scenarios");
            let (c, w) = (&p.cluster, &s.world);
            let on = w.faults.random.classes().len()
                + usize::from(!c.crashes.is_empty() || c.point_faults.iter().any(crashes))
                + usize::from(!c.pauses.is_empty() || c.point_faults.iter().any(|f| !crashes(f)))
                + usize::from(!w.clocks.is_empty());
            Some(format!(
                "{} {}c x{}w {}ms {}f ({runs} runs)",
                p.workload.name(),
                c.clients,
                c.workers_per_client,
                w.run_ms,
                on
            ))
        }
        _ => None,
    }
}

/// Render the table.
pub fn render(rows: &[KillRow], budget: u64) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "| ablation | safety? | caught | seeds to first failure | wall time | rule that fired | shrunk scenario | abort rate | owners rolled back per 1000 txns |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let (name, safety) = match r.ablation {
            Some(a) => (
                format!("{} ({})", a.name(), a.describe()),
                if a.is_safety() { "yes" } else { "no" },
            ),
            None => ("none (faithful protocol)".to_string(), "-"),
        };
        let caught = match (&r.first_failure, r.ablation) {
            (Some(_), _) => "yes",
            (None, Some(a)) if a.is_safety() => "NO",
            (None, _) => "no failure",
        };
        let rule = r.first_failure.as_ref().map_or_else(
            || "-".into(),
            |f| crate::system::rules_fired(&f.violated_rules, &f.verdict),
        );
        let _ = writeln!(
            o,
            "| {name} | {safety} | {caught} | {} | {:.2} s | {rule} | {} | {:.1}% | {:.1} |",
            r.seeds_to_failure
                .map_or(format!("none in {budget}"), |n| n.to_string()),
            r.wall.as_secs_f64(),
            r.shrunk.as_deref().unwrap_or("-"),
            100.0 * r.abort_rate,
            r.rolled_back_per_mille
        );
    }
    o
}

/// Every ablation the default mix can exercise (all of them: the observer
/// ones through the `pipeline` workload).
pub fn applicable() -> Vec<Ablation> {
    Ablation::ALL.to_vec()
}

/// Percolator's kill table as `percsim ablations` prints it (see
/// [`crate::system::SystemDef::kill_table`]).
pub fn kill_table(opts: &crate::system::KillTable) -> Result<i32, String> {
    let mut chosen = Vec::new();
    for name in &opts.only {
        match Ablation::from_name(name) {
            Some(a) => chosen.push(a),
            None => return Err(format!("unknown percolator ablation {name:?}")),
        }
    }
    if chosen.is_empty() {
        chosen = applicable();
    }
    let (budget, jobs) = (opts.budget, opts.jobs.max(1));
    if opts.budget == 0 || opts.ranges == 0 {
        return Err(format!(
            "--budget {} --ranges {}: Percolator's kill table needs at least one range of at least one seed",
            opts.budget, opts.ranges
        ));
    }
    if opts.ranges > 1 {
        return Ok(ranged_table(&chosen, opts.ranges, budget, jobs));
    }
    let mut rows = vec![measure(None, budget, jobs, 0)];
    eprintln!(
        "baseline: {} seeds, {} failures",
        rows[0].seeds,
        rows[0].first_failure.is_some() as u8
    );
    for a in chosen {
        let row = measure(Some(a), budget, jobs, opts.shrink_budget);
        eprintln!(
            "{}: {}",
            a.name(),
            row.seeds_to_failure
                .map_or("not caught".to_string(), |n| format!(
                    "caught at seed {}",
                    n - 1
                ))
        );
        rows.push(row);
    }
    print!("{}", render(&rows, budget));
    Ok(i32::from(!table_passed(&rows)))
}

/// The faithful protocol passed, every safety ablation was caught, and no
/// liveness ablation raised a safety finding.
fn table_passed(rows: &[KillRow]) -> bool {
    let baseline_clean = rows[0].first_failure.is_none();
    let liveness = |r: &&KillRow| r.ablation.is_some_and(|a| !a.is_safety());
    let all_caught = rows
        .iter()
        .skip(1)
        .all(|r| liveness(&r) || r.first_failure.is_some());
    let no_false_alarm = rows
        .iter()
        .skip(1)
        .filter(liveness)
        .all(|r| r.safety_failures == 0);
    baseline_clean && all_caught && no_false_alarm
}

/// One ablation (or the baseline) measured over disjoint seed ranges.
#[derive(Debug, Clone)]
pub struct RangedRow {
    /// The ablation (`None`: the faithful protocol).
    pub ablation: Option<Ablation>,
    /// Each range's row, in range order.
    pub rows: Vec<KillRow>,
}

impl RangedRow {
    /// Seeds to the first catch of each range (`None`: none in it), in
    /// range order.
    pub fn catches(&self) -> Vec<Option<u64>> {
        self.rows.iter().map(|r| r.seeds_to_failure).collect()
    }

    /// The median seeds to the first catch over the ranges, the upper of
    /// the two middle values of an even count, a range without a catch
    /// counting as more than any (`None` when that is the median).
    pub fn median(&self) -> Option<u64> {
        crate::system::ranged_median(&self.catches(), crate::system::Middle::Upper)
    }

    /// The most seeds any range needed (`None` if one had no catch).
    pub fn max(&self) -> Option<u64> {
        crate::system::ranged_max(&self.catches())
    }

    /// Seeds with a safety verdict over every range.
    pub fn safety_failures(&self) -> u64 {
        self.rows.iter().map(|r| r.safety_failures).sum()
    }
}

/// Measure `ablation` over `ranges` disjoint ranges of `budget` seeds each
/// (range `r` is seeds `r * budget..(r + 1) * budget`), each until its
/// first catch (the faithful protocol runs every seed).
pub fn measure_ranges(
    ablation: Option<Ablation>,
    ranges: u64,
    budget: u64,
    jobs: usize,
) -> RangedRow {
    let rows = (0..ranges)
        .map(|r| measure_range(ablation, (r * budget, budget), jobs, 0, ablation.is_some()))
        .collect();
    RangedRow { ablation, rows }
}

/// Render the table over seed ranges: each ablation's ranges caught, the
/// median and maximum seeds to the first catch, and the rules that fired
/// (every range's first catch's).
pub fn render_ranges(rows: &[RangedRow], budget: u64) -> String {
    use crate::system::{RangedColumns, RangedLine, ranged_cell};
    let columns = RangedColumns {
        name: "ablation",
        safety: true,
        max: "max",
        wall: true,
        rules: "rules that fired",
    };
    let lines: Vec<RangedLine> = rows
        .iter()
        .map(|r| {
            let (name, safety) = match r.ablation {
                Some(a) => (a.name(), if a.is_safety() { "yes" } else { "no" }),
                None => ("none (faithful protocol)", "-"),
            };
            let mut rules: Vec<String> = r
                .rows
                .iter()
                .filter_map(|x| x.first_failure.as_ref())
                .map(|f| crate::system::rules_fired(&f.violated_rules, &f.verdict))
                .collect();
            rules.sort();
            rules.dedup();
            RangedLine {
                name: name.to_string(),
                safety: Some(safety.to_string()),
                caught: format!(
                    "{} of {}",
                    r.catches().iter().flatten().count(),
                    r.rows.len()
                ),
                median: ranged_cell(r.median(), budget),
                max: ranged_cell(r.max(), budget),
                wall: Some(r.rows.iter().map(|x| x.wall).sum()),
                rules: if rules.is_empty() {
                    "-".to_string()
                } else {
                    rules.join("; ")
                },
            }
        })
        .collect();
    crate::system::render_ranged(&columns, &lines)
}

/// The table over `ranges` disjoint seed ranges of `budget` seeds; exit
/// code 0 when the faithful protocol passed every range, every safety
/// ablation was caught in every range, and no liveness-only ablation
/// raised a safety verdict.
fn ranged_table(chosen: &[Ablation], ranges: u64, budget: u64, jobs: usize) -> i32 {
    let mut rows = vec![measure_ranges(None, ranges, budget, jobs)];
    for a in chosen {
        let row = measure_ranges(Some(*a), ranges, budget, jobs);
        eprintln!(
            "{}: seeds to the first catch per range {:?}",
            a.name(),
            row.catches()
        );
        rows.push(row);
    }
    print!("{}", render_ranges(&rows, budget));
    let clean = rows[0].catches().iter().all(Option::is_none);
    let ok = rows.iter().skip(1).all(|r| match r.ablation {
        Some(a) if a.is_safety() => r.max().is_some(),
        _ => r.safety_failures() == 0,
    });
    i32::from(!(clean && ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(seeds_to_failure: Option<u64>, safety_failures: u64) -> KillRow {
        KillRow {
            ablation: None,
            seeds: 10,
            first_failure: None,
            seeds_to_failure,
            wall: Duration::ZERO,
            shrunk: None,
            abort_rate: 0.0,
            rolled_back_per_mille: 0.0,
            safety_failures,
        }
    }

    fn ranged(firsts: &[Option<u64>]) -> RangedRow {
        RangedRow {
            ablation: Some(Ablation::NoLockRefresh),
            rows: firsts.iter().map(|n| row(*n, 0)).collect(),
        }
    }

    /// The ranged table as the core renders it, byte for byte as this
    /// module wrote it before: a safety column, the wall time summed over
    /// the ranges, the upper middle as the median.
    #[test]
    fn the_ranged_table_renders_as_before() {
        let mut caught = ranged(&[Some(3), None]);
        caught.rows[0].wall = Duration::from_millis(1_500);
        let mut failure = crate::campaign::SeedResult::empty("percolator", 2, "bank");
        failure.violated_rules = vec!["snapshot_reads".into()];
        caught.rows[0].first_failure = Some(failure);
        let baseline = RangedRow {
            ablation: None,
            rows: vec![row(None, 0), row(None, 0)],
        };
        let name = Ablation::NoLockRefresh.name();
        let safety = if Ablation::NoLockRefresh.is_safety() {
            "yes"
        } else {
            "no"
        };
        assert_eq!(
            render_ranges(&[baseline, caught], 10),
            format!(
                "| ablation | safety? | ranges caught | median seeds to first failure | max | wall time | rules that fired |\n\
                 |---|---|---|---|---|---|---|\n\
                 | none (faithful protocol) | - | 0 of 2 | none in 10 | none in 10 | 0.0 s | - |\n\
                 | {name} | {safety} | 1 of 2 | none in 10 | none in 10 | 1.5 s | snapshot_reads |\n"
            )
        );
    }

    #[test]
    fn the_median_is_the_upper_middle_and_a_range_without_a_catch_counts_as_unreached() {
        let r = ranged(&[Some(1), Some(5), Some(2), Some(3)]);
        assert_eq!((r.median(), r.max()), (Some(3), Some(5)));
        let r = ranged(&[Some(1), None, Some(2), Some(4)]);
        assert_eq!((r.median(), r.max()), (Some(4), None));
        let r = ranged(&[Some(1), None, Some(2), None]);
        assert_eq!((r.median(), r.max()), (None, None));
    }

    #[test]
    fn a_liveness_ablation_is_caught_only_by_a_liveness_verdict() {
        let mut r = crate::campaign::SeedResult::empty("percolator", 0, "bank");
        let live = Some(Ablation::NoLockRefresh);
        let safety = Some(Ablation::GetIgnoresLocks);
        for (verdict, by_live, by_safety, baseline) in [
            (Verdict::Pass, false, false, false),
            (Verdict::Liveness, true, false, true),
            (Verdict::Safety, false, true, true),
            (Verdict::Stuck, false, false, true),
        ] {
            r.verdict = verdict;
            assert_eq!(catches(live, &r), by_live, "{verdict:?}");
            assert_eq!(catches(safety, &r), by_safety, "{verdict:?}");
            assert_eq!(catches(None, &r), baseline, "{verdict:?}");
        }
    }

    #[test]
    fn a_safety_verdict_under_a_liveness_ablation_fails_the_table() {
        let mut rows = vec![row(None, 0), row(Some(3), 0)];
        rows[1].ablation = Some(Ablation::NoLockRefresh);
        assert!(table_passed(&rows));
        rows[1].safety_failures = 1;
        assert!(!table_passed(&rows));
    }
}
