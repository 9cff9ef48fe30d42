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
use crate::world::config::WorldConfig;
use crate::world::control::FaultControl;
use crate::world::ids::Role;
use crate::world::node::NodeName;
use crate::world::system_history::SystemHistory;
use percsim_checker as history;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future, as systems and workloads return them.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What starts one incarnation of a node (run again on every restart).
pub type NodeInit = Arc<dyn Fn() -> BoxFuture<()> + Send + Sync>;

/// One node of a system.
pub struct NodeSpec {
    /// Its name (unique in the run): its kind, with the part it plays as
    /// fault classes target nodes, and its number among the nodes of its
    /// kind (a client's index).
    pub name: NodeName,
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
    fn holder(&self, _role: Role) -> Option<NodeName> {
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
    /// A hash of the system's state (its durable stores and what its
    /// nodes remember), for an exploration to recognise a state it has
    /// seen; `None` (the default, or whenever the state cannot be read
    /// now) disables pruning at that point.
    fn state_hash(&self) -> Option<u64> {
        None
    }
}
