//! Percolator's campaign: each seed draws a shape (cluster size, workload
//! parameters, which fault classes are on and how hard) from a proptest
//! value tree seeded by the seed, so a failing seed shrinks by simplifying
//! its shape.

use super::PercolatorSpec;
use crate::campaign::Mix;
use crate::faultmix;
use crate::scenario::Scenario;
use crate::system::PlantedBug;
use crate::systems::percolator::workloads::{
    Bank, Dedup, ListAppend, Pipeline, Register, WorkloadSpec,
};
use percsim_protocol::percolator::{Ablation, Ablations};
use percsim_sim::{PercolatorConfig, WorldConfig};
use proptest::prelude::{Strategy, any};
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// The workloads of Percolator's default mix.
pub const DEFAULT_WORKLOADS: &[&str] = &["bank", "register", "list-append", "dedup", "pipeline"];

/// The workloads a campaign of `mix` draws from: the named ones that are
/// Percolator's, else the default mix.
fn workloads(mix: &Mix) -> Vec<String> {
    let named: Vec<String> = mix
        .workloads
        .iter()
        .filter(|w| crate::systems::percolator::workloads::NAMES.contains(&w.as_str()))
        .cloned()
        .collect();
    if named.is_empty() {
        DEFAULT_WORKLOADS.iter().map(|s| s.to_string()).collect()
    } else {
        named
    }
}

/// The fault classes a campaign of `mix` draws from: the named ones, else
/// every class Percolator honours (by their names now, old names mapped).
fn faults(mix: &Mix) -> Vec<String> {
    if mix.faults.is_empty() {
        faultmix::CLASSES.iter().map(|s| s.to_string()).collect()
    } else {
        mix.faults
            .iter()
            .map(|f| faultmix::canonical(f).to_string())
            .collect()
    }
}

/// The planted bugs among `names` that are Percolator's (others are other
/// systems').
pub(crate) fn ablations_of(names: &[String]) -> Ablations {
    let mut a = Ablations::NONE;
    for x in Ablation::chosen(names) {
        a.insert(x);
    }
    a
}

/// The drawn shape of a scenario, before it is turned into one. Every
/// field shrinks toward a smaller, calmer run.
#[derive(Debug, Clone)]
struct Shape {
    workload: usize,
    tablet_servers: usize,
    tablets: usize,
    clients: usize,
    workers: usize,
    run_ms: u64,
    size: usize,
    faults: Vec<(bool, f64)>,
    detail_seed: u64,
    /// Lock TTL and session TTL: short ones make readers clean up live owners.
    ttl_ms: (u64, u64),
    /// How long a caller waits for a reply: a long wait lets a reader roll
    /// back a transaction whose own request is still on its way.
    rpc_timeout_ms: u64,
}

fn shape_strategy(mix: &Mix) -> impl Strategy<Value = Shape> + use<> {
    let workloads = workloads(mix).len();
    let classes = faults(mix).len();
    (
        0..workloads,
        1usize..=4,
        1usize..=8,
        1usize..=6,
        1usize..=4,
        500u64..=8_000,
        2usize..=24,
        proptest::collection::vec((proptest::bool::weighted(0.5), 0.0f64..1.0), classes),
        any::<u64>(),
        (300u64..=3_000, 300u64..=1_500),
        100u64..=3_000,
    )
        .prop_map(
            |(
                workload,
                tablet_servers,
                tablets,
                clients,
                workers,
                run_ms,
                size,
                faults,
                detail_seed,
                ttl_ms,
                rpc_timeout_ms,
            )| Shape {
                ttl_ms,
                rpc_timeout_ms,
                workload,
                tablet_servers,
                tablets,
                clients,
                workers,
                run_ms,
                size,
                faults,
                detail_seed,
            },
        )
}

fn build(seed: u64, shape: &Shape, mix: &Mix) -> Scenario {
    let mut rng = ChaCha8Rng::seed_from_u64(shape.detail_seed);
    let mut world = WorldConfig {
        run_ms: shape.run_ms,
        rpc_timeout_ms: shape.rpc_timeout_ms,
        ..WorldConfig::default()
    };
    let mut cluster = PercolatorConfig {
        ablations: ablations_of(&mix.ablations),
        tablet_servers: shape.tablet_servers,
        tablets: shape.tablets,
        clients: shape.clients,
        workers_per_client: shape.workers,
        session_ttl_ms: shape.ttl_ms.1,
        ..PercolatorConfig::default()
    };
    cluster.client.lock_ttl_ms = shape.ttl_ms.0;
    for (class, (on, intensity)) in faults(mix).iter().zip(&shape.faults) {
        if *on {
            // Names were validated with the mix.
            let _ = super::faults::enable(&mut world, &mut cluster, class, *intensity, &mut rng);
        }
    }
    let n = shape.size;
    let workloads = workloads(mix);
    let workload = match workloads[shape.workload.min(workloads.len() - 1)].as_str() {
        "register" => WorkloadSpec::Register(Register {
            keys: n,
            ..Register::default()
        }),
        "list-append" => WorkloadSpec::ListAppend(ListAppend::with_keys(n.div_ceil(2))),
        "pipeline" => WorkloadSpec::Pipeline(Pipeline {
            documents: n.div_ceil(2),
            contents: (n / 4).max(1),
            ..Pipeline::default()
        }),
        "dedup" => WorkloadSpec::Dedup(Dedup {
            documents: n,
            contents: (n / 3).max(1),
        }),
        _ => WorkloadSpec::Bank(Bank {
            accounts: n,
            read_all_ratio: rng.random_range(0.0..0.5),
            ..Bank::default()
        }),
    };
    let spec = PercolatorSpec { cluster, workload };
    Scenario::of(seed, world, Box::new(spec))
}

/// The shape tree for a seed: a proptest value tree drawn from an RNG
/// seeded by the seed, so it can be shrunk.
fn tree(seed: u64, mix: &Mix) -> Box<dyn ValueTree<Value = Shape>> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(b"percsim!");
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    match shape_strategy(mix).new_tree(&mut runner) {
        Ok(t) => Box::new(t),
        // The strategy has no filters, so drawing a value cannot fail.
        Err(e) => panic!("cannot draw a scenario for seed {seed}: {e}"),
    }
}

/// Generate the scenario for `seed`: the workload, cluster size, which
/// fault classes are on and how hard (swarm testing), all from the seed.
pub fn generate(seed: u64, mix: &Mix) -> Scenario {
    build(seed, &tree(seed, mix).current(), mix)
}

/// Shrink the failing scenario of `seed`: simplify its shape while the run
/// still fails as `still_fails` says; returns the smallest found and how
/// many runs it took. `budget` bounds the runs.
pub fn shrink(
    seed: u64,
    mix: &Mix,
    still_fails: &mut dyn FnMut(&Scenario) -> bool,
    budget: usize,
) -> (Scenario, usize) {
    let mut t = tree(seed, mix);
    let mut best = build(seed, &t.current(), mix);
    let mut runs = 0;
    if !t.simplify() {
        return (best, runs);
    }
    while runs < budget {
        let candidate = build(seed, &t.current(), mix);
        runs += 1;
        if still_fails(&candidate) {
            best = candidate;
            if !t.simplify() {
                break;
            }
        } else if !t.complicate() {
            break;
        }
    }
    (best, runs)
}
