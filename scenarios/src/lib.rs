//! percsim's workloads, scenario files and campaigns, behind the `percsim` CLI.

pub mod ablations;
pub mod bench;
pub mod campaign;
pub mod compare;
pub mod coverage;
pub mod export;
pub mod faultmix;
pub mod fuzz;
pub mod histfile;
pub mod interop_bench;
pub mod judge;
pub mod paper;
mod pool;
pub mod pulsar_ablations;
pub mod pulsar_campaign;
mod pulsar_shrink;
pub mod regress;
pub mod report;
pub mod scenario;
mod shard;
mod summary;
pub mod workloads;

pub use scenario::{Scenario, ScenarioError};
pub use shard::{Shard, ShardSource, resolve as resolve_shard};
