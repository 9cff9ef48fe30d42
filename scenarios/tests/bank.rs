//! The transfer workload over 3 tablet servers and 4 clients (a few hundred
//! transactions per seed), for a sweep of seeds: every snapshot read and the
//! final store hold the total, and the history checker passes.

mod common;

use percsim_scenarios::Scenario;
use percsim_scenarios::systems::percolator;
use percsim_scenarios::workloads::{Bank, WorkloadSpec};
use percsim_sim::{PercolatorConfig, WorldConfig};

fn scenario(seed: u64) -> Scenario {
    let cluster = PercolatorConfig {
        tablet_servers: 3,
        tablets: 4,
        clients: 4,
        ..PercolatorConfig::default()
    };
    let world = WorldConfig {
        run_ms: 4_000,
        ..WorldConfig::default()
    };
    let bank = Bank {
        accounts: 10,
        ..Bank::default()
    };
    percolator::scenario(seed, world, cluster, WorkloadSpec::Bank(bank))
}

#[test]
fn bank_sweep_keeps_the_total() {
    let mut committed = 0;
    for seed in common::seeds(20) {
        let out = common::run_and_check(&scenario(seed), "bank");
        assert!(
            out.summary.committed >= 50,
            "seed {seed}: only {} commits",
            out.summary.committed
        );
        committed += out.summary.committed;
    }
    eprintln!("committed transactions over the sweep: {committed}");
}

#[test]
fn same_seed_same_history() {
    let a = scenario(7).run().expect("run");
    let b = scenario(7).run().expect("run");
    let (ja, jb) = (
        serde_json::to_string(&a.history).unwrap(),
        serde_json::to_string(&b.history).unwrap(),
    );
    assert!(
        a.transactions()
            .expect("a transaction history")
            .transactions
            .len()
            > 100
    );
    assert_eq!(ja, jb, "seed 7 gave two different histories");
    let c = scenario(8).run().expect("run");
    assert_ne!(
        ja,
        serde_json::to_string(&c.history).unwrap(),
        "seeds 7 and 8 gave the same history"
    );
}

#[test]
fn simulator_is_active() {
    // Ten simulated minutes must pass in a fraction of that wall time: true
    // only when madsim's simulator (not a real-time runtime) is running.
    let mut s = scenario(1);
    s.world.run_ms = 600_000;
    percolator::PercolatorSpec::of_mut(&mut s)
        .expect("a Percolator scenario")
        .cluster
        .clients = 1;
    let wall = std::time::Instant::now();
    let out = s.run().expect("run");
    assert!(
        out.summary.sim_ns >= 600_000_000_000,
        "only {} ns simulated",
        out.summary.sim_ns
    );
    assert!(
        wall.elapsed().as_secs() < 120,
        "10 simulated minutes took {:?} of wall time",
        wall.elapsed()
    );
    assert!(out.summary.committed > 100);
}
