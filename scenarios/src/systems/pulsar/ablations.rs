//! Pulsar's kill table: for each planted bug of `PulsarAblation`, run the
//! default Pulsar campaign (seeds `PULSAR_SEED_BASE + 0..budget`, the seeds
//! its figures were first measured on) until the
//! first safety failure or the budget, and report whether the stream
//! checker caught it. The faithful protocol must show no failure in the
//! same budget.

use super::campaign::{self, PULSAR_SEED_BASE};
use crate::campaign::{Mix, SeedResult, Verdict};
use crate::judge::judge;
use crate::systems::percolator::ablations::fired;
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
    let mix = mix(ablation);
    let started = Instant::now();
    let first_fail = AtomicU64::new(u64::MAX);
    let results: Mutex<Vec<SeedResult>> = Mutex::default();
    let stop = ablation.is_some();
    crate::pool::for_each(
        jobs,
        budget,
        |i| !(stop && i > first_fail.load(Ordering::Relaxed)),
        |i| judge(&campaign::generate(PULSAR_SEED_BASE + i, &mix), false).result,
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
    let first = results
        .iter()
        .find(|r| match ablation {
            Some(_) => r.verdict == Verdict::Safety,
            None => r.verdict != Verdict::Pass,
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
    PulsarKillRow {
        ablation,
        seeds: results.len() as u64,
        seeds_to_failure: first.as_ref().map(|f| f.seed - PULSAR_SEED_BASE + 1),
        first_failure: first,
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
        let rule = r
            .first_failure
            .as_ref()
            .map_or_else(|| "-".into(), |f| fired(&f.violated_rules, &f.verdict));
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
