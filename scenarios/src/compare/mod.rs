//! `percsim compare`: each system on the same pipeline job under the same
//! named fault mixes over a set of seeds, measured from what its runs
//! recorded (histories and events; see docs/compare.md for every metric's
//! definition). One table: rows are metrics, columns system x fault mix.

mod facts;
mod percolator;
mod pulsar;
mod table;

pub use facts::{DeathFact, DocFact, Ending, Metrics, RunFacts, Samples, TxnFact, quantile};
pub use percolator::facts as percolator_facts;
pub use pulsar::facts as pulsar_facts;
pub use table::{Cell, Table};

use crate::scenario::Scenario;
use crate::workloads::{Pipeline, StreamPipeline, WorkloadSpec};
use percsim_sim::{FaultClass, RandomFaults, SimConfig, SystemKind};
use std::sync::Mutex;

percsim_sim::identities! {
    /// A named fault mix of the comparison: the same fault classes, at the
    /// same rates, for every system (each system maps a class onto its own
    /// nodes: Percolator's coordinator-side server is its timestamp oracle).
    pub enum FaultMix {
        /// No faults.
        None => ("none", "no faults"),
        /// Clients killed at random moments (about one kill per simulated second), restarted after 0.5-1.5 s.
        CrashClients => ("crash-clients", "clients killed at random moments (about one per simulated second), restarted after 0.5-1.5 s"),
        /// The coordinator-side server killed at random moments (about one kill per 2 simulated seconds), restarted after 0.2-1 s.
        CrashCoordinator => ("crash-coordinator", "the coordinator-side server (Percolator: the timestamp oracle) killed about once per 2 simulated s, restarted after 0.2-1 s"),
        /// Lossy network: periods of 0.5-2 s in which 10% of messages are lost.
        Lossy => ("lossy", "lossy network: periods of 0.5-2 s losing 10% of messages, starting about once per simulated second"),
    }
}

/// Fault ticks per simulated second (the driver draws each class once per tick).
const TICKS_PER_S: f64 = 1_000.0 / percsim_sim::FAULT_TICK_MS as f64;

impl FaultMix {
    /// The random fault classes the mix switches on.
    pub fn faults(self) -> RandomFaults {
        let per_s = |n: f64, min, max, rate| {
            Some(FaultClass {
                probability: n / TICKS_PER_S,
                min_duration_ms: min,
                max_duration_ms: max,
                rate,
            })
        };
        let mut r = RandomFaults::default();
        match self {
            FaultMix::None => {}
            FaultMix::CrashClients => r.kill_client = per_s(1.0, 500, 1_500, 0.0),
            FaultMix::CrashCoordinator => r.kill_oracle = per_s(0.5, 200, 1_000, 0.0),
            FaultMix::Lossy => r.packet_loss = per_s(1.0, 500, 2_000, 0.1),
        }
        r
    }
}

/// The systems named by `--system`: one system's name, or `all`.
pub fn parse_systems(name: &str) -> Result<Vec<SystemKind>, String> {
    if name == "all" {
        return Ok(SystemKind::ALL.to_vec());
    }
    SystemKind::from_name(name).map(|s| vec![s]).ok_or_else(|| {
        let known: Vec<&str> = SystemKind::ALL.iter().map(|s| s.name()).collect();
        format!("unknown system {name:?} (known: {}, all)", known.join(", "))
    })
}

/// The fault mix named `name`.
pub fn parse_mix(name: &str) -> Result<FaultMix, String> {
    FaultMix::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = FaultMix::ALL.iter().map(|m| m.name()).collect();
        format!("unknown fault mix {name:?} (known: {})", known.join(", "))
    })
}

/// The pipeline job both systems run: documents loaded, parsed, clustered,
/// exported.
pub fn job() -> Pipeline {
    Pipeline {
        documents: 1_000,
        contents: 400,
        load_interval_ms: 100,
        audit: false,
    }
}

/// What `percsim compare` runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The systems, in column order.
    pub systems: Vec<SystemKind>,
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
            systems: SystemKind::ALL.to_vec(),
            mixes: FaultMix::ALL.to_vec(),
            start: 0,
            end: 20,
            jobs: 2,
            run_ms: 5_000,
        }
    }
}

/// The same job as Pulsar's `stream-pipeline`: one loader sending the
/// documents to the input topic every 50 ms (about the rate of
/// Percolator's three loaders, each waiting 100 ms after a ~80 ms commit),
/// processors that die only by the fault mix.
pub fn stream_job() -> StreamPipeline {
    let p = job();
    StreamPipeline {
        documents: p.documents,
        contents: p.contents,
        load_interval_ms: 50,
        crash_rate: 0.0,
    }
}

/// The scenario of one run: `system` on the job under `mix` with `seed`.
pub fn scenario(system: SystemKind, mix: FaultMix, seed: u64, run_ms: u64) -> Scenario {
    let (clients, workload) = match system {
        SystemKind::Percolator => (3, WorkloadSpec::Pipeline(job())),
        // Client 0 loads and audits; three processors.
        SystemKind::Pulsar => (4, WorkloadSpec::StreamPipeline(stream_job())),
    };
    let cluster = SimConfig {
        tablet_servers: 3,
        clients,
        workers_per_client: 1,
        scanners_per_client: 4,
        run_ms,
        ..SimConfig::default()
    };
    let mut s = Scenario::new(seed, cluster, workload);
    s.system = system;
    s.cluster.faults.random = mix.faults();
    s
}

/// The facts of one run, or why it produced none.
fn run_one(system: SystemKind, mix: FaultMix, seed: u64, run_ms: u64) -> Result<RunFacts, String> {
    let out = scenario(system, mix, seed, run_ms)
        .run()
        .map_err(|e| format!("seed {seed}: {e}"))?;
    match (system, &out.stream) {
        (SystemKind::Percolator, _) => Ok(percolator::facts(&out.history)),
        (SystemKind::Pulsar, Some(stream)) => Ok(pulsar::facts(&out.history.events, stream)),
        (SystemKind::Pulsar, None) => {
            Err(format!("seed {seed}: the run recorded no stream history"))
        }
    }
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
    let columns: Vec<(SystemKind, FaultMix)> = opts
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
                system,
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
