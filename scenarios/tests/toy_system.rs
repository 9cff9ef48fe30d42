//! A system added from outside the core: the toy register of
//! `scenarios/tests/toy/` (see `docs/adding-a-system.md`), registered at run
//! time and driven through the generic paths only: a scenario file of it
//! loads, runs and is judged; a campaign over it runs, judges every seed,
//! summarises, saves capsules of failures and shrinks them; its planted bug
//! is caught and the faithful toy passes.

mod harness;
mod toy;

use percsim_scenarios::campaign::{Mix, Verdict};
use percsim_scenarios::capsule::Capsule;
use percsim_scenarios::fuzz::{self, Options};
use percsim_scenarios::histfile::{self, check_capsule};
use percsim_scenarios::report;
use percsim_scenarios::scenario::Scenario;
use percsim_scenarios::system::SystemDef;
use percsim_scenarios::systems;
use std::path::{Path, PathBuf};
use std::sync::Once;
use toy::protocol::{ToyAblation, ToyPoint};

/// The toy, registered once for the whole test binary.
fn toy() -> &'static dyn SystemDef {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| systems::register(&toy::TOY).expect("the toy registers once"));
    systems::find(toy::NAME).expect("registered")
}

fn scenario_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/toy/scenario.json")
}

fn mix(ablations: &[&str]) -> Mix {
    harness::mix(toy::NAME, ablations)
}

/// A fresh folder for a test's capsules.
fn out_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("percsim-toy-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Run a campaign of seeds `0..seeds`; without shrinking, each seed runs
/// twice and a difference in the history is a nondeterministic verdict.
fn campaign(seeds: u64, mix: Mix, out: PathBuf, shrink_budget: usize) -> fuzz::Summary {
    let opts = Options {
        start: 0,
        end: seeds,
        jobs: 2,
        mix,
        out,
        shrink_budget,
        check_determinism: shrink_budget == 0,
        progress: false,
        ..Options::default()
    };
    fuzz::run(&opts, None).expect("no JSON lines to write")
}

#[test]
fn a_scenario_file_of_the_toy_loads_runs_and_passes() {
    toy();
    let (s, judged) = harness::loads_runs_and_passes(&scenario_file(), "toy", "read-write");
    let spec = toy::def::ToySpec::of(&s).expect("a toy scenario");
    assert_eq!(spec.cluster.crashes[0].point, ToyPoint::AfterApply);
    let r = &judged.result;
    assert!(r.committed > 20, "{} committed", r.committed);
    let count = |k: &str| r.counters.get(k).copied().unwrap_or(0);
    assert_eq!(count("fault.crash_at_step"), 2, "{:?}", r.counters);
    assert!(count("fault.kill_data_server") >= 1, "{:?}", r.counters);
    assert!(count("toy.write_repeated") >= 1, "{:?}", r.counters);
    let history = judged.history.expect("a history");
    let history = history.transactions().expect("a percsim-history/1 history");
    let versions = &history.final_state.cells[0].versions;
    assert!(!versions.is_empty());
}

#[test]
fn the_toy_section_and_workload_errors_name_the_field() {
    toy();
    let cases = [
        (
            "/toy/clients",
            serde_json::json!(0),
            "toy.clients: must be 1 to 100, found 0",
        ),
        (
            "/toy/persist_ms",
            serde_json::json!(20_000),
            "toy.persist_ms: must be at most 10000",
        ),
        (
            "/toy/crashes/0/nth",
            serde_json::json!(0),
            "toy.crashes[0].nth: counts from 1",
        ),
        (
            "/toy/crashes/1/point",
            serde_json::json!("nowhere"),
            "toy.crashes[1].point: unknown crash point \"nowhere\" (known: after_apply, after_durable)",
        ),
        (
            "/toy/ablations",
            serde_json::json!(["no-such-bug"]),
            "toy.ablations[0]: unknown planted bug \"no-such-bug\"",
        ),
        (
            "/toy/crashes/0/restart_after_ms",
            serde_json::json!(4_000_000),
            "toy.crashes[0].restart_after_ms: more than one simulated hour",
        ),
        (
            "/workload/key",
            serde_json::json!(""),
            "workload.key: must not be empty",
        ),
        (
            "/workload/think_ms",
            serde_json::json!(4_000_000),
            "workload.think_ms: more than one simulated hour",
        ),
        (
            "/workload/write_fraction",
            serde_json::json!(1.5),
            "workload.write_fraction: must be between 0 and 1, found 1.5",
        ),
        (
            "/world/faults/schedule/1/fault/node",
            serde_json::json!("client-9"),
            "world.faults.schedule[1]: no node named \"client-9\" (nodes: primary, client-0, client-1, client-2)",
        ),
    ];
    harness::errors_name_the_field(&scenario_file(), &cases);
    let text = std::fs::read_to_string(scenario_file()).unwrap();
    let base: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut s = base.clone();
    s["toy"]["bogus"] = serde_json::json!(1);
    let e = Scenario::parse(&s.to_string()).unwrap_err().to_string();
    assert!(e.contains("toy.bogus: unknown field `bogus`"), "{e}");
    // The defaults stand in for a missing section.
    let mut s = base.clone();
    s.as_object_mut().unwrap().remove("toy");
    s["world"]["faults"]["schedule"] = serde_json::json!([]);
    let parsed = Scenario::parse(&s.to_string()).unwrap();
    assert_eq!(
        toy::def::ToySpec::of(&parsed).unwrap().cluster,
        toy::config::ToyConfig::default()
    );
}

#[test]
fn the_registry_takes_the_toy_once_and_checks_a_campaign_of_it_by_name() {
    let t = toy();
    let e = systems::register(&toy::TOY).unwrap_err();
    assert!(e.contains("already registered"), "{e}");
    assert!(
        systems::select("all")
            .unwrap()
            .iter()
            .any(|s| s.name() == t.name())
    );
    let kill_liveness = Mix {
        faults: vec!["kill_liveness".into()],
        ..mix(&[])
    };
    let e = kill_liveness.validate().unwrap_err();
    assert!(
        e.contains("system toy does not honour fault class \"kill_liveness\""),
        "{e}"
    );
    mix(&["ack-before-durable"]).validate().unwrap();
    let every: Vec<String> = systems::names().iter().map(|n| n.to_string()).collect();
    let narrowed = Mix {
        systems: every,
        ablations: vec!["ack-before-durable".into()],
        ..Mix::default()
    }
    .narrowed()
    .unwrap();
    assert_eq!(narrowed.systems, ["toy"]);
    let e = t
        .kill_table(&Default::default())
        .expect_err("the toy has no kill table");
    assert_eq!(e, "system toy has no kill table");
}

/// `--faults` reaches the toy's generated scenarios: only the named
/// classes are ever on.
#[test]
fn the_toy_campaign_draws_only_the_named_classes() {
    toy();
    let only = Mix {
        faults: vec!["crash_at_step".into()],
        ..mix(&[])
    };
    let mut crashed = 0;
    for seed in 0..30 {
        let s = toy::def::generate(seed, &only);
        assert!(s.world.faults.random.classes().is_empty(), "seed {seed}");
        crashed += usize::from(
            !toy::def::ToySpec::of(&s)
                .unwrap()
                .cluster
                .crashes
                .is_empty(),
        );
    }
    assert!(crashed > 5, "crash_at_step was on in {crashed} of 30 seeds");
}

/// Every `fuzz` flag a campaign of the toy takes is obeyed or refused: a
/// kill named by the toy's own role (`kill:primary`) draws that kill
/// only; a class it cannot honour (`clock_skew`, another system's role)
/// and a workload it does not campaign are refused naming them.
#[test]
fn the_toy_obeys_every_campaign_flag_or_refuses_it() {
    let t = toy();
    let primary = Mix {
        faults: vec!["kill:primary".into()],
        ..mix(&[])
    };
    primary.validate().unwrap();
    let drawn = primary.for_system(t);
    assert_eq!(drawn.faults, ["kill_data_server"]);
    let mut killed = 0;
    for seed in 0..30 {
        let s = t.generate(seed, &drawn);
        let classes: Vec<&str> = s
            .world
            .faults
            .random
            .classes()
            .iter()
            .map(|c| c.0)
            .collect();
        assert!(
            classes.iter().all(|c| *c == "kill_data_server"),
            "{classes:?}"
        );
        assert!(
            toy::def::ToySpec::of(&s)
                .unwrap()
                .cluster
                .crashes
                .is_empty()
        );
        killed += classes.len();
    }
    assert!(killed > 5, "kill:primary was on in {killed} of 30 seeds");
    assert!(t.class_names().contains(&"kill:primary".to_string()));
    for (faults, workloads, want) in [
        (
            &["clock_skew"][..],
            &[][..],
            "system toy does not honour fault class \"clock_skew\"",
        ),
        (
            &["kill:broker"][..],
            &[][..],
            "system toy does not honour fault class \"kill:broker\"",
        ),
        (&[][..], &["script"][..], "no workload named for system toy"),
    ] {
        let m = Mix {
            faults: faults.iter().map(|s| s.to_string()).collect(),
            workloads: workloads.iter().map(|s| s.to_string()).collect(),
            ..mix(&[])
        };
        let e = m.validate().unwrap_err();
        assert!(e.contains(want), "{e}");
    }
}

/// Seeds of the faithful campaign: 40, or `PERCSIM_SEEDS`.
fn faithful_seeds() -> u64 {
    std::env::var("PERCSIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40)
}

#[test]
fn a_campaign_over_the_faithful_toy_passes_and_summarises() {
    toy();
    let out = out_dir("faithful");
    let n = faithful_seeds();
    let summary = campaign(n, mix(&[]), out.clone(), 0);
    assert_eq!(summary.seeds, n);
    assert_eq!(summary.worst(), Verdict::Pass, "{}", summary.render());
    assert_eq!(summary.systems.get("toy"), Some(&n));
    let text = summary.render();
    assert!(
        text.contains(&format!("workloads           read-write={n}")),
        "{text}"
    );
    for class in [
        "crash_at_step",
        "kill_data_server",
        "kill_client",
        "duplicate",
    ] {
        let n = summary
            .counters
            .get(&format!("fault.{class}"))
            .copied()
            .unwrap_or(0);
        assert!(n > 0, "fault class {class} never fired:\n{text}");
    }
    // Its own coverage item is listed and covered; no other system's
    // items, points or sections are.
    let own = toy::def::ToyCoverage::CrashAtPoint.item();
    assert!(!summary.never_happened().contains(&own), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains(own.description))
        .unwrap_or_else(|| panic!("{} not listed:\n{text}", own.name));
    assert!(!line.contains("never happened"), "{line}");
    for absent in [
        "cleanups:",
        "aborts by reason",
        "crash and pause points",
        "at a named protocol point",
        "coordinator restart",
    ] {
        assert!(!text.contains(absent), "{absent}:\n{text}");
    }
    assert!(!out.exists(), "a passing campaign saves no capsule");
}

#[test]
fn the_planted_bug_is_caught_capsuled_and_shrunk() {
    let t = toy();
    let out = out_dir("ablated");
    let bug = ToyAblation::AckBeforeDurable.name();
    let summary = campaign(16, mix(&[bug]), out.clone(), 12);
    assert_eq!(summary.worst(), Verdict::Safety, "{}", summary.render());
    let ((system, seed), failure) = summary
        .failures
        .iter()
        .find(|(_, f)| f.verdict == Verdict::Safety)
        .expect("a safety failure");
    assert_eq!(system, "toy");
    let text = summary.render();
    assert!(
        text.contains(&format!("failure: toy seed {seed} Safety")),
        "{text}"
    );
    // The capsule: named after the system, replayable, re-judged offline.
    let path = PathBuf::from(failure.capsule.as_ref().expect("a capsule"));
    assert_eq!(path, out.join(format!("toy-seed-{seed}.json")));
    let capsule = Capsule::load(&path).unwrap();
    assert_eq!(capsule.system.as_deref(), Some("toy"));
    assert_eq!(capsule.verdict, Verdict::Safety);
    assert_eq!(capsule.violated_rules, failure.violated_rules);
    let replayed = fuzz::judge(&capsule.scenario, false);
    assert_eq!(replayed.result.verdict, Verdict::Safety);
    assert_eq!(replayed.result.violated_rules, failure.violated_rules);
    let mut report = Vec::new();
    assert_eq!(check_capsule(&path, false, &mut report), 1);
    let page = report::html(&histfile::load(&path).unwrap(), &path.display().to_string());
    assert!(page.contains("<svg"), "the report draws the timeline");
    for rule in &failure.violated_rules {
        assert!(page.contains(rule.as_str()), "the report names {rule}");
    }
    // The generic shrink kept a scenario that fails the same way and is no
    // bigger than the one drawn.
    let shrunk = capsule.shrunk.expect("a shrunk scenario");
    let runs = capsule.shrink_runs.expect("shrink runs");
    assert!(runs > 0 && runs <= 12, "{runs}");
    let drawn = t.generate(*seed, &mix(&[bug]));
    assert!(shrunk.world.run_ms <= drawn.world.run_ms);
    assert!(
        shrunk.world.faults.random.classes().len() <= drawn.world.faults.random.classes().len()
    );
    assert_eq!(
        fuzz::judge(&shrunk, false).result.verdict,
        Verdict::Safety,
        "the shrunk scenario still fails"
    );
    // The same seeds with the mechanism in place pass.
    let faithful = campaign(16, mix(&[]), out_dir("ablated-baseline"), 0);
    assert_eq!(faithful.worst(), Verdict::Pass, "{}", faithful.render());
}

/// The generic shrink takes the world section apart while the failure
/// persists: a failure that needs nothing of the world shrinks to a world
/// without faults and a short run.
#[test]
fn the_generic_shrink_simplifies_the_world_while_the_failure_persists() {
    let t = toy();
    let seed = (0..50)
        .find(|s| {
            let w = &t.generate(*s, &mix(&[])).world;
            w.faults.random.classes().len() >= 3
        })
        .expect("a seed with three fault classes");
    let mut always = |_: &Scenario| true;
    let (shrunk, runs) = t.shrink(seed, &mix(&[]), &mut always, 100);
    assert!(shrunk.world.faults.random.classes().is_empty());
    assert!(shrunk.world.run_ms < 200, "{}", shrunk.world.run_ms);
    assert!(runs >= 4, "{runs}");
    let mut never = |_: &Scenario| false;
    let (same, _) = t.shrink(seed, &mix(&[]), &mut never, 100);
    assert_eq!(
        same.to_value().unwrap(),
        t.generate(seed, &mix(&[])).to_value().unwrap()
    );
}

/// The toy is a test's system: the `percsim` binary does not know it.
#[test]
fn the_percsim_binary_does_not_know_the_toy() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_percsim"))
        .arg("systems")
        .output()
        .expect("percsim runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let listed: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split(':').next())
        .collect();
    assert!(listed.len() >= 2, "{text}");
    assert!(!listed.contains(&toy::NAME), "{text}");
}

/// A toy campaign in which the primary never crashed at a point flags the
/// toy's own item as never happened; one in which it crashed does not.
#[test]
fn the_toys_own_item_is_flagged_when_its_counter_never_moved() {
    toy();
    let own = toy::def::ToyCoverage::CrashAtPoint.item();
    let line = |counters: &[(&str, u64)]| -> serde_json::Value {
        let counters: std::collections::BTreeMap<&str, u64> = counters.iter().copied().collect();
        serde_json::json!({
            "system": toy::NAME, "seed": 1, "verdict": "pass", "workload": "read-write",
            "committed": 1, "aborted": 0, "unknown": 0, "sim_ms": 10,
            "violated_rules": [], "wall_ms": 1,
            "counters": counters
        })
    };
    let merged = |v: serde_json::Value| {
        fuzz::Summary::merge_jsonl(vec![("toy.jsonl".to_string(), format!("{v}\n").as_bytes())])
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let none = merged(line(&[]));
    assert!(none.never_happened().contains(&own), "{}", none.render());
    let text = none.render();
    let flagged = text
        .lines()
        .find(|l| l.contains(own.description))
        .expect("listed");
    assert!(flagged.ends_with("0   <-- never happened"), "{flagged}");
    let some = merged(line(&[(own.counter.as_str(), 2)]));
    assert!(!some.never_happened().contains(&own), "{}", some.render());
}

/// A crash of the toy's section keyed to a time its point is never reached
/// fails a single run (exit code 7) naming the entry, through the generic
/// run path; the same entry at a time the run reaches fires and passes.
#[test]
fn a_configured_crash_of_the_toy_that_never_fires_fails_the_run_naming_it() {
    toy();
    let text = std::fs::read_to_string(scenario_file()).expect("the toy's file");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    v["toy"]["crashes"][1]["nth"] = serde_json::json!(100_000);
    let never = Scenario::from_value(v).expect("a toy scenario");
    let entry =
        "toy.crashes[1] (kill the primary the 100000th time it reaches after_durable) never fired";
    let mut judged = fuzz::judge(&never, false);
    // A campaign's judgement does not ask for it; a single run does.
    assert_eq!(
        judged.result.verdict,
        Verdict::Pass,
        "{:?}",
        judged.result.explanation
    );
    percsim_scenarios::judge::require_fired(&never, &mut judged);
    let r = &judged.result;
    assert_eq!(r.verdict.exit_code(), 7, "{:?}", r.explanation);
    assert_eq!(r.not_fired, [entry]);
    let said = r.explanation.as_deref().unwrap_or_default();
    assert!(said.contains(&format!("not fired: {entry}")), "{said}");
    // A scenario file run as a test fails with it too.
    let run = percsim_scenarios::regress::run(&never).expect("runs");
    assert_eq!(run.problems, [format!("not fired: {entry}")]);
    // As written, both entries fire.
    let fired = Scenario::load(&scenario_file()).expect("the toy's file");
    let mut judged = fuzz::judge(&fired, false);
    percsim_scenarios::judge::require_fired(&fired, &mut judged);
    assert_eq!(
        judged.result.verdict,
        Verdict::Pass,
        "{:?}",
        judged.result.explanation
    );
    assert!(judged.result.not_fired.is_empty());
}
