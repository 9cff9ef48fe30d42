//! Pulsar scripted through the engine of `percsim_scenarios::script`: the
//! regression cases of `scenarios/examples/pulsar/script/` pass, and each
//! fails when one of its expectations is changed; bad steps are refused by
//! step and verb.

use percsim_scenarios::campaign::Verdict;
use percsim_scenarios::fuzz;
use percsim_scenarios::scenario::Scenario;
use serde_json::{Value, json};
use std::path::Path;

/// The example `name` of `examples/pulsar/script/`, as JSON.
fn example(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/pulsar/script")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).expect("JSON")
}

/// Load and judge a scenario.
fn judge(v: Value) -> percsim_scenarios::campaign::SeedResult {
    let s = Scenario::from_value(v).unwrap_or_else(|e| panic!("{e}"));
    fuzz::judge(&s, false).result
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
            assert_eq!(r.verdict, Verdict::ExpectationFailed, "{name} {pointer}: {:?}", r.explanation);
            r.explanation.unwrap_or_default()
        }
    };
    assert!(why.contains(step) && why.contains(says), "{name} {pointer}: {why}");
}

#[test]
fn read_committed_fails_when_an_expectation_changes() {
    let f = "read-committed.json";
    let cases = [
        ("/workload/steps/3/expect_offset", json!(1), "step 3 {", "expected offset 1; happened offset 0"),
        ("/workload/steps/5/expect", json!([]), "", "give at most one of"),
        ("/workload/steps/7/expect", json!("aborted"), "step 7 {", "expected aborted; happened committed"),
        ("/workload/steps/8/expect/1", json!("other"), "step 8 {", "happened received [\"a\", \"plain\"]"),
        ("/workload/steps/16/entries/2", json!("<abort T1>"), "step 16 {", "it holds"),
        ("/workload/steps/17/mark_delete", json!(1), "step 17 {", "expected events-partition-0/s: mark-delete position 1; happened it is 2"),
        ("/workload/steps/18/state", json!("committed"), "step 18 {", "to be Committed; happened it is Aborted"),
        ("/workload/at_end/1/entries", json!(["x"]), "at_end 1 {", "it holds []"),
    ];
    for (pointer, value, step, says) in cases {
        fails_when_changed(f, pointer, value, &format!("{step}"), says);
    }
}

/// Judge example `name` with the planted bug `bug`.
fn with_bug(name: &str, bug: &str) -> percsim_scenarios::campaign::SeedResult {
    let mut v = example(name);
    v["pulsar"]["ablations"] = json!([bug]);
    judge(v)
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
    let mut wrong = Vec::new();
    for (bug, rule) in cases {
        let file = format!("bug-{bug}.json");
        let faithful = judge(example(&file));
        if faithful.verdict != Verdict::Pass {
            wrong.push(format!("{file} faithful: {:?}", faithful.explanation));
        }
        let r = with_bug(&file, bug);
        if r.verdict != Verdict::Safety || !r.violated_rules.iter().any(|x| x == rule) {
            wrong.push(format!("{file} with {bug}: {:?} {:?} {:?}", r.verdict, r.violated_rules, r.explanation));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
