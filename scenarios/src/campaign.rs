//! Fuzzing campaigns: each seed generates a whole scenario (cluster size,
//! workload parameters, which faults are on), runs it and checks it.

use crate::faultmix;
pub use crate::judge::{Judged, SeedResult, Verdict, judge};
use crate::scenario::Scenario;
use crate::workloads::{Bank, Dedup, ListAppend, Pipeline, Register, WorkloadSpec};
use percsim_protocol::percolator::Ablations;
use percsim_sim::SimConfig;
use proptest::prelude::{Strategy, any};
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// The workloads of the default mix.
pub const DEFAULT_WORKLOADS: &[&str] = &["bank", "register", "list-append", "dedup", "pipeline"];

/// Which systems a campaign runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Systems {
    /// Percolator only (the library's default: seeds as they always were).
    #[default]
    Percolator,
    /// Pulsar only: seed `i` of the range runs Pulsar seed
    /// `PULSAR_SEED_BASE + i`.
    Pulsar,
    /// Both: the range's Percolator seeds, then a tenth as many Pulsar
    /// seeds appended (`percsim fuzz`'s default).
    All,
}

impl Systems {
    /// The choice named `name` (`percolator`, `pulsar` or `all`).
    pub fn from_name(name: &str) -> Option<Systems> {
        match name {
            "percolator" => Some(Systems::Percolator),
            "pulsar" => Some(Systems::Pulsar),
            "all" => Some(Systems::All),
            _ => None,
        }
    }

    /// How many Percolator and Pulsar seeds a range of `n` seeds runs.
    pub fn split(self, n: u64) -> (u64, u64) {
        match self {
            Systems::Percolator => (n, 0),
            Systems::Pulsar => (0, n),
            Systems::All => (n, n / 10),
        }
    }
}

/// Which workloads and fault classes a campaign draws from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mix {
    /// Which systems.
    pub systems: Systems,
    /// Pulsar mechanisms switched off in every generated Pulsar scenario.
    pub pulsar_ablations: percsim_protocol::pulsar::PulsarAblations,
    /// Workload names; empty means [`DEFAULT_WORKLOADS`].
    pub workloads: Vec<String>,
    /// Fault class names; empty means every class in [`faultmix::CLASSES`].
    pub faults: Vec<String>,
    /// Protocol mechanisms switched off in every generated scenario.
    pub ablations: Ablations,
}

impl Mix {
    /// Check the names.
    pub fn validate(&self) -> Result<(), String> {
        for w in &self.workloads {
            if !DEFAULT_WORKLOADS.contains(&w.as_str()) {
                return Err(format!(
                    "unknown workload {w:?} (choose from {})",
                    DEFAULT_WORKLOADS.join(", ")
                ));
            }
        }
        for f in &self.faults {
            if !faultmix::CLASSES.contains(&f.as_str()) {
                return Err(format!(
                    "unknown fault class {f:?} (choose from {})",
                    faultmix::CLASSES.join(", ")
                ));
            }
        }
        Ok(())
    }

    fn workloads(&self) -> Vec<String> {
        if self.workloads.is_empty() {
            DEFAULT_WORKLOADS.iter().map(|s| s.to_string()).collect()
        } else {
            self.workloads.clone()
        }
    }

    fn faults(&self) -> Vec<String> {
        if self.faults.is_empty() {
            faultmix::CLASSES.iter().map(|s| s.to_string()).collect()
        } else {
            self.faults.clone()
        }
    }
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
    let workloads = mix.workloads().len();
    let classes = mix.faults().len();
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
    let mut cluster = SimConfig {
        ablations: mix.ablations,
        tablet_servers: shape.tablet_servers,
        tablets: shape.tablets,
        clients: shape.clients,
        workers_per_client: shape.workers,
        run_ms: shape.run_ms,
        session_ttl_ms: shape.ttl_ms.1,
        rpc_timeout_ms: shape.rpc_timeout_ms,
        ..SimConfig::default()
    };
    cluster.client.lock_ttl_ms = shape.ttl_ms.0;
    // Owners refresh their primary lock well within its TTL.
    cluster.client.touch_interval_ms = (shape.ttl_ms.0 / 3).max(50);
    for (class, (on, intensity)) in mix.faults().iter().zip(&shape.faults) {
        if *on {
            // Names were validated with the mix.
            let _ = faultmix::enable(&mut cluster, class, *intensity, &mut rng);
        }
    }
    let n = shape.size;
    let workloads = mix.workloads();
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
    Scenario::new(seed, cluster, workload)
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
    if crate::pulsar_campaign::is_pulsar_seed(seed) {
        return crate::pulsar_campaign::generate(seed, mix.pulsar_ablations);
    }
    build(seed, &tree(seed, mix).current(), mix)
}

/// Shrink the failing scenario of `seed`: simplify its shape while the run
/// still fails with the same verdict and rule; returns the smallest found
/// and how many runs it took. `budget` bounds the runs.
pub fn shrink(seed: u64, mix: &Mix, failed: &SeedResult, budget: usize) -> (Scenario, usize) {
    let same = |r: &SeedResult| {
        r.verdict == failed.verdict
            && (failed.violated_rules.is_empty()
                || r.violated_rules
                    .iter()
                    .any(|x| failed.violated_rules.contains(x)))
    };
    if crate::pulsar_campaign::is_pulsar_seed(seed) {
        // Pulsar scenarios are drawn without a shrinkable tree: they shrink
        // by editing the scenario.
        let mut still = |s: &Scenario| same(&judge(s, false).result);
        return crate::pulsar_shrink::shrink(&generate(seed, mix), &mut still, budget);
    }
    let mut t = tree(seed, mix);
    let mut best = build(seed, &t.current(), mix);
    let mut runs = 0;
    if !t.simplify() {
        return (best, runs);
    }
    while runs < budget {
        let candidate = build(seed, &t.current(), mix);
        runs += 1;
        let still = same(&judge(&candidate, false).result);
        if still {
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
