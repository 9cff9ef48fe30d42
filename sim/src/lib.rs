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
//!   servers, clients, observers and scanners) is the first; [`omid`]
//!   (Apache Omid's TSO, commit table and shadow cells) another.
//!
//! Entry points: [`run_system`] runs any system with a seed; [`run`] runs a
//! Percolator [`Workload`] on a [`PercolatorConfig`].

#[cfg(not(madsim))]
compile_error!(
    "percsim needs `--cfg madsim`. Add to the `.cargo/config.toml` of the crate you build:\n[build]\nrustflags = [\"--cfg\", \"madsim\"]\nrustdocflags = [\"--cfg\", \"madsim\"]\nAn environment RUSTFLAGS replaces that setting: unset it, or add `--cfg madsim` to it."
);

/// What a build without `--cfg madsim` is told (by the build script, which
/// stops it before any other error).
pub const MADSIM_MISSING: &str = include_str!("../madsim-missing.txt");

pub mod invariant;
pub mod omid;
mod percolator;
mod pulsar;
pub mod world;

pub use percolator::config::{
    ConfigError, CostModel, CrashAt, PauseAt, PercolatorConfig, PointAction, PointFault,
};
pub use percolator::ids::kinds as percolator_kinds;
pub use percolator::ids::{PercolatorCounter, PercolatorEvent};
pub use percolator::inspect::{CellView, Controller};
pub use percolator::nodes::client::{Armed, Client};
pub use percolator::points::point_counter;
pub use percolator::system::Percolator;
pub use percolator::tags::{CallKind, MessageFault};
pub use percolator::workload::{Worker, Workload, even_splits};
pub use pulsar::Pulsar;
pub use pulsar::PulsarControl;
pub use pulsar::config::{PulsarConfig, ServerCrashAt, UnloadAt, UnloadTarget};
pub use pulsar::control::{ArmedPoint, PointAction as PulsarPointAction, calls as pulsar_calls};
pub use pulsar::ids::kinds as pulsar_kinds;
pub use pulsar::ids::{
    PulsarCounter, PulsarEvent, point_reached_counter as pulsar_point_reached,
    point_stopped_counter as pulsar_point_stopped,
};
pub use pulsar::nodes::client::Conn;
pub use pulsar::record::COORDINATOR_CLIENT;
pub use pulsar::workload::{PulsarTask, PulsarWorkload};
pub use world::driver::FaultControl;
pub use world::explore::{Choice, ChoiceKind, Forced, Pct, Schedule};
pub use world::faults::{FAULT_TICK_MS, Fault, FaultClass, FaultConfig, RandomFaults, TimedFault};
pub use world::ids::{Counter, EventKind, FaultKind, Role};
pub use world::intercept::{Fate, Leg, RuleId};
pub use world::phases::{RunOutput, RunSummary, run_system};
pub use world::system_history::{SystemHistory, TxnTally};
pub use world::txn_history::LOADER_CLIENT;
pub use world::watchdog::{STUCK_MARGIN_MS, STUCK_MARKER, is_stuck};
pub use world::{
    BoxFuture, ClockEntry, ClockSkew, NodeKind, NodeName, NodeNameError, NodeNames, System, Tenant,
    WorldConfig, WorldError,
};

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
    let nodes = pulsar.nodes();
    world
        .validate(world::NodeNames { nodes: &nodes })
        .map_err(|e| ConfigError {
            field: format!("world.{}", e.field),
            problem: e.problem,
        })
}

/// Whether this build simulates (always true: the crate does not build otherwise).
pub const SIMULATED: bool = cfg!(madsim);

#[cfg(test)]
mod tests {
    use super::*;

    /// A world with `clocks`, given as JSON.
    fn clocks(json: &str) -> WorldConfig {
        WorldConfig {
            clocks: serde_json::from_str(json).expect("clock entries"),
            ..WorldConfig::default()
        }
    }

    #[test]
    fn the_missing_madsim_message_gives_the_lines_of_a_working_config() {
        let config = include_str!("../../.cargo/config.toml");
        let lines: Vec<&str> = config
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .collect();
        assert_eq!(lines.len(), 3, "{config}");
        for line in lines {
            assert!(
                MADSIM_MISSING.contains(line),
                "{line} missing from:\n{MADSIM_MISSING}"
            );
        }
    }

    #[test]
    fn each_system_refuses_a_clock_for_a_node_that_reads_none() {
        let client = r#"[{"node": "client-0", "offset_ms": 5, "drift_ppm": 0}]"#;
        let tablet = r#"[{"node": "tablet-0", "offset_ms": 5, "drift_ppm": 0}]"#;
        let by_position = r#"[{"offset_ms": 5, "drift_ppm": 0}]"#;
        let percolator = PercolatorConfig::default();
        percolator
            .validate(&clocks(client))
            .expect("a client reads a clock");
        percolator
            .validate(&clocks(by_position))
            .expect("the list form");
        let e = percolator.validate(&clocks(tablet)).unwrap_err();
        assert_eq!(e.field, "world.clocks[0]");
        assert!(
            e.problem
                .starts_with("tablet-0 does not read a wall clock (nodes that do: client-0"),
            "{e}"
        );
        // Pulsar's nodes run on true time: a clock for one is refused. The
        // list form still loads (its campaign draws client skews).
        let pulsar = PulsarConfig::default();
        let e = validate_pulsar(&clocks(client), &pulsar).unwrap_err();
        assert_eq!(e.field, "world.clocks[0]");
        let want = "client-0 does not read a wall clock (none of this system's nodes does)";
        assert_eq!(e.problem, want);
        validate_pulsar(&clocks(by_position), &pulsar).expect("the list form");
    }

    #[test]
    fn a_stall_of_a_node_that_does_not_stall_is_refused() {
        let stall = |node: &str| WorldConfig {
            faults: serde_json::from_value(serde_json::json!({"schedule": [
                {"at_ms": 10, "fault": {"kind": "stall", "node": node, "duration_ms": 100}}
            ]}))
            .expect("a schedule"),
            ..WorldConfig::default()
        };
        let pulsar = PulsarConfig::default();
        validate_pulsar(&stall("client-0"), &pulsar).expect("a Pulsar client stalls");
        let e = validate_pulsar(&stall("broker-0"), &pulsar).unwrap_err();
        assert!(
            e.problem
                .starts_with("broker-0 does not stall (nodes that do: client-0"),
            "{e}"
        );
        let percolator = PercolatorConfig::default();
        let e = percolator.validate(&stall("oracle")).unwrap_err();
        assert!(
            e.problem
                .starts_with("oracle does not stall (nodes that do: client-0"),
            "{e}"
        );
    }
}
