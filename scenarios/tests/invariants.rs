//! A tripped invariant (an assertion on what must never happen, on in
//! release builds) ends the run with a crash verdict, exit code 4, naming
//! the seed and the invariant.

use percsim_protocol::percolator::CellKey;
use percsim_scenarios::judge::{Verdict, verdict_of};
use percsim_scenarios::scenario::run_on_thread;
use percsim_scenarios::systems::percolator;
use percsim_scenarios::workloads::{Register, WorkloadSpec};
use percsim_sim::{BoxFuture, Client, PercolatorConfig, Worker, Workload, WorldConfig};
use std::sync::Arc;
use std::time::Instant;

/// A workload whose first worker trips an invariant (the test's hook).
struct Trips;

impl Workload for Trips {
    fn initial_data(&self) -> Vec<(CellKey, String)> {
        Vec::new()
    }
    fn split_points(&self, _: usize) -> Vec<String> {
        Vec::new()
    }
    fn worker(&self, _: Worker) -> BoxFuture<()> {
        Box::pin(async { percsim_sim::invariant::violated("the test's hook") })
    }
    fn final_check(&self, _: Arc<Client>) -> BoxFuture<Vec<String>> {
        Box::pin(async { Vec::new() })
    }
}

#[test]
fn a_tripped_invariant_is_a_crash_verdict_with_the_seed() {
    let scenario = percolator::scenario(
        7,
        WorldConfig::default(),
        PercolatorConfig::default(),
        WorkloadSpec::Register(Register::default()),
    );
    let started = Instant::now();
    let run = run_on_thread(7, "percolator", || {
        percsim_sim::run(
            &WorldConfig::default(),
            &PercolatorConfig::default(),
            7,
            Arc::new(Trips),
            serde_json::Value::Null,
        )
    });
    let judged = verdict_of(&scenario, run, started);
    assert_eq!(judged.result.verdict, Verdict::Crash);
    assert_eq!(judged.result.verdict.exit_code(), 4);
    let why = judged.result.explanation.unwrap_or_default();
    assert!(why.contains("seed 7"), "{why}");
    assert!(why.contains("invariant violated: the test's hook"), "{why}");
    assert!(judged.history.is_none());
}

#[test]
fn the_same_run_without_the_hook_passes() {
    let scenario = percolator::scenario(
        7,
        WorldConfig::default(),
        PercolatorConfig::default(),
        WorkloadSpec::Register(Register::default()),
    );
    let judged = verdict_of(&scenario, scenario.run(), Instant::now());
    assert_eq!(
        judged.result.verdict,
        Verdict::Pass,
        "{:?}",
        judged.result.explanation
    );
}
