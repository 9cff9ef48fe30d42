//! Apache Pulsar's transactions as a system of the testbed: its section of
//! a scenario file (`"pulsar": {...}`, a [`PulsarConfig`]), its workloads
//! (`stream`, `stream-pipeline`), its campaign, its planted bugs and how
//! its scenarios shrink. See `docs/pulsar.md`.

pub mod ablations;
pub mod campaign;
pub mod compare;
pub mod coverage;
mod def;
mod shrink;
mod spec;
pub mod workloads;

use crate::campaign::Mix;
use crate::compare::RunFacts;
use crate::fired::{PointStop, ordinal, point_stops_not_fired};
use crate::planted_bugs;
use crate::scenario::{Scenario, ScenarioError};
use crate::system::{
    CoverageItem, KillTable, PlantedBug, SummarySection, SystemDef, SystemSpec, config_error,
};
use crate::typed::TypedSystem;
use percsim_protocol::pulsar::PulsarAblation;
use percsim_sim::{
    ConfigError, NodeKind, PulsarConfig, PulsarEvent, Role, RunOutput, SystemHistory, WorldConfig,
};
use std::collections::BTreeMap;

use def::NAME;
pub use def::{PULSAR, PulsarDef};
use spec::ablations_of;
pub use spec::{PulsarSpec, PulsarWorkloadSpec};

planted_bugs!(PulsarAblation);

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

    fn named_points(&self) -> Vec<CoverageItem> {
        coverage::points()
    }

    fn reached_by(&self, name: &str) -> Option<&'static [&'static str]> {
        coverage::reached_by(name)
    }

    fn point_reach_counter(&self, point: &str) -> Option<String> {
        coverage::reach_counter(point)
    }

    fn summary_lines(&self, counters: &BTreeMap<String, u64>) -> Vec<(&'static str, String)> {
        vec![("points", coverage::points_line(counters))]
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

    fn shrink_scenario(
        &self,
        failing: &Scenario,
        still_fails: &mut dyn FnMut(&Scenario) -> bool,
        budget: usize,
    ) -> (Scenario, usize) {
        shrink::shrink_scenario(failing, still_fails, budget)
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

    fn not_fired(spec: &PulsarSpec, history: &SystemHistory) -> Vec<String> {
        not_fired(&spec.cluster, history)
    }
}

/// The entries of `cluster.crashes` (each keyed to the `nth` time any node
/// reaches a point in the run) with no stop there in `history`.
fn not_fired(cluster: &PulsarConfig, history: &SystemHistory) -> Vec<String> {
    let stops: Vec<PointStop> = cluster
        .crashes
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let verb = match c.pause_ms {
                Some(_) => "freeze",
                None => "kill",
            };
            let point = c.point.name();
            PointStop {
                entry: format!("{NAME}.crashes[{i}]"),
                point,
                nth: c.nth,
                what: format!(
                    "{verb} the node reaching {point}, the {} time it is reached in the run",
                    ordinal(c.nth)
                ),
            }
        })
        .collect();
    point_stops_not_fired(history, PulsarEvent::CrashAtPoint.name(), &stops)
}
