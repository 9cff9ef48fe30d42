//! percsim's workloads, scenario files and campaigns, behind the `percsim` CLI.

pub mod bench;
pub mod campaign;
pub mod capsule;
pub mod compare;
pub mod coverage;
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
mod shard;
mod summary;
pub mod system;
pub mod systems;
pub mod workloads;

pub use scenario::{Scenario, ScenarioError};
pub use shard::{Shard, ShardSource, resolve as resolve_shard};
