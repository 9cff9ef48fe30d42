//! Pulsar scripted through the engine of `percsim_scenarios::script`: the
//! regression cases of `scenarios/examples/pulsar/script/` pass, and each
//! fails when one of its expectations is changed; bad steps are refused by
//! step and verb.

mod harness;

use harness::judge;
use percsim_scenarios::campaign::Verdict;
use percsim_scenarios::fuzz;
use percsim_scenarios::scenario::Scenario;
use serde_json::{Value, json};
use std::path::Path;

/// The example `name` of `examples/pulsar/script/`, as JSON.
fn example(name: &str) -> Value {
    harness::example("pulsar/script", name)
}

/// Judge example `name` and require a pass.
fn passes(name: &str) {
    let r = judge(example(name));
    assert_eq!(r.verdict, Verdict::Pass, "{name}: {:?}", r.explanation);
}

#[test]
fn read_committed_passes() {
    passes("read-committed.json");
}

/// Judge example `name` with the JSON at `pointer` replaced by `value`;
/// require a failure whose explanation holds `says`.
fn fails_when_changed(name: &str, pointer: &str, value: Value, step: &str, says: &str) {
    let mut v = example(name);
    *v.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("{name}: no {pointer}")) = value;
    let why = match Scenario::from_value(v).and_then(|s| s.validate().map(|()| s)) {
        Err(e) => e.to_string(),
        Ok(s) => {
            let r = fuzz::judge(&s, false).result;
            assert_eq!(
                r.verdict,
                Verdict::ExpectationFailed,
                "{name} {pointer}: {:?}",
                r.explanation
            );
            r.explanation.unwrap_or_default()
        }
    };
    assert!(
        why.contains(step) && why.contains(says),
        "{name} {pointer}: {why}"
    );
}

#[test]
fn read_committed_fails_when_an_expectation_changes() {
    let f = "read-committed.json";
    let cases = [
        (
            "/workload/steps/3/expect_offset",
            json!(1),
            "step 3 {",
            "expected offset 1; happened offset 0",
        ),
        (
            "/workload/steps/5",
            json!({"do": "recv", "actor": "c", "expect_none": true, "expect": []}),
            "workload.steps[5]",
            "give at most one of",
        ),
        (
            "/workload/steps/7/expect",
            json!("aborted"),
            "step 7 {",
            "expected aborted; happened committed",
        ),
        (
            "/workload/steps/8/expect/1",
            json!("other"),
            "step 8 {",
            "happened received [\"a\", \"plain\"]",
        ),
        (
            "/workload/steps/16/entries/2",
            json!("<abort T1>"),
            "step 16 {",
            "it holds",
        ),
        (
            "/workload/steps/17/mark_delete",
            json!(1),
            "step 17 {",
            "expected events-partition-0/s: mark-delete position 1; happened it is 2",
        ),
        (
            "/workload/steps/18/state",
            json!("committed"),
            "step 18 {",
            "to be Committed; happened it is Aborted",
        ),
        (
            "/workload/at_end/1/entries",
            json!(["x"]),
            "at_end 1 {",
            "it holds []",
        ),
    ];
    for (pointer, value, step, says) in cases {
        fails_when_changed(f, pointer, value, step, says);
    }
}

/// Each planted bug's script passes on the faithful build and fails under
/// the bug by the rule it names.
#[test]
fn each_planted_bug_has_a_script_that_catches_it() {
    let cases = [
        ("no-max-read-position", "read_uncommitted"),
        ("replay-ignores-aborted", "aborted_read"),
        ("marker-by-producer-epoch", "lost_write"),
        ("pending-ack-not-durable", "duplicate"),
        ("commit-before-log-durable", "lost_write"),
        ("timeout-races-commit", "torn_transaction"),
    ];
    harness::each_planted_bug_is_caught("pulsar/script", "pulsar", &cases);
}

/// A send whose reply is lost is resent, and a send the network copies
/// arrives twice: producer deduplication writes each once (the script
/// passes); with it switched off (`pulsar.deduplication: false`) both are
/// in the log twice and the stream checker flags them by `duplicate`.
#[test]
fn producer_deduplication_writes_resent_and_copied_sends_once() {
    let f = "resent-and-duplicated-sends.json";
    passes(f);
    let mut v = example(f);
    v["pulsar"]["deduplication"] = json!(false);
    let r = judge(v);
    assert_eq!(r.verdict, Verdict::Safety, "{:?}", r.explanation);
    assert!(
        r.violated_rules.iter().any(|x| x == "duplicate"),
        "{:?} {:?}",
        r.violated_rules,
        r.explanation
    );
    let why = r.explanation.unwrap_or_default();
    assert!(why.contains("is in the logs 2 times"), "{why}");
}

#[test]
fn the_fault_and_consumer_cases_pass() {
    let mut wrong = Vec::new();
    for f in [
        "coordinator-crash-points.json",
        "message-faults.json",
        "consumers.json",
    ] {
        let r = judge(example(f));
        if r.verdict != Verdict::Pass {
            wrong.push(format!(
                "{f}: {:?} {}",
                r.verdict,
                r.explanation.unwrap_or_default()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// Each targeted fault's script passes, and fails once its faults
/// (`stop_at`, `unload`) are taken out: the expectations need them.
#[test]
fn each_targeted_fault_is_what_its_script_expects() {
    let mut wrong = Vec::new();
    for f in [
        "marker-before-buffer.json",
        "stale-owner-marker-callback.json",
        "lost-append.json",
        "client-dies-after-end-txn.json",
        "unload-topic.json",
    ] {
        let v = example(f);
        let r = judge(v.clone());
        if r.verdict != Verdict::Pass {
            wrong.push(format!("{f}: {:?} {:?}", r.verdict, r.explanation));
        }
        let mut without = v.clone();
        let steps = without["workload"]["steps"].as_array_mut().expect("steps");
        for step in steps.iter_mut() {
            if matches!(step["do"].as_str(), Some("stop_at" | "unload")) {
                *step = json!({"do": "sleep", "ms": 0});
            }
        }
        let r = judge(without);
        if r.verdict != Verdict::ExpectationFailed {
            wrong.push(format!("{f} without its faults: {:?}", r.verdict));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every example script of `examples/pulsar/script/`.
fn examples() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/pulsar/script");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the examples")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    names
}

/// The step `step` with one of its expectations changed, if it has one.
fn flipped(step: &Value) -> Option<Value> {
    let mut s = step.clone();
    let o = s.as_object_mut()?;
    let other = |w: &str| match w {
        "committed" => "aborted",
        "accepted" => "failed",
        "failed" => "accepted",
        "absent" => "open",
        _ => "committed",
    };
    if let Some(e) = o.get_mut("expect") {
        match e {
            Value::String(w) => *w = other(w).to_string(),
            Value::Array(a) => a.push(json!("zz")),
            _ => return None,
        }
    } else if let Some(Value::Array(a)) = o.get_mut("expect_set") {
        a.push(json!("zz"));
    } else if o.remove("expect_none").is_some() || o.remove("expect_refused").is_some() {
        o.insert("expect".into(), json!(["zz"]));
    } else if let Some(Value::String(w)) = o.get_mut("state") {
        *w = other(w).to_string();
    } else if let Some(Value::Array(a)) = o.get_mut("entries") {
        a.push(json!("zz"));
    } else if let Some(k) = ["expect_offset", "equals", "mark_delete"]
        .into_iter()
        .find(|k| o.contains_key(*k))
    {
        let n = o[k].as_u64()?;
        o.insert(k.into(), json!(n + 1));
    } else {
        return None;
    }
    Some(s)
}

/// Each example passes, and each of its expectations, changed, fails it.
#[test]
fn every_example_passes_and_fails_when_any_expectation_changes() {
    let mut wrong = Vec::new();
    let mut flips = 0;
    for name in examples() {
        let v = example(&name);
        let r = judge(v.clone());
        if r.verdict != Verdict::Pass {
            wrong.push(format!("{name}: {:?}", r.explanation));
        }
        for list in ["steps", "at_end"] {
            let n = v["workload"][list].as_array().map_or(0, Vec::len);
            for i in 0..n {
                let Some(step) = flipped(&v["workload"][list][i]) else {
                    continue;
                };
                let mut m = v.clone();
                m["workload"][list][i] = step;
                flips += 1;
                let r = judge(m);
                let named = r
                    .explanation
                    .as_deref()
                    .unwrap_or("")
                    .contains("expectation failed");
                if r.verdict == Verdict::Pass || !named {
                    wrong.push(format!("{name} {list}[{i}] changed: {:?}", r.verdict));
                }
            }
        }
    }
    assert!(flips >= 50, "{flips} expectations changed");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A change to a script file.
type Edit = Box<dyn FnOnce(&mut Value)>;

/// Why the example `name`, with `f` applied, is refused.
fn refused(name: &str, f: impl FnOnce(&mut Value)) -> String {
    harness::refused(example(name), f)
}

/// What the model does not have is refused by step and verb, as are steps
/// naming what does not exist.
#[test]
fn bad_steps_are_refused_by_step_and_verb() {
    let f = "consumers.json";
    let set = |i: usize, step: Value| move |v: &mut Value| v["workload"]["steps"][i] = step;
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(set(17, json!({"do": "close", "actor": "p"}))),
            "workload.steps[17] (do \"close\"): actor: \"p\" is not a consumer",
        ),
        (
            Box::new(set(
                5,
                json!({"do": "recv", "actor": "c1", "expect_none": true, "expect_refused": true}),
            )),
            "workload.steps[5] (do \"recv\"): recv: give at most one of expect, expect_set, expect_none, expect_refused",
        ),
        (
            Box::new(set(
                3,
                json!({"do": "stop_at", "point": "after_end_sent", "node": "broker-0", "fault": {"kill": {}}}),
            )),
            "node \"broker-0\" never reaches point after_end_sent (only clients do)",
        ),
        (
            Box::new(set(3, json!({"do": "unload"}))),
            "workload.steps[3] (do \"unload\"): unload: give either partition or coordinator: true",
        ),
        (
            Box::new(|v: &mut Value| {
                v["workload"]["steps"][1]["subscription_type"] = json!("key_shared")
            }),
            "workload.steps[1] (do \"consumer\"): subscription_type: consumer: KeyShared is not modelled",
        ),
        (
            Box::new(set(
                5,
                json!({"do": "recv", "actor": "p", "expect_none": true}),
            )),
            "workload.steps[5] (do \"recv\"): actor: \"p\" is not a consumer",
        ),
        (
            Box::new(set(
                8,
                json!({"do": "ack", "actor": "c1", "txn": "T9", "value": "m1"}),
            )),
            "workload.steps[8] (do \"ack\"): txn: transaction \"T9\" is not begun before this step",
        ),
        (
            Box::new(set(9, json!({"do": "begin", "actor": "c1", "txn": "T1"}))),
            "workload.steps[9] (do \"begin\"): txn: transaction \"T1\" is begun twice",
        ),
        (
            Box::new(set(
                3,
                json!({"do": "send", "actor": "nobody", "partition": 0, "value": "x"}),
            )),
            "workload.steps[3] (do \"send\"): actor: actor \"nobody\" is used before it is declared",
        ),
        (
            Box::new(set(
                3,
                json!({"do": "stop_at", "point": "after_end_logged", "node": "client-0", "fault": {"kill": {}}}),
            )),
            "node \"client-0\" never reaches point after_end_logged (only brokers do)",
        ),
        (
            Box::new(set(
                3,
                json!({"do": "intercept", "name": "r", "call": "marker", "client": 0, "fate": "drop"}),
            )),
            "workload.steps[3] (do \"intercept\"): client: the coordinator sends markers, not a client",
        ),
        (
            Box::new(|v: &mut Value| v["pulsar"]["clients"] = json!(2)),
            "workload.steps[2] (do \"consumer\"): client: client 2 does not exist (2 clients)",
        ),
    ];
    for (edit, says) in cases {
        let why = refused(f, edit);
        assert!(why.contains(says), "expected {says:?} in {why:?}");
    }
}

/// The planted bug's script `name` under the bug, as a scenario.
fn under_bug(name: &str, bug: &str) -> Scenario {
    let s = Scenario::from_value(example(name)).expect("a valid example");
    percsim_scenarios::systems::with_ablations(&s, &[bug.to_string()]).expect("its planted bug")
}

/// A failing Pulsar script shrinks to fewer steps that still fail by the
/// same rule, and the smallest scenario, read back from its JSON, runs
/// the same way; the same failure shrinks to the same scenario; a script
/// that passes is refused, saying so.
#[test]
fn a_failing_script_shrinks_to_fewer_steps_failing_by_the_same_rule() {
    use percsim_scenarios::shrink;
    for (name, bug, rule) in [
        (
            "bug-no-max-read-position.json",
            "no-max-read-position",
            "read_uncommitted",
        ),
        (
            "bug-commit-before-log-durable.json",
            "commit-before-log-durable",
            "lost_write",
        ),
    ] {
        let failing = under_bug(name, bug);
        let shrunk = shrink::failure(&failing, 200).expect("it fails");
        let first = &shrunk.judged.result;
        assert!(
            first.violated_rules.iter().any(|r| r == rule),
            "{name}: {first:?}"
        );
        let (before, after) = (shrink::size(&failing), shrink::size(&shrunk.smallest));
        assert!(
            after.steps < before.steps,
            "{name}: {before:?} -> {after:?}"
        );
        assert!(
            shrunk.runs > 0 && shrunk.runs <= 200,
            "{name}: {}",
            shrunk.runs
        );
        let text = serde_json::to_string(&shrunk.smallest).expect("JSON");
        let back = Scenario::parse(&text).expect("the smallest scenario reads back");
        for again in [&shrunk.again, &fuzz::judge(&back, false).result] {
            assert_eq!(again.verdict, first.verdict, "{name}: {again:?}");
            assert!(
                again.violated_rules.iter().any(|r| r == rule),
                "{name}: {again:?}"
            );
        }
        let twice = shrink::failure(&failing, 200).expect("it fails");
        let twice = serde_json::to_string(&twice.smallest).expect("JSON");
        assert_eq!(twice, text, "{name}: shrinking is deterministic");
    }
    let passing = Scenario::from_value(example("bug-no-max-read-position.json")).expect("valid");
    let refused = shrink::failure(&passing, 200)
        .err()
        .expect("a pass is refused");
    assert!(refused.contains("it passes"), "{refused}");
}

/// Runs the percsim binary.
fn percsim(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_percsim"))
        .args(args)
        .output()
        .expect("percsim runs")
}

/// `percsim shrink` on a failing Pulsar script and on the capsule of its
/// run: the shrunk capsule replays (`--shrunk`) and the shrunk scenario
/// file runs with the same verdict (exit 1) and rule; a passing script is
/// refused with exit 2 and a message saying it passes.
#[test]
fn percsim_shrink_takes_a_script_or_its_capsule() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/pulsar/script/bug-no-max-read-position.json");
    let example = example.to_str().expect("a UTF-8 path");
    let dir = std::env::temp_dir().join(format!("percsim-pulsar-shrink-{}", std::process::id()));
    let out = dir.to_str().expect("a UTF-8 path");
    let bug = ["--ablate", "no-max-read-position", "--out", out];
    let run = percsim(&[&["run", example][..], &bug].concat());
    assert_eq!(run.status.code(), Some(1), "{run:?}");
    let text = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).to_string();
    let shrunk = percsim(&[&["shrink", example][..], &bug].concat());
    let said = text(&shrunk);
    assert_eq!(shrunk.status.code(), Some(0), "{said} {shrunk:?}");
    assert!(said.contains("still fails   Safety ["), "{said}");
    assert!(said.contains("read_uncommitted"), "{said}");
    let capsule = dir.join("pulsar-seed-1-shrunk.json");
    let file = dir.join("pulsar-seed-1-shrunk.scenario.json");
    let replay = percsim(&["replay", capsule.to_str().expect("UTF-8"), "--shrunk"]);
    assert_eq!(replay.status.code(), Some(1), "{}", text(&replay));
    assert!(
        text(&replay).contains("read_uncommitted"),
        "{}",
        text(&replay)
    );
    let again = percsim(&["run", file.to_str().expect("UTF-8"), "--out", out]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(
        text(&again).contains("read_uncommitted"),
        "{}",
        text(&again)
    );

    let from_capsule = dir.join("pulsar-seed-1.json");
    let second = dir.join("again");
    let shrunk = percsim(&[
        "shrink",
        from_capsule.to_str().expect("UTF-8"),
        "--out",
        second.to_str().expect("UTF-8"),
    ]);
    assert_eq!(shrunk.status.code(), Some(0), "{}", text(&shrunk));
    assert!(second.join("pulsar-seed-1-shrunk.json").exists());

    let passing = percsim(&["shrink", example, "--out", out]);
    let err = String::from_utf8_lossy(&passing.stderr);
    assert_eq!(passing.status.code(), Some(2), "{err}");
    assert!(
        err.contains("it passes") && err.contains("nothing to shrink"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `percsim fuzz --scenario` on a failing Pulsar script shrinks each
/// failing seed's steps too (its system's `shrink_scenario`): the
/// capsule's shrunk script is shorter and fails by the same rule.
#[test]
fn a_swept_script_shrinks_its_steps() {
    use percsim_scenarios::scenario_sweep::{ScenarioSweep, run};
    let dir = std::env::temp_dir().join(format!("percsim-pulsar-sweep-{}", std::process::id()));
    let summary = run(&ScenarioSweep {
        scenario: under_bug(
            "bug-commit-before-log-durable.json",
            "commit-before-log-durable",
        ),
        start: 0,
        end: 1,
        jobs: 1,
        out: dir.clone(),
        shrink_budget: 40,
        check_determinism: false,
    });
    assert_eq!(summary.failures.len(), 1);
    let capsule = percsim_scenarios::capsule::Capsule::load(&dir.join("pulsar-seed-0.json"))
        .expect("the capsule");
    let shrunk = capsule.shrunk.expect("a shrunk scenario");
    let steps = |s: &Scenario| percsim_scenarios::shrink::size(s).steps;
    assert!(
        steps(&shrunk) < steps(&capsule.scenario),
        "{}",
        steps(&shrunk)
    );
    let again = fuzz::judge(&shrunk, false).result;
    assert!(
        again.violated_rules.iter().any(|r| r == "lost_write"),
        "{again:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The snapshot script stands on its snapshots: with them off, no
/// snapshot is written, the broker never reaches its stop, and the
/// script's counts fail (its count of replayed entries, 0 since the
/// stop, is changed by the test of every example's expectations).
#[test]
fn the_snapshot_script_needs_its_snapshot() {
    passes("buffer-snapshot-recovery.json");
    let mut v = example("buffer-snapshot-recovery.json");
    v["pulsar"]["buffer"]["snapshot_every"] = 0.into();
    let r = judge(v);
    let why = r.explanation.unwrap_or_default();
    assert_ne!(r.verdict, Verdict::Pass);
    assert!(why.contains("\"snapshot_written\""), "{why}");
    assert!(why.contains("the stop never happened"), "{why}");
}

/// The recovery script's read is refused while the buffer recovers: with
/// recoveries instant nothing is refused and its count fails.
#[test]
fn the_recovery_script_needs_its_slow_recovery() {
    passes("requests-during-recovery.json");
    let mut v = example("requests-during-recovery.json");
    v["pulsar"]["recovery_us_per_entry"] = 0.into();
    let r = judge(v);
    let why = r.explanation.unwrap_or_default();
    assert_ne!(r.verdict, Verdict::Pass);
    assert!(why.contains("not_ready"), "{why}");
}
