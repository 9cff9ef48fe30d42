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
//! Percolator [`Workload`] on a [`PercolatorConfig`].

#[cfg(not(madsim))]
compile_error!(
    "percsim-sim needs `--cfg madsim` (set in .cargo/config.toml). An environment RUSTFLAGS replaces that setting: unset it, or add `--cfg madsim` to it."
);

pub mod invariant;
mod percolator;
mod pulsar;
pub mod world;

pub use percolator::config::{
    ConfigError, CostModel, CrashAt, PauseAt, PercolatorConfig, PointAction, PointFault,
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
pub use world::driver::FaultControl;
pub use world::faults::{FAULT_TICK_MS, Fault, FaultClass, FaultConfig, RandomFaults, TimedFault};
pub use world::ids::{Counter, EventKind, FaultKind, Role};
pub use world::intercept::{Fate, Leg, RuleId};
pub use world::phases::{RunOutput, RunSummary, run_system};
pub use world::system_history::{SystemHistory, TxnTally};
pub use world::txn_history::LOADER_CLIENT;
pub use world::watchdog::{STUCK_MARGIN_MS, STUCK_MARKER, is_stuck};
pub use world::{BoxFuture, ClockSkew, NodeNames, System, Tenant, WorldConfig, WorldError};

use std::sync::Arc;

/// Run `workload` on the Percolator cluster `cfg` in a world set up by
/// `world`, with `seed`. `scenario` is stored in the history as the
/// description of the run.
pub fn run(
    world: &WorldConfig,
    cfg: &PercolatorConfig,
    seed: u64,
    workload: Arc<dyn Workload>,
    scenario: serde_json::Value,
) -> Result<RunOutput, ConfigError> {
    cfg.validate(world)?;
    let system = Percolator::new(world.clone(), cfg.clone(), workload);
    Ok(run_system(&system, seed, scenario))
}

/// Run Pulsar `workload` on the cluster `pulsar` in a world set up by
/// `world`, with `seed`. `scenario` is stored in the histories.
pub fn run_pulsar(
    world: &WorldConfig,
    pulsar: &PulsarConfig,
    seed: u64,
    workload: Arc<dyn PulsarWorkload>,
    scenario: serde_json::Value,
) -> Result<RunOutput, ConfigError> {
    validate_pulsar(world, pulsar)?;
    let system = Pulsar::new(world.clone(), pulsar.clone(), workload);
    Ok(run_system(&system, seed, scenario))
}

/// Check a Pulsar run's settings: the Pulsar cluster, and the world's
/// settings against it (its timed faults must name Pulsar's nodes:
/// `metadata`, `broker-N`, `client-N`).
pub fn validate_pulsar(world: &WorldConfig, pulsar: &PulsarConfig) -> Result<(), ConfigError> {
    pulsar.validate().map_err(|problem| ConfigError {
        field: "pulsar".into(),
        problem,
    })?;
    let names = pulsar.node_names();
    let nodes = world::NodeNames {
        names: &names,
        clients: pulsar.clients,
    };
    world.validate(nodes).map_err(|e| ConfigError {
        field: format!("world.{}", e.field),
        problem: e.problem,
    })
}

/// Whether this build simulates (always true: the crate does not build otherwise).
pub const SIMULATED: bool = cfg!(madsim);
