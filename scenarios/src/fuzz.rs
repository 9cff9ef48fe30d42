//! `percsim fuzz`: a campaign over many seeds on parallel OS threads (each
//! seed on its own thread with its own runtime), with failure capsules,
//! shrinking, an optional determinism check, JSON lines and a summary with
//! "sometimes" coverage.

use crate::campaign::{self, Judged, Mix, SeedResult, Verdict};
use crate::scenario::Scenario;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The commit percsim was built from (or "unknown").
pub const COMMIT: &str = match option_env!("PERCSIM_COMMIT") {
    Some(c) => c,
    None => "unknown",
};

/// How a campaign runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// First seed (included).
    pub start: u64,
    /// Last seed (excluded).
    pub end: u64,
    /// This machine's share: shard `k` (1-based) of `n` takes the seeds
    /// whose offset from `start` is `k - 1` modulo `n`.
    pub shard: (u64, u64),
    /// Parallel threads.
    pub jobs: usize,
    /// Stop starting seeds after this long.
    pub time_limit: Option<Duration>,
    /// Which workloads and fault classes.
    pub mix: Mix,
    /// Where failure capsules go.
    pub out: PathBuf,
    /// Run each seed twice and compare the histories.
    pub check_determinism: bool,
    /// Runs spent shrinking each failure (0: no shrinking).
    pub shrink_budget: usize,
    /// Show a progress bar.
    pub progress: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            start: 0,
            end: 1_000,
            shard: (1, 1),
            jobs: 2,
            time_limit: None,
            mix: Mix::default(),
            out: PathBuf::from("failures"),
            check_determinism: false,
            shrink_budget: 40,
            progress: true,
        }
    }
}

/// What a campaign found.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Every seed's result, by seed.
    pub results: Vec<SeedResult>,
    /// Wall time of the campaign.
    pub wall: Duration,
    /// Capsules written.
    pub capsules: Vec<PathBuf>,
}

/// Events a campaign is expected to exercise; one that never happens is flagged.
pub const COVERAGE: &[(&str, &str)] = &[
    (
        "roll forward of a dead owner's commit",
        "cleanup.roll_forward",
    ),
    ("roll back of an abandoned lock", "cleanup.roll_back"),
    (
        "cleanup after the owner's token expired",
        "cleanup.roll_back.token_gone",
    ),
    (
        "cleanup of a stale lock of a live owner",
        "cleanup.roll_back.stale",
    ),
    (
        "late prewrite rejected by a rollback record",
        "store.late_prewrite_rejected",
    ),
    ("duplicated request delivered", "net.duplicated"),
    ("client killed at a protocol step", "event.crash_at_step"),
    ("client frozen at a protocol step", "fault.pause_at_step"),
    ("client killed", "fault.kill_client"),
    ("tablet server killed", "fault.kill_tablet_server"),
    ("oracle restart", "fault.kill_oracle"),
    ("liveness service restart", "fault.kill_liveness"),
    ("tablet moved to a live server", "event.tablet_moved"),
    ("node paused", "fault.pause"),
    ("worker stalled with a valid token", "fault.stall"),
    ("network partition", "fault.partition"),
    (
        "session expired under a live owner",
        "event.session_reopened",
    ),
    ("read waited on a lock", "client.lock_waits"),
    ("write conflict", "abort.write_conflict"),
    ("owner found itself rolled back", "abort.rolled_back"),
    ("commit outcome unknown", "txn.unknown"),
    ("observer run committed", "observer.ran"),
    (
        "notification found already processed",
        "observer.nothing_new",
    ),
    ("scanner jumped away from a taken row", "scan.jumps"),
];

impl Options {
    /// The seeds this shard runs.
    pub fn seeds(&self) -> Vec<u64> {
        let (k, n) = self.shard;
        (self.start..self.end)
            .filter(|s| (s - self.start) % n == k - 1)
            .collect()
    }
}

/// Run and judge `scenario`, twice when checking determinism.
pub fn judge(scenario: &Scenario, check_determinism: bool) -> Judged {
    let mut judged = campaign::run_one(scenario);
    if check_determinism {
        let again = campaign::run_one(scenario);
        let a = judged
            .history
            .as_ref()
            .map(|h| serde_json::to_string(h).unwrap_or_default());
        let b = again
            .history
            .as_ref()
            .map(|h| serde_json::to_string(h).unwrap_or_default());
        if a != b {
            judged.result.verdict = Verdict::Nondeterministic;
            judged.result.explanation = Some(format!(
                "seed {} gave two different histories ({} and {} bytes)",
                scenario.seed,
                a.map_or(0, |s| s.len()),
                b.map_or(0, |s| s.len())
            ));
        }
    }
    judged
}

/// Save a failing seed as a capsule: the scenario (and its shrunk form),
/// version, history, explanation and the command that replays it.
pub fn save_capsule(
    out: &Path,
    scenario: &Scenario,
    judged: &Judged,
    shrunk: Option<(&Scenario, usize)>,
) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(out)?;
    let path = out.join(format!("seed-{}.json", scenario.seed));
    let replay_target = if shrunk.is_some() { " --shrunk" } else { "" };
    let capsule = serde_json::json!({
        "format": "percsim-capsule/1",
        "percsim_version": env!("CARGO_PKG_VERSION"),
        "percsim_commit": COMMIT,
        "verdict": judged.result.verdict,
        "violated_rules": judged.result.violated_rules,
        "explanation": judged.result.explanation,
        "replay": format!("percsim replay {}", path.display()),
        "replay_shrunk": shrunk.map(|_| format!("percsim replay {}{replay_target}", path.display())),
        "scenario": scenario,
        "shrunk": shrunk.map(|(s, _)| s),
        "shrink_runs": shrunk.map(|(_, n)| n),
        "history": judged.history,
    });
    std::fs::write(&path, serde_json::to_string_pretty(&capsule)?)?;
    Ok(path)
}

/// Run a campaign.
pub fn run(opts: &Options) -> Summary {
    let seeds = opts.seeds();
    let bar = if opts.progress {
        ProgressBar::new(seeds.len() as u64)
    } else {
        ProgressBar::with_draw_target(Some(seeds.len() as u64), ProgressDrawTarget::hidden())
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} seeds, {per_sec}, {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message("0 failures");
    let started = Instant::now();
    let seeds = Arc::new(seeds);
    let next = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(AtomicU64::new(0));
    let results: Arc<Mutex<Vec<SeedResult>>> = Arc::default();
    let capsules: Arc<Mutex<Vec<PathBuf>>> = Arc::default();
    let threads: Vec<_> = (0..opts.jobs.max(1))
        .map(|_| {
            let (seeds, next, failures, results, capsules, bar, opts) = (
                seeds.clone(),
                next.clone(),
                failures.clone(),
                results.clone(),
                capsules.clone(),
                bar.clone(),
                opts.clone(),
            );
            std::thread::spawn(move || {
                loop {
                    if opts.time_limit.is_some_and(|t| started.elapsed() >= t) {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                    let Some(&seed) = seeds.get(i) else { return };
                    let scenario = campaign::generate(seed, &opts.mix);
                    let judged = judge(&scenario, opts.check_determinism);
                    if judged.result.verdict != Verdict::Pass {
                        let n = failures.fetch_add(1, Ordering::Relaxed) + 1;
                        bar.set_message(format!("{n} failures"));
                        let shrunk = (opts.shrink_budget > 0
                            && judged.result.verdict != Verdict::Nondeterministic)
                            .then(|| {
                                campaign::shrink(
                                    seed,
                                    &opts.mix,
                                    &judged.result,
                                    opts.shrink_budget,
                                )
                            });
                        match save_capsule(
                            &opts.out,
                            &scenario,
                            &judged,
                            shrunk.as_ref().map(|(s, n)| (s, *n)),
                        ) {
                            Ok(p) => {
                                bar.println(format!(
                                    "seed {seed}: {:?} [{}] -> percsim replay {}",
                                    judged.result.verdict,
                                    judged.result.violated_rules.join(", "),
                                    p.display()
                                ));
                                capsules.lock().unwrap_or_else(|e| e.into_inner()).push(p);
                            }
                            Err(e) => {
                                bar.println(format!("seed {seed}: cannot save its capsule: {e}"))
                            }
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
    bar.finish_and_clear();
    let mut results = std::mem::take(&mut *results.lock().unwrap_or_else(|e| e.into_inner()));
    results.sort_by_key(|r| r.seed);
    let mut capsules = std::mem::take(&mut *capsules.lock().unwrap_or_else(|e| e.into_inner()));
    capsules.sort();
    Summary {
        results,
        wall: started.elapsed(),
        capsules,
    }
}

impl Summary {
    /// The worst verdict (safety over crash over nondeterminism over liveness).
    pub fn worst(&self) -> Verdict {
        self.results
            .iter()
            .map(|r| r.verdict)
            .min_by_key(|v| match v {
                Verdict::Safety => 0,
                Verdict::Crash => 1,
                Verdict::Nondeterministic => 2,
                Verdict::Liveness => 3,
                Verdict::Pass => 4,
            })
            .unwrap_or(Verdict::Pass)
    }

    /// Counters summed over every seed.
    pub fn counters(&self) -> BTreeMap<String, u64> {
        let mut counters: BTreeMap<String, u64> = BTreeMap::new();
        for r in &self.results {
            for (k, v) in &r.counters {
                *counters.entry(k.clone()).or_default() += v;
            }
        }
        counters
    }

    /// Coverage items that never happened.
    pub fn never_happened(&self) -> Vec<&'static str> {
        let counters = self.counters();
        COVERAGE
            .iter()
            .filter(|(_, key)| counters.get(*key).copied().unwrap_or(0) == 0)
            .map(|(name, _)| *name)
            .collect()
    }

    /// The summary table and coverage, as text.
    pub fn render(&self) -> String {
        let counters = self.counters();
        let mut by_verdict: BTreeMap<String, u64> = BTreeMap::new();
        let mut rules: BTreeMap<String, u64> = BTreeMap::new();
        let mut workloads: BTreeMap<String, u64> = BTreeMap::new();
        let (mut committed, mut aborted, mut unknown, mut sim_ms) = (0, 0, 0, 0);
        for r in &self.results {
            *by_verdict
                .entry(format!("{:?}", r.verdict).to_lowercase())
                .or_default() += 1;
            *workloads.entry(r.workload.clone()).or_default() += 1;
            for rule in &r.violated_rules {
                *rules.entry(rule.clone()).or_default() += 1;
            }
            committed += r.committed;
            aborted += r.aborted;
            unknown += r.unknown;
            sim_ms += r.sim_ms;
        }
        let secs = self.wall.as_secs_f64().max(1e-9);
        let mut o = String::new();
        let _ = writeln!(o, "== campaign summary ==");
        let _ = writeln!(
            o,
            "seeds               {} in {:.1} s wall ({:.0} seeds/min)",
            self.results.len(),
            secs,
            self.results.len() as f64 * 60.0 / secs
        );
        let w: Vec<String> = workloads.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(o, "workloads           {}", w.join(" "));
        let _ = writeln!(
            o,
            "transactions        {committed} committed, {aborted} aborted, {unknown} unknown"
        );
        let _ = writeln!(o, "simulated time      {:.1} s", sim_ms as f64 / 1000.0);
        let mut section = |title: &str, prefix: &str| {
            let rows: Vec<(&String, &u64)> = counters
                .iter()
                .filter(|(k, _)| {
                    k.starts_with(prefix) && k[prefix.len()..].matches('.').count() == 0
                })
                .collect();
            let _ = writeln!(o, "{title}:");
            if rows.is_empty() {
                let _ = writeln!(o, "  (none)");
            }
            for (k, v) in rows {
                let _ = writeln!(o, "  {:<44} {v:>8}", &k[prefix.len()..]);
            }
        };
        section("faults injected by class", "fault.");
        section("cleanups", "cleanup.");
        section("aborts by reason", "abort.");
        let _ = writeln!(o, "violations by rule:");
        if rules.is_empty() {
            let _ = writeln!(o, "  (none)");
        }
        for (k, v) in &rules {
            let _ = writeln!(o, "  {k:<44} {v:>8}");
        }
        let _ = writeln!(o, "verdicts:");
        for (k, v) in &by_verdict {
            let _ = writeln!(o, "  {k:<44} {v:>8}");
        }
        let _ = writeln!(o, "coverage (how often each interesting event happened):");
        for (name, key) in COVERAGE {
            let n = counters.get(*key).copied().unwrap_or(0);
            let flag = if n == 0 { "   <-- never happened" } else { "" };
            let _ = writeln!(o, "  {name:<44} {n:>8}{flag}");
        }
        for c in &self.capsules {
            let _ = writeln!(o, "capsule: percsim replay {}", c.display());
        }
        o
    }

    /// One JSON line per seed.
    pub fn jsonl(&self) -> String {
        self.results
            .iter()
            .filter_map(|r| serde_json::to_string(r).ok())
            .map(|l| l + "\n")
            .collect()
    }

    /// Merge JSON lines from several shards (results of a seed seen twice are kept once).
    pub fn from_jsonl(texts: &[(String, String)]) -> Result<Summary, String> {
        let mut by_seed: BTreeMap<u64, SeedResult> = BTreeMap::new();
        for (name, text) in texts {
            for (i, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let r: SeedResult = serde_json::from_str(line)
                    .map_err(|e| format!("{name}:{}: not a seed result: {e}", i + 1))?;
                by_seed.insert(r.seed, r);
            }
        }
        let wall = Duration::from_millis(by_seed.values().map(|r| r.wall_ms).sum());
        Ok(Summary {
            results: by_seed.into_values().collect(),
            wall,
            capsules: Vec::new(),
        })
    }
}
