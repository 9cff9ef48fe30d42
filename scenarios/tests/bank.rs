//! The transfer workload over 3 tablet servers and 4 clients, for a sweep of
//! seeds: every committed snapshot read and the final store hold the total.

use percsim_scenarios::Scenario;
use percsim_scenarios::workloads::{Bank, WorkloadSpec};
use percsim_sim::SimConfig;

fn scenario(seed: u64) -> Scenario {
    let cluster = SimConfig {
        tablet_servers: 3,
        tablets: 4,
        clients: 4,
        run_ms: 3_000,
        ..SimConfig::default()
    };
    Scenario::new(seed, cluster, WorkloadSpec::Bank(Bank::default()))
}

#[test]
fn bank_one_seed() {
    let s = scenario(1);
    let out = s.run().expect("run");
    eprintln!("{:#?}", out.summary);
    assert!(out.summary.committed > 100);
}
