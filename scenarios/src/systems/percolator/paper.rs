//! `percsim paper`: the Percolator paper's evaluation, re-run in simulated
//! time with the CPU cost model on, each result printed beside the paper's.
//!
//! - Figure 8: single-cell write transactions and random reads against raw
//!   Bigtable operations on one tablet server (paper: about 4x the cost for
//!   writes, a little more than 1x for reads);
//! - Figure 9: TPC-E-lite throughput against cores used as customers and
//!   tablet servers grow together (paper: linear from 11 to 15,000 cores;
//!   2 to 5 s mean latency);
//! - section 4.1: the indexing pipeline's delay from loading a document to
//!   clustering it, as the crawl rate grows (paper: about 2 s);
//! - section 2.3: timestamps one oracle serves as clients grow, thanks to
//!   each client's single pending RPC (paper: about 2 million per second).

use crate::compare::{ScaleJob, ScalePoint};
use crate::scenario::Scenario;
use crate::systems::percolator::bench::{OracleLoad, Timestamps};
use crate::systems::percolator::workloads::{Pipeline, Tpce, WorkloadSpec};
use percsim_checker::{History, Op, Outcome};
use percsim_protocol::percolator::CellKey;
use percsim_protocol::percolator::client::{CommitOutcome, Transaction};
use percsim_sim::{
    BoxFuture, Client, CostModel, PercolatorConfig, RunOutput, Worker, Workload, WorldConfig,
};
use rand::RngExt;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// RPC time-out of the paper's clusters: long enough that a queue at a
/// saturated server delays requests instead of failing them.
const PAPER_RPC_TIMEOUT_MS: u64 = 2_000;

/// A cluster with the cost model on, and the world it runs in.
struct Costed {
    world: WorldConfig,
    cluster: PercolatorConfig,
}

/// A cluster with the cost model on.
fn costed(tablet_servers: usize, clients: usize, workers_per_client: usize, run_ms: u64) -> Costed {
    let cluster = PercolatorConfig {
        tablet_servers,
        tablets: tablet_servers * 2,
        clients,
        workers_per_client,
        costs: CostModel {
            enabled: true,
            ..CostModel::default()
        },
        ..PercolatorConfig::default()
    };
    let world = WorldConfig {
        run_ms,
        rpc_timeout_ms: PAPER_RPC_TIMEOUT_MS,
        ..WorldConfig::default()
    };
    Costed { world, cluster }
}

impl Costed {
    /// The scenario of `workload` on it.
    fn scenario(self, workload: WorkloadSpec) -> Scenario {
        super::scenario(1, self.world, self.cluster, workload)
    }
}

/// `percsim compare --scale-out`'s run at `point`: Figure 9's cluster
/// (two clients per tablet server, the cost model on) with the point's
/// customers and trading loops (spread over the clients, at most 1,024
/// each).
pub(crate) fn scale_out(point: &ScalePoint) -> ScaleJob {
    let clients = 2 * point.servers;
    let workers = point.workers().div_ceil(clients).clamp(1, 1_024);
    let cluster = costed(point.servers, clients, workers, point.run_ms);
    let tpce = Tpce {
        customers: point.customers(),
        ..Tpce::default()
    };
    ScaleJob {
        scenario: cluster.scenario(WorkloadSpec::Tpce(tpce)),
        central: "timestamp oracle",
        central_cpu: "cpu.busy_us.oracle",
        server_cpu: "cpu.busy_us.tablet",
    }
}

/// Run `workload` on `c`, or print why it could not run.
fn run(label: &str, c: &Costed, workload: Arc<dyn Workload>) -> Option<RunOutput> {
    match percsim_sim::run(&c.world, &c.cluster, 1, workload, serde_json::Value::Null) {
        Ok(out) => Some(out),
        Err(e) => {
            println!("  {label}: {e}");
            None
        }
    }
}

/// CPU microseconds all nodes of one kind spent in the workload phase.
fn busy_us(out: &RunOutput, kind: &str) -> u64 {
    let key = format!("cpu.busy_us.{kind}");
    out.summary.counters.get(&key).copied().unwrap_or(0)
}

/// Run every experiment and print it beside the paper's figure.
pub fn run_all(quick: bool) {
    println!("percsim paper: the Percolator paper's evaluation in simulated time (cost model on)");
    let c = CostModel::default();
    println!(
        "  costs: tablet request {} us, row read {} us, cell read {} us, cell write {} us, {} cores/tablet server; oracle {} us/request on {} core",
        c.request_us,
        c.row_read_us,
        c.cell_read_us,
        c.cell_write_us,
        c.tablet_cores,
        c.oracle_request_us,
        c.oracle_cores
    );
    figure8(quick);
    figure9(quick);
    pipeline_delay(quick);
    oracle_scaling(quick);
}

/// One of Figure 8's four micro-benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Micro {
    RawWrite,
    RawRead,
    TxnWrite,
    TxnRead,
}

impl Micro {
    fn name(self) -> &'static str {
        match self {
            Micro::RawWrite => "raw Bigtable writes",
            Micro::RawRead => "raw Bigtable reads",
            Micro::TxnWrite => "Percolator single-cell write txns",
            Micro::TxnRead => "Percolator read txns",
        }
    }
}

/// Figure 8's workload: every worker repeats one operation on random keys
/// of one tablet server; `done` counts successful operations.
#[derive(Clone)]
struct MicroLoad {
    micro: Micro,
    keys: usize,
    done: Arc<AtomicU64>,
}

impl MicroLoad {
    async fn once(&self, client: &Client, row: &str, value: String) -> bool {
        match self.micro {
            Micro::RawWrite => client.raw(row, "v", Some(value)).await.is_ok(),
            Micro::RawRead => client.raw(row, "v", None).await.is_ok(),
            Micro::TxnWrite | Micro::TxnRead => {
                let Ok(mut txn) = Transaction::begin(client).await else {
                    return false;
                };
                if self.micro == Micro::TxnWrite {
                    txn.set(row, "v", value);
                } else if let Err(e) = txn.get(row, "v").await {
                    txn.abort((&e).into());
                    return false;
                }
                matches!(txn.commit().await, CommitOutcome::Committed { .. })
            }
        }
    }
}

impl Workload for MicroLoad {
    fn initial_data(&self) -> Vec<(CellKey, String)> {
        (0..self.keys)
            .map(|k| (CellKey::new(format!("k{k:06}"), "v"), "0".to_string()))
            .collect()
    }
    fn split_points(&self, _tablets: usize) -> Vec<String> {
        Vec::new()
    }
    fn worker(&self, mut w: Worker) -> BoxFuture<()> {
        let me = self.clone();
        Box::pin(async move {
            let tag = w.tag();
            let mut n = 0u64;
            while !w.client.stopping() {
                n += 1;
                let row = format!("k{:06}", w.rng.random_range(0..me.keys));
                if me.once(&w.client, &row, format!("{tag}.{n}")).await && !w.client.stopping() {
                    me.done.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    }
    fn final_check(&self, _client: Arc<Client>) -> BoxFuture<Vec<String>> {
        Box::pin(async { Vec::new() })
    }
}

/// Figure 8: one tablet server with one core, saturated by 1,024 workers.
fn figure8(quick: bool) {
    println!(
        "\nFigure 8: Percolator against raw Bigtable on one tablet server (1 core, saturated)"
    );
    println!(
        "  {:<36} {:>12} {:>14}",
        "operation", "ops/sim s", "tablet us/op"
    );
    let run_ms = if quick { 1_000 } else { 3_000 };
    let mut rate = BTreeMap::new();
    for micro in [
        Micro::RawWrite,
        Micro::TxnWrite,
        Micro::RawRead,
        Micro::TxnRead,
    ] {
        let mut cluster = costed(1, 32, 32, run_ms);
        cluster.cluster.tablets = 1;
        cluster.cluster.costs.tablet_cores = 1;
        let done = Arc::new(AtomicU64::new(0));
        let load = MicroLoad {
            micro,
            keys: 10_000,
            done: done.clone(),
        };
        let Some(out) = run(micro.name(), &cluster, Arc::new(load)) else {
            return;
        };
        let ops = done.load(Ordering::Relaxed);
        let per_s = ops as f64 / (run_ms as f64 / 1e3);
        let us_per_op = busy_us(&out, "tablet") as f64 / ops.max(1) as f64;
        println!("  {:<36} {per_s:>12.0} {us_per_op:>14.1}", micro.name());
        rate.insert(micro.name(), per_s);
    }
    let ratio = |raw: Micro, txn: Micro| rate[raw.name()] / rate[txn.name()].max(1e-9);
    println!(
        "  writes: raw/Percolator throughput {:.2}x (paper: about 4x); reads: {:.2}x (paper: somewhat more than 1x)",
        ratio(Micro::RawWrite, Micro::TxnWrite),
        ratio(Micro::RawRead, Micro::TxnRead)
    );
}

/// Committed transactions completed in the workload phase, and their
/// latencies (invocation to outcome) in simulated ms.
fn committed_latencies_ms(h: &History, run_ms: u64) -> Vec<f64> {
    let mut lat: Vec<f64> = h
        .transactions
        .iter()
        .filter(|t| t.outcome == Outcome::Committed && t.client != percsim_sim::LOADER_CLIENT)
        .filter_map(|t| t.complete_ns.map(|done| (t.invoke_ns, done)))
        .filter(|&(_, done)| done <= run_ms * 1_000_000)
        .map(|(start, done)| (done - start) as f64 / 1e6)
        .collect();
    lat.sort_by(f64::total_cmp);
    lat
}

/// The `q` quantile of sorted values (0 when empty).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted
        .get(((sorted.len() as f64 - 1.0) * q).round() as usize)
        .copied()
        .unwrap_or(0.0)
}

/// Least-squares line y = a x + b, and the worst relative deviation of a
/// point from it.
fn linear_fit(points: &[(f64, f64)]) -> (f64, f64, f64) {
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = points.iter().map(|(x, _)| (x - mx) * (x - mx)).sum();
    let sxy: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let a = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let b = my - a * mx;
    let worst = points
        .iter()
        .map(|(x, y)| ((a * x + b) - y).abs() / y.abs().max(1e-9))
        .fold(0.0, f64::max);
    (a, b, worst)
}

/// Figure 9: TPC-E-lite as customers and tablet servers grow together.
fn figure9(quick: bool) {
    println!(
        "\nFigure 9: TPC-E-lite, customers and tablet servers grown together (50,000 customers per server, one trade per customer per 500 s)"
    );
    println!(
        "  {:>7} {:>9} {:>12} {:>11} {:>9} {:>9} {:>10}",
        "servers", "customers", "txns/sim s", "cores used", "mean ms", "p99 ms", "aborted"
    );
    let sizes: &[usize] = if quick {
        &[1, 4, 16]
    } else {
        &[1, 2, 4, 8, 16, 32, 64]
    };
    let run_ms = if quick { 5_000 } else { 10_000 };
    let mut points = Vec::new();
    for &n in sizes {
        let cluster = costed(n, 2 * n, 64, run_ms);
        let tpce = Tpce {
            customers: 50_000 * n,
            ..Tpce::default()
        };
        let customers = tpce.customers;
        let scenario = cluster.scenario(WorkloadSpec::Tpce(tpce));
        let out = match scenario.run() {
            Ok(out) => out,
            Err(e) => return println!("  {n} servers: {e}"),
        };
        let Some(history) = out.transactions() else {
            return println!("  {n} servers: no transaction history");
        };
        let lat = committed_latencies_ms(history, run_ms);
        let tps = lat.len() as f64 / (run_ms as f64 / 1e3);
        let busy: u64 = ["tablet", "oracle", "liveness", "master"]
            .iter()
            .map(|k| busy_us(&out, k))
            .sum();
        let cores = busy as f64 / (run_ms as f64 * 1e3);
        let mean = lat.iter().sum::<f64>() / lat.len().max(1) as f64;
        let unavailable = out
            .summary
            .counters
            .get("abort.unavailable")
            .copied()
            .unwrap_or(0);
        println!(
            "  {n:>7} {customers:>9} {tps:>12.1} {cores:>11.2} {mean:>9.0} {:>9.0} {:>10}",
            quantile(&lat, 0.99),
            format!("{} ({unavailable} unavail.)", out.summary.aborted)
        );
        if !out.summary.workload_violations.is_empty() {
            println!(
                "    invariant violations: {:?}",
                out.summary.workload_violations
            );
        }
        points.push((cores, tps));
    }
    let (a, b, worst) = linear_fit(&points);
    let (first, last) = (points[0].1, points[points.len() - 1].1);
    println!(
        "  throughput grew {:.1}-fold over {}x the servers; fit: {a:.0} txns/s per core {b:+.1}, worst deviation from the line {:.1}% (paper: linear from 11 to 15,000 cores; mean latency 2-5 s)",
        last / first.max(1e-9),
        sizes[sizes.len() - 1] / sizes[0],
        worst * 100.0
    );
}

/// A committed observer run: (start_ts, commit_ts, completion in ns).
type ObserverRun = (u64, u64, u64);

/// Delays (simulated ms) from each committed document load to the commit
/// of the `cluster` observer run that saw it (through a `parse` run).
fn load_to_cluster_ms(h: &History) -> Vec<f64> {
    // Committed observer runs by (observer, row).
    let mut runs: BTreeMap<(&str, &str), Vec<ObserverRun>> = BTreeMap::new();
    for t in &h.transactions {
        if let (Some(o), Outcome::Committed, Some(done)) = (&t.observer, t.outcome, t.complete_ns) {
            let commit = t.commit_ts.unwrap_or(t.start_ts);
            runs.entry((o.name.as_str(), o.row.as_str()))
                .or_default()
                .push((t.start_ts, commit, done));
        }
    }
    let first_after = |name: &str, row: &str, ts: u64| {
        runs.get(&(name, row))?
            .iter()
            .filter(|r| r.0 > ts)
            .min_by_key(|r| r.0)
            .copied()
    };
    let mut delays = Vec::new();
    for t in &h.transactions {
        let (Outcome::Committed, Some(commit_ts), Some(done), None) =
            (t.outcome, t.commit_ts, t.complete_ns, &t.observer)
        else {
            continue;
        };
        for op in &t.ops {
            let Op::Write { row, col, .. } = op else {
                continue;
            };
            if col != "raw" {
                continue;
            }
            let parsed = first_after("parse", row, commit_ts);
            if let Some(clustered) = parsed.and_then(|p| first_after("cluster", row, p.1)) {
                delays.push(clustered.2.saturating_sub(done) as f64 / 1e6);
            }
        }
    }
    delays.sort_by(f64::total_cmp);
    delays
}

/// Section 4.1: load-to-clustering delay as the crawl rate grows.
fn pipeline_delay(quick: bool) {
    println!(
        "\nSection 4.1: the indexing pipeline's delay from loading a document to clustering it"
    );
    println!(
        "  {:>8} {:>16} {:>9} {:>9} {:>9}",
        "loaders", "loads/sim s", "mean ms", "p50 ms", "p99 ms"
    );
    let loaders: &[usize] = if quick { &[2, 8] } else { &[2, 8, 32] };
    let run_ms = if quick { 10_000 } else { 20_000 };
    for &n in loaders {
        let mut cluster = costed(4, n, 1, run_ms);
        cluster.cluster.scanners_per_client = 4;
        let p = Pipeline {
            documents: 64 * n,
            contents: 48 * n,
            load_interval_ms: 200,
            audit: false,
        };
        let scenario = cluster.scenario(WorkloadSpec::Pipeline(p));
        let out = match scenario.run() {
            Ok(out) => out,
            Err(e) => return println!("  {n} loaders: {e}"),
        };
        let Some(history) = out.transactions() else {
            return println!("  {n} loaders: no transaction history");
        };
        let d = load_to_cluster_ms(history);
        let mean = d.iter().sum::<f64>() / d.len().max(1) as f64;
        println!(
            "  {n:>8} {:>16.1} {mean:>9.0} {:>9.0} {:>9.0}",
            n as f64 * 1e3 / 200.0,
            quantile(&d, 0.5),
            quantile(&d, 0.99)
        );
    }
    println!("  (paper: a newly crawled document is clustered in about 2 s on average)");
}

/// Section 2.3: timestamps per simulated second from one oracle.
fn oracle_scaling(quick: bool) {
    println!("\nThe timestamp oracle: one oracle, one core, as clients (64 threads each) grow");
    println!(
        "  {:>8} {:>16} {:>12} {:>16}",
        "clients", "timestamps/sim s", "batch size", "oracle cores used"
    );
    let clients: &[usize] = if quick { &[4, 32] } else { &[4, 16, 64, 200] };
    let run_ms = 1_000;
    for &n in clients {
        let cluster = costed(1, n, 64, run_ms);
        let Some(out) = run("oracle", &cluster, Arc::new(Timestamps)) else {
            return;
        };
        let load = OracleLoad::of(&out.summary.counters);
        let sim_s = out.summary.sim_ns as f64 / 1e9;
        println!(
            "  {n:>8} {:>16.0} {:>12.1} {:>16.2}",
            load.timestamps as f64 / sim_s,
            load.batch(),
            busy_us(&out, "oracle") as f64 / (run_ms as f64 * 1e3)
        );
    }
    let c = CostModel::default();
    println!(
        "  one core at {} us a request serves {:.0} requests/s: about 2 million timestamps/s needs batches of {:.0} (paper: about 2 million per second)",
        c.oracle_request_us,
        1e6 / c.oracle_request_us as f64,
        2e6 / (1e6 / c.oracle_request_us as f64)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_fits_exactly_and_a_bent_one_does_not() {
        let (a, b, worst) = linear_fit(&[(1.0, 10.0), (2.0, 20.0), (4.0, 40.0)]);
        assert!((a - 10.0).abs() < 1e-9 && b.abs() < 1e-9 && worst < 1e-9);
        let (_, _, worst) = linear_fit(&[(1.0, 10.0), (2.0, 20.0), (4.0, 20.0)]);
        assert!(worst > 0.1, "a saturating curve deviates: {worst}");
    }

    #[test]
    fn quantiles_pick_the_nearest_rank() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&v, 0.5), 3.0);
        assert_eq!(quantile(&v, 1.0), 5.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }
}
