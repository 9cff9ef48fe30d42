//! `percsim explore`: the default schedule is the seed's run, a forced
//! choice changes it, planted bugs are found from the committed scripts
//! with the same count of schedules every time, the faithful build is
//! explored exhaustively without a violation, a failure's capsule replays
//! it, and an exploration resumes from its progress file.

use percsim_scenarios::Scenario;
use percsim_scenarios::explore::{
    ExploreOptions, ExploreReport, Strategy, ablated, explore, failing_scenario,
};
use percsim_scenarios::judge::{Verdict, judge};
use percsim_sim::{Forced, Schedule};
use std::path::{Path, PathBuf};

fn script(system: &str, name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(system)
        .join("explore")
        .join(format!("{name}.json"));
    Scenario::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn history_text(s: &Scenario) -> String {
    let out = s.run().expect("the scenario runs");
    let mut h = out.history;
    h.set_scenario(serde_json::Value::Null);
    serde_json::to_string(&h).expect("a history serializes")
}

fn opts(bound: u32, window_ms: u64) -> ExploreOptions {
    ExploreOptions {
        strategy: Strategy::Bounded { bound },
        world: Schedule {
            window_ms,
            ..Schedule::default()
        },
        ..ExploreOptions::default()
    }
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("percsim-explore-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

#[test]
fn the_default_schedule_is_the_seeds_run_and_a_forced_choice_changes_it() {
    let base = script("percolator", "three-txns");
    let plain = history_text(&base);
    let mut steered = base.clone();
    steered.world.explore = Some(Schedule::default());
    assert_eq!(
        history_text(&steered),
        plain,
        "no deviation: the seed's run"
    );
    let out = steered.run().expect("runs");
    assert!(
        out.summary.choices.len() > 10,
        "{}",
        out.summary.choices.len()
    );
    assert!(out.summary.choices.iter().all(|c| c.chosen == 0));
    assert!(base.run().expect("runs").summary.choices.is_empty());
    // Losing the first message (a fault budget of one) changes the run.
    let mut lost = base.clone();
    lost.world.explore = Some(Schedule {
        fault_budget: 1,
        forced: vec![Forced { at: 0, option: 2 }],
        ..Schedule::default()
    });
    assert_ne!(history_text(&lost), plain, "a lost message changes the run");
}

/// The history of `base` run with `schedule` on the calling thread, as
/// explore runs its schedules, and on a fresh thread.
fn here_and_fresh(base: &Scenario, schedule: &Schedule) -> (String, String) {
    let mut world = base.world.clone();
    world.explore = Some(schedule.clone());
    let here = base
        .run_here(&world)
        .expect("the scenario runs here")
        .history;
    let here = serde_json::to_string(&here).expect("a history serializes");
    let mut fresh = base.clone();
    fresh.world = world;
    (here, history_text(&fresh))
}

#[test]
fn a_run_on_a_reused_thread_records_what_a_fresh_thread_does() {
    let base = script("percolator", "three-txns");
    let mut probe = base.clone();
    probe.world.explore = Some(Schedule {
        stop_budget: 1,
        ..Schedule::default()
    });
    let choices = probe.run().expect("runs").summary.choices;
    let stop = choices
        .iter()
        .position(|c| c.kind == percsim_sim::ChoiceKind::Stop && c.options > 1)
        .expect("a named point where a stop may be tried") as u32;
    let f = |at, option| vec![Forced { at, option }];
    let schedules = [
        Schedule::default(),
        Schedule {
            forced: f(3, 1),
            ..Schedule::default()
        },
        Schedule {
            fault_budget: 1,
            forced: f(0, 2),
            ..Schedule::default()
        },
        Schedule {
            stop_budget: 1,
            forced: f(stop, 1),
            ..Schedule::default()
        },
    ];
    let mut distinct = std::collections::BTreeSet::new();
    // Every schedule twice, in turn, on this one thread.
    for schedule in schedules.iter().chain(&schedules) {
        let (here, fresh) = here_and_fresh(&base, schedule);
        assert!(here == fresh, "{schedule:?}: the runs differ");
        distinct.insert(here);
    }
    assert!(distinct.len() >= 3, "the schedules make different runs");
}

fn found(report: &ExploreReport) -> u64 {
    let f = report.failure.as_ref().expect("a failing schedule");
    assert_eq!(f.verdict, Verdict::Safety, "{f:?}");
    f.schedule
}

#[test]
fn no_rollback_record_is_found_deterministically_and_its_capsule_replays() {
    let base = script("percolator", "no-rollback-record");
    let bug = ablated(&base, &["no-rollback-record".to_string()]).expect("a planted bug");
    // A reader rolls back only an owner whose primary is stale or whose
    // session ended: the bug needs the owner stopped (one stop).
    let o = ExploreOptions {
        world: Schedule {
            window_ms: 2_500,
            stop_budget: 1,
            stop_ms: 2_000,
            ..Schedule::default()
        },
        ..opts(1, 2_500)
    };
    let first = explore(&bug, &o).expect("explores");
    let n = found(&first);
    let again = explore(
        &bug,
        &ExploreOptions {
            jobs: 2,
            ..o.clone()
        },
    )
    .expect("explores");
    assert_eq!(found(&again), n, "the same count on every run, any workers");
    let failure = first.failure.as_ref().expect("a failure");
    let replay = failing_scenario(&bug, &o, failure);
    assert_eq!(judge(&replay, false).result.verdict, Verdict::Safety);
    // The replayed scenario survives a round trip through its JSON (a capsule).
    let text = serde_json::to_string(&replay).expect("serializes");
    let back = Scenario::parse(&text).expect("parses");
    assert_eq!(judge(&back, false).result.verdict, Verdict::Safety);
    // The faithful protocol: every schedule within the bound, no violation.
    let faithful = explore(&base, &o).expect("explores");
    assert!(faithful.failure.is_none(), "{:?}", faithful.failure);
    assert!(faithful.exhausted);
    assert!(faithful.schedules > n, "{} schedules", faithful.schedules);
}

#[test]
fn an_exploration_resumes_from_its_progress_file() {
    let base = script("percolator", "three-txns");
    let whole = explore(&base, &opts(1, 20)).expect("explores");
    assert!(whole.exhausted && whole.failure.is_none());
    let progress = tmp("progress.json");
    let _ = std::fs::remove_file(&progress);
    assert!(whole.schedules > 10, "{} schedules", whole.schedules);
    let part = ExploreOptions {
        max_schedules: 10,
        progress: Some(progress.clone()),
        ..opts(1, 20)
    };
    let first = explore(&base, &part).expect("explores");
    assert_eq!(first.schedules, 10);
    assert!(!first.exhausted);
    let rest = ExploreOptions {
        max_schedules: u64::MAX,
        ..part
    };
    let resumed = explore(&base, &rest).expect("resumes");
    assert_eq!(resumed.schedules, whole.schedules);
    assert_eq!(resumed.distinct_states, whole.distinct_states);
    assert!(resumed.exhausted);
}

#[test]
fn bad_options_and_unknown_bugs_are_refused_by_name() {
    let base = script("percolator", "three-txns");
    let e = explore(&base, &opts(1, 0)).unwrap_err();
    assert!(e.contains("window"), "{e}");
    let e = explore(&base, &opts(9, 20)).unwrap_err();
    assert!(e.contains("bound of 9"), "{e}");
    let pct = ExploreOptions {
        strategy: Strategy::Pct {
            depth: 0,
            runs: 1,
            seed: 0,
        },
        ..opts(1, 20)
    };
    assert!(explore(&base, &pct).unwrap_err().contains("depth"));
    let e = ablated(&base, &["no-such-bug".to_string()]).unwrap_err();
    assert!(
        e.contains("no-such-bug") && e.contains("no-rollback-record"),
        "{e}"
    );
}

#[test]
fn pct_runs_the_same_schedules_every_time() {
    let base = script("percolator", "three-txns");
    let pct = ExploreOptions {
        strategy: Strategy::Pct {
            depth: 2,
            runs: 20,
            seed: 7,
        },
        ..opts(1, 20)
    };
    let a = explore(&base, &pct).expect("explores");
    let b = explore(&base, &pct).expect("explores");
    assert_eq!(
        a,
        ExploreReport {
            wall_ms: a.wall_ms,
            ..b
        }
    );
    assert_eq!(a.schedules, 20);
    assert!(a.senders > 1 && a.default_choice_points > 10, "{a:?}");
    assert!(a.places_deviated.get("message").copied().unwrap_or(0) > 0);
}

/// One planted bug found by explore: the script, its settings, and the
/// schedules to the first failure (the same on every run), and the
/// faithful build's exhaustive count on the same script and settings.
struct Found {
    system: &'static str,
    script: &'static str,
    bug: &'static str,
    bound: u32,
    window_ms: u64,
    stop_budget: u32,
    stop_ms: u64,
    schedules: u64,
    faithful: u64,
}

const fn found_at(
    system: &'static str,
    script: &'static str,
    bug: &'static str,
    (bound, window_ms, stop_budget, stop_ms): (u32, u64, u32, u64),
    (schedules, faithful): (u64, u64),
) -> Found {
    Found {
        system,
        script,
        bug,
        bound,
        window_ms,
        stop_budget,
        stop_ms,
        schedules,
        faithful,
    }
}

/// The second column of the kill table (docs/measurements.md), depth-first
/// with the bound given (one deviation but for Omid's
/// `reply-before-commit-table`, which needs two late writes).
const FOUND: &[Found] = &[
    found_at(
        "percolator",
        "three-txns",
        "prewrite-ignores-locks",
        (1, 20, 0, 2_000),
        (1, 44),
    ),
    found_at(
        "percolator",
        "three-txns",
        "wall-clock-start-ts",
        (1, 20, 0, 2_000),
        (1, 44),
    ),
    found_at(
        "percolator",
        "lost-update",
        "no-write-conflict-check",
        (1, 20, 0, 2_000),
        (1, 43),
    ),
    found_at(
        "percolator",
        "reader-after-crash",
        "get-ignores-locks",
        (1, 20, 1, 2_000),
        (33, 96),
    ),
    found_at(
        "percolator",
        "reader-after-crash",
        "commit-without-lock-check",
        (1, 20, 1, 2_000),
        (33, 96),
    ),
    found_at(
        "percolator",
        "reader-after-crash",
        "secondaries-first",
        (1, 20, 1, 2_000),
        (38, 96),
    ),
    found_at(
        "percolator",
        "reader-after-crash",
        "rollback-without-primary-check",
        (1, 20, 1, 2_000),
        (34, 96),
    ),
    found_at(
        "percolator",
        "reader-after-crash",
        "roll-forward-reader-ts",
        (1, 20, 1, 2_000),
        (34, 96),
    ),
    found_at(
        "percolator",
        "no-rollback-record",
        "no-rollback-record",
        (1, 2_500, 1, 2_000),
        (20, 105),
    ),
    found_at(
        "pulsar",
        "no-max-read-position",
        "no-max-read-position",
        (1, 20, 0, 2_000),
        (1, 41),
    ),
    found_at(
        "pulsar",
        "replay-ignores-aborted",
        "replay-ignores-aborted",
        (1, 20, 0, 2_000),
        (1, 31),
    ),
    found_at(
        "pulsar",
        "timeout-races-commit",
        "timeout-races-commit",
        (1, 400, 0, 2_000),
        (22, 66),
    ),
    found_at(
        "pulsar",
        "commit-before-log-durable",
        "commit-before-log-durable",
        (1, 20, 1, 2_000),
        (17, 116),
    ),
    found_at(
        "pulsar",
        "pending-ack-not-durable",
        "pending-ack-not-durable",
        (1, 20, 1, 200),
        (82, 122),
    ),
    found_at(
        "percolator",
        "scan-after-crash",
        "scan-skips-locks",
        (1, 20, 1, 2_000),
        (12, 96),
    ),
    found_at(
        "percolator",
        "oracle-restart",
        "oracle-forgets",
        (1, 20, 1, 200),
        (51, 70),
    ),
    found_at(
        "percolator",
        "observer-restart",
        "observer-ignores-ack",
        (1, 20, 1, 2_000),
        (1, 554),
    ),
    found_at(
        "percolator",
        "observer-restart",
        "notify-cleared-early",
        (1, 20, 1, 2_000),
        (86, 554),
    ),
    found_at(
        "pulsar",
        "marker-by-producer-epoch",
        "marker-by-producer-epoch",
        (1, 250, 0, 2_000),
        (37, 82),
    ),
    found_at(
        "omid",
        "decision-race",
        "no-invalidation",
        (1, 100, 0, 2_000),
        (21, 38),
    ),
    found_at(
        "omid",
        "decision-race",
        "reader-skips-commit-table",
        (1, 100, 0, 2_000),
        (21, 38),
    ),
    found_at(
        "omid",
        "decision-race",
        "shadow-cells-before-commit-table",
        (1, 100, 0, 2_000),
        (22, 38),
    ),
    found_at(
        "omid",
        "decision-race",
        "reply-before-commit-table",
        (2, 300, 1, 1_000),
        (80, 1_384),
    ),
    found_at(
        "omid",
        "low-watermark",
        "no-low-watermark-abort",
        (1, 20, 0, 2_000),
        (1, 68),
    ),
    found_at(
        "omid",
        "tso-takeover",
        "no-tso-fencing",
        (1, 20, 1, 500),
        (26, 114),
    ),
];

/// Explore every listed bug of `system` and the faithful build on the same
/// script and settings: the counts are the table's (every row's measured
/// counts are printed first, then the first row that differs fails).
fn found_and_clean(system: &str) {
    let rows: Vec<_> = FOUND
        .iter()
        .filter(|f| f.system == system)
        .map(|f| (f, explore_row(f)))
        .collect();
    for (f, (bug, faithful)) in &rows {
        eprintln!(
            "{} {}: found at {:?}, faithful {} (table: {}, {})",
            f.script,
            f.bug,
            bug.failure.as_ref().map(|x| x.schedule),
            faithful.schedules,
            f.schedules,
            f.faithful
        );
    }
    for (f, (report, faithful)) in &rows {
        assert_eq!(
            report.failure.as_ref().map(|x| (x.schedule, x.verdict)),
            Some((f.schedules, Verdict::Safety)),
            "{} on {}: {:?}",
            f.bug,
            f.script,
            report.failure
        );
        assert!(
            faithful.failure.is_none(),
            "{}: {:?}",
            f.script,
            faithful.failure
        );
        assert!(faithful.exhausted, "{}", f.script);
        assert_eq!(faithful.schedules, f.faithful, "{}", f.script);
    }
}

/// A row's exploration under its bug, and of the faithful build, on its
/// script and settings.
fn explore_row(f: &Found) -> (ExploreReport, ExploreReport) {
    let base = script(f.system, f.script);
    let o = ExploreOptions {
        world: Schedule {
            window_ms: f.window_ms,
            stop_budget: f.stop_budget,
            stop_ms: f.stop_ms,
            ..Schedule::default()
        },
        ..opts(f.bound, f.window_ms)
    };
    let bug = ablated(&base, &[f.bug.to_string()]).expect("a planted bug");
    let report = explore(&bug, &o).expect("explores");
    (report, explore(&base, &o).expect("explores"))
}

#[test]
fn every_listed_percolator_bug_is_found_and_the_faithful_build_is_clean() {
    found_and_clean("percolator");
}

#[test]
fn every_listed_pulsar_bug_is_found_and_the_faithful_build_is_clean() {
    found_and_clean("pulsar");
}

#[test]
fn every_listed_omid_bug_is_found_and_the_faithful_build_is_clean() {
    found_and_clean("omid");
}

/// Every planted bug of every registered system is in the table but the
/// liveness-only ones (explore counts no liveness verdict).
#[test]
fn the_table_lists_every_planted_safety_bug() {
    let liveness = ["no-lock-refresh", "stale-by-wall-time-only"];
    for system in percsim_scenarios::systems::all() {
        for (bug, _) in system.ablations() {
            let listed = FOUND
                .iter()
                .any(|f| f.system == system.name() && f.bug == bug);
            let excused = liveness.contains(&bug);
            assert!(listed != excused, "{}: {bug}", system.name());
        }
    }
}

/// A message's place in the explorer's state is its sender, its receiver
/// and what it carries: on a single Pulsar broker the coordinator's abort
/// marker leaves the node that sends the broker's other messages, and
/// pruning must not merge the state where the marker is late with one
/// where another of that node's messages is.
#[test]
fn one_brokers_late_marker_is_found_with_pruning_on() {
    let two = script("pulsar", "marker-by-producer-epoch");
    let mut v = two.to_value().expect("a scenario's JSON");
    assert_eq!(v["pulsar"]["brokers"], 2, "the committed script has two");
    v["pulsar"]["brokers"] = 1.into();
    let one = Scenario::parse(&v.to_string()).expect("parses");
    let bug = ablated(&one, &["marker-by-producer-epoch".to_string()]).expect("a planted bug");
    let o = opts(1, 250);
    let pruned = explore(&bug, &o).expect("explores");
    let unpruned = explore(
        &bug,
        &ExploreOptions {
            prune: false,
            ..o.clone()
        },
    )
    .expect("explores");
    // Both find it, and pruning spends no more schedules than not pruning.
    let (at, full) = (found(&pruned), found(&unpruned));
    assert!(at <= full, "pruned: {at}, unpruned: {full}");
    let faithful = explore(&one, &o).expect("explores");
    assert!(faithful.failure.is_none(), "{:?}", faithful.failure);
    assert!(faithful.exhausted);
}
