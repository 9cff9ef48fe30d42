//! Omid scripted through the engine of `percsim_scenarios::script`: each
//! planted bug's script under `scenarios/examples/omid/script/` passes on
//! the faithful build and fails under its bug by the rule it names; a
//! changed expectation fails by its step; bad steps are refused by step
//! and verb.

mod harness;

use harness::judge;
use percsim_scenarios::campaign::Verdict;
use percsim_scenarios::fuzz;
use serde_json::{Value, json};

/// The example `name` of `examples/omid/script/`, as JSON.
fn example(name: &str) -> Value {
    harness::example("omid/script", name)
}

/// Each planted bug's script passes on the faithful build and fails under
/// the bug by the rule it names.
#[test]
fn each_planted_bug_has_a_script_that_catches_it() {
    let cases = [
        ("no-low-watermark-abort", "no_write_conflicts"),
        ("reply-before-commit-table", "snapshot_reads"),
        ("shadow-cells-before-commit-table", "no_dependency_cycles"),
        ("reader-skips-commit-table", "snapshot_reads"),
        ("no-invalidation", "snapshot_reads"),
        ("no-tso-fencing", "timestamp_order"),
    ];
    harness::each_planted_bug_is_caught("omid/script", "omid", &cases);
}

/// Judge example `name` with the JSON at `pointer` replaced by `value`;
/// require an expectation failure whose explanation names `step` and holds
/// `says`.
fn fails_when_changed(name: &str, pointer: &str, value: Value, step: &str, says: &str) {
    let mut v = example(name);
    *v.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("{name}: no {pointer}")) = value;
    let r = judge(v);
    assert_eq!(
        r.verdict,
        Verdict::ExpectationFailed,
        "{name} {pointer}: {:?}",
        r.explanation
    );
    let why = r.explanation.unwrap_or_default();
    assert!(
        why.contains(step) && why.contains(says),
        "{name} {pointer}: {why}"
    );
}

/// Each kind of Omid expectation fails, by its step, when it is changed.
#[test]
fn each_kind_of_expectation_fails_by_its_step_when_changed() {
    let f = "bug-reader-skips-commit-table.json";
    let cases = [
        (
            "/workload/steps/8/expect",
            json!("2"),
            "step 8",
            "expected \"2\"; happened \"1\"",
        ),
        (
            "/workload/steps/9/expect",
            json!("aborted"),
            "step 9",
            "expected aborted; happened committed",
        ),
        (
            "/workload/steps/5/entry",
            json!("invalid"),
            "step 5",
            "expected commit-table entry invalid; happened the entry is committed",
        ),
        (
            "/workload/steps/6/shadow",
            json!(true),
            "step 6",
            "expected its shadow cell in (x, v) present; happened it is absent",
        ),
        (
            "/workload/steps/13/value",
            json!("9"),
            "step 13",
            "expected its data cell in (x, v) to hold \"9\"",
        ),
    ];
    for (pointer, value, step, says) in cases {
        fails_when_changed(f, pointer, value, step, says);
    }
    fails_when_changed(
        "bug-no-low-watermark-abort.json",
        "/workload/steps/11/equals",
        json!(0),
        "step 11",
        "below_low_watermark",
    );
}

/// Why the example `name`, with `f` applied, is refused.
fn refused(name: &str, f: impl FnOnce(&mut Value)) -> String {
    harness::refused(example(name), f)
}

/// A step naming what does not exist, or a verb Omid does not have, is
/// refused by its index.
#[test]
fn bad_steps_are_refused_by_step_and_verb() {
    let f = "bug-no-tso-fencing.json";
    type Edit = Box<dyn FnOnce(&mut Value)>;
    let set = |i: usize, step: Value| move |v: &mut Value| v["workload"]["steps"][i] = step;
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(set(1, json!({"do": "scan", "txn": "T1", "row": "y"}))),
            "workload.steps[1]: unknown verb \"scan\"",
        ),
        (
            Box::new(set(
                5,
                json!({"do": "stop_at", "point": "tso_after_decision", "node": "client-0", "fault": {"kill": {}}}),
            )),
            "node \"client-0\" never reaches point tso_after_decision (only a tso node does)",
        ),
        (
            Box::new(set(
                5,
                json!({"do": "assert_commit_table", "txn": "T9", "entry": "none"}),
            )),
            "workload.steps[5] (do \"assert_commit_table\"): transaction \"T9\" is not begun by an earlier step",
        ),
        (
            Box::new(set(
                5,
                json!({"do": "intercept", "name": "r", "call": "commit", "client": 7, "fate": "drop"}),
            )),
            "client 7 does not exist",
        ),
        (
            Box::new(set(
                2,
                json!({"do": "commit", "txn": "T1", "expect": "maybe"}),
            )),
            "workload.steps[2] (do \"commit\"): unknown variant `maybe`",
        ),
    ];
    for (edit, says) in cases {
        let why = refused(f, edit);
        assert!(why.contains(says), "expected {says:?} in {why:?}");
    }
}

/// `script_scenario` builds a scenario sized to a script from the script
/// alone: a planted bug's script runs on as many clients as it names and
/// the checker finds no violation in its history on the faithful build (its expectations
/// were written for its own file's cluster); a bad step is refused by its
/// field.
#[test]
fn a_script_alone_becomes_a_scenario_sized_to_it() {
    let omid = percsim_scenarios::systems::find("omid").expect("registered");
    let file = "bug-no-invalidation.json";
    let full = example(file);
    let mut script = full["workload"].clone();
    script.as_object_mut().unwrap().remove("name");
    let s = percsim_scenarios::regress::script_scenario(omid, &script, 3)
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    let written = s.to_value().expect("written");
    assert_eq!(
        written["omid"]["clients"], full["omid"]["clients"],
        "{file}"
    );
    let r = fuzz::judge(&s, false).result;
    assert!(r.committed >= 1, "{file}: {:?}", r.explanation);
    assert_ne!(r.verdict, Verdict::Safety, "{file}: {:?}", r.explanation);
    let bad = json!({"steps": [{"do": "begin", "client": 0, "txn": "T1", "when": 1}]});
    let e = percsim_scenarios::regress::script_scenario(omid, &bad, 3).unwrap_err();
    assert!(
        e.to_string()
            .contains("steps[0] (do \"begin\"): unknown field `when`"),
        "{e}"
    );
}

/// `delete` writes a tombstone: a snapshot from before the delete's
/// commit reads the old value, one from after reads none, and the checker
/// finds the history (with its delete) and the final state (with the
/// committed tombstone) consistent; a later read expecting the old value
/// fails by its step.
#[test]
fn a_delete_is_a_tombstone_seen_by_later_snapshots_only() {
    let r = judge(example("delete.json"));
    assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.explanation);
    assert_eq!(r.committed, 4, "{:?}", r.explanation);
    fails_when_changed(
        "delete.json",
        "/workload/steps/11/expect",
        json!("1"),
        "step 11",
        "expected \"1\"",
    );
    fails_when_changed(
        "delete.json",
        "/workload/steps/8/expect",
        Value::Null,
        "step 8",
        "happened \"1\"",
    );
}
