//! Apache Pulsar's transactions as a system of the testbed: its section of
//! a scenario file (`"pulsar": {...}`, a [`PulsarConfig`]), its workloads
//! (`stream`, `stream-pipeline`), its campaign, its planted bugs and how
//! its scenarios shrink. See `docs/pulsar.md`.

pub mod ablations;
pub mod campaign;
pub mod compare;
pub mod coverage;
mod shrink;
pub mod workloads;

use crate::campaign::Mix;
use crate::compare::RunFacts;
use crate::planted_bugs;
use crate::scenario::{Scenario, ScenarioError};
use crate::system::{
    CoverageItem, KillTable, PlantedBug, SummarySection, SystemDef, SystemSpec, config_error,
};
use crate::typed::{Typed, TypedSystem};
use percsim_protocol::pulsar::{PulsarAblation, PulsarAblations};
use percsim_sim::{
    ConfigError, NodeKind, PulsarConfig, PulsarWorkload, Role, RunOutput, WorldConfig, pulsar_kinds,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use workloads::{PulsarScriptFile, ScriptWorkload, Stream, StreamPipeline};

/// Pulsar in the registry.
pub static PULSAR: PulsarDef = PulsarDef;

/// Pulsar's [`SystemDef`].
pub struct PulsarDef;

/// The name Pulsar is known by.
const NAME: &str = "pulsar";

/// Pulsar's workloads, as a scenario file names them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case", deny_unknown_fields)]
pub enum PulsarWorkloadSpec {
    /// Transactional producers and read-committed consumers.
    Stream(Stream),
    /// The document job as an exactly-once stream processor.
    StreamPipeline(StreamPipeline),
    /// A script: named producers and consumers, steps and expectations.
    Script(PulsarScriptFile),
}

impl PulsarWorkloadSpec {
    /// The workload's name.
    pub fn name(&self) -> &'static str {
        match self {
            PulsarWorkloadSpec::Stream(_) => "stream",
            PulsarWorkloadSpec::StreamPipeline(_) => "stream-pipeline",
            PulsarWorkloadSpec::Script(_) => "script",
        }
    }

    fn validate(&self, cluster: &PulsarConfig) -> Result<(), String> {
        match self {
            PulsarWorkloadSpec::Stream(s) => s.validate(),
            PulsarWorkloadSpec::StreamPipeline(p) => p.validate(),
            PulsarWorkloadSpec::Script(s) => {
                let mut nodes = vec![pulsar_kinds::METADATA.single()];
                nodes.extend((0..cluster.brokers).map(|i| pulsar_kinds::BROKER.nth(i)));
                nodes.extend((0..cluster.clients).map(|i| pulsar_kinds::CLIENT.nth(i)));
                let nodes: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
                s.validate(cluster.clients, &nodes)
            }
        }
    }

    fn build(&self) -> Arc<dyn PulsarWorkload> {
        match self {
            PulsarWorkloadSpec::Stream(s) => Arc::new(s.clone()),
            PulsarWorkloadSpec::StreamPipeline(p) => Arc::new(p.clone()),
            PulsarWorkloadSpec::Script(s) => Arc::new(ScriptWorkload(s.fresh())),
        }
    }
}

/// A Pulsar scenario's own part: the cluster (a scenario file's `pulsar`
/// section) and the workload.
pub type PulsarSpec = Typed<PulsarDef>;

planted_bugs!(PulsarAblation);

/// The planted bugs among `names` that are Pulsar's (others are other
/// systems').
fn ablations_of(names: &[String]) -> PulsarAblations {
    let mut a = PulsarAblations::NONE;
    for x in PulsarAblation::chosen(names) {
        a.insert(x);
    }
    a
}

impl SystemDef for PulsarDef {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self) -> &'static str {
        "Apache Pulsar's transactions (2.8): a coordinator with a durable log, brokers with transaction buffers and pending acks, exactly-once processors"
    }

    fn parse(
        &self,
        section: Option<serde_json::Value>,
        workload: serde_json::Value,
    ) -> Result<Box<dyn SystemSpec>, ScenarioError> {
        PulsarSpec::parse(self, section, workload)
    }

    fn v1_cluster_keys(&self) -> Option<&'static [&'static str]> {
        // The first format kept the whole cluster with every default filled
        // in; of it, Pulsar's runs used the client count only.
        Some(&["clients"])
    }

    fn history_format(&self) -> &'static str {
        percsim_checker::stream::STREAM_FORMAT
    }

    fn workloads(&self) -> &'static [&'static str] {
        &["stream", "stream-pipeline", "script"]
    }

    fn campaign_workloads(&self) -> &'static [&'static str] {
        &["stream", "stream-pipeline"]
    }

    fn fault_classes(&self) -> &'static [&'static str] {
        campaign::PULSAR_CLASSES
    }

    fn node_kinds(&self) -> &'static [NodeKind] {
        &percsim_sim::pulsar_kinds::ALL
    }

    fn lane_names(&self, _scenario: &serde_json::Value) -> Vec<(u64, &'static str)> {
        vec![(
            percsim_sim::COORDINATOR_CLIENT,
            "coordinator (no known client)",
        )]
    }

    fn roles(&self) -> Vec<(Role, &'static str)> {
        // The coordinator role moves between brokers; the metadata
        // service plays the master's part.
        vec![
            (Role::Client, "client"),
            (Role::DataServer, "broker"),
            (Role::Coordinator, "coordinator"),
            (Role::Master, "metadata"),
        ]
    }

    fn ablations(&self) -> Vec<(&'static str, &'static str)> {
        PulsarAblation::list()
    }

    fn coverage(&self) -> Vec<CoverageItem> {
        coverage::items()
    }

    fn campaign_sections(&self, counters: &BTreeMap<String, u64>) -> Vec<SummarySection> {
        coverage::sections(counters)
    }

    fn campaign_share(&self) -> (u64, u64) {
        (1, 10)
    }

    fn generate(&self, seed: u64, mix: &Mix) -> Scenario {
        campaign::generate(seed, mix)
    }

    fn compare_scenario(&self, seed: u64, world: WorldConfig) -> Option<Scenario> {
        // Client 0 loads and audits; three processors.
        let spec = PulsarSpec {
            cluster: PulsarConfig {
                clients: 4,
                ..PulsarConfig::default()
            },
            workload: PulsarWorkloadSpec::StreamPipeline(compare::job()),
        };
        Some(spec.scenario(seed, world))
    }

    fn compare_facts(&self, out: &RunOutput) -> Result<RunFacts, String> {
        let stream = out.stream().ok_or("the run recorded no stream history")?;
        Ok(compare::facts(stream))
    }

    fn kill_table(&self, opts: &KillTable) -> Result<i32, String> {
        ablations::kill_table(opts)
    }

    fn kill_table_ranges(&self) -> bool {
        true
    }

    fn shrink(
        &self,
        seed: u64,
        mix: &Mix,
        still_fails: &mut dyn FnMut(&Scenario) -> bool,
        budget: usize,
    ) -> (Scenario, usize) {
        // Pulsar scenarios are drawn without a shrinkable tree: they shrink
        // by editing the scenario.
        shrink::shrink(&campaign::generate(seed, mix), still_fails, budget)
    }
}

impl TypedSystem for PulsarDef {
    type Section = PulsarConfig;
    type Workload = PulsarWorkloadSpec;
    const NAME: &'static str = NAME;

    fn workload_name(workload: &PulsarWorkloadSpec) -> &'static str {
        workload.name()
    }

    fn validate(spec: &PulsarSpec, world: &WorldConfig) -> Result<(), ScenarioError> {
        percsim_sim::validate_pulsar(world, &spec.cluster).map_err(|e| config_error(NAME, e))?;
        spec.workload
            .validate(&spec.cluster)
            .map_err(ScenarioError::Invalid)
    }

    fn run(
        spec: &PulsarSpec,
        world: &WorldConfig,
        seed: u64,
        description: serde_json::Value,
    ) -> Result<RunOutput, ConfigError> {
        let w = spec.workload.build();
        percsim_sim::run_pulsar(world, &spec.cluster, seed, w, description)
    }

    fn expectations(spec: &PulsarSpec) -> bool {
        matches!(spec.workload, PulsarWorkloadSpec::Script(_))
    }
}
