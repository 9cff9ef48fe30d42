//! The percsim command line: run, replay and check scenarios, fuzz, merge
//! shard results, and benchmark.
//!
//! Exit codes: 0 pass, 1 safety violation, 2 bad input, 3 liveness
//! failure, 4 the simulation itself crashed, 5 nondeterminism, 6 stuck,
//! 7 a script's own expectation failed.

use clap::{Parser, Subcommand};
use percsim_scenarios::campaign::{Mix, SeedResult};
use percsim_scenarios::fuzz::{self, Options};
use percsim_scenarios::system::{KillTable, SystemDef};
use percsim_scenarios::systems;
use percsim_scenarios::{Scenario, Shard, ShardSource};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

// Small allocations (a history's many short strings, the simulator's
// messages) cost less in time and memory than with the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Makes a write to a closed pipe end the process as it ends any other
/// command line tool (`percsim fuzz | head`), by the signal, instead of a
/// panic at the next `println!` (Rust ignores SIGPIPE by default). What a
/// campaign already wrote to its files stays there.
fn die_quietly_on_a_closed_pipe() {
    #[cfg(unix)]
    {
        use nix::sys::signal::{SigHandler, Signal, signal};
        // SAFETY: restores the default action before any other thread
        // exists; no handler of ours is replaced.
        let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
    }
}

/// Seeds in a campaign run with no arguments (about a minute on 2 cores).
const DEFAULT_SEEDS: u64 = 12_000;

#[derive(Parser)]
#[command(
    name = "percsim",
    version,
    about = "Deterministic simulation testbed for distributed transaction protocols"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Explore a scenario's schedules systematically (message order,
    /// message faults, stops at named points): depth-first within a bound
    /// of deviations, or PCT; saves the first failure as a capsule.
    Explore {
        /// The scenario (a script, at best small).
        scenario: PathBuf,
        /// Most choices that may differ from the default schedule.
        #[arg(long, default_value_t = 1)]
        bound: u32,
        /// PCT with this bug depth instead of depth-first.
        #[arg(long)]
        pct: Option<u32>,
        /// PCT runs.
        #[arg(long, default_value_t = 1000)]
        runs: u64,
        /// PCT's first seed.
        #[arg(long, default_value_t = 0)]
        pct_seed: u64,
        /// How much later a delayed message arrives (ms).
        #[arg(long, default_value_t = 20)]
        window_ms: u64,
        /// Messages that may be lost or made late per schedule.
        #[arg(long, default_value_t = 0)]
        fault_budget: u32,
        /// Crashes and pauses at named points per schedule.
        #[arg(long, default_value_t = 0)]
        stop_budget: u32,
        /// How long a stopped node stays down or frozen (ms).
        #[arg(long, default_value_t = 2000)]
        stop_ms: u64,
        /// Do not skip states already seen.
        #[arg(long)]
        no_prune: bool,
        /// Stop after this many schedules.
        #[arg(long, default_value_t = 100_000)]
        max_schedules: u64,
        /// Worker threads.
        #[arg(long, default_value_t = 1)]
        jobs: usize,
        /// Switch on a planted bug (repeatable).
        #[arg(long)]
        ablate: Vec<String>,
        /// Save progress here after every batch, and resume from it.
        #[arg(long)]
        progress: Option<PathBuf>,
        /// Where the failure's capsule goes.
        #[arg(long, default_value = "capsules")]
        out: PathBuf,
        /// Runs spent shrinking the failing schedule.
        #[arg(long, default_value_t = 50)]
        shrink_budget: usize,
    },
    /// Run a scenario file, check its history and print a summary.
    Run {
        /// The scenario (percsim-scenario/2 JSON; the first format is read too).
        scenario: PathBuf,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Write the history here.
        #[arg(long)]
        history: Option<PathBuf>,
        /// Switch on these planted bugs too (comma-separated; the
        /// scenario's system's, see `percsim systems`).
        #[arg(long, value_delimiter = ',')]
        ablate: Vec<String>,
        /// Where the failure capsule goes when the run fails.
        #[arg(long, default_value = "failures")]
        out: PathBuf,
    },
    /// Re-run a failure capsule saved by `fuzz` and show its verdict.
    Replay {
        /// The capsule (JSON).
        capsule: PathBuf,
        /// Replay the shrunk scenario instead of the original.
        #[arg(long)]
        shrunk: bool,
        /// Write the history here.
        #[arg(long)]
        history: Option<PathBuf>,
    },
    /// Shrink a failing scenario (a scenario file, a script) or capsule:
    /// the smallest scenario found that still fails the same way (same
    /// verdict, same rule) is saved in a capsule beside its original, and
    /// as a scenario file of its own. A passing one is refused (exit 2).
    Shrink {
        /// The failing scenario file or failure capsule (a capsule's
        /// shrunk scenario, when it has one, is shrunk further).
        input: PathBuf,
        /// Switch on these planted bugs too (comma-separated; the
        /// scenario's system's, see `percsim systems`).
        #[arg(long, value_delimiter = ',')]
        ablate: Vec<String>,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Runs spent shrinking at most.
        #[arg(long, default_value_t = 200)]
        budget: usize,
        /// Where the capsule and the shrunk scenario file go.
        #[arg(long, default_value = "failures")]
        out: PathBuf,
    },
    /// Check a history file (percsim-history/1, percsim-stream-history/1 or Elle EDN), or the
    /// history a failure capsule carries (a Pulsar capsule's stream history).
    Check {
        /// The history or capsule.
        history: PathBuf,
        /// Print a machine-readable report.
        #[arg(long)]
        json: bool,
        /// Judge against this consistency model: serializable,
        /// snapshot-isolation, repeatable-read, read-committed or
        /// read-uncommitted (default: the model the history names, what the
        /// system that wrote it promises; snapshot-isolation when it names
        /// none). Stream histories take none.
        #[arg(long)]
        model: Option<percsim_checker::Model>,
    },
    /// Write a history (or a capsule's history) in another checker's format.
    Export {
        /// `elle-append` (list-append workload), `elle-rw` or `dbcop`.
        #[arg(long)]
        format: String,
        /// The history (percsim-history/1) or failure capsule.
        history: PathBuf,
        /// Where to write it.
        #[arg(short = 'o', long = "out")]
        out: PathBuf,
    },
    /// Draw a history (or a capsule's) as one self-contained HTML page.
    Report {
        /// The history (percsim-history/1) or failure capsule.
        history: PathBuf,
        /// Where to write the page (or the SVG with --svg).
        #[arg(short = 'o', long = "out")]
        out: PathBuf,
        /// Write only the timeline, as SVG.
        #[arg(long)]
        svg: bool,
    },
    /// Run a fuzzing campaign: one generated scenario per seed (or, with
    /// --scenario, one scenario file swept over the seeds).
    Fuzz {
        /// Sweep this scenario file over the seeds instead of generating
        /// scenarios (with --ablate, capsules and shrinking; --system,
        /// --workload, --faults and --shard do not apply).
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// Number of seeds (from the start of --seeds, or 0).
        #[arg(long)]
        count: Option<u64>,
        /// Seed range A..B (B excluded).
        #[arg(long, value_parser = parse_range)]
        seeds: Option<(u64, u64)>,
        /// This machine's share K/N of the seeds (1-based K). Without it the
        /// share comes from PERCSIM_SHARD_INDEX/PERCSIM_SHARD_COUNT, a
        /// Kubernetes Indexed Job (JOB_COMPLETION_INDEX with
        /// PERCSIM_SHARD_COUNT) or a Slurm array (SLURM_ARRAY_TASK_*).
        #[arg(long, value_parser = Shard::parse)]
        shard: Option<Shard>,
        /// Parallel OS threads, each running one seed at a time.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// Stop starting new seeds after this many wall seconds.
        #[arg(long)]
        time_limit: Option<u64>,
        /// Only these workloads (comma-separated).
        #[arg(long, value_delimiter = ',')]
        workload: Vec<String>,
        /// Only these fault classes (comma-separated).
        #[arg(long, value_delimiter = ',')]
        faults: Vec<String>,
        /// Switch off these protocol mechanisms (comma-separated planted
        /// bug names; each is one system's, see `percsim systems`).
        #[arg(long, value_delimiter = ',')]
        ablate: Vec<String>,
        /// Which systems: a name, several comma-separated, or all. Without
        /// it: every system the named workloads, fault classes and planted
        /// bugs apply to, each running its share of the range's seeds.
        #[arg(long, value_parser = parse_systems)]
        system: Option<Systems>,
        /// Where failure capsules go.
        #[arg(long, default_value = "failures")]
        out: PathBuf,
        /// Also write one JSON line per seed here.
        #[arg(long)]
        jsonl: Option<PathBuf>,
        /// Run every seed twice and fail on any difference in the history.
        #[arg(long)]
        check_determinism: bool,
        /// Runs spent shrinking each failure (0 turns shrinking off).
        #[arg(long, default_value_t = 40)]
        shrink_budget: usize,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Merge the JSON lines of a campaign's shards into one summary (refused,
    /// exit 2, unless they are every shard of one campaign, each complete).
    Merge {
        /// JSON-lines files written by `fuzz --jsonl`.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// The kill table: run the default campaign under each ablation until
    /// the first failure or the seed budget.
    Ablations {
        /// Seeds per ablation at most.
        #[arg(long, default_value_t = 500)]
        budget: u64,
        /// Parallel threads.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// Runs spent shrinking each first failure.
        #[arg(long, default_value_t = 40)]
        shrink_budget: usize,
        /// Only these ablations (comma-separated); default: all that apply.
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
        /// Disjoint seed ranges of `--budget` seeds each: the table shows
        /// the median and maximum seeds to the first failure over them.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        ranges: u64,
        /// Whose planted bugs: a system's name (default: the default
        /// system; `percsim systems` lists them).
        #[arg(long, value_parser = parse_systems)]
        system: Option<Systems>,
    },
    /// List the registered systems: what each runs, the fault classes it
    /// honours, its planted bugs and the history it is judged on.
    Systems,
    /// Print throughput numbers measured on this machine.
    Bench {
        /// Shorter runs.
        #[arg(long, conflicts_with = "long")]
        quick: bool,
        /// Also measure campaign memory after 100,000 seeds (about half an hour on 2 cores).
        #[arg(long)]
        long: bool,
        /// Only the simulator's numbers: the no-op madsim RPC and each
        /// system's measurements of the simulator itself (Percolator's
        /// register workload, RPCs per commit and the rate at one no-op
        /// madsim RPC per RPC).
        #[arg(long)]
        simulator: bool,
        /// Whose measurements: a name, several comma-separated, or `all`
        /// (the default: every system that has measurements).
        #[arg(long, value_parser = parse_systems)]
        system: Option<Systems>,
    },
    /// Run each system on the same pipeline job under the same fault
    /// mixes and print one table of measured metrics (docs/compare.md).
    Compare {
        /// The systems: a name, several comma-separated, or `all` (the
        /// default: every system with a comparison job, one column group each).
        #[arg(long, value_parser = parse_systems)]
        system: Option<Systems>,
        /// Fault mixes (comma-separated; default: all of them).
        #[arg(long, value_delimiter = ',', value_parser = percsim_scenarios::compare::parse_mix)]
        mixes: Vec<percsim_scenarios::compare::FaultMix>,
        /// Number of seeds per column (from the start of --seeds, or 0).
        #[arg(long)]
        count: Option<u64>,
        /// Seed range A..B (B excluded); default 0..20.
        #[arg(long, value_parser = parse_range)]
        seeds: Option<(u64, u64)>,
        /// Parallel threads.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// Simulated ms of each run's workload phase.
        #[arg(long, default_value_t = 5_000)]
        run_ms: u64,
        /// Print the table as JSON.
        #[arg(long)]
        json: bool,
        /// Instead of the pipeline job: TPC-E-lite under the CPU cost
        /// model from 1 to 64 tablet servers, customers growing with the
        /// servers, at two loads per server; the cores of each system's
        /// central component and of its servers (docs/compare.md).
        #[arg(long)]
        scale_out: bool,
        /// With --scale-out: the tablet server counts (comma-separated;
        /// default 1,2,4,8,16,32,64).
        #[arg(long, value_delimiter = ',')]
        servers: Vec<usize>,
    },
    /// Re-run the Percolator paper's evaluation in simulated time (cost
    /// model on) and print each result beside the paper's figure.
    Paper {
        /// Fewer and shorter runs.
        #[arg(long)]
        quick: bool,
        /// Whose published evaluation (default: every system that has one).
        #[arg(long, value_parser = parse_systems)]
        system: Option<Systems>,
    },
}

/// `percsim systems`: every registered system, as text.
fn systems_text() -> String {
    let mut o = String::new();
    for s in systems::all() {
        o += &format!("{}: {}\n", s.name(), s.describe());
        o += &format!("  history     {}\n", s.history_format());
        o += &format!("  workloads   {}\n", s.workloads().join(", "));
        o += &format!("  campaign    {}\n", s.campaign_workloads().join(", "));
        o += &format!("  faults      {}\n", s.class_names().join(", "));
        o += "  planted bugs\n";
        for (name, what) in s.ablations() {
            o += &format!("    {name:<34} {what}\n");
        }
    }
    o
}

/// The systems `--system` chose.
#[derive(Clone)]
struct Systems(Vec<&'static dyn SystemDef>);

impl Systems {
    fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|s| s.name()).collect()
    }
}

/// `--system`: a registered system's name, several comma-separated, or
/// `all`; parsed here once for every command.
fn parse_systems(s: &str) -> Result<Systems, String> {
    systems::select(s).map(Systems)
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
    die_quietly_on_a_closed_pipe();
    let cli = Cli::parse();
    let code = match cli.command {
        explore @ Command::Explore { .. } => {
            percsim_scenarios::explore::command(&explore_command(explore))
        }
        Command::Run {
            scenario,
            seed,
            history,
            ablate,
            out,
        } => cmd_run(
            &scenario,
            &RunFlags {
                seed,
                ablate,
                out: Some(out),
            },
            history.as_deref(),
        ),
        Command::Replay {
            capsule,
            shrunk,
            history,
        } => cmd_replay(&capsule, shrunk, history.as_deref()),
        Command::Shrink {
            input,
            ablate,
            seed,
            budget,
            out,
        } => cmd_shrink(
            &input,
            &RunFlags {
                seed,
                ablate,
                out: Some(out),
            },
            budget,
        ),
        Command::Check {
            history,
            json,
            model,
        } => {
            percsim_checker::set_page_size();
            percsim_checker::free_memory_promptly();
            let options = percsim_checker::CheckOptions { json, model };
            let out = &mut std::io::stdout();
            if percsim_scenarios::histfile::is_capsule_file(&history) {
                percsim_scenarios::histfile::check_capsule_with(&history, options, out)
            } else {
                percsim_checker::run_check_file_with(&history, options, out)
            }
        }
        fuzz @ Command::Fuzz { .. } => match fuzz_command(fuzz) {
            Ok(code) => code,
            Err(e) => return fail(&e),
        },
        Command::Merge { files } => cmd_merge(&files),
        Command::Report { history, out, svg } => cmd_report(&history, &out, svg),
        Command::Export {
            format,
            history,
            out,
        } => cmd_export(&format, &history, &out),
        Command::Ablations {
            budget,
            jobs,
            shrink_budget,
            only,
            ranges,
            system,
        } => {
            let systems = system.map_or_else(|| vec![systems::default_system()], |s| s.0);
            let opts = KillTable {
                only,
                budget,
                jobs: jobs.max(1),
                shrink_budget,
                ranges,
            };
            if let Some(s) = systems
                .iter()
                .find(|s| ranges > 1 && !s.kill_table_ranges())
            {
                return fail(&format!(
                    "--ranges {ranges}: the kill table of system {} measures one seed range only",
                    s.name()
                ));
            }
            let mut code = 0;
            for s in systems {
                match s.kill_table(&opts) {
                    Ok(c) => code = code.max(c),
                    Err(e) => return fail(&e),
                }
            }
            code
        }
        Command::Systems => {
            print!("{}", systems_text());
            0
        }
        Command::Bench {
            quick,
            long,
            simulator,
            system,
        } => {
            use percsim_scenarios::bench::{Length, default_systems, run};
            let length = match (quick, long) {
                (true, _) => Length::Quick,
                (_, true) => Length::Long,
                _ => Length::Default,
            };
            let chosen = system.map_or_else(default_systems, |s| s.0);
            if let Some(s) = chosen.iter().find(|s| s.bench().is_empty()) {
                return fail(&format!("system {} has no bench measurements", s.name()));
            }
            run(length, simulator, &chosen);
            0
        }
        Command::Paper { quick, system } => {
            let chosen = match system {
                Some(s) => s.0,
                None => systems::all(),
            };
            let mut ran = 0;
            for s in chosen {
                if s.evaluation(quick) {
                    ran += 1;
                } else {
                    eprintln!("system {} reproduces no published evaluation", s.name());
                }
            }
            if ran == 0 {
                return fail("no chosen system reproduces a published evaluation");
            }
            0
        }
        cmd @ Command::Compare { .. } => match compare_command(cmd) {
            Ok(code) => code,
            Err(e) => return fail(&e),
        },
    };
    ExitCode::from(code as u8)
}

/// `percsim compare`: run the comparison and print its table (or JSON).
fn compare_command(cmd: Command) -> Result<i32, String> {
    let Command::Compare {
        system,
        mixes,
        count,
        seeds,
        jobs,
        run_ms,
        json,
        scale_out,
        servers,
    } = cmd
    else {
        unreachable!("compare_command is only called with Command::Compare")
    };
    if scale_out {
        if !mixes.is_empty() || count.is_some() || seeds.is_some() {
            return Err(
                "--scale-out runs no fault mix and one seed: drop --mixes, --count and --seeds"
                    .to_string(),
            );
        }
        return scale_out_command(system.map(|s| s.0), &servers, jobs, json);
    }
    if !servers.is_empty() {
        return Err("--servers goes with --scale-out".to_string());
    }
    let start = seeds.map_or(0, |s| s.0);
    let end = match (seeds, count) {
        (Some(_), Some(_)) => return Err("give --seeds or --count, not both".to_string()),
        (Some((_, b)), None) => b,
        (None, Some(0)) => return Err("--count must be at least 1".to_string()),
        (None, Some(n)) => n,
        (None, None) => 20,
    };
    if jobs == 0 {
        return Err("--jobs must be at least 1".to_string());
    }
    let systems = match system {
        Some(s) => s.0,
        None => percsim_scenarios::compare::Options::default().systems,
    };
    let mixes = if mixes.is_empty() {
        percsim_scenarios::compare::FaultMix::ALL.to_vec()
    } else {
        mixes
    };
    let opts = percsim_scenarios::compare::Options {
        systems,
        mixes,
        start,
        end,
        jobs,
        run_ms,
    };
    let table = percsim_scenarios::compare::run(&opts)?;
    if json {
        let text = serde_json::to_string_pretty(&table).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        println!("{}", table.render());
    }
    Ok(0)
}

/// `percsim compare --scale-out`: every chosen system with a scale-out
/// run (all of them by default), the table as text or JSON.
fn scale_out_command(
    systems: Option<Vec<&'static dyn percsim_scenarios::system::SystemDef>>,
    servers: &[usize],
    jobs: usize,
    json: bool,
) -> Result<i32, String> {
    use percsim_scenarios::compare::scale;
    if jobs == 0 {
        return Err("--jobs must be at least 1".to_string());
    }
    if let Some(n) = servers.iter().find(|&&n| n == 0 || n > 64) {
        return Err(format!("--servers: {n} is not 1 to 64"));
    }
    let servers = if servers.is_empty() {
        &scale::SERVERS[..]
    } else {
        servers
    };
    let probe = percsim_scenarios::compare::ScalePoint {
        servers: 1,
        customers_per_server: 1,
        workers_per_server: 1,
        run_ms: 1_000,
    };
    let has = |s: &&'static dyn percsim_scenarios::system::SystemDef| s.scale_out(&probe).is_some();
    let systems: Vec<_> = match systems {
        Some(chosen) => {
            if let Some(s) = chosen.iter().find(|s| !has(*s)) {
                return Err(format!("system {} has no scale-out run", s.name()));
            }
            chosen
        }
        None => percsim_scenarios::systems::all()
            .into_iter()
            .filter(has)
            .collect(),
    };
    let (rows, errors) = scale::run_table(&systems, &scale::LOADS, servers, jobs);
    if json {
        let text = serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        print!("{}", scale::render(&rows, &scale::LOADS));
    }
    if errors.is_empty() {
        Ok(0)
    } else {
        Err(errors.join("; "))
    }
}

/// `percsim fuzz`: check the flags, then run the campaign; a bad flag is
/// an error message (exit 2).
fn fuzz_command(cmd: Command) -> Result<i32, String> {
    let Command::Fuzz {
        scenario,
        count,
        seeds,
        shard,
        jobs,
        time_limit,
        workload,
        faults,
        ablate,
        system,
        out,
        jsonl,
        check_determinism,
        shrink_budget,
        quiet,
    } = cmd
    else {
        return Err("not a fuzz command".into());
    };
    let start = seeds.map(|s| s.0).unwrap_or(0);
    let end = match (seeds, count) {
        (_, Some(0)) => return Err("--count must be at least 1".into()),
        (_, Some(n)) => start.saturating_add(n),
        (Some((_, b)), None) => b,
        (None, None) => start + DEFAULT_SEEDS,
    };
    if jobs == 0 || jobs > 256 {
        return Err("--jobs must be between 1 and 256".into());
    }
    if let Some(file) = scenario {
        let given = [
            ("--system", system.is_some()),
            ("--workload", !workload.is_empty()),
            ("--faults", !faults.is_empty()),
            ("--shard", shard.is_some()),
            ("--jsonl", jsonl.is_some()),
            ("--time-limit", time_limit.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
            return Err(format!(
                "{flag} does not apply to --scenario (the file names its system, workload and faults)"
            ));
        }
        let scenario = Scenario::load(&file)
            .and_then(|s| systems::with_ablations(&s, &ablate))
            .map_err(|e| format!("{}: {e}", file.display()))?;
        let sweep = percsim_scenarios::scenario_sweep::ScenarioSweep {
            scenario,
            start,
            end,
            jobs,
            out,
            shrink_budget,
            check_determinism,
        };
        return Ok(cmd_sweep(&sweep, &file));
    }
    let (shard, source) = percsim_scenarios::resolve_shard(shard, |v| std::env::var(v).ok())?;
    let mix = Mix {
        systems: system
            .as_ref()
            .map_or_else(systems::names, |s| s.names())
            .into_iter()
            .map(String::from)
            .collect(),
        workloads: workload,
        faults,
        ablations: ablate,
    };
    let mix = if system.is_some() {
        mix
    } else {
        mix.narrowed()?
    };
    mix.validate()?;
    let opts = Options {
        start,
        end,
        shard,
        jobs,
        time_limit: time_limit.map(Duration::from_secs),
        mix,
        out,
        check_determinism,
        shrink_budget,
        progress: !quiet,
    };
    Ok(cmd_fuzz(&opts, source, jsonl.as_deref()))
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// Print a seed's result; `thresholds` is the line of the liveness rules'
/// thresholds, printed under the seed when the history records them.
fn print_summary(r: &SeedResult, thresholds: Option<&str>) {
    println!("system        {}", r.system);
    println!("seed          {}", r.seed);
    if let Some(t) = thresholds {
        println!("              {t}");
    }
    println!("workload      {}", r.workload);
    println!(
        "transactions  {} committed, {} aborted, {} unknown",
        r.committed, r.aborted, r.unknown
    );
    println!("simulated     {} ms (wall {} ms)", r.sim_ms, r.wall_ms);
    let pick = |prefix: &str| -> String {
        let items: Vec<String> = r
            .counters
            .iter()
            .filter(|(k, _)| k.starts_with(prefix) && k[prefix.len()..].matches('.').count() == 0)
            .map(|(k, v)| format!("{}={v}", &k[prefix.len()..]))
            .collect();
        if items.is_empty() {
            "none".into()
        } else {
            items.join(" ")
        }
    };
    println!("faults        {}", pick("fault."));
    if let Ok(system) = systems::find(&r.system) {
        for (label, value) in system.summary_lines(&r.counters) {
            println!("{label:<13} {value}");
        }
    }
    println!("aborts        {}", pick("abort."));
    println!("events        {}", pick("event."));
    println!("verdict       {:?}", r.verdict);
    if let Some(e) = &r.explanation {
        println!("\n{e}");
    }
}

/// `percsim fuzz --scenario FILE`: sweep the file's scenario over the seeds.
fn cmd_sweep(sweep: &percsim_scenarios::scenario_sweep::ScenarioSweep, file: &Path) -> i32 {
    println!(
        "percsim fuzz --scenario {}: seeds {}..{}, {} jobs, commit {}",
        file.display(),
        sweep.start,
        sweep.end,
        sweep.jobs,
        fuzz::COMMIT
    );
    let summary = percsim_scenarios::scenario_sweep::run(sweep);
    print!("{}", summary.render());
    summary.worst().exit_code()
}

/// `percsim run`'s flags beside the file and the history.
struct RunFlags {
    /// Override the scenario's seed.
    seed: Option<u64>,
    /// Planted bugs to switch on too.
    ablate: Vec<String>,
    /// Where a failure's capsule goes (`None`: no capsule, for `replay`).
    out: Option<PathBuf>,
}

fn cmd_run(path: &Path, flags: &RunFlags, history: Option<&Path>) -> i32 {
    let loaded = Scenario::load(path).and_then(|s| systems::with_ablations(&s, &flags.ablate));
    let mut scenario = match loaded {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            return 2;
        }
    };
    if let Some(seed) = flags.seed {
        scenario.seed = seed;
    }
    run_and_report(&scenario, history, flags.out.as_deref())
}

/// Run `scenario`, print its summary, write its history to `history` and,
/// when it fails and `out` is given, its capsule to `out`. A fault the
/// scenario configured that never fired fails the run (exit 7), named.
fn run_and_report(scenario: &Scenario, history: Option<&Path>, out: Option<&Path>) -> i32 {
    let mut judged = fuzz::judge(scenario, false);
    percsim_scenarios::judge::require_fired(scenario, &mut judged);
    // The system's history, in its own format.
    let text = judged.history.as_ref().map(serde_json::to_string);
    if let (Some(path), Some(text)) = (history, text) {
        let written = text
            .map_err(|e| e.to_string())
            .and_then(|s| std::fs::write(path, s).map_err(|e| e.to_string()));
        if let Err(e) = written {
            eprintln!("error: cannot write the history to {}: {e}", path.display());
            return 2;
        }
    }
    let thresholds = judged
        .transactions()
        .and_then(|h| percsim_checker::check_liveness(h).thresholds)
        .or_else(|| {
            let stream = judged.stream();
            stream.and_then(|h| percsim_checker::stream::check_stream_liveness(h).thresholds)
        })
        .map(|t| t.line());
    print_summary(&judged.result, thresholds.as_deref());
    if let Some(report) = &judged.report
        && report.allowed.total > 0
    {
        let allowed: Vec<String> = report
            .allowed
            .counts
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        println!("allowed under snapshot isolation: {}", allowed.join(" "));
    }
    if let Some(out) = out
        && judged.result.verdict != percsim_scenarios::Verdict::Pass
    {
        match percsim_scenarios::capsule::save(out, scenario, &judged, None) {
            Ok(p) => {
                let p = p.display();
                println!("capsule       {p}");
                println!("replay        percsim replay {p}");
                println!("draw          percsim report {p} -o report.html");
            }
            Err(e) => eprintln!("error: cannot save the capsule in {}: {e}", out.display()),
        }
    }
    judged.result.verdict.exit_code()
}

fn cmd_replay(path: &Path, shrunk: bool, history: Option<&Path>) -> i32 {
    let capsule = match percsim_scenarios::capsule::Capsule::load(path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let scenario = if shrunk {
        match capsule.shrunk {
            Some(s) => s,
            None => {
                eprintln!("error: {} has no \"shrunk\" scenario", path.display());
                return 2;
            }
        }
    } else {
        capsule.scenario
    };
    if let Err(e) = scenario.validate() {
        eprintln!("error: the capsule's scenario: {e}");
        return 2;
    }
    println!(
        "recorded verdict: {:?}, rules {:?}",
        capsule.verdict, capsule.violated_rules
    );
    run_and_report(&scenario, history, None)
}

/// The scenario `path` holds: a scenario file's, or a capsule's (its
/// shrunk one when it has one), with `flags`' planted bugs and seed.
fn shrink_input(path: &Path, flags: &RunFlags) -> Result<Scenario, String> {
    use percsim_scenarios::capsule::Capsule;
    let loaded = if percsim_scenarios::histfile::is_capsule_file(path) {
        let c = Capsule::load(path)?;
        Ok(c.shrunk.unwrap_or(c.scenario))
    } else {
        Scenario::load(path)
    };
    let mut scenario = loaded
        .and_then(|s| systems::with_ablations(&s, &flags.ablate))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(seed) = flags.seed {
        scenario.seed = seed;
    }
    scenario
        .validate()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(scenario)
}

/// `percsim shrink`: shrink a failing scenario or capsule, save the
/// smallest found (a capsule beside the original, and a scenario file),
/// print how it shrank and the commands that replay it.
fn cmd_shrink(path: &Path, flags: &RunFlags, budget: usize) -> i32 {
    use percsim_scenarios::shrink;
    let failing = match shrink_input(path, flags) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let shrunk = match shrink::failure(&failing, budget) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            return 2;
        }
    };
    let (before, after) = (shrink::size(&failing), shrink::size(&shrunk.smallest));
    let r = &shrunk.judged.result;
    println!(
        "failing       {:?} [{}]",
        r.verdict,
        r.violated_rules.join(", ")
    );
    println!(
        "shrunk        in {} runs: steps {} -> {}, faults {} -> {}, {} -> {} bytes",
        shrunk.runs,
        before.steps,
        after.steps,
        before.faults,
        after.faults,
        before.bytes,
        after.bytes
    );
    println!(
        "still fails   {:?} [{}]",
        shrunk.again.verdict,
        shrunk.again.violated_rules.join(", ")
    );
    match save_shrunk(
        flags.out.as_deref().unwrap_or(Path::new(".")),
        &failing,
        &shrunk,
    ) {
        Ok((capsule, file)) => {
            let (c, f) = (capsule.display(), file.display());
            println!("capsule       {c}");
            println!("replay        percsim replay {c} --shrunk");
            println!("scenario      {f}");
            println!("run           percsim run {f}");
            println!("draw          percsim report {c} -o report.html");
            0
        }
        Err(e) => {
            eprintln!("error: cannot save the shrunk scenario: {e}");
            2
        }
    }
}

/// Save a shrink's capsule (`<system>-seed-<seed>-shrunk.json`) and its
/// smallest scenario (`<system>-seed-<seed>-shrunk.scenario.json`) in
/// `out`; their absolute paths.
fn save_shrunk(
    out: &Path,
    failing: &Scenario,
    shrunk: &percsim_scenarios::shrink::Shrunk,
) -> std::io::Result<(PathBuf, PathBuf)> {
    use percsim_scenarios::capsule::Capsule;
    std::fs::create_dir_all(out)?;
    let stem = format!("{}-seed-{}-shrunk", failing.system(), failing.seed);
    let capsule = std::path::absolute(out.join(format!("{stem}.json")))?;
    let smallest = Some((&shrunk.smallest, shrunk.runs));
    Capsule::new(&capsule, failing, &shrunk.judged, smallest).save(&capsule)?;
    let file = std::path::absolute(out.join(format!("{stem}.scenario.json")))?;
    std::fs::write(&file, serde_json::to_string_pretty(&shrunk.smallest)?)?;
    Ok((capsule, file))
}

fn cmd_fuzz(opts: &Options, source: ShardSource, jsonl: Option<&Path>) -> i32 {
    let mut file = match jsonl.map(std::fs::File::create).transpose() {
        Ok(f) => f.map(std::io::BufWriter::new),
        Err(e) => {
            eprintln!(
                "error: cannot write {}: {e}",
                jsonl.unwrap_or(Path::new("")).display()
            );
            return 2;
        }
    };
    let split: Vec<String> = opts
        .split()
        .iter()
        .map(|(s, n)| format!("{n} {}", s.name()))
        .collect();
    println!(
        "percsim fuzz: seeds {}..{} ({} seeds; shard {} from {}: {} seeds), {} jobs, commit {}",
        opts.start,
        opts.end,
        split.join(", "),
        opts.shard,
        source.name(),
        opts.seed_count(),
        opts.jobs,
        fuzz::COMMIT
    );
    let sink = file.as_mut().map(|f| f as &mut (dyn std::io::Write + Send));
    let summary = match fuzz::run(opts, sink) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "error: cannot write {}: {e}",
                jsonl.unwrap_or(Path::new("")).display()
            );
            return 2;
        }
    };
    print!("{}", summary.render());
    summary.worst().exit_code()
}

fn cmd_merge(files: &[PathBuf]) -> i32 {
    let mut inputs = Vec::new();
    for f in files {
        match std::fs::File::open(f) {
            Ok(file) => inputs.push((f.display().to_string(), std::io::BufReader::new(file))),
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", f.display());
                return 2;
            }
        }
    }
    match percsim_scenarios::shardfile::merge(inputs) {
        Ok(s) => {
            print!("{}", s.render());
            s.worst().exit_code()
        }
        Err(refused) => {
            eprintln!("error: these files are not one complete campaign; nothing merged:");
            for p in &refused.problems {
                eprintln!("  {p}");
            }
            2
        }
    }
}

fn cmd_export(format: &str, input: &Path, out: &Path) -> i32 {
    use percsim_scenarios::export::{ExportFormat, export};
    let Some(format) = ExportFormat::from_name(format) else {
        let names: Vec<String> = ExportFormat::ALL
            .iter()
            .map(|f| format!("{} ({})", f.name(), f.description()))
            .collect();
        eprintln!(
            "error: unknown --format {format:?}; one of: {}",
            names.join(", ")
        );
        return 2;
    };
    let loaded = match percsim_scenarios::histfile::load(input) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let text = match export(&loaded.history, format) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    if let Err(e) = std::fs::write(out, text) {
        eprintln!("error: cannot write {}: {e}", out.display());
        return 2;
    }
    println!(
        "wrote {} ({}, {} transactions)",
        out.display(),
        format.name(),
        loaded.history.transactions.len()
    );
    0
}

fn cmd_report(input: &Path, out: &Path, svg: bool) -> i32 {
    use percsim_scenarios::histfile::{Document, load_document};
    use percsim_scenarios::report;
    let source = input.display().to_string();
    let (text, count) = match load_document(input) {
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
        Ok(Document::Stream(l)) => (
            report::stream_report(&l.stream, &l.events, l.capsule.as_ref(), &source, svg),
            l.stream.transactions.len(),
        ),
        Ok(Document::Transactions(l)) if svg => {
            (report::svg(&l.history), l.history.transactions.len())
        }
        Ok(Document::Transactions(l)) => (report::html(&l, &source), l.history.transactions.len()),
    };
    if let Err(e) = std::fs::write(out, text) {
        eprintln!("error: cannot write {}: {e}", out.display());
        return 2;
    }
    println!("wrote {} ({count} transactions)", out.display());
    0
}

/// The explore subcommand's arguments as the library takes them.
fn explore_command(c: Command) -> percsim_scenarios::explore::Command {
    use percsim_scenarios::explore::{ExploreOptions, Strategy};
    let Command::Explore {
        scenario,
        bound,
        pct,
        runs,
        pct_seed,
        window_ms,
        fault_budget,
        stop_budget,
        stop_ms,
        no_prune,
        max_schedules,
        jobs,
        ablate,
        progress,
        out,
        shrink_budget,
    } = c
    else {
        unreachable!("called for explore only")
    };
    let strategy = match pct {
        Some(depth) => Strategy::Pct {
            depth,
            runs,
            seed: pct_seed,
        },
        None => Strategy::Bounded { bound },
    };
    let world = percsim_sim::Schedule {
        window_ms,
        fault_budget,
        stop_budget,
        stop_ms,
        ..Default::default()
    };
    let options = ExploreOptions {
        strategy,
        world,
        prune: !no_prune,
        max_schedules,
        jobs: jobs.max(1),
        stop_at_first: true,
        progress,
    };
    percsim_scenarios::explore::Command {
        scenario,
        ablate,
        out,
        shrink_budget,
        options,
    }
}
