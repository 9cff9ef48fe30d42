//! `percsim bench`: throughput numbers measured on this machine. Numbers,
//! not pass/fail: performance targets live here, never in timed tests.

use crate::campaign;
use crate::faultmix;
use crate::scenario::Scenario;
use crate::workloads::{Register, WorkloadSpec};
use percsim_protocol::CellKey;
use percsim_protocol::client::Transport;
use percsim_sim::{BoxFuture, Client, SimConfig, Worker, Workload};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::sync::Arc;
use std::time::Instant;

/// A workload that only asks the oracle for timestamps, as fast as the
/// clients' single pending RPC allows.
struct Timestamps;

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
fn register_scenario(seed: u64, run_ms: u64, faults: bool) -> Scenario {
    let mut cluster = SimConfig {
        tablet_servers: 4,
        tablets: 8,
        clients: 8,
        workers_per_client: 4,
        run_ms,
        ..SimConfig::default()
    };
    if faults {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for class in faultmix::CLASSES {
            let _ = faultmix::enable(&mut cluster, class, 0.3, &mut rng);
        }
    }
    let register = Register {
        keys: 256,
        ..Register::default()
    };
    Scenario::new(seed, cluster, WorkloadSpec::Register(register))
}

/// Simulated committed transactions per wall second on one core, and the
/// checker's time on the histories produced.
fn txn_throughput(label: &str, faults: bool, run_ms: u64, seeds: u64) {
    let (mut committed, mut wall, mut check, mut txns) = (0u64, 0f64, 0f64, 0usize);
    for seed in 0..seeds {
        let s = register_scenario(seed, run_ms, faults);
        let t = Instant::now();
        let out = match s.run() {
            Ok(o) => o,
            Err(e) => {
                println!("  {label}: seed {seed} failed to run: {e}");
                return;
            }
        };
        wall += t.elapsed().as_secs_f64();
        committed += out.summary.committed;
        txns += out.history.transactions.len();
        let t = Instant::now();
        let report = percsim_checker::check(&out.history);
        check += t.elapsed().as_secs_f64();
        if !report.passed() {
            println!("  {label}: seed {seed} FAILED the checker");
        }
    }
    println!(
        "  {label:<34} {:>9.0} committed txns/wall s  ({committed} commits, {:.2} s wall, {seeds} seeds x {} simulated s)",
        committed as f64 / wall,
        wall,
        run_ms / 1000
    );
    println!(
        "  {:<34} {:>9.0} txns/s checked  ({txns} transactions in {:.3} s)",
        "checker on those histories",
        txns as f64 / check.max(1e-9),
        check
    );
}

/// Timestamps the oracle serves per wall second (and per simulated second).
fn oracle_throughput(run_ms: u64) {
    let cluster = SimConfig {
        clients: 16,
        workers_per_client: 8,
        run_ms,
        ..SimConfig::default()
    };
    let t = Instant::now();
    let out = match percsim_sim::run(&cluster, 1, Arc::new(Timestamps), serde_json::Value::Null) {
        Ok(o) => o,
        Err(e) => {
            println!("  oracle: {e}");
            return;
        }
    };
    let wall = t.elapsed().as_secs_f64();
    let c = &out.summary.counters;
    let served = c.get("oracle.timestamps").copied().unwrap_or(0);
    let rpcs = c.get("oracle.requests").copied().unwrap_or(0);
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
    let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let failures = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let threads: Vec<_> = (0..jobs)
        .map(|_| {
            let (next, failures) = (next.clone(), failures.clone());
            std::thread::spawn(move || {
                loop {
                    let seed = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if seed >= seeds {
                        return;
                    }
                    let r = campaign::run_one(&campaign::generate(seed, &campaign::Mix::default()));
                    if r.result.verdict != campaign::Verdict::Pass {
                        failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for th in threads {
        let _ = th.join();
    }
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
    use percsim_checker::{Op, Outcome};
    let (mut parsed, mut wall, mut sim_ns) = (0u64, 0f64, 0u64);
    let mut latencies_ms: Vec<f64> = Vec::new();
    for seed in 0..seeds {
        let cluster = SimConfig {
            clients: 4,
            workers_per_client: 1,
            scanners_per_client: 2,
            run_ms,
            ..SimConfig::default()
        };
        let p = crate::workloads::Pipeline {
            documents: 32,
            contents: 8,
            load_interval_ms: 50,
        };
        let s = Scenario::new(seed, cluster, WorkloadSpec::Pipeline(p));
        let t = Instant::now();
        let Ok(out) = s.run() else {
            println!("  pipeline: seed {seed} failed to run");
            return;
        };
        wall += t.elapsed().as_secs_f64();
        sim_ns += out.summary.sim_ns;
        let h = &out.history;
        // Committed parse runs by document: (start_ts, completion time).
        let mut runs: std::collections::BTreeMap<&str, Vec<(u64, u64)>> = Default::default();
        for t in &h.transactions {
            if let (Some(o), Outcome::Committed, Some(done)) =
                (&t.observer, t.outcome, t.complete_ns)
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

/// Run every benchmark and print the numbers. `quick` shortens them.
pub fn run(quick: bool) {
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
    txn_throughput("register, no faults, one core", false, run_ms, seeds);
    txn_throughput("register, default fault mix", true, run_ms, seeds);
    oracle_throughput(run_ms);
    pipeline_throughput(run_ms, seeds);
    campaign_throughput(campaign_seeds, 2);
    crate::interop_bench::import_speed(if quick { 10_000 } else { 100_000 });
}
