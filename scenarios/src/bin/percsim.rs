//! The percsim command line: run, replay and check scenarios, and fuzz.
//!
//! Exit codes: 0 pass, 1 safety violation, 2 bad input, 3 liveness failure,
//! 4 the simulation itself crashed.

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use percsim_scenarios::Scenario;
use percsim_scenarios::campaign::{self, Judged, SeedResult, Verdict};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Seeds in a campaign run with no arguments (about a minute on 2 cores).
const DEFAULT_SEEDS: u64 = 2_000;

#[derive(Parser)]
#[command(
    name = "percsim",
    version,
    about = "Deterministic simulation testbed for Percolator"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario file, check its history and print a summary.
    Run {
        /// The scenario (percsim-scenario/1 JSON).
        scenario: PathBuf,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Write the history here.
        #[arg(long)]
        history: Option<PathBuf>,
    },
    /// Re-run a failure capsule saved by `fuzz` and show its verdict.
    Replay {
        /// The capsule (JSON).
        capsule: PathBuf,
    },
    /// Check a history file (percsim-history/1).
    Check {
        /// The history.
        history: PathBuf,
        /// Print a machine-readable report.
        #[arg(long)]
        json: bool,
    },
    /// Run a fuzzing campaign: one generated scenario per seed.
    Fuzz {
        /// Number of seeds (from 0, or from the start of --seeds).
        #[arg(long)]
        count: Option<u64>,
        /// Seed range A..B (B excluded).
        #[arg(long, value_parser = parse_range)]
        seeds: Option<(u64, u64)>,
        /// Parallel OS threads, each running one seed at a time.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// Stop starting new seeds after this many wall seconds.
        #[arg(long)]
        time_limit: Option<u64>,
        /// Where failure capsules go.
        #[arg(long, default_value = "failures")]
        out: PathBuf,
        /// Also write one JSON line per seed here.
        #[arg(long)]
        jsonl: Option<PathBuf>,
    },
}

fn parse_range(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once("..").ok_or("expected A..B")?;
    let a: u64 = a.trim().parse().map_err(|_| format!("bad start {a:?}"))?;
    let b: u64 = b.trim().parse().map_err(|_| format!("bad end {b:?}"))?;
    if b <= a {
        return Err(format!("empty range {a}..{b}"));
    }
    Ok((a, b))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Run {
            scenario,
            seed,
            history,
        } => cmd_run(&scenario, seed, history.as_deref()),
        Command::Replay { capsule } => cmd_replay(&capsule),
        Command::Check { history, json } => {
            percsim_checker::run_check_file(&history, json, &mut std::io::stdout())
        }
        Command::Fuzz {
            count,
            seeds,
            jobs,
            time_limit,
            out,
            jsonl,
        } => {
            let start = seeds.map(|s| s.0).unwrap_or(0);
            let end = match (seeds, count) {
                (_, Some(0)) => {
                    eprintln!("error: --count must be at least 1");
                    return ExitCode::from(2);
                }
                (_, Some(n)) => start + n,
                (Some((_, b)), None) => b,
                (None, None) => start + DEFAULT_SEEDS,
            };
            cmd_fuzz(start, end, jobs.max(1), time_limit, &out, jsonl.as_deref())
        }
    };
    ExitCode::from(code as u8)
}

fn print_summary(r: &SeedResult) {
    println!("seed          {}", r.seed);
    println!("workload      {}", r.workload);
    println!(
        "transactions  {} committed, {} aborted, {} unknown",
        r.committed, r.aborted, r.unknown
    );
    println!("simulated     {} ms (wall {} ms)", r.sim_ms, r.wall_ms);
    let pick = |prefix: &str| -> String {
        r.counters
            .iter()
            .filter(|(k, _)| k.starts_with(prefix) && k.matches('.').count() == 1)
            .map(|(k, v)| format!("{}={v}", &k[prefix.len()..]))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!("cleanups      {}", pick("cleanup."));
    println!("aborts        {}", pick("abort."));
    println!("events        {}", pick("event."));
    println!("verdict       {:?}", r.verdict);
    if let Some(e) = &r.explanation {
        println!("\n{e}");
    }
}

fn cmd_run(path: &Path, seed: Option<u64>, history: Option<&Path>) -> i32 {
    let mut scenario = match Scenario::load(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    if let Some(seed) = seed {
        scenario.seed = seed;
    }
    run_and_report(&scenario, history)
}

fn run_and_report(scenario: &Scenario, history: Option<&Path>) -> i32 {
    let judged = campaign::run_one(scenario);
    if let (Some(path), Some(h)) = (history, &judged.history) {
        let written = serde_json::to_string(h)
            .map_err(|e| e.to_string())
            .and_then(|s| std::fs::write(path, s).map_err(|e| e.to_string()));
        if let Err(e) = written {
            eprintln!("error: cannot write history to {}: {e}", path.display());
            return 2;
        }
    }
    print_summary(&judged.result);
    judged.result.verdict.exit_code()
}

fn cmd_replay(path: &Path) -> i32 {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", path.display());
            return 2;
        }
    };
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {} is not JSON: {e}", path.display());
            return 2;
        }
    };
    let Some(scenario) = value.get("scenario") else {
        eprintln!("error: {} has no \"scenario\" field", path.display());
        return 2;
    };
    let scenario = match Scenario::parse(&scenario.to_string()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: capsule scenario: {e}");
            return 2;
        }
    };
    if let Some(v) = value.get("verdict") {
        println!("recorded verdict: {v}");
    }
    run_and_report(&scenario, None)
}

/// Save a failing seed: scenario, version, history, explanation, replay command.
fn save_capsule(out: &Path, scenario: &Scenario, judged: &Judged) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(out)?;
    let path = out.join(format!("seed-{}.json", scenario.seed));
    let capsule = serde_json::json!({
        "format": "percsim-capsule/1",
        "percsim_version": env!("CARGO_PKG_VERSION"),
        "verdict": judged.result.verdict,
        "violated_rules": judged.result.violated_rules,
        "explanation": judged.result.explanation,
        "replay": format!("percsim replay {}", path.display()),
        "scenario": scenario,
        "history": judged.history,
    });
    std::fs::write(&path, serde_json::to_string_pretty(&capsule)?)?;
    Ok(path)
}

fn cmd_fuzz(
    start: u64,
    end: u64,
    jobs: usize,
    time_limit: Option<u64>,
    out: &Path,
    jsonl: Option<&Path>,
) -> i32 {
    let total = end - start;
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} seeds {per_sec} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let started = std::time::Instant::now();
    let next = Arc::new(AtomicU64::new(start));
    let failures = Arc::new(AtomicU64::new(0));
    let results: Arc<Mutex<Vec<SeedResult>>> = Arc::default();
    let out = out.to_path_buf();
    let threads: Vec<_> = (0..jobs)
        .map(|_| {
            let (next, failures, results, bar, out) = (
                next.clone(),
                failures.clone(),
                results.clone(),
                bar.clone(),
                out.clone(),
            );
            std::thread::spawn(move || {
                loop {
                    if time_limit.is_some_and(|t| started.elapsed().as_secs() >= t) {
                        return;
                    }
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= end {
                        return;
                    }
                    let scenario = campaign::generate(seed, &campaign::Mix::default());
                    let judged = campaign::run_one(&scenario);
                    if judged.result.verdict != Verdict::Pass {
                        let n = failures.fetch_add(1, Ordering::Relaxed) + 1;
                        bar.set_message(format!("{n} failures"));
                        match save_capsule(&out, &scenario, &judged) {
                            Ok(p) => bar.println(format!(
                                "seed {seed}: {:?} ({}) -> percsim replay {}",
                                judged.result.verdict,
                                judged.result.violated_rules.join(", "),
                                p.display()
                            )),
                            Err(e) => bar.println(format!("seed {seed}: cannot save capsule: {e}")),
                        }
                    }
                    results
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(judged.result);
                    bar.inc(1);
                }
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
    bar.finish();
    let mut results = std::mem::take(&mut *results.lock().unwrap_or_else(|e| e.into_inner()));
    results.sort_by_key(|r| r.seed);
    if let Some(path) = jsonl {
        let lines: String = results
            .iter()
            .filter_map(|r| serde_json::to_string(r).ok())
            .map(|l| l + "\n")
            .collect();
        if let Err(e) = std::fs::write(path, lines) {
            eprintln!("error: cannot write {}: {e}", path.display());
        }
    }
    let worst = print_campaign(&results, started.elapsed());
    worst.exit_code()
}

/// Print the campaign's summary table and coverage; returns the worst verdict.
fn print_campaign(results: &[SeedResult], wall: std::time::Duration) -> Verdict {
    let mut counters: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_verdict: BTreeMap<Verdict, u64> = BTreeMap::new();
    let mut rules: BTreeMap<String, u64> = BTreeMap::new();
    let (mut committed, mut aborted, mut unknown, mut sim_ms) = (0, 0, 0, 0);
    for r in results {
        for (k, v) in &r.counters {
            *counters.entry(k.clone()).or_default() += v;
        }
        *by_verdict.entry(r.verdict).or_default() += 1;
        for rule in &r.violated_rules {
            *rules.entry(rule.clone()).or_default() += 1;
        }
        committed += r.committed;
        aborted += r.aborted;
        unknown += r.unknown;
        sim_ms += r.sim_ms;
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "\n== campaign ==");
    let _ = writeln!(
        out,
        "seeds             {} in {:.1} s ({:.0} seeds/min)",
        results.len(),
        wall.as_secs_f64(),
        results.len() as f64 * 60.0 / wall.as_secs_f64().max(1e-9)
    );
    let _ = writeln!(
        out,
        "transactions      {committed} committed, {aborted} aborted, {unknown} unknown"
    );
    let _ = writeln!(out, "simulated time    {:.1} s", sim_ms as f64 / 1000.0);
    for (title, prefix) in [
        ("faults", "event."),
        ("cleanups", "cleanup."),
        ("aborts", "abort."),
    ] {
        let _ = writeln!(out, "{title}:");
        for (k, v) in counters.iter().filter(|(k, _)| k.starts_with(prefix)) {
            let _ = writeln!(out, "  {:<40} {v}", &k[prefix.len()..]);
        }
    }
    let _ = writeln!(out, "violations by rule:");
    for (k, v) in &rules {
        let _ = writeln!(out, "  {k:<40} {v}");
    }
    let _ = writeln!(out, "verdicts:");
    for (k, v) in &by_verdict {
        let _ = writeln!(out, "  {:<40} {v}", format!("{k:?}"));
    }
    let _ = writeln!(out, "coverage (sometimes):");
    let expected = [
        ("roll forward", "cleanup.roll_forward"),
        ("roll back", "cleanup.roll_back"),
        (
            "roll back before the prewrite arrived",
            "cleanup.roll_back_before_prewrite",
        ),
        (
            "cleanup of a dead owner's lock",
            "cleanup.roll_back.token_gone",
        ),
        ("cleanup of a stale lock", "cleanup.roll_back.stale"),
        ("client killed at a protocol step", "event.crash_at_step"),
        ("client restarted", "event.restart"),
        ("read waited on a lock", "client.lock_waits"),
        ("write conflict", "abort.write_conflict"),
        ("unknown outcome", "txn.unknown"),
    ];
    for (name, key) in expected {
        let n = counters.get(key).copied().unwrap_or(0);
        let flag = if n == 0 { "  <-- never happened" } else { "" };
        let _ = writeln!(out, "  {name:<40} {n}{flag}");
    }
    by_verdict
        .keys()
        .copied()
        .filter(|v| *v != Verdict::Pass)
        .min_by_key(|v| match v {
            Verdict::Safety => 0,
            Verdict::Crash => 1,
            Verdict::Liveness => 2,
            Verdict::Pass => 3,
        })
        .unwrap_or(Verdict::Pass)
}
