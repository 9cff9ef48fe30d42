//! Percolator's measurements for `percsim bench`: the register workload's
//! throughput (with and without the cost model and faults) against the
//! no-op madsim RPC, the oracle's timestamps and the pipeline's documents
//! and notification latency.

use crate::judge::{Verdict, verdict_of};
use crate::scenario::Scenario;
use crate::system::{BenchRun, Measurement};
use crate::systems::percolator::faults;
use crate::systems::percolator::scenario;
use crate::systems::percolator::workloads::{Pipeline, Register, WorkloadSpec};
use percsim_protocol::percolator::CellKey;
use percsim_protocol::percolator::client::Transport;
use percsim_sim::{
    BoxFuture, Client, PercolatorConfig, PercolatorCounter, Worker, Workload, WorldConfig,
};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::sync::Arc;
use std::time::Instant;

/// Percolator's measurements, in the order `percsim bench` prints them.
pub fn measurements() -> Vec<Measurement> {
    vec![
        Measurement {
            name: "register",
            simulator: true,
            run: register,
        },
        Measurement {
            name: "register-faults",
            simulator: false,
            run: |b| {
                txn_throughput("register, default fault mix", true, false, b);
            },
        },
        Measurement {
            name: "oracle",
            simulator: false,
            run: |b| oracle_throughput(b.run_ms),
        },
        Measurement {
            name: "pipeline",
            simulator: false,
            run: |b| pipeline_throughput(b.run_ms, b.seeds),
        },
        Measurement {
            name: "explore",
            simulator: false,
            run: |b| super::explore_bench::measure(if b.quick { 500 } else { 3_000 }),
        },
    ]
}

/// The register workload without faults, with the cost model off and on,
/// and how it compares with the no-op madsim RPC.
fn register(b: &BenchRun) {
    let t = txn_throughput("register, no faults, one core", false, false, b);
    txn_throughput("the same, cost model on", false, true, b);
    versus_noop(t, b.noop_rpc_per_s);
}

/// A workload that only asks the oracle for timestamps, as fast as the
/// clients' single pending RPC allows.
pub struct Timestamps;

impl Workload for Timestamps {
    fn initial_data(&self) -> Vec<(CellKey, String)> {
        Vec::new()
    }
    fn split_points(&self, _tablets: usize) -> Vec<String> {
        Vec::new()
    }
    fn worker(&self, w: Worker) -> BoxFuture<()> {
        Box::pin(async move {
            while !w.client.stopping() {
                let _ = w.client.timestamp().await;
            }
        })
    }
    fn final_check(&self, _client: Arc<Client>) -> BoxFuture<Vec<String>> {
        Box::pin(async { Vec::new() })
    }
}

/// What the oracle served in one run, from the run's counters: the
/// timestamps it handed out and the requests they came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OracleLoad {
    /// Timestamps handed out.
    pub timestamps: u64,
    /// Requests served (a request may carry a batch of timestamps).
    pub requests: u64,
}

impl OracleLoad {
    /// The oracle's load in a run's `counters` (zero for a counter absent).
    pub fn of(counters: &std::collections::BTreeMap<String, u64>) -> OracleLoad {
        let count = |c: PercolatorCounter| counters.get(c.name()).copied().unwrap_or(0);
        OracleLoad {
            timestamps: count(PercolatorCounter::OracleTimestamps),
            requests: count(PercolatorCounter::OracleRequests),
        }
    }

    /// Timestamps per request: the mean batch size (0 without requests).
    pub fn batch(&self) -> f64 {
        self.timestamps as f64 / self.requests.max(1) as f64
    }
}

/// The register scenario the throughput numbers use.
fn register_scenario(seed: u64, run_ms: u64, faults: bool, costs: bool) -> Scenario {
    let mut cluster = PercolatorConfig {
        tablet_servers: 4,
        tablets: 8,
        clients: 8,
        workers_per_client: 4,
        ..PercolatorConfig::default()
    };
    let mut world = WorldConfig {
        run_ms,
        ..WorldConfig::default()
    };
    cluster.costs.enabled = costs;
    if faults {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for class in crate::faultmix::CLASSES {
            let _ = faults::enable(&mut world, &mut cluster, class, 0.3, &mut rng);
        }
    }
    let register = Register {
        keys: 256,
        ..Register::default()
    };
    scenario(seed, world, cluster, WorkloadSpec::Register(register))
}

/// What one register throughput measurement found.
#[derive(Debug, Clone, Copy)]
struct Throughput {
    /// Committed transactions per wall second of simulation.
    commits_per_s: f64,
    /// RPCs the transport carried per committed transaction (messages / 2;
    /// aborted transactions' RPCs and the cluster's own, such as heartbeats,
    /// included).
    rpcs_per_commit: f64,
}

/// Simulated committed transactions per wall second on one core, the RPCs
/// made per commit, and the checker's time on the histories produced.
fn txn_throughput(label: &str, faults: bool, costs: bool, b: &BenchRun) -> Throughput {
    let (run_ms, seeds) = (b.run_ms, b.seeds);
    let (mut committed, mut wall, mut check, mut txns, mut messages) =
        (0u64, 0f64, 0f64, 0usize, 0u64);
    let failed = Throughput {
        commits_per_s: f64::NAN,
        rpcs_per_commit: f64::NAN,
    };
    for seed in 0..seeds {
        let s = register_scenario(seed, run_ms, faults, costs);
        let started = Instant::now();
        let run = s.run();
        messages += run.as_ref().map(|o| o.summary.messages).unwrap_or(0);
        let judged = verdict_of(&s, run, started);
        let Some(history) = judged.transactions() else {
            let why = judged.result.explanation.unwrap_or_default();
            println!("  {label}: seed {seed} failed to run: {why}");
            return failed;
        };
        wall += judged.timing.simulate.as_secs_f64();
        check += judged.timing.check.as_secs_f64();
        committed += judged.result.committed;
        txns += history.transactions.len();
        if judged.result.verdict != Verdict::Pass {
            println!("  {label}: seed {seed} FAILED: {:?}", judged.result.verdict);
        }
    }
    let t = Throughput {
        commits_per_s: committed as f64 / wall,
        rpcs_per_commit: messages as f64 / 2.0 / committed.max(1) as f64,
    };
    println!(
        "  {label:<34} {:>9.0} committed txns/wall s  ({committed} commits, {:.2} s wall, {seeds} seeds x {} simulated s)",
        t.commits_per_s,
        wall,
        run_ms / 1000
    );
    println!(
        "  {:<34} {:>9.1} RPCs per commit  ({} RPCs: the transport's messages / 2; aborted transactions' and heartbeats included)",
        "",
        t.rpcs_per_commit,
        messages / 2
    );
    println!(
        "  {:<34} {:>9.0} txns/s checked  ({txns} transactions in {:.3} s)",
        "checker on those histories",
        txns as f64 / check.max(1e-9),
        check
    );
    t
}

/// Print how the register run compares with the no-op madsim RPC measured
/// in the same run: the ratio, and the rate the run would have if each of
/// its RPCs cost one no-op madsim RPC. That was the ceiling while every
/// message went through madsim's `Endpoint`; the world's transport
/// (`percsim_sim::world::port`) bypasses it, so the run can exceed it.
fn versus_noop(t: Throughput, noop: f64) {
    println!(
        "  {:<34} {:>9.3} committed txns per no-op RPC time  ({:.1} no-op RPCs' time per commit)",
        "register vs the no-op madsim RPC",
        t.commits_per_s / noop,
        noop / t.commits_per_s
    );
    let at_madsim_cost = noop / t.rpcs_per_commit;
    println!(
        "  {:<34} {:>9.0} commits/wall s  (no-op madsim RPC/s / {:.1} RPCs per commit: the old ceiling, madsim's RPCs alone; the run reaches {:.0}% of it)",
        "at one madsim RPC per RPC",
        at_madsim_cost,
        t.rpcs_per_commit,
        100.0 * t.commits_per_s / at_madsim_cost
    );
}

/// Timestamps the oracle serves per wall second (and per simulated second).
fn oracle_throughput(run_ms: u64) {
    let cluster = PercolatorConfig {
        clients: 16,
        workers_per_client: 8,
        ..PercolatorConfig::default()
    };
    let world = WorldConfig {
        run_ms,
        ..WorldConfig::default()
    };
    let t = Instant::now();
    let timestamps = Arc::new(Timestamps);
    let out = match percsim_sim::run(&world, &cluster, 1, timestamps, serde_json::Value::Null) {
        Ok(o) => o,
        Err(e) => {
            println!("  oracle: {e}");
            return;
        }
    };
    let wall = t.elapsed().as_secs_f64();
    let load = OracleLoad::of(&out.summary.counters);
    let (served, rpcs) = (load.timestamps, load.requests);
    println!(
        "  {:<34} {:>9.0} timestamps/wall s  ({served} timestamps in {rpcs} RPCs, {:.1} per batch; {:.0} per simulated s)",
        "oracle (16 clients x 8 threads)",
        served as f64 / wall,
        load.batch(),
        served as f64 / (out.summary.sim_ns as f64 / 1e9)
    );
}

/// Documents processed per simulated and wall second by the pipeline, and
/// the notification latency: from a committed write of `raw` to the commit
/// of the first `parse` run that saw it, in simulated time.
fn pipeline_throughput(run_ms: u64, seeds: u64) {
    let (mut parsed, mut wall, mut sim_ns) = (0u64, 0f64, 0u64);
    let mut latencies_ms: Vec<f64> = Vec::new();
    for seed in 0..seeds {
        let cluster = PercolatorConfig {
            clients: 4,
            workers_per_client: 1,
            scanners_per_client: 2,
            ..PercolatorConfig::default()
        };
        let world = WorldConfig {
            run_ms,
            ..WorldConfig::default()
        };
        let p = Pipeline {
            documents: 32,
            contents: 8,
            load_interval_ms: 50,
            audit: false,
        };
        let s = scenario(seed, world, cluster, WorkloadSpec::Pipeline(p));
        let t = Instant::now();
        let Ok(out) = s.run() else {
            println!("  pipeline: seed {seed} failed to run");
            return;
        };
        wall += t.elapsed().as_secs_f64();
        sim_ns += out.summary.sim_ns;
        let Some(history) = out.transactions() else {
            println!("  pipeline: seed {seed} wrote no transaction history");
            return;
        };
        parsed += notification_latencies(history, &mut latencies_ms);
    }
    latencies_ms.sort_by(|a, b| a.total_cmp(b));
    let q = |f: f64| {
        latencies_ms
            .get(((latencies_ms.len() as f64 - 1.0) * f) as usize)
            .copied()
            .unwrap_or(0.0)
    };
    println!(
        "  {:<34} {:>9.0} documents parsed/wall s  ({parsed} parse runs; {:.1} per simulated s)",
        "pipeline (4 loaders, 8 scanners)",
        parsed as f64 / wall.max(1e-9),
        parsed as f64 / (sim_ns as f64 / 1e9)
    );
    println!(
        "  {:<34} p50 {:.0} ms, p90 {:.0} ms, p99 {:.0} ms, max {:.0} ms simulated ({} writes)",
        "notification latency (write->parse)",
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0),
        latencies_ms.len()
    );
}

/// Add to `latencies_ms` the time from each committed write of `raw` to
/// the completion of the first committed `parse` run that saw it;
/// returns how many parse runs committed.
fn notification_latencies(h: &percsim_checker::History, latencies_ms: &mut Vec<f64>) -> u64 {
    use percsim_checker::{Op, Outcome};
    let mut parsed = 0;
    // Committed parse runs by document: (start_ts, completion time).
    let mut runs: std::collections::BTreeMap<&str, Vec<(u64, u64)>> = Default::default();
    for t in &h.transactions {
        if let (Some(o), Outcome::Committed, Some(done)) = (&t.observer, t.outcome, t.complete_ns)
            && o.name == "parse"
        {
            runs.entry(o.row.as_str())
                .or_default()
                .push((t.start_ts, done));
            parsed += 1;
        }
    }
    for t in &h.transactions {
        let (Outcome::Committed, Some(commit_ts), Some(done)) =
            (t.outcome, t.commit_ts, t.complete_ns)
        else {
            continue;
        };
        for op in &t.ops {
            if let Op::Write { row, col, .. } = op {
                if col != "raw" {
                    continue;
                }
                let first = runs
                    .get(row.as_str())
                    .into_iter()
                    .flatten()
                    .filter(|(start, _)| *start > commit_ts)
                    .map(|(_, end)| *end)
                    .min();
                if let Some(end) = first {
                    latencies_ms.push(end.saturating_sub(done) as f64 / 1e6);
                }
            }
        }
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oracle_load_reads_its_two_counters() {
        let mut counters = std::collections::BTreeMap::new();
        counters.insert(PercolatorCounter::OracleTimestamps.name().to_string(), 30);
        counters.insert(PercolatorCounter::OracleRequests.name().to_string(), 4);
        counters.insert("txn.committed".to_string(), 99);
        let load = OracleLoad::of(&counters);
        assert_eq!((load.timestamps, load.requests), (30, 4));
        assert_eq!(load.batch(), 7.5);
        let none = OracleLoad::of(&Default::default());
        assert_eq!((none.timestamps, none.requests, none.batch()), (0, 0, 0.0));
    }
}
