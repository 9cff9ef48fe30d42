//! `percsim fuzz`: a campaign over many seeds on parallel OS threads (each
//! seed on its own thread with its own runtime), with failure capsules,
//! shrinking, an optional determinism check, JSON lines and a summary with
//! "sometimes" coverage.

use crate::campaign::{self, Judged, Mix, SeedResult, Verdict};
pub use crate::coverage::{CoverageItem, WorldCoverage};
pub use crate::judge::judge;
use crate::scenario::Scenario;
use crate::shard::Shard;
use crate::shardfile::{self, Completion, Header};
pub use crate::summary::{Failure, Summary, Transactions};
use crate::system::SystemDef;
use crate::systems;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub use crate::capsule::COMMIT;

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

    /// The `i`-th seed this shard runs (`i < seed_count()`): its system
    /// and its seed.
    pub fn seed_at(&self, i: u64) -> (&'static dyn SystemDef, u64) {
        let (k, n) = (self.shard.index, self.shard.count);
        let mut j = (k - 1) + i * n;
        let mut last = (systems::default_system(), 0);
        for (system, count) in self.split() {
            if j < count {
                return (system, self.start + j);
            }
            j -= count;
            last = (system, count);
        }
        // Past the end (`i` beyond `seed_count()`): the last system's seeds go on.
        (last.0, self.start + last.1 + j)
    }

    /// How many seeds of the range each system runs, in the mix's order:
    /// the whole range for a campaign of one system; for several, each
    /// system's share of it.
    pub fn split(&self) -> Vec<(&'static dyn SystemDef, u64)> {
        let n = self.end.saturating_sub(self.start);
        let chosen = self.mix.systems().unwrap_or_default();
        let one = chosen.len() == 1;
        chosen
            .into_iter()
            .map(|s| {
                let (num, den) = s.campaign_share();
                let count = if one { n } else { n * num / den.max(1) };
                (s, count)
            })
            .collect()
    }

    /// How many seeds the whole campaign (every shard) runs: each system's
    /// seeds of the range, one system after the other.
    fn campaign_len(&self) -> u64 {
        self.split().iter().map(|(_, c)| c).sum()
    }
}

/// Save a failing seed as a capsule: the scenario (and its shrunk form),
/// version, history (and the stream history of a system that records
/// one), explanation and the command that replays it.
pub fn save_capsule(
    out: &Path,
    scenario: &Scenario,
    judged: &Judged,
    shrunk: Option<(&Scenario, usize)>,
) -> std::io::Result<PathBuf> {
    crate::capsule::save(out, scenario, judged, shrunk)
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

/// Run a campaign. `jsonl` gets a header line naming the campaign and the
/// shard, then each seed's result (one JSON line per seed, in seed order) as
/// soon as it and every earlier seed are done, then a completion line
/// ([`crate::shardfile`]); only aggregates stay in memory. Fails only if
/// writing the lines fails.
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
    let mut jsonl = jsonl;
    if let Some(sink) = jsonl.as_mut() {
        writeln!(sink, "{}", campaign_header(opts).line())?;
    }
    let shared = Mutex::new(Shared {
        summary: Summary {
            classes: enabled_classes(&opts.mix),
            ..Summary::default()
        },
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
            let (system, seed) = opts.seed_at(i);
            // A panic outside the simulation (which has its own thread) is
            // this seed's crash, not the campaign's end.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run_seed(opts, system, seed, &bar, &failures)
            }))
            .unwrap_or_else(|p| crashed(system.name(), seed, p.as_ref()))
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
    let completion = Completion {
        seeds: shared.next_line,
        time_limit_reached: shared.next_line < total,
    };
    if shared.error.is_none()
        && let Some(sink) = shared.sink.as_mut()
        && let Err(e) = writeln!(sink, "{}", completion.line()).and_then(|_| sink.flush())
    {
        shared.error.get_or_insert(e);
    }
    if let Some(e) = shared.error {
        return Err(e);
    }
    shared.summary.wall = started.elapsed();
    Ok(shared.summary)
}

/// The fault classes a campaign of `mix` enabled, by their names now, as
/// each of its systems reads them (empty: every class each honours).
fn enabled_classes(mix: &Mix) -> Vec<String> {
    let mut classes: Vec<String> = mix
        .systems()
        .unwrap_or_default()
        .into_iter()
        .flat_map(|s| mix.for_system(s).faults)
        .collect();
    classes.sort();
    classes.dedup();
    classes
}

/// The result of a seed whose judging panicked.
fn crashed(system: &str, seed: u64, panic: &(dyn std::any::Any + Send)) -> SeedResult {
    let mut r = SeedResult::empty(system, seed, "unknown");
    r.verdict = Verdict::Crash;
    r.explanation = Some(format!(
        "judging the seed panicked: {}",
        crate::scenario::panic_message(panic)
    ));
    r
}

/// Run, judge and (on failure) shrink and save one seed.
fn run_seed(
    opts: &Options,
    system: &'static dyn SystemDef,
    seed: u64,
    bar: &ProgressBar,
    failures: &AtomicU64,
) -> SeedResult {
    let drawn = system.generate(seed, &opts.mix.for_system(system));
    let scenario = campaign::with_role_classes(drawn, seed, &opts.mix);
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
        .then(|| campaign::shrink(system, seed, &opts.mix, &judged.result, opts.shrink_budget));
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
                "{} seed {seed}: {:?} [{}] -> percsim replay {}",
                system.name(),
                result.verdict,
                result.violated_rules.join(", "),
                p.display()
            ));
            result.capsule = Some(p.display().to_string());
        }
        Err(e) => bar.println(format!(
            "{} seed {seed}: cannot save its capsule: {e}",
            system.name()
        )),
    }
    result
}

/// The header of a campaign run with `opts`.
fn campaign_header(opts: &Options) -> Header {
    let sorted = |v: &[String]| {
        let mut v = v.to_vec();
        v.sort();
        v.dedup();
        v
    };
    Header {
        format: shardfile::FORMAT.to_string(),
        seeds: shardfile::SeedRange {
            start: opts.start,
            end: opts.end,
        },
        shard: shardfile::ShardId {
            index: opts.shard.index,
            count: opts.shard.count,
        },
        systems: opts
            .split()
            .into_iter()
            .map(|(s, seeds)| shardfile::SystemSeeds {
                name: s.name().to_string(),
                seeds,
            })
            .collect(),
        workloads: sorted(&opts.mix.workloads),
        faults: sorted(&opts.mix.faults),
        ablations: sorted(&opts.mix.ablations),
        check_determinism: opts.check_determinism,
        commit: COMMIT.to_string(),
    }
}
