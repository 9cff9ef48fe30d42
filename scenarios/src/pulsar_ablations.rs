//! Pulsar's kill table: for each planted bug of `PulsarAblation`, run the
//! default Pulsar campaign (seeds `PULSAR_SEED_BASE + 0..budget`) until the
//! first safety failure or the budget, and report whether the stream
//! checker caught it. The faithful protocol must show no failure in the
//! same budget.

use crate::ablations::fired;
use crate::campaign::{self, Mix, SeedResult, Systems, Verdict};
use crate::judge::judge;
use crate::pulsar_campaign::PULSAR_SEED_BASE;
use percsim_protocol::pulsar::{PulsarAblation, PulsarAblations};
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
        systems: Systems::Pulsar,
        pulsar_ablations: ablation.map(PulsarAblations::only).unwrap_or_default(),
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
