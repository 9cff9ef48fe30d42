//! `percsim compare`: each system on the same pipeline job under the same
//! named fault mixes over a set of seeds, measured from what its runs
//! recorded (histories and events; see docs/compare.md for every metric's
//! definition). One table: rows are metrics, columns system x fault mix.

mod facts;
mod mix;
pub mod scale;
mod scale_job;
mod table;

pub use facts::{
    DeathFact, DocFact, Ending, Metrics, RunFacts, Samples, TxnFact, quantile, workload_end_ns,
};
pub use mix::{FaultMix, parse_mix};
pub use scale_job::{ScaleJob, ScalePoint};
pub use table::{Cell, Table};

use crate::scenario::Scenario;
use crate::system::SystemDef;
use crate::systems;
use percsim_sim::WorldConfig;
use std::sync::Mutex;

/// How many documents the comparison's job loads (each system's job is
/// the document pipeline: loaded, parsed, clustered, exported).
pub const DOCUMENTS: usize = 1_000;

/// How many distinct contents those documents have.
pub const CONTENTS: usize = 400;

/// What `percsim compare` runs.
#[derive(Clone)]
pub struct Options {
    /// The systems, in column order.
    pub systems: Vec<&'static dyn SystemDef>,
    /// The fault mixes, in column order.
    pub mixes: Vec<FaultMix>,
    /// First seed (included).
    pub start: u64,
    /// Last seed (excluded).
    pub end: u64,
    /// Parallel threads.
    pub jobs: usize,
    /// Length of each run's workload phase (simulated ms).
    pub run_ms: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            systems: systems::all()
                .into_iter()
                .filter(|s| s.compare_scenario(0, WorldConfig::default()).is_some())
                .collect(),
            mixes: FaultMix::ALL.to_vec(),
            start: 0,
            end: 20,
            jobs: 2,
            run_ms: 5_000,
        }
    }
}

/// The scenario of one run: `system` on the job under `mix` with `seed`,
/// or why the system cannot take part.
pub fn scenario(
    system: &dyn SystemDef,
    mix: FaultMix,
    seed: u64,
    run_ms: u64,
) -> Result<Scenario, String> {
    let mut world = WorldConfig {
        run_ms,
        ..WorldConfig::default()
    };
    world.faults.random = mix.faults();
    system
        .compare_scenario(seed, world)
        .ok_or_else(|| format!("system {} has no comparison job", system.name()))
}

/// The facts of one run, or why it produced none.
fn run_one(
    system: &dyn SystemDef,
    mix: FaultMix,
    seed: u64,
    run_ms: u64,
) -> Result<RunFacts, String> {
    let out = scenario(system, mix, seed, run_ms)?
        .run()
        .map_err(|e| format!("seed {seed}: {e}"))?;
    system
        .compare_facts(&out)
        .map_err(|e| format!("seed {seed}: {e}"))
}

/// Run every (system, mix, seed) and measure each (system, mix) cell.
pub fn run(opts: &Options) -> Result<Table, String> {
    if opts.start >= opts.end {
        return Err(format!("empty seed range {}..{}", opts.start, opts.end));
    }
    if opts.run_ms < 500 {
        return Err(format!(
            "a workload phase of {} ms is too short to measure (at least 500)",
            opts.run_ms
        ));
    }
    if opts.systems.is_empty() || opts.mixes.is_empty() {
        return Err("no system or no fault mix to compare".to_string());
    }
    if let Some(s) = opts
        .systems
        .iter()
        .find(|s| s.compare_scenario(0, WorldConfig::default()).is_none())
    {
        return Err(format!("system {} has no comparison job", s.name()));
    }
    let columns: Vec<(&'static dyn SystemDef, FaultMix)> = opts
        .systems
        .iter()
        .flat_map(|&s| opts.mixes.iter().map(move |&m| (s, m)))
        .collect();
    let seeds = opts.end - opts.start;
    let cells: Vec<Mutex<(Samples, Vec<String>)>> =
        columns.iter().map(|_| Mutex::default()).collect();
    crate::pool::for_each(
        opts.jobs,
        columns.len() as u64 * seeds,
        |_| true,
        |i| {
            let (system, mix) = columns[(i / seeds) as usize];
            run_one(system, mix, opts.start + i % seeds, opts.run_ms)
        },
        |i, r| {
            let mut cell = cells[(i / seeds) as usize]
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            match r {
                Ok(f) => cell.0.add(&f),
                Err(e) => cell.1.push(e),
            }
        },
    );
    let cells = columns
        .into_iter()
        .zip(cells)
        .map(|((system, mix), c)| {
            let (samples, mut failed) = c.into_inner().unwrap_or_else(|p| p.into_inner());
            failed.sort();
            Cell {
                system: system.name(),
                mix,
                metrics: samples.metrics(),
                failed,
            }
        })
        .collect();
    Ok(Table {
        seeds: (opts.start, opts.end),
        run_ms: opts.run_ms,
        cells,
    })
}
