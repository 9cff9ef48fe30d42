//! The toy as a system of the testbed: its [`SystemDef`] (what its
//! scenarios look like, what a campaign draws for it) and its
//! [`SystemSpec`] (its part of one scenario). Shrinking and the kill table
//! are the interface's defaults: the generic shrink of the `world` section,
//! and no kill table.

use super::config::{CrashAt, ReadWrite, ToyConfig, ToyWorkload};
use super::protocol::{ToyAblation, ToyPoint};
use super::world;
use percsim_scenarios::campaign::Mix;
use percsim_scenarios::faultmix;
use percsim_scenarios::fired::{PointStop, ordinal, point_stops_not_fired};
use percsim_scenarios::planted_bugs;
use percsim_scenarios::scenario::{Scenario, ScenarioError};
use percsim_scenarios::system::{CoverageItem, PlantedBug, SystemDef, SystemSpec, config_error};
use percsim_scenarios::typed::{Typed, TypedSystem};
use percsim_sim::{ConfigError, FaultKind, NodeKind, Role, RunOutput, SystemHistory, WorldConfig};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// The toy in a registry (registered at run time by its test).
pub static TOY: ToyDef = ToyDef;

/// The toy's [`SystemDef`].
pub struct ToyDef;

/// The name the toy is known by: a scenario file's `"system"` and the key
/// of its section.
pub const NAME: &str = "toy";

/// The world's fault classes the toy honours, and its own `crash_at_step`
/// (the primary killed at one of its named points). It has no coordinator,
/// liveness service, master, sessions or clocks.
pub const TOY_CLASSES: &[&str] = &[
    "kill_client",
    "kill_data_server",
    "pause",
    "stall",
    "partition",
    "packet_loss",
    "latency",
    "duplicate",
    "crash_at_step",
];

percsim_sim::identities! {
    /// What a toy campaign should exercise of the toy's own.
    pub enum ToyCoverage {
        /// The primary was killed at one of its named points.
        CrashAtPoint => ("primary_crash_at_point", "primary killed at a named point"),
    }
}

impl ToyCoverage {
    /// The run counter this item reads (the toy counts its crashes at
    /// points as the world's `crash_at_step` faults).
    pub fn counter(self) -> String {
        match self {
            ToyCoverage::CrashAtPoint => FaultKind::CrashAtStep.counter(),
        }
    }

    /// As a campaign's coverage item.
    pub fn item(self) -> CoverageItem {
        CoverageItem {
            name: self.name(),
            description: self.describe(),
            counter: self.counter(),
            class: Some(FaultKind::CrashAtStep.name()),
        }
    }
}

/// A toy scenario's own part: the cluster (a scenario file's `toy`
/// section) and the workload.
pub type ToySpec = Typed<ToyDef>;

planted_bugs!(ToyAblation);

impl SystemDef for ToyDef {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self) -> &'static str {
        "a single-key register behind one primary: the example system of docs/adding-a-system.md"
    }

    fn parse(
        &self,
        section: Option<serde_json::Value>,
        workload: serde_json::Value,
    ) -> Result<Box<dyn SystemSpec>, ScenarioError> {
        ToySpec::parse(self, section, workload)
    }

    fn workloads(&self) -> &'static [&'static str] {
        &["read-write", "script"]
    }

    fn campaign_workloads(&self) -> &'static [&'static str] {
        &["read-write"]
    }

    fn fault_classes(&self) -> &'static [&'static str] {
        TOY_CLASSES
    }

    fn node_kinds(&self) -> &'static [NodeKind] {
        &world::NODE_KINDS
    }

    fn roles(&self) -> Vec<(Role, &'static str)> {
        vec![(Role::Client, "client"), (Role::DataServer, "primary")]
    }

    fn coverage(&self) -> Vec<CoverageItem> {
        ToyCoverage::ALL.iter().map(|c| c.item()).collect()
    }

    fn ablations(&self) -> Vec<(&'static str, &'static str)> {
        ToyAblation::list()
    }

    fn generate(&self, seed: u64, mix: &Mix) -> Scenario {
        generate(seed, mix)
    }
}

impl TypedSystem for ToyDef {
    type Section = ToyConfig;
    type Workload = ToyWorkload;
    const NAME: &'static str = NAME;

    fn workload_name(workload: &ToyWorkload) -> &'static str {
        workload.name()
    }

    fn validate(spec: &ToySpec, world: &WorldConfig) -> Result<(), ScenarioError> {
        world::validate(world, &spec.cluster).map_err(|e| config_error(NAME, e))?;
        spec.workload.validate().map_err(ScenarioError::Invalid)?;
        let Some(script) = spec.workload.script() else {
            return Ok(());
        };
        let nodes: Vec<String> = world::node_names(&spec.cluster)
            .iter()
            .map(ToString::to_string)
            .collect();
        script
            .validate(spec.cluster.clients, &nodes)
            .map_err(ScenarioError::Invalid)
    }

    fn run(
        spec: &ToySpec,
        world: &WorldConfig,
        seed: u64,
        description: serde_json::Value,
    ) -> Result<RunOutput, ConfigError> {
        world::run(world, &spec.cluster, &spec.workload, seed, description)
    }

    fn expectations(spec: &ToySpec) -> bool {
        spec.workload.script().is_some()
    }

    fn not_fired(spec: &ToySpec, history: &SystemHistory) -> Vec<String> {
        let stops: Vec<PointStop> = spec
            .cluster
            .crashes
            .iter()
            .enumerate()
            .map(|(i, c)| PointStop {
                entry: format!("{NAME}.crashes[{i}]"),
                point: c.point.name(),
                nth: c.nth,
                what: format!(
                    "kill the primary the {} time it reaches {}",
                    ordinal(c.nth),
                    c.point.name()
                ),
            })
            .collect();
        point_stops_not_fired(history, world::ToyEvent::CrashAtPoint.name(), &stops)
    }
}

/// The toy scenario of `seed`, drawn from `mix`: 1-4 clients, a workload
/// phase of 0.5-2 s, each fault class of the mix (every one of
/// [`TOY_CLASSES`] when it names none) on with probability one half, the
/// mix's planted bugs of the toy switched on. Every draw is made whichever
/// classes are named, so leaving one out leaves the rest as they were.
pub fn generate(seed: u64, mix: &Mix) -> Scenario {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x0074_6f79);
    let clients = rng.random_range(1..=4);
    let mut world = WorldConfig {
        run_ms: rng.random_range(500..=2_000),
        quiesce_ms: 10_000,
        ..WorldConfig::default()
    };
    let mut cluster = ToyConfig {
        clients,
        persist_ms: rng.random_range(1..=10),
        ablations: ToyAblation::chosen(&mix.ablations),
        ..ToyConfig::default()
    };
    for class in TOY_CLASSES {
        if !rng.random_bool(0.5) {
            continue;
        }
        let intensity = rng.random_range(0.0..1.0);
        if !mix.faults.is_empty() && !mix.faults.iter().any(|f| faultmix::canonical(f) == *class) {
            continue;
        }
        if *class == "crash_at_step" {
            cluster.crashes = crashes(intensity, &mut rng);
        } else {
            // Every other class of the list is one of the world's.
            let _ = faultmix::enable_world(&mut world, clients, class, intensity, &mut rng);
        }
    }
    let workload = ToyWorkload::ReadWrite(ReadWrite {
        write_fraction: rng.random_range(0.2..0.8),
        think_ms: rng.random_range(1..=20),
        ..ReadWrite::default()
    });
    ToySpec { cluster, workload }.scenario(seed, world)
}

/// One to three crashes of the primary at its named points.
fn crashes(intensity: f64, rng: &mut ChaCha8Rng) -> Vec<CrashAt> {
    let n = 1 + (intensity * 2.0) as usize;
    (0..n)
        .map(|_| CrashAt {
            point: ToyPoint::ALL[rng.random_range(0..ToyPoint::ALL.len())],
            nth: rng.random_range(1..=10),
            restart_after_ms: rng.random_range(20..=500),
        })
        .collect()
}
