//! Every workload under every fault class, for a sweep of seeds: the run
//! converges, the workload's invariants hold, the checker passes, and the
//! fault really happened (its event is in the history: a kill that never
//! fires is a finding, not a pass).

mod common;

use percsim_scenarios::faultmix;
use percsim_scenarios::systems::percolator::{self, faults};
use percsim_scenarios::workloads::{Bank, Dedup, ListAppend, Register, WorkloadSpec};
use percsim_sim::{NodeName, PercolatorConfig, WorldConfig, percolator_kinds};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

fn workloads() -> Vec<WorkloadSpec> {
    vec![
        WorkloadSpec::Bank(Bank::default()),
        WorkloadSpec::Register(Register::default()),
        WorkloadSpec::ListAppend(ListAppend::default()),
        WorkloadSpec::Dedup(Dedup::default()),
    ]
}

fn sweep(class: &str) {
    let (kind, node_role) = faults::evidence(class);
    for workload in workloads() {
        let mut fired = 0;
        let mut committed = 0;
        // A class that targets one transaction at one step fires only if
        // that transaction gets there: give those classes a third seed.
        let per_step = class.ends_with("_at_step");
        for seed in common::seeds(if per_step { 3 } else { 2 }) {
            let mut cluster = PercolatorConfig {
                tablet_servers: 3,
                tablets: 4,
                clients: 3,
                ..PercolatorConfig::default()
            };
            let mut world = WorldConfig {
                run_ms: 2_500,
                ..WorldConfig::default()
            };
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            faults::enable(&mut world, &mut cluster, class, 0.8, &mut rng).expect("known class");
            let scenario = percolator::scenario(seed, world, cluster, workload.clone());
            let out = common::run_and_check(&scenario, "faults");
            committed += out.summary.committed;
            fired += out
                .history
                .events()
                .iter()
                .filter(|e| e.kind == kind)
                .filter(|e| match node_role {
                    Some(role) => e
                        .fields
                        .get("node")
                        .and_then(|n| n.as_str())
                        .and_then(|n| NodeName::parse(n, &percolator_kinds::ALL).ok())
                        .is_some_and(|n| n.role() == role),
                    None => true,
                })
                .count();
        }
        assert!(fired > 0, "{class} never fired under {}", workload.name());
        assert!(
            committed > 0,
            "nothing committed under {class} with {}",
            workload.name()
        );
    }
}

macro_rules! classes {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                sweep(stringify!($name));
            }
        )*

        #[test]
        fn every_class_is_tested() {
            let tested = [$(stringify!($name)),*];
            assert_eq!(tested.as_slice(), faultmix::CLASSES);
        }
    };
}

classes!(
    kill_client,
    kill_data_server,
    kill_coordinator,
    kill_liveness,
    kill_master,
    pause,
    stall,
    partition,
    packet_loss,
    latency,
    duplicate,
    session_expiry,
    clock_skew,
    crash_at_step,
    pause_at_step,
);
