//! The interface a system under test implements to live in the world.
//!
//! A [`System`] is a description (a cluster configuration and a workload)
//! from which the world learns its own settings ([`WorldConfig`]). Once the
//! world exists, the system is installed into it and becomes a [`Tenant`]:
//! it names its nodes (with their roles and how each incarnation starts),
//! says what is still unsettled in the healed phase and how to help it
//! settle, checks its workload's invariants, and writes the run's history
//! in its own format. Crash and pause points are the system's own: when a
//! node reaches one, it asks the world through [`World::request`].

use crate::world::World;
use crate::world::clock::ClockSkew;
use crate::world::driver::FaultControl;
use crate::world::faults::FaultConfig;
use crate::world::ids::Role;
use crate::world::system_history::SystemHistory;
use percsim_checker as history;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future, as systems and workloads return them.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What starts one incarnation of a node (run again on every restart).
pub type NodeInit = Arc<dyn Fn() -> BoxFuture<()> + Send + Sync>;

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

/// One node of a system.
pub struct NodeSpec {
    /// Its name, as faults and events name it (unique in the run).
    pub name: String,
    /// The part it plays, as fault classes target nodes.
    pub role: Role,
    /// Its number among the nodes of its role (a client's index).
    pub index: usize,
    /// Its address.
    pub ip: IpAddr,
    /// What each incarnation runs.
    pub init: NodeInit,
}

/// One kind of unfinished business in the healed phase: `count` things
/// described by `what` ("locks left").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unsettled {
    /// How many are left.
    pub count: u64,
    /// What they are, plural, as the liveness failure says it.
    pub what: &'static str,
}

impl Unsettled {
    /// What the world calls the late and duplicated copies still in flight.
    pub const IN_FLIGHT: &'static str = "late copies in flight";
}

/// A system under test before it runs: it tells the world how to set itself up.
pub trait System: Send + Sync + 'static {
    /// The world's settings for this run.
    fn world_config(&self) -> WorldConfig;
    /// Install the system into `world`: set up its durable state, record
    /// its initial data, and return the running tenant.
    fn install(&self, world: &Arc<World>) -> Arc<dyn Tenant>;
}

/// A system installed in one world.
pub trait Tenant: Send + Sync + 'static {
    /// Its nodes, in the order they start. Nodes of [`Role::Client`] start
    /// one simulated millisecond after the others, so servers can bind first.
    fn nodes(&self) -> Vec<NodeSpec>;
    /// The node that plays `role` now, for a role that moves between nodes
    /// (Pulsar's coordinator runs on whichever broker owns it). The fault
    /// classes that target `role` hit this node; None (the default): the
    /// role is a node of its own.
    fn holder(&self, _role: Role) -> Option<String> {
        None
    }
    /// Expire client `client`'s session with the system's liveness service.
    fn expire_session(&self, client: usize);
    /// An optional task that injects faults during the workload phase
    /// (a scripted workload); when it finishes, the phase ends early.
    fn driver(&self, control: FaultControl) -> Option<BoxFuture<()>>;
    /// The healed phase begins (start helpers, such as a sweeper).
    fn begin_healed(&self) -> BoxFuture<()>;
    /// What is still unsettled; all zero counts mean converged. The world
    /// adds the late copies still in flight.
    fn unsettled(&self) -> Vec<Unsettled>;
    /// Help the system settle once, given what is unsettled (including the
    /// world's own entries); returns when the world should look again.
    fn settle(&self, unsettled: &[Unsettled]) -> BoxFuture<()>;
    /// After convergence: the workload's own invariant violations.
    fn final_check(&self) -> BoxFuture<Vec<String>>;
    /// The run's history, in the system's own format: given the run's
    /// seed and description, and the world's events (faults, cluster and
    /// protocol events, in time order), which the history keeps. Called
    /// once, after the healed phase and the final check.
    fn history(
        &self,
        seed: u64,
        scenario: serde_json::Value,
        events: Vec<history::Event>,
    ) -> SystemHistory;
    /// Names of helper nodes the tenant created itself (freed at the end).
    fn helper_nodes(&self) -> Vec<String>;
}
