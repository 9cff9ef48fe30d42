//! Seed sweeps for tests: `PERCSIM_SEED=N` replays one seed,
//! `PERCSIM_SEEDS=K` widens a sweep to K seeds.

#![allow(dead_code)]

use percsim_scenarios::Scenario;
use percsim_sim::RunOutput;

/// The seeds a sweep runs: `PERCSIM_SEED` alone, or `PERCSIM_SEEDS` (default
/// `default`) seeds from 0.
pub fn seeds(default: u64) -> Vec<u64> {
    if let Some(seed) = std::env::var("PERCSIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return vec![seed];
    }
    let n = std::env::var("PERCSIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    (0..n).collect()
}

/// Run `scenario` and fail, naming the seed and how to replay it, unless
/// the run converged, the workload's invariants held and the checker passed.
pub fn run_and_check(scenario: &Scenario, test: &str) -> RunOutput {
    let out = scenario
        .run()
        .unwrap_or_else(|e| panic!("seed {}: {e}", scenario.seed));
    let history = out.transactions().expect("a transaction history");
    let report = percsim_checker::check(history);
    let mut problems = Vec::new();
    if let Some(l) = &out.summary.liveness_failure {
        problems.push(format!("liveness: {l}"));
    }
    for v in &out.summary.workload_violations {
        problems.push(format!("workload invariant: {v}"));
    }
    if !report.passed() {
        problems.push(report.render_text());
    }
    if !problems.is_empty() {
        let path = std::env::temp_dir().join(format!("percsim-{test}-seed-{}.json", scenario.seed));
        let _ = std::fs::write(
            &path,
            serde_json::to_string_pretty(scenario).unwrap_or_default(),
        );
        panic!(
            "seed {} failed:\n{}\nscenario: {}\nreplay: PERCSIM_SEED={} cargo test --test {test}\n   or: cargo run --release --bin percsim -- run {}",
            scenario.seed,
            problems.join("\n"),
            serde_json::to_string(scenario).unwrap_or_default(),
            scenario.seed,
            path.display(),
        );
    }
    out
}
