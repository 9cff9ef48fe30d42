//! percsim's simulated world: a Percolator cluster (timestamp oracle,
//! liveness service, master, tablet servers, clients) as madsim nodes, with
//! durable storage that outlives crashes, skewed client clocks, crashes at
//! named protocol steps, and history recording.
//!
//! Entry point: [`run`] a [`Workload`] on a [`SimConfig`] with a seed.

#[cfg(not(madsim))]
compile_error!(
    "percsim-sim needs `--cfg madsim` (set in .cargo/config.toml). An environment RUSTFLAGS replaces that setting: unset it, or add `--cfg madsim` to it."
);

mod config;
mod driver;
mod faults;
mod harness;
mod inspect;
mod nodes;
mod recorder;
mod rpc;
mod serve;
mod watchdog;
mod workload;
mod world;

pub use config::{ClockSkew, ConfigError, CostModel, CrashAt, PauseAt, SimConfig};
pub use driver::Controller;
pub use faults::{FAULT_TICK_MS, Fault, FaultClass, FaultConfig, RandomFaults, TimedFault};
pub use harness::{RunOutput, RunSummary, run};
pub use inspect::CellView;
pub use nodes::client::{Armed, Client};
pub use recorder::LOADER_CLIENT;
pub use watchdog::{STUCK_MARGIN_MS, STUCK_MARKER, is_stuck};
pub use workload::{BoxFuture, Worker, Workload, even_splits};

/// Whether this build simulates (always true: the crate does not build otherwise).
pub const SIMULATED: bool = cfg!(madsim);
