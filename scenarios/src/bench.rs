//! `percsim bench`: throughput numbers measured on this machine. Numbers,
//! not pass/fail: performance targets live here, never in timed tests.

use crate::campaign;
use crate::judge::{Verdict, judge};
use crate::system::{BenchRun, Measurement, SystemDef};
use std::time::Instant;

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

/// The measurements of the testbed itself, after the systems' own (a
/// list of named measurements: a new one is one more entry).
fn core_measurements(length: Length) -> Vec<Measurement> {
    let quick = length == Length::Quick;
    vec![
        Measurement {
            name: "campaign",
            simulator: false,
            run: |b| campaign_throughput(if b.quick { 100 } else { 1_000 }, 2),
        },
        Measurement {
            name: "campaign-memory",
            simulator: false,
            run: match length {
                Length::Quick => |_| campaign_memory(&[1_000]),
                Length::Default => |_| campaign_memory(&[1_000, 10_000]),
                Length::Long => |_| campaign_memory(&[1_000, 10_000, 100_000]),
            },
        },
        Measurement {
            name: "import",
            simulator: false,
            run: if quick {
                |_| crate::interop_bench::import_speed(10_000)
            } else {
                |_| crate::interop_bench::import_speed(100_000)
            },
        },
    ]
}

/// Run the benchmarks of `systems` (their [`SystemDef::bench`]
/// measurements) and the testbed's own, and print the numbers; with
/// `simulator_only`, only the simulator's (the no-op madsim RPC and the
/// systems' measurements of the simulator itself).
pub fn run(length: Length, simulator_only: bool, systems: &[&dyn SystemDef]) {
    let quick = length == Length::Quick;
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
    let (run_ms, seeds) = if quick { (5_000, 2) } else { (30_000, 3) };
    let b = BenchRun {
        quick,
        run_ms,
        seeds,
        noop_rpc_per_s: noop,
    };
    let wanted = |m: &Measurement| m.simulator || !simulator_only;
    for system in systems {
        let own: Vec<Measurement> = system.bench().into_iter().filter(wanted).collect();
        if own.is_empty() {
            continue;
        }
        println!("  {}:", system.name());
        for m in own {
            (m.run)(&b);
        }
    }
    for m in core_measurements(length).into_iter().filter(wanted) {
        (m.run)(&b);
    }
}

/// The systems `percsim bench` measures by default: every registered system
/// that has measurements of its own.
pub fn default_systems() -> Vec<&'static dyn SystemDef> {
    crate::systems::all()
        .into_iter()
        .filter(|s| !s.bench().is_empty())
        .collect()
}
