//! `percsim fuzz --scenario FILE`: a user's own scenario swept over seeds,
//! each seed judged like a campaign's (planted bugs, determinism check),
//! each failure shrunk (by its system's `shrink_scenario`: a script's
//! steps, the system's own section, the world section) and saved as a
//! capsule.

use crate::capsule;
use crate::judge::{SeedResult, Verdict, judge, not_fired};
use crate::scenario::Scenario;
use crate::summary::Summary;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

/// How a scenario is swept.
#[derive(Debug, Clone)]
pub struct ScenarioSweep {
    /// The scenario (its planted bugs already added); its seed is replaced
    /// by each seed of the range.
    pub scenario: Scenario,
    /// First seed (included).
    pub start: u64,
    /// Last seed (excluded).
    pub end: u64,
    /// Parallel threads.
    pub jobs: usize,
    /// Where failure capsules go.
    pub out: PathBuf,
    /// Runs spent shrinking each failure (0: no shrinking).
    pub shrink_budget: usize,
    /// Run each seed twice and compare the histories.
    pub check_determinism: bool,
}

/// Sweep the scenario over the seeds; every failing seed is printed with
/// the command that replays its capsule. The summary counts every seed,
/// and lists apart (not as failures) the seeds in which a fault the
/// scenario configured never fired.
pub fn run(opts: &ScenarioSweep) -> Summary {
    let started = Instant::now();
    let summary = Mutex::new(Summary::default());
    crate::pool::for_each(
        opts.jobs,
        opts.end.saturating_sub(opts.start),
        |_| true,
        |i| run_seed(opts, opts.start + i),
        |_, result| {
            summary
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .add(&result)
        },
    );
    let mut summary = summary.into_inner().unwrap_or_else(|e| e.into_inner());
    summary.wall = started.elapsed();
    summary
}

/// Run, judge and (on failure) shrink and save one seed.
fn run_seed(opts: &ScenarioSweep, seed: u64) -> SeedResult {
    let mut scenario = opts.scenario.clone();
    scenario.seed = seed;
    let mut judged = judge(&scenario, opts.check_determinism);
    // A configured fault that never fired is listed, not failed: across
    // seeds, a crash keyed to a transaction number comes in some runs only.
    judged.result.not_fired = not_fired(&scenario, &judged);
    if judged.result.verdict == Verdict::Pass {
        return judged.result;
    }
    let shrinkable = !matches!(
        judged.result.verdict,
        Verdict::Nondeterministic | Verdict::Stuck
    );
    let failed = judged.result.clone();
    // The scenario parsed, so its system is registered.
    let system = crate::systems::find(scenario.system()).ok();
    let shrunk = system
        .filter(|_| opts.shrink_budget > 0 && shrinkable)
        .map(|system| {
            let mut still =
                |s: &Scenario| crate::shrink::same_failure(&failed, &judge(s, false).result);
            system.shrink_scenario(&scenario, &mut still, opts.shrink_budget)
        });
    let saved = capsule::save(
        &opts.out,
        &scenario,
        &judged,
        shrunk.as_ref().map(|(s, n)| (s, *n)),
    );
    let mut result = judged.result;
    match saved {
        Ok(p) => {
            println!(
                "seed {seed}: {:?} [{}] -> percsim replay {}",
                result.verdict,
                result.violated_rules.join(", "),
                p.display()
            );
            result.capsule = Some(p.display().to_string());
        }
        Err(e) => println!("seed {seed}: cannot save its capsule: {e}"),
    }
    result
}
