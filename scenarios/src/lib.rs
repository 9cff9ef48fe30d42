//! percsim's workloads, scenario files and campaigns, behind the `percsim` CLI.

pub mod bench;
pub mod campaign;
pub mod capsule;
mod common;
pub mod compare;
pub mod coverage;
mod error;
pub mod explore;
mod explore_bench;
pub mod export;
pub mod faultmix;
pub mod fuzz;
pub mod histfile;
pub mod interop_bench;
pub mod judge;
mod pool;
pub mod regress;
pub mod report;
pub mod scenario;
mod scenario_read;
pub mod script;
mod shard;
pub mod shardfile;
pub mod shrink;
mod spec;
mod summary;
pub mod system;
pub mod systems;

pub use scenario::{Scenario, ScenarioError};
pub use shard::{Shard, ShardSource, resolve as resolve_shard};
/// Percolator's workloads and its script language, at the path tests and
/// users have always imported them from.
pub use systems::percolator::workloads;
