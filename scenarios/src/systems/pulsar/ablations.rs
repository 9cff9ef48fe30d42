//! Pulsar's kill table: for each planted bug of `PulsarAblation`, run the
//! default Pulsar campaign (seeds `PULSAR_SEED_BASE + 0..budget`, the seeds
//! its figures were first measured on) until the
//! first safety failure or the budget, and report whether the stream
//! checker caught it. The faithful protocol must show no failure in the
//! same budget.

use super::campaign::{self, PULSAR_SEED_BASE};
use crate::campaign::{Mix, SeedResult, Verdict};
use crate::judge::judge;
use crate::system::{
    Middle, RangedColumns, RangedLine, ranged_cell, ranged_max, ranged_median, render_ranged,
    rules_fired,
};
use percsim_protocol::pulsar::PulsarAblation;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One line of Pulsar's kill table.
#[derive(Debug, Clone)]
pub struct PulsarKillRow {
    /// The planted bug (`None`: the faithful protocol).
    pub ablation: Option<PulsarAblation>,
    /// Seeds run.
    pub seeds: u64,
    /// The first failing seed's result (a safety failure under an
    /// ablation; any failure for the baseline).
    pub first_failure: Option<SeedResult>,
    /// How many seeds ran up to and including the first failure.
    pub seeds_to_failure: Option<u64>,
    /// Wall time to the first failure (or for the whole budget).
    pub wall: Duration,
    /// Aborted transactions / all finished transactions over the seeds run.
    pub abort_rate: f64,
}

/// The mix of the default Pulsar campaign with `ablation` switched off.
pub fn mix(ablation: Option<PulsarAblation>) -> Mix {
    Mix {
        systems: vec![super::NAME.to_string()],
        ablations: ablation
            .map(|a| vec![a.name().to_string()])
            .unwrap_or_default(),
        ..Mix::default()
    }
}

/// Measure one planted bug (or the baseline with `None`) over at most
/// `budget` Pulsar seeds on `jobs` threads.
pub fn measure(ablation: Option<PulsarAblation>, budget: u64, jobs: usize) -> PulsarKillRow {
    measure_range(ablation, 0, budget, jobs)
}

/// [`measure`] over the seeds `PULSAR_SEED_BASE + first ..` (at most
/// `budget` of them); its seeds to the first failure count from `first`.
pub fn measure_range(
    ablation: Option<PulsarAblation>,
    first: u64,
    budget: u64,
    jobs: usize,
) -> PulsarKillRow {
    let base = PULSAR_SEED_BASE + first;
    let mix = mix(ablation);
    let started = Instant::now();
    let first_fail = AtomicU64::new(u64::MAX);
    let results: Mutex<Vec<SeedResult>> = Mutex::default();
    let stop = ablation.is_some();
    crate::pool::for_each(
        jobs,
        budget,
        |i| !(stop && i > first_fail.load(Ordering::Relaxed)),
        |i| judge(&campaign::generate(base + i, &mix), false).result,
        |i, r| {
            let failed = match ablation {
                Some(_) => r.verdict == Verdict::Safety,
                None => r.verdict != Verdict::Pass,
            };
            if failed {
                first_fail.fetch_min(i, Ordering::Relaxed);
            }
            results.lock().unwrap_or_else(|e| e.into_inner()).push(r);
        },
    );
    let wall = started.elapsed();
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|r| r.seed);
    let failed = results
        .iter()
        .find(|r| match ablation {
            Some(_) => r.verdict == Verdict::Safety,
            None => r.verdict != Verdict::Pass,
        })
        .cloned();
    // The seeds up to the first failure, and no more: the threads may have
    // run a few seeds past it before they stopped, how many depends on
    // timing, and the row's rates must not.
    if let Some(f) = &failed {
        results.retain(|r| r.seed <= f.seed);
    }
    let (aborted, finished) = results.iter().fold((0, 0), |(a, f), r| {
        (a + r.aborted, f + r.aborted + r.committed)
    });
    PulsarKillRow {
        ablation,
        seeds: results.len() as u64,
        seeds_to_failure: failed.as_ref().map(|f| f.seed - base + 1),
        first_failure: failed,
        wall,
        abort_rate: aborted as f64 / finished.max(1) as f64,
    }
}

/// Render the table.
pub fn render(rows: &[PulsarKillRow], budget: u64) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "| planted bug | caught | seeds to first failure | wall time | rules that fired | abort rate |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|");
    for r in rows {
        let name = match r.ablation {
            Some(a) => format!("{} ({})", a.name(), a.describe()),
            None => "none (faithful protocol)".to_string(),
        };
        let caught = match (&r.first_failure, r.ablation) {
            (Some(_), Some(_)) => "yes",
            (None, Some(_)) => "NO",
            (Some(_), None) => "FAILED",
            (None, None) => "no failure",
        };
        let rule = r.first_failure.as_ref().map_or_else(
            || "-".into(),
            |f| rules_fired(&f.violated_rules, &f.verdict),
        );
        let _ = writeln!(
            o,
            "| {name} | {caught} | {} | {:.2} s | {rule} | {:.1}% |",
            r.seeds_to_failure
                .map_or(format!("none in {budget}"), |n| n.to_string()),
            r.wall.as_secs_f64(),
            100.0 * r.abort_rate,
        );
    }
    o
}

/// Pulsar's kill table as `percsim ablations --system pulsar` prints it
/// (see [`crate::system::SystemDef::kill_table`]).
pub fn kill_table(opts: &crate::system::KillTable) -> Result<i32, String> {
    let mut chosen = Vec::new();
    for name in &opts.only {
        match PulsarAblation::from_name(name) {
            Some(a) => chosen.push(a),
            None => return Err(format!("unknown pulsar ablation {name:?}")),
        }
    }
    if chosen.is_empty() {
        chosen = PulsarAblation::ALL.to_vec();
    }
    let (budget, jobs) = (opts.budget, opts.jobs.max(1));
    if opts.ranges > 1 {
        return Ok(ranged_table(&chosen, opts.ranges, budget, jobs));
    }
    let mut rows = vec![measure(None, budget, jobs)];
    for a in chosen {
        let row = measure(Some(a), budget, jobs);
        eprintln!(
            "{}: {}",
            a.name(),
            row.seeds_to_failure
                .map_or("not caught".to_string(), |n| format!(
                    "caught after {n} seeds"
                ))
        );
        rows.push(row);
    }
    print!("{}", render(&rows, budget));
    let ok =
        rows[0].first_failure.is_none() && rows.iter().skip(1).all(|r| r.first_failure.is_some());
    Ok(i32::from(!ok))
}

/// One planted bug (or the baseline) measured over disjoint seed ranges.
#[derive(Debug, Clone)]
pub struct RangedRow {
    /// The planted bug (`None`: the faithful protocol).
    pub ablation: Option<PulsarAblation>,
    /// Each range's row, in range order.
    pub rows: Vec<PulsarKillRow>,
}

impl RangedRow {
    /// Seeds to the first failure of each range that failed, in range order.
    pub fn catches(&self) -> Vec<u64> {
        self.rows
            .iter()
            .filter_map(|r| r.seeds_to_failure)
            .collect()
    }

    /// The median seeds to the first failure over the ranges, a range
    /// with no failure counting as more than any (`None` when half the
    /// ranges or more had none): the lower middle of an even count.
    pub fn median(&self) -> Option<u64> {
        ranged_median(&self.seeds(), Middle::Lower)
    }

    /// The most seeds any range needed (`None` if one had no failure).
    pub fn max(&self) -> Option<u64> {
        ranged_max(&self.seeds())
    }

    /// Seeds to the first failure of each range (`None`: none in it).
    fn seeds(&self) -> Vec<Option<u64>> {
        self.rows.iter().map(|r| r.seeds_to_failure).collect()
    }
}

/// Measure `ablation` over `ranges` disjoint ranges of `budget` seeds
/// each (range `r` starts `r * budget` seeds in).
pub fn measure_ranges(
    ablation: Option<PulsarAblation>,
    ranges: u64,
    budget: u64,
    jobs: usize,
) -> RangedRow {
    RangedRow {
        ablation,
        rows: (0..ranges)
            .map(|r| measure_range(ablation, r * budget, budget, jobs))
            .collect(),
    }
}

/// Render the table over seed ranges: each planted bug's ranges caught,
/// the median and maximum seeds to the first failure, and the rules that
/// fired (every range's first failure's).
pub fn render_ranges(rows: &[RangedRow], budget: u64) -> String {
    let columns = RangedColumns {
        name: "planted bug",
        safety: false,
        max: "max",
        wall: false,
        rules: "rules that fired",
    };
    let lines: Vec<RangedLine> = rows
        .iter()
        .map(|r| {
            let mut rules: Vec<String> = r
                .rows
                .iter()
                .filter_map(|x| x.first_failure.as_ref())
                .map(|f| rules_fired(&f.violated_rules, &f.verdict))
                .collect();
            rules.sort();
            rules.dedup();
            RangedLine {
                name: r
                    .ablation
                    .map_or("none (faithful protocol)", |a| a.name())
                    .to_string(),
                safety: None,
                caught: format!(
                    "{} of {}",
                    r.rows.iter().filter(|x| x.first_failure.is_some()).count(),
                    r.rows.len()
                ),
                median: ranged_cell(r.median(), budget),
                max: ranged_cell(r.max(), budget),
                wall: None,
                rules: if rules.is_empty() {
                    "-".to_string()
                } else {
                    rules.join("; ")
                },
            }
        })
        .collect();
    render_ranged(&columns, &lines)
}

/// The table over `ranges` disjoint seed ranges; exit code 0 when the
/// faithful protocol passed every range and every planted bug was caught
/// in every one.
fn ranged_table(chosen: &[PulsarAblation], ranges: u64, budget: u64, jobs: usize) -> i32 {
    let mut rows = vec![measure_ranges(None, ranges, budget, jobs)];
    for a in chosen {
        let row = measure_ranges(Some(*a), ranges, budget, jobs);
        eprintln!("{}: caught after {:?} seeds", a.name(), row.catches());
        rows.push(row);
    }
    print!("{}", render_ranges(&rows, budget));
    let clean = rows[0].rows.iter().all(|r| r.first_failure.is_none());
    let caught = rows.iter().skip(1).all(|r| r.max().is_some());
    i32::from(!(clean && caught))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(seeds_to_failure: Option<u64>) -> PulsarKillRow {
        PulsarKillRow {
            ablation: None,
            seeds: 10,
            first_failure: None,
            seeds_to_failure,
            wall: Duration::ZERO,
            abort_rate: 0.0,
        }
    }

    /// The ranged table as the core renders it, byte for byte as this
    /// module wrote it before: no safety or wall time column, the lower
    /// middle as the median.
    #[test]
    fn the_ranged_table_renders_as_before() {
        let a = PulsarAblation::ALL[0];
        let mut first = row(Some(3));
        let mut failure = SeedResult::empty("pulsar", 5, "stream");
        failure.verdict = Verdict::Safety;
        failure.violated_rules = vec!["lost_write".into()];
        first.first_failure = Some(failure);
        let caught = RangedRow {
            ablation: Some(a),
            rows: vec![first, row(None)],
        };
        let baseline = RangedRow {
            ablation: None,
            rows: vec![row(None), row(None)],
        };
        assert_eq!(
            render_ranges(&[baseline, caught], 10),
            format!(
                "| planted bug | ranges caught | median seeds to first failure | max | rules that fired |\n\
                 |---|---|---|---|---|\n\
                 | none (faithful protocol) | 0 of 2 | none in 10 | none in 10 | - |\n\
                 | {} | 1 of 2 | 3 | none in 10 | lost_write |\n",
                a.name()
            )
        );
    }

    /// The median and maximum count a range with no failure as the worst,
    /// and say so (none) when it decides them.
    #[test]
    fn median_and_max_over_ranges() {
        let ranged = |v: &[Option<u64>]| RangedRow {
            ablation: None,
            rows: v.iter().map(|n| row(*n)).collect(),
        };
        let r = ranged(&[Some(5), Some(1), Some(9), Some(3)]);
        assert_eq!((r.median(), r.max()), (Some(3), Some(9)));
        let r = ranged(&[Some(5), None, Some(2)]);
        assert_eq!((r.median(), r.max()), (Some(5), None));
        let r = ranged(&[None, None, Some(2)]);
        assert_eq!((r.median(), r.max()), (None, None));
        assert_eq!(r.catches(), vec![2]);
    }
}
