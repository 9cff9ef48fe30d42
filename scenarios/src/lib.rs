//! percsim's workloads, scenario files and campaigns, behind the `percsim` CLI.
//!
//! It is also the one dependency a crate of tests needs: it re-exports the
//! other crates of percsim ([`protocol`], [`sim`], [`checker`]) and
//! [`libtest_mimic`] at the version [`regress::file_trials`] returns.
//! Depend on it under the name `percsim` (see `docs/using-percsim.md`):
//!
//! ```toml
//! [dev-dependencies]
//! percsim = { package = "percsim-scenarios", git = "https://example.invalid/percsim" }
//! ```

pub mod bench;
pub mod campaign;
pub mod capsule;
mod common;
pub mod compare;
pub mod coverage;
mod error;
pub mod explore;
pub mod export;
pub mod faultmix;
pub mod fired;
pub mod fuzz;
pub mod histfile;
pub mod interop_bench;
pub mod judge;
mod pool;
pub mod regress;
pub mod report;
pub mod scenario;
mod scenario_read;
pub mod scenario_sweep;
pub mod script;
mod shard;
pub mod shardfile;
pub mod shrink;
mod shrink_run;
mod spec;
mod summary;
pub mod system;
pub mod systems;
pub mod typed;

/// The test harness [`regress::file_trials`] builds tests for, at the
/// version it returns.
pub use libtest_mimic;
/// The history checker (`percsim-checker`).
pub use percsim_checker as checker;
/// The protocols' pure steps (`percsim-protocol`): points such as
/// Percolator's `StepPoint` and the planted bugs.
pub use percsim_protocol as protocol;
/// The simulated world and its systems (`percsim-sim`).
pub use percsim_sim as sim;

pub use campaign::Verdict;
pub use scenario::{Scenario, ScenarioError};
pub use shard::{Shard, ShardSource, resolve as resolve_shard};
/// Percolator's workloads and its script language, at the path tests and
/// users have always imported them from.
pub use systems::percolator::workloads;
