//! `percsim bench`: throughput numbers measured on this machine. Numbers,
//! not pass/fail: performance targets live here, never in timed tests.

use crate::campaign;
use crate::faultmix;
use crate::judge::{Verdict, judge, verdict_of};
use crate::scenario::Scenario;
use crate::systems::percolator;
use crate::systems::percolator::workloads::{Register, WorkloadSpec};
use percsim_protocol::percolator::CellKey;
use percsim_protocol::percolator::client::Transport;
use percsim_sim::{
    BoxFuture, Client, PercolatorConfig, PercolatorCounter, Worker, Workload, WorldConfig,
};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::sync::Arc;
use std::time::Instant;

/// A workload that only asks the oracle for timestamps, as fast as the
/// clients' single pending RPC allows.
pub(crate) struct Timestamps;

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
        for class in faultmix::CLASSES {
            let _ = percolator::faults::enable(&mut world, &mut cluster, class, 0.3, &mut rng);
        }
    }
    let register = Register {
        keys: 256,
        ..Register::default()
    };
    percolator::scenario(seed, world, cluster, WorkloadSpec::Register(register))
}

/// A request that does nothing, for the no-op RPC baseline.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Noop;

impl madsim::net::rpc::Request for Noop {
    type Response = ();
    const ID: u64 = 0x6e6f_6f70;
}

/// No-op madsim RPCs per wall second, one at a time between two simulated
/// nodes: the floor under any design with one madsim RPC per protocol
/// message, measured in the same run so that ratios mean something on any
/// machine.
fn noop_rpc_rate(calls: u64) -> f64 {
    use madsim::net::Endpoint;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};
    let server = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 9, 0, 1)), 1);
    let client_ip = IpAddr::V4(Ipv4Addr::new(10, 9, 0, 2));
    let run = move || {
        let rt = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
        let t = Instant::now();
        rt.block_on(async move {
            let h = madsim::runtime::Handle::current();
            h.create_node()
                .name("noop-server")
                .ip(server.ip())
                .init(move || async move {
                    let Ok(ep) = Endpoint::bind(server).await else {
                        return;
                    };
                    ep.add_rpc_handler(|_: Noop| async {});
                    futures::future::pending::<()>().await;
                })
                .build();
            let client = h.create_node().name("noop-client").ip(client_ip).build();
            let calls = client.spawn(async move {
                madsim::time::sleep(std::time::Duration::from_millis(1)).await;
                let Ok(ep) = Endpoint::bind(SocketAddr::new(client_ip, 1)).await else {
                    return 0;
                };
                let mut done = 0;
                for i in 0..calls {
                    if ep.call(server, Noop).await.is_ok() {
                        done += 1;
                    }
                    if i % 10_000 == 0 {
                        // madsim 0.2.34 keeps a task-list entry per RPC until asked.
                        let _ = madsim::runtime::Handle::current().metrics().num_tasks();
                    }
                }
                done
            });
            calls.await.unwrap_or(0)
        });
        calls as f64 / t.elapsed().as_secs_f64()
    };
    // A fresh thread, as for every simulated run.
    std::thread::spawn(run).join().unwrap_or(f64::NAN)
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
fn txn_throughput(label: &str, faults: bool, costs: bool, run_ms: u64, seeds: u64) -> Throughput {
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
    let c = &out.summary.counters;
    let served = c
        .get(PercolatorCounter::OracleTimestamps.name())
        .copied()
        .unwrap_or(0);
    let rpcs = c
        .get(PercolatorCounter::OracleRequests.name())
        .copied()
        .unwrap_or(0);
    println!(
        "  {:<34} {:>9.0} timestamps/wall s  ({served} timestamps in {rpcs} RPCs, {:.1} per batch; {:.0} per simulated s)",
        "oracle (16 clients x 8 threads)",
        served as f64 / wall,
        served as f64 / rpcs.max(1) as f64,
        served as f64 / (out.summary.sim_ns as f64 / 1e9)
    );
}

/// Seeds per minute of the default campaign mix with `jobs` threads.
fn campaign_throughput(seeds: u64, jobs: usize) {
    let t = Instant::now();
    let failures = std::sync::atomic::AtomicU64::new(0);
    crate::pool::for_each(
        jobs,
        seeds,
        |_| true,
        |seed| judge(&campaign::generate(seed, &campaign::Mix::default()), false).result,
        |_, r| {
            if r.verdict != Verdict::Pass {
                failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        },
    );
    let wall = t.elapsed().as_secs_f64();
    println!(
        "  {:<34} {:>9.0} seeds/min  ({seeds} seeds in {wall:.1} s, {} failures)",
        format!("campaign, default mix, --jobs {jobs}"),
        seeds as f64 * 60.0 / wall,
        failures.load(std::sync::atomic::Ordering::Relaxed)
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
        let p = crate::systems::percolator::workloads::Pipeline {
            documents: 32,
            contents: 8,
            load_interval_ms: 50,
            audit: false,
        };
        let s = percolator::scenario(seed, world, cluster, WorkloadSpec::Pipeline(p));
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

/// The process's resident and peak resident memory in MB, from
/// /proc/self/status (None where there is no such file).
pub fn memory_mb() -> Option<(f64, f64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<f64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kb: f64 = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kb / 1024.0)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// Resident memory of one process running the default campaign (2 jobs,
/// JSON lines streamed to a discarding writer) after each seed count in
/// `checkpoints`: a campaign must run in flat memory.
fn campaign_memory(checkpoints: &[u64]) {
    let mut done = 0;
    let t = Instant::now();
    for &upto in checkpoints {
        let opts = crate::fuzz::Options {
            start: 100_000 + done,
            end: 100_000 + upto,
            progress: false,
            out: std::env::temp_dir().join("percsim-bench-failures"),
            ..crate::fuzz::Options::default()
        };
        let mut sink = std::io::sink();
        let failures = match crate::fuzz::run(&opts, Some(&mut sink)) {
            Ok(s) => s.failures.len(),
            Err(e) => {
                println!("  campaign memory: {e}");
                return;
            }
        };
        done = upto;
        let (rss, peak) = memory_mb().unwrap_or((f64::NAN, f64::NAN));
        println!(
            "  {:<34} {rss:>9.1} MB resident, {peak:.1} MB peak  (seeds 100000..{}, {failures} failures, {:.0} s so far)",
            format!("campaign memory after {upto} seeds"),
            100_000 + upto,
            t.elapsed().as_secs_f64()
        );
    }
}

/// How long `percsim bench` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// Short runs (seconds).
    Quick,
    /// The default (a few minutes).
    Default,
    /// The default plus the 100,000-seed campaign memory point (about half an hour on 2 cores).
    Long,
}

/// Run every benchmark and print the numbers; with `simulator_only`, only
/// the simulator's (the no-op madsim RPC, the register workload, the rate
/// at one madsim RPC per RPC).
pub fn run(length: Length, simulator_only: bool) {
    let quick = length == Length::Quick;
    let (run_ms, seeds, campaign_seeds) = if quick {
        (5_000, 2, 100)
    } else {
        (30_000, 3, 1_000)
    };
    println!(
        "percsim bench ({} build)",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    let noop = noop_rpc_rate(if quick { 100_000 } else { 400_000 });
    println!(
        "  {:<34} {noop:>9.0} RPCs/wall s  (same run, same machine: the yardstick)",
        "no-op madsim RPC, one at a time"
    );
    let register = txn_throughput("register, no faults, one core", false, false, run_ms, seeds);
    txn_throughput("the same, cost model on", false, true, run_ms, seeds);
    versus_noop(register, noop);
    if simulator_only {
        return;
    }
    txn_throughput("register, default fault mix", true, false, run_ms, seeds);
    crate::explore_bench::measure(if quick { 200 } else { 2_000 });
    oracle_throughput(run_ms);
    pipeline_throughput(run_ms, seeds);
    campaign_throughput(campaign_seeds, 2);
    campaign_memory(match length {
        Length::Quick => &[1_000],
        Length::Default => &[1_000, 10_000],
        Length::Long => &[1_000, 10_000, 100_000],
    });
    crate::interop_bench::import_speed(if quick { 10_000 } else { 100_000 });
}
