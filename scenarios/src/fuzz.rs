//! `percsim fuzz`: a campaign over many seeds on parallel OS threads (each
//! seed on its own thread with its own runtime), with failure capsules,
//! shrinking, an optional determinism check, JSON lines and a summary with
//! "sometimes" coverage.

use crate::campaign::{self, Judged, Mix, SeedResult, Verdict};
pub use crate::coverage::Coverage;
pub use crate::judge::judge;
use crate::scenario::Scenario;
use crate::shard::Shard;
pub use crate::summary::{Failure, Summary, Transactions};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
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
    pub shard: Shard,
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
            shard: Shard::WHOLE,
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

impl Options {
    /// How many seeds this shard runs.
    pub fn seed_count(&self) -> u64 {
        let (k, n) = (self.shard.index, self.shard.count);
        let len = self.campaign_len();
        if k > len {
            0
        } else {
            (len - (k - 1)).div_ceil(n)
        }
    }

    /// The `i`-th seed this shard runs (`i < seed_count()`).
    pub fn seed_at(&self, i: u64) -> u64 {
        let (k, n) = (self.shard.index, self.shard.count);
        let j = (k - 1) + i * n;
        let (percolator, _) = self.mix.systems.split(self.end - self.start.min(self.end));
        if j < percolator {
            self.start + j
        } else {
            crate::pulsar_campaign::PULSAR_SEED_BASE + self.start + (j - percolator)
        }
    }

    /// How many seeds the whole campaign (every shard) runs: the range's
    /// Percolator seeds, then its Pulsar seeds.
    fn campaign_len(&self) -> u64 {
        let (a, b) = self.mix.systems.split(self.end.saturating_sub(self.start));
        a + b
    }
}

/// Save a failing seed as a capsule: the scenario (and its shrunk form),
/// version, history (and a Pulsar run's stream history, which its verdict
/// was judged on), explanation and the command that replays it.
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
        // A system that records a stream history (Pulsar) is judged on it.
        "stream_history": judged.stream,
    });
    std::fs::write(&path, serde_json::to_string_pretty(&capsule)?)?;
    Ok(path)
}

/// What the campaign threads share: the aggregates, and the JSON lines
/// waiting for an earlier seed so that the file lists seeds in order.
struct Shared<'a> {
    summary: Summary,
    pending: BTreeMap<u64, String>,
    next_line: u64,
    sink: Option<&'a mut (dyn Write + Send)>,
    error: Option<std::io::Error>,
}

impl Shared<'_> {
    /// Count the `i`-th seed's result in and write every line now in order.
    fn finish(&mut self, i: u64, result: &SeedResult) {
        self.summary.add(result);
        let Some(sink) = self.sink.as_mut() else {
            return;
        };
        let line = serde_json::to_string(result).unwrap_or_else(|e| {
            self.error.get_or_insert(std::io::Error::other(e));
            String::new()
        });
        self.pending.insert(i, line);
        while let Some(line) = self.pending.remove(&self.next_line) {
            self.next_line += 1;
            if self.error.is_none()
                && let Err(e) = writeln!(sink, "{line}")
            {
                self.error = Some(e);
            }
        }
    }
}

/// Run a campaign. Each seed's result is written to `jsonl` (one JSON line
/// per seed, in seed order) as soon as it and every earlier seed are done;
/// only aggregates stay in memory. Fails only if writing the lines fails.
pub fn run(opts: &Options, jsonl: Option<&mut (dyn Write + Send)>) -> std::io::Result<Summary> {
    let total = opts.seed_count();
    let bar = if opts.progress {
        ProgressBar::new(total)
    } else {
        ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden())
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} seeds, {per_sec}, {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message("0 failures");
    let started = Instant::now();
    let failures = AtomicU64::new(0);
    let shared = Mutex::new(Shared {
        summary: Summary::default(),
        pending: BTreeMap::new(),
        next_line: 0,
        sink: jsonl,
        error: None,
    });
    crate::pool::for_each(
        opts.jobs,
        total,
        |_| opts.time_limit.is_none_or(|t| started.elapsed() < t),
        |i| {
            let seed = opts.seed_at(i);
            // A panic outside the simulation (which has its own thread) is
            // this seed's crash, not the campaign's end.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run_seed(opts, seed, &bar, &failures)
            }))
            .unwrap_or_else(|p| crashed(seed, p.as_ref()))
        },
        |i, result| {
            shared
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .finish(i, &result);
            bar.inc(1);
        },
    );
    bar.finish_and_clear();
    let mut shared = shared.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(sink) = shared.sink.as_mut()
        && let Err(e) = sink.flush()
    {
        shared.error.get_or_insert(e);
    }
    if let Some(e) = shared.error {
        return Err(e);
    }
    shared.summary.wall = started.elapsed();
    Ok(shared.summary)
}

/// The result of a seed whose judging panicked.
fn crashed(seed: u64, panic: &(dyn std::any::Any + Send)) -> SeedResult {
    let mut r = SeedResult::empty(seed, "unknown");
    r.verdict = Verdict::Crash;
    r.explanation = Some(format!(
        "judging the seed panicked: {}",
        crate::scenario::panic_message(panic)
    ));
    r
}

/// Run, judge and (on failure) shrink and save one seed.
fn run_seed(opts: &Options, seed: u64, bar: &ProgressBar, failures: &AtomicU64) -> SeedResult {
    let scenario = campaign::generate(seed, &opts.mix);
    let judged = judge(&scenario, opts.check_determinism);
    if judged.result.verdict == Verdict::Pass {
        return judged.result;
    }
    let n = failures.fetch_add(1, Ordering::Relaxed) + 1;
    bar.set_message(format!("{n} failures"));
    // Nondeterministic seeds do not shrink reliably, and every run of a
    // stuck seed takes its whole budget.
    let shrinkable = !matches!(
        judged.result.verdict,
        Verdict::Nondeterministic | Verdict::Stuck
    );
    let shrunk = (opts.shrink_budget > 0 && shrinkable)
        .then(|| campaign::shrink(seed, &opts.mix, &judged.result, opts.shrink_budget));
    let saved = save_capsule(
        &opts.out,
        &scenario,
        &judged,
        shrunk.as_ref().map(|(s, n)| (s, *n)),
    );
    let mut result = judged.result;
    match saved {
        Ok(p) => {
            bar.println(format!(
                "seed {seed}: {:?} [{}] -> percsim replay {}",
                result.verdict,
                result.violated_rules.join(", "),
                p.display()
            ));
            result.capsule = Some(p.display().to_string());
        }
        Err(e) => bar.println(format!("seed {seed}: cannot save its capsule: {e}")),
    }
    result
}
