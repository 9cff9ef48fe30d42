//! `percsim explore`: systematic exploration of a scenario's schedules.
//!
//! The world's choices (see [`percsim_sim::world::explore`]) form a tree:
//! every run reaches a sequence of choice points, each with a default
//! option (what the seed would do) and some alternatives. Two strategies
//! walk it:
//!
//! - **depth-first, bounded** ([`Strategy::Bounded`]): every schedule with
//!   at most `bound` choices that differ from the default (delay bounding:
//!   Emmi, Qadeer and Rakamarić, POPL 2011), each exactly once. A schedule's
//!   children deviate once more, at a choice point after its last
//!   deviation. States already seen are skipped: when a run reaches a
//!   choice point whose state hash (the world's and the system's state,
//!   with the deviations left) an earlier run reached, nothing from there
//!   on is tried again.
//! - **PCT** ([`Strategy::Pct`]): `runs` runs with randomised node
//!   priorities and `depth - 1` priority change points.
//!
//! The order of schedules is fixed (runs go to the worker pool in batches of
//! [`BATCH`] and their results are taken in order), so the count of
//! schedules to the first failure is the same on every run, whatever the
//! number of workers. Each schedule runs on the pool's thread itself
//! ([`Scenario::run_here`]), not on a thread of its own, and without the
//! scenario's description in its history: the failing schedule's capsule
//! is made by running it again. A progress file lets a long exploration
//! stop and resume.

use crate::capsule::Capsule;
use crate::judge::{Judged, Verdict, verdict_of};
use crate::scenario::Scenario;
use percsim_sim::{Choice, ChoiceKind, Forced, Pct, Schedule};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

/// How many schedules go to the worker pool at once.
pub const BATCH: usize = 32;

/// How to walk the tree of choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "strategy", rename_all = "snake_case")]
pub enum Strategy {
    /// Depth-first over every schedule with at most `bound` deviations.
    Bounded {
        /// The most choices that may differ from the default.
        bound: u32,
    },
    /// PCT-style randomised priorities.
    Pct {
        /// The bug depth aimed at.
        depth: u32,
        /// How many runs.
        runs: u64,
        /// The first run's seed (run `i` uses `seed + i`).
        seed: u64,
    },
}

/// What to explore and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExploreOptions {
    /// The strategy.
    pub strategy: Strategy,
    /// The world's side of the schedule: window and budgets.
    pub world: Schedule,
    /// Skip states already seen (depth-first only).
    pub prune: bool,
    /// Stop after this many schedules.
    pub max_schedules: u64,
    /// Worker threads.
    pub jobs: usize,
    /// Stop at the first failing schedule.
    pub stop_at_first: bool,
    /// Where progress is saved after every batch (and resumed from).
    pub progress: Option<PathBuf>,
}

impl Default for ExploreOptions {
    fn default() -> Self {
        ExploreOptions {
            strategy: Strategy::Bounded { bound: 1 },
            world: Schedule::default(),
            prune: true,
            max_schedules: 100_000,
            jobs: 1,
            stop_at_first: true,
            progress: None,
        }
    }
}

/// The first failing schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// Its number in the exploration's order, from 1.
    pub schedule: u64,
    /// The choices that differ from the default.
    pub forced: Vec<Forced>,
    /// The verdict.
    pub verdict: Verdict,
    /// The rules broken.
    pub violated_rules: Vec<String>,
    /// The explanation.
    pub explanation: Option<String>,
}

/// What an exploration found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExploreReport {
    /// Schedules run.
    pub schedules: u64,
    /// Distinct state hashes seen at choice points.
    pub distinct_states: u64,
    /// Choice points whose alternatives were not tried because an earlier
    /// run reached the same state there.
    pub pruned: u64,
    /// Choice points reached over all runs, by kind.
    pub choice_points: BTreeMap<String, u64>,
    /// Distinct places (senders, named points at nodes) reached, by kind.
    pub places: BTreeMap<String, u64>,
    /// Distinct places where a non-default option was tried, by kind.
    pub places_deviated: BTreeMap<String, u64>,
    /// Choice points in the default schedule (PCT's `k`).
    pub default_choice_points: u64,
    /// Nodes that send messages in the default schedule (PCT's `n`).
    pub senders: u64,
    /// Whether every schedule within the bound was run (depth-first).
    pub exhausted: bool,
    /// The first failing schedule, if any.
    pub failure: Option<Failure>,
    /// Wall time, in ms.
    pub wall_ms: u64,
}

/// A schedule to run: its deviations, and from which choice point its
/// children may deviate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Pending {
    forced: Vec<Forced>,
    from: u32,
}

/// What is saved between batches.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Progress {
    format: String,
    report: ExploreReport,
    stack: Vec<Pending>,
    seen: BTreeSet<(u64, u64, u32)>,
    states: BTreeSet<u64>,
    places: BTreeSet<(String, u64)>,
    deviated: BTreeSet<(String, u64)>,
    next_pct: u64,
}

/// The `format` of a progress file. Its states seen are hashes of the
/// world's state hasher ([`percsim_sim::world::explore::StateHasher`]);
/// files of the first format hold SipHash's, which the states of a resumed
/// run would never match: they are refused by their format.
pub const PROGRESS_FORMAT: &str = "percsim-explore-progress/2";

/// One run's result.
struct Ran {
    judged: Judged,
    choices: Vec<Choice>,
}

/// `base` with `schedule` in its world.
pub fn with_schedule(base: &Scenario, schedule: Schedule) -> Scenario {
    let mut s = base.clone();
    s.world.explore = Some(schedule);
    s
}

/// Run `base` once with `schedule` in its world, on the calling thread
/// (see [`Scenario::run_here`]), and judge it, keeping its choices; the
/// history is dropped here, on the thread that built it. `base`'s world
/// with the exploration's schedule was checked once ([`explore`]); of
/// `schedule` only what differs from it is checked here.
fn run_one(base: &Scenario, schedule: Schedule) -> Ran {
    let started = Instant::now();
    let mut world = base.world.clone();
    let problem = schedule.problem();
    world.explore = Some(schedule);
    let run = match problem {
        Some(p) => Err(crate::scenario::ScenarioError::Invalid(format!(
            "world.explore: {p}"
        ))),
        None => base.run_here_validated(&world),
    };
    let (mut judged, choices) = match run {
        Ok(mut out) => {
            let choices = std::mem::take(&mut out.summary.choices);
            (verdict_of(base, Ok(out), started), choices)
        }
        Err(e) => (verdict_of(base, Err(e), started), Vec::new()),
    };
    judged.history = None;
    Ran { judged, choices }
}

/// Whether a verdict is a failure exploration looks for: a safety
/// violation, a crash (a tripped invariant) or nondeterminism. A script's
/// expectations are written for its default schedule (a lost reply makes
/// a commit's outcome unknown), and the healed phase is judged by the
/// liveness rules of ordinary runs: neither counts as a failure here.
pub fn fails(v: Verdict) -> bool {
    matches!(
        v,
        Verdict::Safety | Verdict::Crash | Verdict::Nondeterministic
    )
}

/// A verdict's name, as reports print it.
fn verdict_name(v: Verdict) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Explore `base` (a scenario, usually a script) as `opts` say.
pub fn explore(base: &Scenario, opts: &ExploreOptions) -> Result<ExploreReport, String> {
    base.validate().map_err(|e| e.to_string())?;
    check_options(opts)?;
    // Every schedule runs in this world with its own forced choices.
    let mut world = base.world.clone();
    world.explore = Some(opts.world.clone());
    base.spec.validate(&world).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut p = match opts.progress.as_deref().filter(|p| p.exists()) {
        Some(path) => load_progress(path)?,
        None => start(base, opts),
    };
    while !finished(&p, opts) {
        let batch = next_batch(&mut p, opts);
        let ran = run_batch(base, opts, &batch, p.report.default_choice_points);
        for (pending, ran) in batch.into_iter().zip(ran) {
            take_result(&mut p, opts, pending, ran);
            if p.report.failure.is_some() && opts.stop_at_first {
                break;
            }
        }
        if let Some(path) = &opts.progress {
            save_progress(path, &p)?;
        }
    }
    if matches!(opts.strategy, Strategy::Bounded { .. }) {
        p.report.exhausted = p.stack.is_empty() && p.report.failure.is_none();
    }
    p.report.wall_ms += started.elapsed().as_millis() as u64;
    Ok(p.report)
}

/// Refuse options that cannot run.
fn check_options(opts: &ExploreOptions) -> Result<(), String> {
    if opts.world.window_ms == 0 {
        return Err("the window must be at least 1 ms".into());
    }
    match opts.strategy {
        Strategy::Pct { depth: 0, .. } => Err("PCT's depth must be at least 1".into()),
        Strategy::Bounded { bound } if bound > 8 => Err(format!(
            "a bound of {bound} deviations is beyond what can be explored (at most 8)"
        )),
        _ => Ok(()),
    }
}

/// The state of a fresh exploration: the default schedule to run first.
fn start(base: &Scenario, opts: &ExploreOptions) -> Progress {
    let mut p = Progress {
        format: PROGRESS_FORMAT.into(),
        ..Progress::default()
    };
    p.stack.push(Pending {
        forced: Vec::new(),
        from: 0,
    });
    if let Strategy::Pct { .. } = opts.strategy {
        // PCT needs k and n of the default schedule first.
        let ran = run_one(base, opts.world.clone());
        p.report.default_choice_points = ran.choices.len() as u64;
        p.report.senders = senders(&ran.choices);
        p.stack.clear();
    }
    p
}

/// Distinct senders among the message choices.
fn senders(choices: &[Choice]) -> u64 {
    let set: BTreeSet<u64> = choices
        .iter()
        .filter(|c| c.kind == ChoiceKind::Message)
        .map(|c| c.actor)
        .collect();
    set.len() as u64
}

fn finished(p: &Progress, opts: &ExploreOptions) -> bool {
    if p.report.schedules >= opts.max_schedules {
        return true;
    }
    if p.report.failure.is_some() && opts.stop_at_first {
        return true;
    }
    match opts.strategy {
        Strategy::Bounded { .. } => p.stack.is_empty(),
        Strategy::Pct { runs, .. } => p.next_pct >= runs,
    }
}

/// The next schedules to run, in order.
fn next_batch(p: &mut Progress, opts: &ExploreOptions) -> Vec<Pending> {
    let room = (opts.max_schedules - p.report.schedules).min(BATCH as u64) as usize;
    match opts.strategy {
        Strategy::Bounded { .. } => {
            let take = room.min(p.stack.len());
            (0..take).filter_map(|_| p.stack.pop()).collect()
        }
        Strategy::Pct { runs, .. } => {
            let take = room.min((runs - p.next_pct) as usize);
            p.next_pct += take as u64;
            // PCT runs carry their run number in `from`.
            (0..take)
                .map(|i| Pending {
                    forced: Vec::new(),
                    from: (p.next_pct - take as u64 + i as u64) as u32,
                })
                .collect()
        }
    }
}

/// The schedule `pending` stands for.
fn schedule_of(p: &Pending, opts: &ExploreOptions, k: u64) -> Schedule {
    let mut s = opts.world.clone();
    s.hash_states = opts.prune || s.hash_states;
    match opts.strategy {
        Strategy::Bounded { .. } => {
            s.forced = p.forced.clone();
            // The choice points before `from` are its parent's, states
            // and all: only the later ones are hashed.
            s.hash_from = p.from;
        }
        Strategy::Pct { depth, seed, .. } => {
            s.pct = Some(Pct {
                seed: seed.wrapping_add(u64::from(p.from)),
                depth,
                steps: k.max(1) as u32,
            });
        }
    }
    s
}

/// Run a batch on the worker pool (`k`: PCT's choice points); results in
/// the batch's order.
fn run_batch(base: &Scenario, opts: &ExploreOptions, batch: &[Pending], k: u64) -> Vec<Ran> {
    let slots: Vec<Mutex<Option<Ran>>> = batch.iter().map(|_| Mutex::new(None)).collect();
    crate::pool::for_each(
        opts.jobs,
        batch.len() as u64,
        |_| true,
        |i| run_one(base, schedule_of(&batch[i as usize], opts, k)),
        |i, ran| *slots[i as usize].lock().expect("a slot") = Some(ran),
    );
    slots
        .into_iter()
        .map(|s| s.into_inner().expect("a slot").expect("every run ran"))
        .collect()
}

/// Count one run's result, note its coverage and states, and queue its
/// children.
fn take_result(p: &mut Progress, opts: &ExploreOptions, pending: Pending, ran: Ran) {
    p.report.schedules += 1;
    for c in &ran.choices {
        let kind = c.kind.name().to_string();
        *p.report.choice_points.entry(kind.clone()).or_default() += 1;
        p.places.insert((kind.clone(), c.place));
        if c.chosen != 0 {
            p.deviated.insert((kind, c.place));
        }
        if let Some(s) = c.state {
            p.states.insert(s);
        }
    }
    p.report.distinct_states = p.states.len() as u64;
    p.report.places = count_by_kind(&p.places);
    p.report.places_deviated = count_by_kind(&p.deviated);
    let r = &ran.judged.result;
    if fails(r.verdict) && p.report.failure.is_none() {
        let forced = match opts.strategy {
            Strategy::Bounded { .. } => pending.forced.clone(),
            Strategy::Pct { .. } => forced_of(&ran.choices),
        };
        p.report.failure = Some(Failure {
            schedule: p.report.schedules,
            forced,
            verdict: r.verdict,
            violated_rules: r.violated_rules.clone(),
            explanation: r.explanation.clone(),
        });
        return;
    }
    if let Strategy::Bounded { bound } = opts.strategy {
        queue_children(p, opts, bound, &pending, &ran.choices);
    }
}

fn count_by_kind(set: &BTreeSet<(String, u64)>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (k, _) in set {
        *out.entry(k.clone()).or_default() += 1;
    }
    out
}

/// The choices of a run that differ from the default.
pub fn forced_of(choices: &[Choice]) -> Vec<Forced> {
    choices
        .iter()
        .enumerate()
        .filter(|(_, c)| c.chosen != 0)
        .map(|(at, c)| Forced {
            at: at as u32,
            option: c.chosen,
        })
        .collect()
}

/// Queue the children of `pending`: one more deviation at each choice
/// point from `pending.from` on, unless the bound is reached or the state
/// at that point was seen before (with the same place and deviations
/// spent): its alternatives were tried from there already.
fn queue_children(
    p: &mut Progress,
    opts: &ExploreOptions,
    bound: u32,
    pending: &Pending,
    choices: &[Choice],
) {
    let used = pending.forced.len() as u32;
    if used >= bound {
        return;
    }
    let mut children = Vec::new();
    for (at, c) in choices.iter().enumerate().skip(pending.from as usize) {
        if opts.prune
            && let Some(state) = c.state
            && !p.seen.insert((state, c.place, used))
        {
            p.report.pruned += 1;
            continue;
        }
        for option in 1..c.options {
            let mut forced = pending.forced.clone();
            forced.push(Forced {
                at: at as u32,
                option,
            });
            children.push(Pending {
                forced,
                from: at as u32 + 1,
            });
        }
    }
    // Depth-first: the first child is taken next.
    p.stack.extend(children.into_iter().rev());
}

fn load_progress(path: &Path) -> Result<Progress, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let p: Progress = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a progress file: {e}", path.display()))?;
    if p.format != PROGRESS_FORMAT {
        return Err(format!(
            "{}: format {:?} is not {PROGRESS_FORMAT:?}",
            path.display(),
            p.format
        ));
    }
    Ok(p)
}

fn save_progress(path: &Path, p: &Progress) -> Result<(), String> {
    let text = serde_json::to_string(p).map_err(|e| e.to_string())?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The scenario that replays `failure` of an exploration of `base` with `opts`.
pub fn failing_scenario(base: &Scenario, opts: &ExploreOptions, failure: &Failure) -> Scenario {
    let mut s = opts.world.clone();
    s.forced = failure.forced.clone();
    s.pct = None;
    s.hash_states = false;
    s.hash_from = 0;
    with_schedule(base, s)
}

/// PCT's guarantee for a bug of depth `d` with `n` senders and `k` choice
/// points: each run finds it with probability at least 1/(n·k^(d-1)).
pub fn pct_guarantee(n: u64, k: u64, d: u32) -> f64 {
    let k = k.max(1) as f64;
    1.0 / (n.max(1) as f64 * k.powi(d.saturating_sub(1) as i32))
}

/// The report as the command prints it.
pub fn describe(report: &ExploreReport, opts: &ExploreOptions) -> String {
    let mut out = String::new();
    let kinds = |m: &BTreeMap<String, u64>| {
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    out += &format!(
        "schedules run: {}\ndistinct states: {} (choice points skipped as seen: {})\n",
        report.schedules, report.distinct_states, report.pruned
    );
    out += &format!(
        "choice points reached: {}\nplaces reached: {}\nplaces where an alternative was tried: {}\n",
        kinds(&report.choice_points),
        kinds(&report.places),
        kinds(&report.places_deviated)
    );
    match opts.strategy {
        Strategy::Bounded { bound } => {
            out += &format!(
                "strategy: depth-first, at most {bound} deviation(s), window {} ms, fault budget {}, stop budget {}: {}\n",
                opts.world.window_ms,
                opts.world.fault_budget,
                opts.world.stop_budget,
                if report.exhausted {
                    "exhausted (every schedule within the bound ran)"
                } else {
                    "not exhausted"
                }
            );
        }
        Strategy::Pct { depth, runs, .. } => {
            let (n, k) = (report.senders, report.default_choice_points);
            out += &format!(
                "strategy: PCT, depth d={depth}, {runs} runs; n={n} senders, k={k} choice points: each run finds a given bug of depth {depth} with probability >= 1/(n*k^(d-1)) = {:.3e}\n",
                pct_guarantee(n, k, depth)
            );
        }
    }
    match &report.failure {
        None => out += "no failing schedule\n",
        Some(f) => {
            out += &format!(
                "first failing schedule: #{} ({}; {} deviation(s): {})\n",
                f.schedule,
                verdict_name(f.verdict),
                f.forced.len(),
                f.forced
                    .iter()
                    .map(|x| format!("choice {} -> option {}", x.at, x.option))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if let Some(e) = &f.explanation {
                out += &format!("  {e}\n");
            }
        }
    }
    out
}

/// `base` with the planted bugs `names` switched on in its system's
/// section (its `ablations`); an error naming an unknown one.
pub fn ablated(base: &Scenario, names: &[String]) -> Result<Scenario, String> {
    crate::systems::with_ablations(base, names).map_err(|e| e.to_string())
}

/// Shrink a failing schedule: drop forced choices (and simplify the world
/// section) while the run still fails the same way; returns the smallest
/// scenario and the runs spent.
pub fn shrink(failing: &Scenario, verdict: Verdict, budget: usize) -> (Scenario, usize) {
    let mut still_fails = |s: &Scenario| crate::judge::judge(s, false).result.verdict == verdict;
    crate::shrink::world(failing, &mut still_fails, budget)
}

/// What `percsim explore` was asked: the scenario file, planted bugs to
/// switch on, where capsules go, and the runs spent shrinking.
#[derive(Debug, Clone)]
pub struct Command {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Planted bugs switched on.
    pub ablate: Vec<String>,
    /// Where the first failure's capsule is saved.
    pub out: PathBuf,
    /// Runs spent shrinking the failing schedule (0: none).
    pub shrink_budget: usize,
    /// How to explore.
    pub options: ExploreOptions,
}

/// Run `percsim explore`: save the first failure as a capsule, then print
/// the report (so that a reader that stops early, `percsim explore | head`,
/// cannot keep the capsule from being saved); the exit code is the
/// failure's verdict's (0 when none, 2 on bad input).
pub fn command(cmd: &Command) -> i32 {
    match command_inner(cmd) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

fn command_inner(cmd: &Command) -> Result<i32, String> {
    let base = Scenario::load(&cmd.scenario).map_err(|e| e.to_string())?;
    let base = ablated(&base, &cmd.ablate)?;
    let report = explore(&base, &cmd.options)?;
    let saved = report
        .failure
        .as_ref()
        .map(|failure| save_failure(cmd, &base, failure))
        .transpose();
    print!("{}", describe(&report, &cmd.options));
    println!("wall time: {:.1} s", report.wall_ms as f64 / 1000.0);
    let Some((lines, code)) = saved? else {
        return Ok(0);
    };
    print!("{lines}");
    Ok(code)
}

/// Shrinks the failing schedule `failure` (within the budget) and saves it
/// as a capsule: the lines to print after the report, and the exit code of
/// the failure's verdict.
fn save_failure(
    cmd: &Command,
    base: &Scenario,
    failure: &Failure,
) -> Result<(String, i32), String> {
    let failing = failing_scenario(base, &cmd.options, failure);
    let judged = crate::judge::judge(&failing, false);
    let shrunk =
        (cmd.shrink_budget > 0).then(|| shrink(&failing, judged.result.verdict, cmd.shrink_budget));
    std::fs::create_dir_all(&cmd.out)
        .map_err(|e| format!("cannot create {}: {e}", cmd.out.display()))?;
    let name = format!("{}-explore-{}.json", failing.system(), failure.schedule);
    let path = cmd.out.join(name);
    Capsule::new(
        &path,
        &failing,
        &judged,
        shrunk.as_ref().map(|(s, n)| (s, *n)),
    )
    .save(&path)
    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let mut lines = String::new();
    if let Some((s, runs)) = &shrunk {
        let left = s.world.explore.as_ref().map_or(0, |e| e.forced.len());
        lines += &format!("shrunk in {runs} runs to {left} forced choice(s)\n");
    }
    lines += &format!(
        "capsule: {} (percsim replay {})\n",
        path.display(),
        path.display()
    );
    Ok((lines, judged.result.verdict.exit_code()))
}
