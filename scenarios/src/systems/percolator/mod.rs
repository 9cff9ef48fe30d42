//! Google's Percolator as a system of the testbed: its section of a
//! scenario file (`"percolator": {...}`, a [`PercolatorConfig`]), its
//! workloads ([`WorkloadSpec`]), its campaign, its fault classes at named
//! steps, its planted bugs and how its scenarios shrink.

pub mod ablations;
pub mod campaign;
pub mod compare;
pub mod coverage;
pub mod faults;
pub mod paper;
pub mod workloads;

use crate::campaign::Mix;
use crate::compare::RunFacts;
use crate::scenario::{Scenario, ScenarioError, typed, typed_workload};
use crate::system::{CoverageItem, KillTable, SummarySection, SystemDef, SystemSpec, config_error};
use crate::systems::percolator::workloads::WorkloadSpec;
use percsim_protocol::percolator::Ablation;
use percsim_sim::{ConfigError, PercolatorConfig, PercolatorCounter, Role, RunOutput, WorldConfig};
use std::collections::BTreeMap;

/// Percolator in the registry.
pub static PERCOLATOR: PercolatorDef = PercolatorDef;

/// Percolator's [`SystemDef`].
pub struct PercolatorDef;

/// The name Percolator is known by.
const NAME: &str = "percolator";

/// A Percolator scenario's own part: the cluster and the workload.
#[derive(Debug, Clone)]
pub struct PercolatorSpec {
    /// The cluster (a scenario file's `percolator` section).
    pub cluster: PercolatorConfig,
    /// The workload.
    pub workload: WorkloadSpec,
}

/// The Percolator part of `s`, if it runs Percolator.
pub fn spec(s: &Scenario) -> Option<&PercolatorSpec> {
    s.spec.as_any().downcast_ref()
}

/// The Percolator part of `s`, mutable, if it runs Percolator.
pub fn spec_mut(s: &mut Scenario) -> Option<&mut PercolatorSpec> {
    s.spec.as_any_mut().downcast_mut()
}

/// A Percolator scenario of `workload` on `cluster` in a world set up by
/// `world`, with `seed`.
pub fn scenario(
    seed: u64,
    world: WorldConfig,
    cluster: PercolatorConfig,
    workload: WorkloadSpec,
) -> Scenario {
    Scenario::of(seed, world, Box::new(PercolatorSpec { cluster, workload }))
}

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
        let cluster = match section {
            None => PercolatorConfig::default(),
            Some(v) => typed(NAME, v)?,
        };
        let workload = typed_workload(self, workload)?;
        Ok(Box::new(PercolatorSpec { cluster, workload }))
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
        Ablation::ALL
            .iter()
            .map(|a| (a.name(), a.describe()))
            .collect()
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

impl SystemSpec for PercolatorSpec {
    fn system(&self) -> &'static str {
        NAME
    }

    fn section(&self) -> serde_json::Value {
        serde_json::to_value(&self.cluster).unwrap_or_default()
    }

    fn workload(&self) -> serde_json::Value {
        serde_json::to_value(&self.workload).unwrap_or_default()
    }

    fn workload_name(&self) -> &'static str {
        self.workload.name()
    }

    fn validate(&self, world: &WorldConfig) -> Result<(), ScenarioError> {
        self.cluster
            .validate(world)
            .map_err(|e| config_error(NAME, e))?;
        self.workload
            .validate(&self.cluster)
            .map_err(ScenarioError::Invalid)
    }

    fn run(
        &self,
        world: &WorldConfig,
        seed: u64,
        description: serde_json::Value,
    ) -> Result<RunOutput, ConfigError> {
        let w = self.workload.build();
        percsim_sim::run(world, &self.cluster, seed, w, description)
    }

    fn expectations(&self) -> bool {
        matches!(self.workload, WorkloadSpec::Script(_))
    }
}
