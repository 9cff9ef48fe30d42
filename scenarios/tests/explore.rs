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
    assert_eq!(history_text(&steered), plain, "no deviation: the seed's run");
    let out = steered.run().expect("runs");
    assert!(out.summary.choices.len() > 10, "{}", out.summary.choices.len());
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

fn found(report: &ExploreReport) -> u64 {
    let f = report.failure.as_ref().expect("a failing schedule");
    assert_eq!(f.verdict, Verdict::Safety, "{f:?}");
    f.schedule
}

#[test]
fn no_rollback_record_is_found_deterministically_and_its_capsule_replays() {
    let base = script("percolator", "no-rollback-record");
    let bug = ablated(&base, &["no-rollback-record".to_string()]).expect("a planted bug");
    let o = opts(1, 2_500);
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
    let part = ExploreOptions {
        max_schedules: 40,
        progress: Some(progress.clone()),
        ..opts(1, 20)
    };
    let first = explore(&base, &part).expect("explores");
    assert_eq!(first.schedules, 40);
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
    assert!(e.contains("no-such-bug") && e.contains("no-rollback-record"), "{e}");
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
    assert_eq!(a, ExploreReport { wall_ms: a.wall_ms, ..b });
    assert_eq!(a.schedules, 20);
    assert!(a.senders > 1 && a.default_choice_points > 10, "{a:?}");
    assert!(a.places_deviated.get("message").copied().unwrap_or(0) > 0);
}
