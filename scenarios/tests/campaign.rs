//! Seed sweeps of the fuzz campaign's generated scenarios, one test per
//! workload (`PERCSIM_SEEDS=N` widens, `PERCSIM_SEED=S` replays one seed),
//! and the determinism check over faulty runs.

mod common;

use percsim_scenarios::campaign::{self, Mix, Verdict};
use percsim_scenarios::fuzz;

fn sweep(workload: &str) {
    let mix = Mix {
        workloads: vec![workload.to_string()],
        ..Mix::default()
    };
    let mut committed = 0;
    for seed in common::seeds(40) {
        let scenario = campaign::generate(seed, &mix);
        assert_eq!(scenario.workload_name(), workload);
        committed += common::run_and_check(&scenario, "campaign")
            .summary
            .committed;
    }
    assert!(
        committed > 0,
        "no transaction committed in the {workload} sweep"
    );
}

#[test]
fn sweep_bank() {
    sweep("bank");
}

#[test]
fn sweep_register() {
    sweep("register");
}

#[test]
fn sweep_list_append() {
    sweep("list-append");
}

#[test]
fn sweep_dedup() {
    sweep("dedup");
}

#[test]
fn sweep_pipeline() {
    sweep("pipeline");
}

#[test]
fn generated_scenarios_are_a_function_of_the_seed() {
    let mix = Mix::default();
    for seed in 0..20 {
        let a = serde_json::to_string(&campaign::generate(seed, &mix)).unwrap();
        let b = serde_json::to_string(&campaign::generate(seed, &mix)).unwrap();
        assert_eq!(a, b);
    }
    let distinct: std::collections::BTreeSet<String> = (0..20)
        .map(|s| {
            serde_json::to_string(&campaign::generate(s, &mix).spec.section().unwrap()).unwrap()
        })
        .collect();
    assert!(
        distinct.len() > 15,
        "the generator barely varies the cluster"
    );
}

#[test]
fn faulty_runs_are_deterministic() {
    for seed in common::seeds(6) {
        let scenario = campaign::generate(seed, &Mix::default());
        let judged = fuzz::judge(&scenario, true);
        assert_ne!(
            judged.result.verdict,
            Verdict::Nondeterministic,
            "seed {seed}: {:?}",
            judged.result.explanation
        );
        assert_eq!(
            judged.result.verdict,
            Verdict::Pass,
            "seed {seed}: {:?}",
            judged.result.explanation
        );
    }
}

#[test]
fn a_failure_shrinks_to_a_smaller_scenario_that_fails_the_same_way() {
    use percsim_protocol::percolator::Ablation;
    use percsim_scenarios::systems::percolator::{self, PERCOLATOR};
    // A broken protocol gives a failure to shrink: start_ts from wall clocks.
    let mix = Mix {
        ablations: vec![Ablation::WallClockStartTs.name().to_string()],
        ..Mix::default()
    };
    let (seed, failed) = (0..20)
        .map(|s| (s, fuzz::judge(&campaign::generate(s, &mix), false).result))
        .find(|(_, r)| r.verdict == Verdict::Safety)
        .expect("the ablation is caught within 20 seeds");
    let original = campaign::generate(seed, &mix);
    let (shrunk, runs) = campaign::shrink(&PERCOLATOR, seed, &mix, &failed, 30);
    assert!(runs > 0, "shrinking ran nothing");
    let size = |s: &percsim_scenarios::Scenario| {
        let c = &percolator::PercolatorSpec::of(s)
            .expect("a Percolator scenario")
            .cluster;
        (c.clients * c.workers_per_client) as u64 * 100_000 + s.world.run_ms
    };
    assert!(
        size(&shrunk) <= size(&original),
        "shrinking made the scenario bigger"
    );
    let again = fuzz::judge(&shrunk, false).result;
    assert_eq!(
        again.verdict,
        Verdict::Safety,
        "the shrunk scenario no longer fails"
    );
    assert!(
        again
            .violated_rules
            .iter()
            .any(|r| failed.violated_rules.contains(r)),
        "the shrunk scenario fails another rule: {:?} vs {:?}",
        again.violated_rules,
        failed.violated_rules
    );
}
