//! The toy register of `scenarios/tests/toy/` scripted through the core's
//! script engine: its verbs (`write`, `read`, `assert_register`), an
//! intercept of its `write` call, `stop_at` at the primary's named point,
//! and the engine's own verbs, from a scenario file; failed expectations
//! and bad steps are named by their step.

mod toy;

use percsim_scenarios::campaign::Verdict;
use percsim_scenarios::fuzz;
use percsim_scenarios::scenario::Scenario;
use percsim_scenarios::system::SystemDef;
use percsim_scenarios::systems;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Once;

/// The toy, registered once for the whole test binary.
fn toy() -> &'static dyn SystemDef {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| systems::register(&toy::TOY).expect("the toy registers once"));
    systems::find(toy::NAME).expect("registered")
}

/// The scripted toy scenario of `tests/toy/script.json`, as JSON.
fn script_file() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/toy/script.json");
    let text = std::fs::read_to_string(path).expect("the script file");
    serde_json::from_str(&text).expect("JSON")
}

/// The script file with `f` applied to its JSON.
fn edited(f: impl FnOnce(&mut Value)) -> Value {
    let mut v = script_file();
    f(&mut v);
    v
}

/// Load and judge a scenario.
fn judge(v: Value) -> percsim_scenarios::campaign::SeedResult {
    toy();
    let s = Scenario::from_value(v).unwrap_or_else(|e| panic!("{e}"));
    fuzz::judge(&s, true).result
}

/// Why a scenario is refused.
fn refused(v: Value) -> String {
    toy();
    let checked = Scenario::from_value(v).and_then(|s| s.validate());
    checked.unwrap_err().to_string()
}

#[test]
fn a_toy_script_with_an_intercept_and_a_crash_point_runs_and_passes() {
    toy();
    let s = Scenario::from_value(script_file()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.workload_name(), "script");
    let r = fuzz::judge(&s, true).result;
    assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.explanation);
    let count = |k: &str| r.counters.get(k).copied().unwrap_or(0);
    assert_eq!(count("fault.crash_at_step"), 1, "{:?}", r.counters);
    assert_eq!(count("toy.write_repeated"), 1, "{:?}", r.counters);
    assert!(count("toy.call_retried") >= 2, "{:?}", r.counters);
    // The same seed and script: the same history, byte for byte.
    let again = fuzz::judge(&s, true);
    assert_eq!(
        serde_json::to_string(&again.history).unwrap(),
        serde_json::to_string(&fuzz::judge(&s, true).history).unwrap()
    );
}

#[test]
fn a_failed_expectation_is_named_by_its_step() {
    let cases = [
        // A read that expects what was never written.
        (
            "/workload/steps/10/expect",
            json!("z"),
            "step 10 ",
            "expected \"z\"; happened \"c\"",
        ),
        // A write answered another version.
        (
            "/workload/steps/0/expect_version",
            json!(2),
            "step 0 ",
            "expected version 2; happened version 1",
        ),
        // The register's durable versions.
        (
            "/workload/steps/11/versions",
            json!(["a", "c"]),
            "step 11 ",
            "expected the register to hold [\"a\", \"c\"]; happened it holds [\"a\", \"b\", \"c\"]",
        ),
        // A counter the engine checks.
        (
            "/workload/steps/4/equals",
            json!(0),
            "step 4 ",
            "expected 0 \"write_repeated\"; happened 1 \"write_repeated\"",
        ),
        // The end-of-run assertions.
        (
            "/workload/at_end/1/equals",
            json!(2),
            "at_end 1 ",
            "expected 2 \"crash_at_point\"; happened 1 \"crash_at_point\"",
        ),
    ];
    for (path, value, step, what) in cases {
        let r = judge(edited(|v| {
            *v.pointer_mut(path).expect(path) = value.clone()
        }));
        assert_eq!(
            r.verdict,
            Verdict::ExpectationFailed,
            "{path}: {:?}",
            r.explanation
        );
        let text = r.explanation.unwrap_or_default();
        let line = text
            .lines()
            .find(|l| l.contains(step) && l.contains(what))
            .unwrap_or_else(|| panic!("{path}: no line with {step:?} and {what:?} in\n{text}"));
        assert!(line.starts_with("expectation failed: "), "{line}");
    }
}

#[test]
fn without_its_crash_point_the_script_sees_no_crash() {
    // The stop_at step removed: no crash, so its counts fail by name.
    let r = judge(edited(|v| {
        let steps = v
            .pointer_mut("/workload/steps")
            .unwrap()
            .as_array_mut()
            .unwrap();
        steps[6] = json!({"do": "sleep", "ms": 1});
    }));
    assert_eq!(r.verdict, Verdict::ExpectationFailed, "{:?}", r.explanation);
    let text = r.explanation.unwrap_or_default();
    assert!(
        text.contains("expected 1 \"crash_at_point\"; happened 0 \"crash_at_point\""),
        "{text}"
    );
}

#[test]
fn the_planted_bug_loses_an_acknowledged_write_that_the_script_reads() {
    // Acknowledged before durable: a write killed at after_apply is
    // answered, then lost with the primary's memory.
    let r = judge(json!({
        "format": "percsim-scenario/2",
        "seed": 1,
        "system": "toy",
        "world": {"run_ms": 5000, "quiesce_ms": 10000, "rpc_timeout_ms": 100},
        "toy": {"clients": 2, "persist_ms": 4, "ablations": ["ack-before-durable"]},
        "workload": {"name": "script", "steps": [
            {"do": "stop_at", "point": "after_apply", "node": "primary", "fault": {"kill": {"restart_after_ms": 50}}},
            {"do": "write", "op": "w1", "client": 0, "value": "a", "expect_version": 1},
            {"do": "wait", "until": {"node_up": "primary"}},
            {"do": "read", "op": "r1", "client": 1, "expect": "a"}
        ]}
    }));
    assert_eq!(r.verdict, Verdict::Safety, "{:?}", r.explanation);
    let text = r.explanation.unwrap_or_default();
    assert!(text.contains("step 3 "), "{text}");
    assert!(text.contains("expected \"a\"; happened null"), "{text}");
}

#[test]
fn a_write_whose_reply_is_held_finishes_when_the_rule_is_released() {
    // A held reply: the write is answered only after its release, so a
    // `wait` for it before the release times out by name.
    let steps = json!([
        {"do": "intercept", "name": "held", "call": "write", "leg": "reply", "fate": "hold"},
        {"do": "write", "op": "w1", "client": 0, "value": "a", "no_wait": true},
        {"do": "wait", "until": {"op_finished": "w1"}, "timeout_ms": 300},
        {"do": "release", "name": "held"},
        {"do": "wait", "until": {"op_finished": "w1"}, "timeout_ms": 1000},
        {"do": "read", "op": "r1", "client": 1, "expect": "a"}
    ]);
    let r = judge(edited(|v| {
        *v.pointer_mut("/workload/steps").unwrap() = steps;
        v["workload"].as_object_mut().unwrap().remove("at_end");
    }));
    assert_eq!(r.verdict, Verdict::ExpectationFailed, "{:?}", r.explanation);
    let text = r.explanation.unwrap_or_default();
    let failed: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("expectation failed"))
        .collect();
    assert_eq!(failed.len(), 1, "{text}");
    assert!(
        failed[0].contains("step 2 ")
            && failed[0].contains("{\"op_finished\":\"w1\"} within 300 ms"),
        "{text}"
    );
}

#[test]
fn bad_toy_steps_are_refused_by_step_and_verb() {
    let cases = [
        (
            json!({"do": "writ", "op": "w9", "client": 0, "value": "z"}),
            "unknown verb \"writ\" (verbs: stop_at,",
        ),
        (
            json!({"do": "write", "op": "w9", "client": 7, "value": "z"}),
            "workload.steps[12] (do \"write\"): client: client 7 does not exist (3 clients)",
        ),
        (
            json!({"do": "write", "op": "w9", "client": 0, "value": "a"}),
            "workload.steps[12] (do \"write\"): value: \"a\" is written by step 0 already",
        ),
        (
            json!({"do": "read", "op": "w1", "client": 0}),
            "workload.steps[12] (do \"read\"): op: operation \"w1\" is issued twice",
        ),
        (
            json!({"do": "stop_at", "point": "after_apply", "node": "client-0", "fault": {"kill": {}}}),
            "workload.steps[12] (do \"stop_at\"): node \"client-0\" never reaches point after_apply (only the primary does)",
        ),
        (
            json!({"do": "wait", "until": {"op_finished": "w9"}}),
            "workload.steps[12] (do \"wait\"): operation \"w9\" is not issued before this step",
        ),
        (
            json!({"do": "intercept", "name": "r", "call": "commit", "fate": "drop"}),
            "workload.steps[12] (do \"intercept\"): unknown variant `commit`, expected `write` or `read`",
        ),
        (
            json!({"do": "read", "op": "r9", "client": 0, "expect": 3}),
            "workload.steps[12] (do \"read\"): invalid type: integer `3`, expected a string",
        ),
    ];
    for (step, want) in cases {
        let e = refused(edited(|v| {
            let steps = v
                .pointer_mut("/workload/steps")
                .unwrap()
                .as_array_mut()
                .unwrap();
            steps.push(step.clone());
        }));
        assert!(e.contains(want), "{step}: {e}");
    }
}

#[test]
fn a_stop_at_that_never_fires_fails_naming_its_step() {
    // Armed after the last write: the primary never reaches the point again.
    let r = judge(edited(|v| {
        let steps = v
            .pointer_mut("/workload/steps")
            .unwrap()
            .as_array_mut()
            .unwrap();
        steps.push(json!({"do": "stop_at", "point": "after_durable", "node": "primary", "fault": {"kill": {}}}));
    }));
    assert_eq!(r.verdict, Verdict::ExpectationFailed, "{:?}", r.explanation);
    let text = r.explanation.unwrap_or_default();
    let line = text
        .lines()
        .find(|l| l.contains("step 12 "))
        .unwrap_or_else(|| panic!("no line names step 12:\n{text}"));
    assert!(line.contains("the stop never happened"), "{line}");
    // The same stop armed before a write fires: the script passes.
    let r = judge(edited(|v| {
        let steps = v
            .pointer_mut("/workload/steps")
            .unwrap()
            .as_array_mut()
            .unwrap();
        steps.push(json!({"do": "stop_at", "point": "after_durable", "node": "primary", "fault": {"kill": {"restart_after_ms": 100}}}));
        steps.push(json!({"do": "write", "op": "w9", "client": 0, "value": "d"}));
        steps.push(json!({"do": "wait", "until": {"op_finished": "w9"}}));
        v["workload"].as_object_mut().unwrap().remove("at_end");
    }));
    assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.explanation);
}
