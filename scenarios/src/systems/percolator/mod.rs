//! Google's Percolator as a system of the testbed: its section of a
//! scenario file (`"percolator": {...}`, a [`PercolatorConfig`]), its
//! workloads ([`WorkloadSpec`]), its campaign, its fault classes at named
//! steps, its planted bugs and how its scenarios shrink.

pub mod ablations;
pub mod bench;
pub mod campaign;
pub mod compare;
pub mod coverage;
mod def;
mod explore_bench;
pub mod faults;
mod not_fired;
pub mod paper;
mod spec;
pub mod workloads;

use crate::campaign::Mix;
use crate::compare::RunFacts;
use crate::planted_bugs;
use crate::scenario::{Scenario, ScenarioError};
use crate::system::{
    CoverageItem, KillTable, Measurement, PlantedBug, SummarySection, SystemDef, SystemSpec,
    config_error,
};
use crate::systems::percolator::workloads::WorkloadSpec;
use crate::typed::TypedSystem;
use percsim_protocol::percolator::Ablation;
use percsim_sim::{
    ConfigError, NodeKind, PercolatorConfig, PercolatorCounter, Role, RunOutput, WorldConfig,
};
use std::collections::BTreeMap;

use def::NAME;
pub use def::{PERCOLATOR, PercolatorDef};
pub use spec::{PercolatorSpec, scenario};

planted_bugs!(Ablation);

impl SystemDef for PercolatorDef {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self) -> &'static str {
        "Google's Percolator (OSDI 2010): oracle, tablet servers, two-phase commit with lazy cleanup, observers"
    }

    fn parse(
        &self,
        section: Option<serde_json::Value>,
        workload: serde_json::Value,
    ) -> Result<Box<dyn SystemSpec>, ScenarioError> {
        PercolatorSpec::parse(self, section, workload)
    }

    fn workloads(&self) -> &'static [&'static str] {
        crate::systems::percolator::workloads::NAMES
    }

    fn campaign_workloads(&self) -> &'static [&'static str] {
        campaign::DEFAULT_WORKLOADS
    }

    fn fault_classes(&self) -> &'static [&'static str] {
        crate::faultmix::CLASSES
    }

    fn node_kinds(&self) -> &'static [NodeKind] {
        &percsim_sim::percolator_kinds::ALL
    }

    fn lane_names(&self, scenario: &serde_json::Value) -> Vec<(u64, &'static str)> {
        // The healed phase's sweeper runs as the client one past the last
        // (`percolator.clients`, its default when the section omits it).
        let clients = scenario
            .get(NAME)
            .and_then(|p| p.get("clients"))
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(percsim_sim::PercolatorConfig::default().clients as u64);
        vec![(clients, "final read sweep")]
    }

    fn roles(&self) -> Vec<(Role, &'static str)> {
        vec![
            (Role::Client, "client"),
            (Role::DataServer, "tablet_server"),
            (Role::Coordinator, "oracle"),
            (Role::Liveness, "liveness"),
            (Role::Master, "master"),
        ]
    }

    fn ablations(&self) -> Vec<(&'static str, &'static str)> {
        Ablation::list()
    }

    fn generate(&self, seed: u64, mix: &Mix) -> Scenario {
        campaign::generate(seed, mix)
    }

    fn compare_scenario(&self, seed: u64, world: WorldConfig) -> Option<Scenario> {
        let cluster = PercolatorConfig {
            tablet_servers: 3,
            clients: 3,
            workers_per_client: 1,
            scanners_per_client: 4,
            ..PercolatorConfig::default()
        };
        Some(scenario(
            seed,
            world,
            cluster,
            WorkloadSpec::Pipeline(compare::job()),
        ))
    }

    fn compare_facts(&self, out: &RunOutput) -> Result<RunFacts, String> {
        let history = out
            .transactions()
            .ok_or("the run recorded no transaction history")?;
        Ok(compare::facts(history))
    }

    fn scale_out(&self, point: &crate::compare::ScalePoint) -> Option<crate::compare::ScaleJob> {
        Some(paper::scale_out(point))
    }

    fn summary_lines(&self, counters: &BTreeMap<String, u64>) -> Vec<(&'static str, String)> {
        let cleanups: Vec<String> = PercolatorCounter::CLEANUPS
            .iter()
            .filter_map(|c| {
                let n = counters.get(c.name()).copied().filter(|n| *n > 0)?;
                Some(format!("{}={n}", c.name().trim_start_matches("cleanup.")))
            })
            .collect();
        let cleanups = if cleanups.is_empty() {
            "none".to_string()
        } else {
            cleanups.join(" ")
        };
        vec![("cleanups", cleanups)]
    }

    fn coverage(&self) -> Vec<CoverageItem> {
        coverage::items()
    }

    fn named_points(&self) -> Vec<CoverageItem> {
        coverage::points()
    }

    fn campaign_sections(&self, counters: &BTreeMap<String, u64>) -> Vec<SummarySection> {
        coverage::sections(counters)
    }

    fn evaluation(&self, quick: bool) -> bool {
        paper::run_all(quick);
        true
    }

    fn kill_table(&self, opts: &KillTable) -> Result<i32, String> {
        ablations::kill_table(opts)
    }

    fn kill_table_ranges(&self) -> bool {
        true
    }

    fn bench(&self) -> Vec<Measurement> {
        bench::measurements()
    }

    fn script_scenario(
        &self,
        script: serde_json::Value,
        seed: u64,
    ) -> Result<Scenario, ScenarioError> {
        let script: workloads::Script = crate::scenario::typed("workload", script)?;
        Ok(script_scenario(script, seed))
    }

    fn shrink(
        &self,
        seed: u64,
        mix: &Mix,
        still_fails: &mut dyn FnMut(&Scenario) -> bool,
        budget: usize,
    ) -> (Scenario, usize) {
        campaign::shrink(seed, mix, still_fails, budget)
    }
}

/// A scenario running `script` on a small cluster (2 tablet servers, 2
/// tablets, as many clients as the script names, one worker each, a 60 s
/// workload phase), with `seed`.
pub fn script_scenario(script: workloads::Script, seed: u64) -> Scenario {
    let cluster = PercolatorConfig {
        tablet_servers: 2,
        tablets: 2,
        clients: crate::script::clients_needed(&script),
        workers_per_client: 1,
        ..PercolatorConfig::default()
    };
    let world = crate::script::script_world();
    scenario(seed, world, cluster, WorkloadSpec::Script(script))
}

impl TypedSystem for PercolatorDef {
    type Section = PercolatorConfig;
    type Workload = WorkloadSpec;
    const NAME: &'static str = NAME;

    fn workload_name(workload: &WorkloadSpec) -> &'static str {
        workload.name()
    }

    fn validate(spec: &PercolatorSpec, world: &WorldConfig) -> Result<(), ScenarioError> {
        spec.cluster
            .validate(world)
            .map_err(|e| config_error(NAME, e))?;
        spec.workload
            .validate(&spec.cluster)
            .map_err(ScenarioError::Invalid)
    }

    fn run(
        spec: &PercolatorSpec,
        world: &WorldConfig,
        seed: u64,
        description: serde_json::Value,
    ) -> Result<RunOutput, ConfigError> {
        let w = spec.workload.build();
        percsim_sim::run(world, &spec.cluster, seed, w, description)
    }

    fn expectations(spec: &PercolatorSpec) -> bool {
        matches!(spec.workload, WorkloadSpec::Script(_))
    }

    fn not_fired(spec: &PercolatorSpec, history: &percsim_sim::SystemHistory) -> Vec<String> {
        not_fired::not_fired(&spec.cluster, history)
    }
}
