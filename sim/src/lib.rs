//! percsim's simulated world and the systems that live in it.
//!
//! Two layers (see `docs/architecture.md`):
//! - the **world** ([`world`]): nodes and their lifecycle, the network with
//!   its own `wire` node for late and duplicated copies, partitions, skewed
//!   clocks, the fault driver and its random classes, the history recorder,
//!   the phases of a run, and seeds. It knows no system's names.
//! - the **systems**: a [`System`] names its nodes, its crash and pause
//!   points, what "converged" means and how its state is dumped.
//!   [`Percolator`] (timestamp oracle, liveness service, master, tablet
//!   servers, clients, observers and scanners) is the first.
//!
//! Entry points: [`run_system`] runs any system with a seed; [`run`] runs a
//! Percolator [`Workload`] on a [`SimConfig`].

#[cfg(not(madsim))]
compile_error!(
    "percsim-sim needs `--cfg madsim` (set in .cargo/config.toml). An environment RUSTFLAGS replaces that setting: unset it, or add `--cfg madsim` to it."
);

pub mod invariant;
mod percolator;
mod pulsar;
mod systems;
pub mod world;

pub use percolator::config::{
    ConfigError, CostModel, CrashAt, PauseAt, PointAction, PointFault, SimConfig,
};
pub use percolator::ids::{PercolatorCounter, PercolatorEvent};
pub use percolator::inspect::{CellView, Controller};
pub use percolator::nodes::client::{Armed, Client};
pub use percolator::points::point_counter;
pub use percolator::system::Percolator;
pub use percolator::tags::{CallKind, MessageFault};
pub use percolator::workload::{Worker, Workload, even_splits};
pub use pulsar::Pulsar;
pub use pulsar::config::{PulsarConfig, ServerCrashAt};
pub use pulsar::ids::{PulsarCounter, PulsarEvent};
pub use pulsar::nodes::client::Conn;
pub use pulsar::workload::{PulsarTask, PulsarWorkload};
pub use systems::SystemKind;
pub use world::driver::FaultControl;
pub use world::faults::{FAULT_TICK_MS, Fault, FaultClass, FaultConfig, RandomFaults, TimedFault};
pub use world::ids::{Counter, EventKind, FaultKind, Role};
pub use world::intercept::{Fate, Leg, RuleId};
pub use world::phases::{RunOutput, RunSummary, run_system};
pub use world::recorder::LOADER_CLIENT;
pub use world::watchdog::{STUCK_MARGIN_MS, STUCK_MARKER, is_stuck};
pub use world::{BoxFuture, ClockSkew, System, Tenant};

use std::sync::Arc;

/// Run `workload` on the Percolator cluster `cfg` with `seed`. `scenario`
/// is stored in the history as the description of the run.
pub fn run(
    cfg: &SimConfig,
    seed: u64,
    workload: Arc<dyn Workload>,
    scenario: serde_json::Value,
) -> Result<RunOutput, ConfigError> {
    cfg.validate()?;
    let system = Percolator::new(cfg.clone(), workload);
    Ok(run_system(&system, seed, scenario))
}

/// Run Pulsar `workload` with `seed`: the world's settings (phases,
/// faults, clocks, clients, RPC timeout) from `cluster`, the Pulsar
/// cluster from `pulsar`. `scenario` is stored in the histories.
pub fn run_pulsar(
    cluster: &SimConfig,
    pulsar: &PulsarConfig,
    seed: u64,
    workload: Arc<dyn PulsarWorkload>,
    scenario: serde_json::Value,
) -> Result<RunOutput, ConfigError> {
    validate_pulsar(cluster, pulsar)?;
    let world = world::WorldConfig {
        run_ms: cluster.run_ms,
        quiesce_ms: cluster.quiesce_ms,
        faults: cluster.faults.clone(),
        clocks: cluster.clocks.clone(),
        rpc_timeout_ms: cluster.rpc_timeout_ms,
    };
    let system = Pulsar::new(world, cluster.clients, pulsar.clone(), workload);
    Ok(run_system(&system, seed, scenario))
}

/// Check a Pulsar run's settings: the cluster's world settings (its timed
/// faults must name Pulsar's nodes: `metadata`, `broker-N`, `client-N`)
/// and the Pulsar cluster.
pub fn validate_pulsar(cluster: &SimConfig, pulsar: &PulsarConfig) -> Result<(), ConfigError> {
    pulsar.validate().map_err(|problem| ConfigError {
        field: "pulsar".into(),
        problem,
    })?;
    let names = pulsar.node_names(cluster.clients);
    for (i, t) in cluster.faults.schedule.iter().enumerate() {
        if let Some(n) = t
            .fault
            .nodes()
            .into_iter()
            .find(|n| !names.iter().any(|m| m == n))
        {
            return Err(ConfigError {
                field: format!("faults.schedule[{i}]"),
                problem: format!("no node named {n:?} (nodes: {})", names.join(", ")),
            });
        }
    }
    // Percolator's node names do not apply to the faults checked above.
    let mut rest = cluster.clone();
    rest.faults.schedule.retain(|t| t.fault.nodes().is_empty());
    rest.validate()
}

/// Whether this build simulates (always true: the crate does not build otherwise).
pub const SIMULATED: bool = cfg!(madsim);
