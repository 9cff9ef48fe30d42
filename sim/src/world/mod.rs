//! The protocol-neutral world: nodes and their lifecycle, the network (with
//! its own `wire` node for late and duplicated copies, and partitions),
//! skewed clocks, the fault driver, the history recorder, the phases of a
//! run and its seed. It knows no system's names: a [`System`] describes
//! its nodes, crash points, convergence and history, and the world runs
//! it. The world's only view of the history format is the checker's types.

mod clock;
mod config;
mod control;
pub(crate) mod deadline;
pub mod driver;
pub mod explore;
pub mod faults;
mod guard;
pub mod ids;
pub mod intercept;
pub(crate) mod net;
#[cfg(test)]
mod net_tests;
pub mod node;
pub mod phases;
pub mod port;
pub mod recorder;
pub mod schedule;
pub mod serve;
mod state;
mod system;
pub mod system_history;
#[cfg(test)]
mod toy;
mod transport;
pub mod txn_history;
pub mod watchdog;

pub use clock::{ClockEntry, ClockSkew};
pub use config::{MAX_PHASE_MS, NodeNames, WorldConfig, WorldError};
pub use control::FaultControl;
pub use guard::lock;
pub use net::{Carried, NetFaults};
pub use node::{NodeKind, NodeName, NodeNameError};
pub use state::{Control, World};
pub use system::{BoxFuture, NodeInit, NodeSpec, System, Tenant, Unsettled};
