//! `percsim compare --scale-out`: each system's TPC-E-lite under the CPU
//! cost model as its data servers and its customers grow together, one
//! row per (load, system, servers): what it committed, the cores its
//! central component (Percolator's timestamp oracle, Omid's TSO) and its
//! data servers used, latency and aborts. Every number is read from the
//! run's history and its CPU counters by this system-neutral code; each
//! system only builds its scenario ([`SystemDef::scale_out`]). See
//! docs/compare.md for every column's definition.

use super::scale_job::{ScaleJob, ScalePoint};
use crate::system::SystemDef;
use percsim_checker::{History, Outcome};
use percsim_sim::RunOutput;
use serde::Serialize;
use std::sync::Mutex;

/// A load of the scale-out table: customers and workers per server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaleLoad {
    /// What it is.
    pub describe: &'static str,
    /// Customers per server.
    pub customers_per_server: usize,
    /// Trading loops per server.
    pub workers_per_server: usize,
    /// Simulated ms of each run's workload phase.
    pub run_ms: u64,
}

/// The table's two loads: the Percolator paper's Figure 9 load per server,
/// and ten times it, where the central TSO's core runs out before 64
/// servers (docs/compare.md).
pub const LOADS: [ScaleLoad; 2] = [
    ScaleLoad {
        describe: "Figure 9's load (TPC-E-lite as published): 50,000 customers per server",
        customers_per_server: 50_000,
        workers_per_server: 128,
        run_ms: 4_000,
    },
    ScaleLoad {
        describe: "ten times that load: 500,000 customers per server",
        customers_per_server: 500_000,
        workers_per_server: 1_280,
        run_ms: 2_000,
    },
];

/// The table's server counts.
pub const SERVERS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// One measured row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScaleRow {
    /// The system.
    pub system: &'static str,
    /// Where it ran.
    pub point: ScalePoint,
    /// Its central component's name.
    pub central: &'static str,
    /// Committed transactions completed in the workload phase, per simulated s.
    pub txns_per_s: f64,
    /// The central component's busy CPU time over the workload phase.
    pub central_cores: f64,
    /// The data servers' busy CPU time (summed) over the workload phase.
    pub server_cores: f64,
    /// Mean begin-to-outcome latency of those commits, ms.
    pub mean_ms: f64,
    /// Their 99th percentile, ms.
    pub p99_ms: f64,
    /// Aborted over all transactions begun in the workload phase.
    pub abort_rate: f64,
    /// The workload's own invariants that failed (none expected).
    pub violations: Vec<String>,
}

/// Run `system` at `point` and measure it; `None` if it takes no part.
pub fn measure(system: &dyn SystemDef, point: ScalePoint) -> Option<Result<ScaleRow, String>> {
    let job = system.scale_out(&point)?;
    Some(measure_job(system.name(), &job, point))
}

/// Run `job` (of `system`, at `point`) and measure it.
pub fn measure_job(
    system: &'static str,
    job: &ScaleJob,
    point: ScalePoint,
) -> Result<ScaleRow, String> {
    let out = job
        .scenario
        .run()
        .map_err(|e| format!("{system} at {} servers: {e}", point.servers))?;
    row_of(system, job, point, &out)
}

/// The row of a finished run.
fn row_of(
    system: &'static str,
    job: &ScaleJob,
    point: ScalePoint,
    out: &RunOutput,
) -> Result<ScaleRow, String> {
    let history = out
        .transactions()
        .ok_or_else(|| format!("{system}: the run recorded no transaction history"))?;
    let end_ns = point.run_ms * 1_000_000;
    let (lat, abort_rate) = latencies_ms(history, end_ns);
    let phase_us = point.run_ms as f64 * 1e3;
    let busy = |k: &str| out.summary.counters.get(k).copied().unwrap_or(0) as f64 / phase_us;
    Ok(ScaleRow {
        system,
        point,
        central: job.central,
        txns_per_s: lat.len() as f64 / (point.run_ms as f64 / 1e3),
        central_cores: busy(job.central_cpu),
        server_cores: busy(job.server_cpu),
        mean_ms: lat.iter().sum::<f64>() / lat.len().max(1) as f64,
        p99_ms: super::quantile(&lat, 0.99).unwrap_or(0.0),
        abort_rate,
        violations: out.summary.workload_violations.clone(),
    })
}

/// The sorted latencies (ms) of the committed transactions completed by
/// `end_ns`, and the aborted share of the transactions begun before it
/// (the initial load's left out).
fn latencies_ms(h: &History, end_ns: u64) -> (Vec<f64>, f64) {
    let mut lat = Vec::new();
    let (mut begun, mut aborted) = (0u64, 0u64);
    for t in h
        .transactions
        .iter()
        .filter(|t| t.client != percsim_sim::LOADER_CLIENT)
    {
        if t.invoke_ns < end_ns {
            begun += 1;
            aborted += u64::from(t.outcome == Outcome::Aborted);
        }
        if let (Outcome::Committed, Some(done)) = (t.outcome, t.complete_ns)
            && done <= end_ns
        {
            lat.push((done - t.invoke_ns) as f64 / 1e6);
        }
    }
    lat.sort_by(f64::total_cmp);
    (lat, aborted as f64 / begun.max(1) as f64)
}

/// Measure every (load, system, servers) of the table, `jobs` runs at a
/// time: the rows measured, in that order, and the errors of the runs
/// that failed.
pub fn run_table(
    systems: &[&'static dyn SystemDef],
    loads: &[ScaleLoad],
    servers: &[usize],
    jobs: usize,
) -> (Vec<ScaleRow>, Vec<String>) {
    let mut points = Vec::new();
    for load in loads {
        for &system in systems {
            for &n in servers {
                let point = ScalePoint {
                    servers: n,
                    customers_per_server: load.customers_per_server,
                    workers_per_server: load.workers_per_server,
                    run_ms: load.run_ms,
                };
                points.push((system, point));
            }
        }
    }
    let rows: Vec<Mutex<Option<Result<ScaleRow, String>>>> =
        points.iter().map(|_| Mutex::default()).collect();
    crate::pool::for_each(
        jobs,
        points.len() as u64,
        |_| true,
        |i| measure(points[i as usize].0, points[i as usize].1),
        |i, r| *rows[i as usize].lock().unwrap_or_else(|p| p.into_inner()) = r,
    );
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for r in rows {
        match r.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(Ok(row)) => out.push(row),
            Some(Err(e)) => errors.push(e),
            None => {}
        }
    }
    (out, errors)
}

/// The table as text: one block per load, a line per system and size.
pub fn render(rows: &[ScaleRow], loads: &[ScaleLoad]) -> String {
    let mut s = String::from(
        "percsim compare --scale-out: TPC-E-lite under the CPU cost model, customers and tablet servers grown together\n",
    );
    for load in loads {
        s += &format!(
            "\n{} ({} trading loops per server, {} simulated ms per run)\n",
            load.describe, load.workers_per_server, load.run_ms
        );
        s += &format!(
            "  {:<11} {:>7} {:>10} {:>11} {:<17} {:>13} {:>12} {:>8} {:>8} {:>8}\n",
            "system",
            "servers",
            "customers",
            "txns/sim s",
            "central",
            "central cores",
            "server cores",
            "mean ms",
            "p99 ms",
            "aborted"
        );
        for r in rows
            .iter()
            .filter(|r| r.point.customers_per_server == load.customers_per_server)
        {
            s += &format!(
                "  {:<11} {:>7} {:>10} {:>11.1} {:<17} {:>13.2} {:>12.2} {:>8.0} {:>8.0} {:>7.2}%\n",
                r.system,
                r.point.servers,
                r.point.customers(),
                r.txns_per_s,
                r.central,
                r.central_cores,
                r.server_cores,
                r.mean_ms,
                r.p99_ms,
                r.abort_rate * 100.0
            );
            for v in &r.violations {
                s += &format!("    invariant violated: {v}\n");
            }
        }
    }
    s
}
