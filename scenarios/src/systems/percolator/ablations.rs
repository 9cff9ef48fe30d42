//! Percolator's kill table: for each ablation, run the default campaign until the
//! first failure or a seed budget, and report whether (and how fast) the
//! checker caught it. Without any ablation the same budget must show no
//! failure.

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
}

/// Run seeds `0..budget` of `mix` with `jobs` threads until the first
/// failure; returns the per-seed results run so far, by seed.
fn until_failure(
    mix: &Mix,
    budget: u64,
    jobs: usize,
    stop_at_failure: bool,
) -> (Vec<SeedResult>, Duration) {
    let started = Instant::now();
    let first_fail = AtomicU64::new(u64::MAX);
    let results: Mutex<Vec<SeedResult>> = Mutex::default();
    crate::pool::for_each(
        jobs,
        budget,
        |seed| !(stop_at_failure && seed > first_fail.load(Ordering::Relaxed)),
        |seed| judge(&campaign::generate(seed, mix), false).result,
        |seed, r| {
            if r.verdict == Verdict::Safety {
                first_fail.fetch_min(seed, Ordering::Relaxed);
            }
            results.lock().unwrap_or_else(|e| e.into_inner()).push(r);
        },
    );
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|r| r.seed);
    (results, started.elapsed())
}

/// Measure one ablation (or the baseline with `None`).
pub fn measure(
    ablation: Option<Ablation>,
    budget: u64,
    jobs: usize,
    shrink_budget: usize,
) -> KillRow {
    let mix = Mix {
        systems: vec![super::NAME.to_string()],
        ablations: ablation
            .map(|a| vec![a.name().to_string()])
            .unwrap_or_default(),
        ..Mix::default()
    };
    let stop = ablation.is_some_and(|a| a.is_safety());
    let (mut results, wall) = until_failure(&mix, budget, jobs, stop);
    // A safety ablation is caught only by a safety verdict; for the others
    // (and the baseline) any failure counts.
    let first = results
        .iter()
        .find(|r| match ablation {
            Some(a) if a.is_safety() => r.verdict == Verdict::Safety,
            _ => r.verdict != Verdict::Pass,
        })
        .cloned();
    // The seeds up to the first failure, and no more: the threads may have
    // run a few seeds past it before they stopped, how many depends on
    // timing, and the row's rates must not.
    if let Some(f) = &first {
        results.retain(|r| r.seed <= f.seed);
    }
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
    let crashes = |f: &PointFault| matches!(f.fault, PointAction::Crash { .. });
    let shrunk = match (&first, shrink_budget) {
        (Some(f), b) if b > 0 => {
            let (s, runs) = campaign::shrink(&super::PERCOLATOR, f.seed, &mix, f, b);
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
    };
    KillRow {
        ablation,
        seeds: results.len() as u64,
        seeds_to_failure: first.as_ref().map(|f| f.seed + 1),
        first_failure: first,
        wall,
        shrunk,
        abort_rate: aborted as f64 / finished.max(1) as f64,
        rolled_back_per_mille: 1000.0 * rolled_back as f64 / finished.max(1) as f64,
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
    let no_false_alarm = rows.iter().skip(1).filter(liveness).all(|r| {
        r.first_failure
            .as_ref()
            .is_none_or(|f| f.violated_rules.is_empty())
    });
    baseline_clean && all_caught && no_false_alarm
}
