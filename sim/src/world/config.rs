//! The world's own settings (a scenario file's `world` section) and how
//! they are checked against the nodes a system runs.

use crate::world::clock::ClockSkew;
use crate::world::faults::FaultConfig;
use serde::{Deserialize, Serialize};

/// The world's own settings: a scenario file's `world` section. They are
/// the same for every system: the phases, the faults, the clocks and how
/// long one message may take to be answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorldConfig {
    /// Length of the workload phase in simulated ms (faults active).
    pub run_ms: u64,
    /// Bound on the healed phase in which the system must settle.
    pub quiesce_ms: u64,
    /// Timeout of one RPC attempt (also of a late copy's delivery).
    pub rpc_timeout_ms: u64,
    /// Per-client clock skew (missing entries: a perfect clock).
    pub clocks: Vec<ClockSkew>,
    /// Timed and random faults of the workload phase.
    pub faults: FaultConfig,
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            run_ms: 5_000,
            quiesce_ms: 60_000,
            rpc_timeout_ms: 100,
            clocks: Vec::new(),
            faults: FaultConfig::default(),
        }
    }
}

/// The longest phase a run may have: one simulated hour.
pub const MAX_PHASE_MS: u64 = 3_600_000;

/// A world setting that cannot run: the field (a path inside the `world`
/// section) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("world.{field}: {problem}")]
pub struct WorldError {
    /// The offending field, as a path inside the `world` section.
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
}

/// The nodes a system will run, as the world's settings must name them.
#[derive(Debug, Clone, Copy)]
pub struct NodeNames<'a> {
    /// Every node's name.
    pub names: &'a [String],
    /// How many clients (timed faults and clocks name clients by index).
    pub clients: usize,
}

impl WorldConfig {
    /// Check the settings against the nodes the system runs: phases of at
    /// most an hour, a positive RPC timeout, no more clocks than clients,
    /// timed faults that name existing nodes and clients with sensible
    /// values, random classes with sensible probabilities and durations.
    pub fn validate(&self, nodes: NodeNames<'_>) -> Result<(), WorldError> {
        let err = |field: &str, problem: String| {
            Err(WorldError {
                field: field.to_string(),
                problem,
            })
        };
        if self.rpc_timeout_ms == 0 {
            return err("rpc_timeout_ms", "must be at least 1".into());
        }
        if self.run_ms > MAX_PHASE_MS || self.quiesce_ms > MAX_PHASE_MS {
            return err("run_ms/quiesce_ms", "more than one simulated hour".into());
        }
        if self.clocks.len() > nodes.clients {
            return err("clocks", "more clock entries than clients".into());
        }
        self.check_faults(nodes)
    }

    fn check_faults(&self, nodes: NodeNames<'_>) -> Result<(), WorldError> {
        for (i, t) in self.faults.schedule.iter().enumerate() {
            let field = format!("faults.schedule[{i}]");
            let problem = if let Some(n) = t
                .fault
                .nodes()
                .into_iter()
                .find(|n| !nodes.names.iter().any(|m| m == n))
            {
                Some(format!(
                    "no node named {n:?} (nodes: {})",
                    nodes.names.join(", ")
                ))
            } else if let Some(c) = t.fault.client().filter(|c| *c >= nodes.clients) {
                Some(format!(
                    "client {c} does not exist ({} clients)",
                    nodes.clients
                ))
            } else {
                t.fault.problem()
            };
            if let Some(problem) = problem {
                return Err(WorldError { field, problem });
            }
        }
        for (name, class) in self.faults.random.classes() {
            if let Some(problem) = class.problem() {
                return Err(WorldError {
                    field: format!("faults.random.{name}"),
                    problem,
                });
            }
        }
        Ok(())
    }
}
