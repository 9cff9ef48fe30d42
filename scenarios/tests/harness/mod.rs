//! What the tests of one system through the generic paths share: a
//! campaign mix of it, a scenario file that must load, run and pass, the
//! field-naming errors of a file with one value changed, a sweep for the
//! first failing seed of a planted bug, and a system's example scripts:
//! loading and judging one, a refused change, and whether each planted
//! bug's script catches its bug.

#![allow(dead_code)]

use percsim_scenarios::campaign::Judged;
use percsim_scenarios::campaign::{Mix, SeedResult, Verdict};
use percsim_scenarios::fuzz;
use percsim_scenarios::scenario::Scenario;
use serde_json::Value;
use std::path::Path;

/// A campaign mix of `system` alone with the planted bugs `ablations`.
pub fn mix(system: &str, ablations: &[&str]) -> Mix {
    Mix {
        systems: vec![system.to_string()],
        ablations: ablations.iter().map(|a| a.to_string()).collect(),
        ..Mix::default()
    }
}

/// Load the scenario file `path`, check it runs `system`'s `workload`,
/// judge it (with its determinism checked) and fail unless it passes and
/// its JSON form reads back as the same scenario; the scenario and its
/// judgement.
pub fn loads_runs_and_passes(path: &Path, system: &str, workload: &str) -> (Scenario, Judged) {
    let s = Scenario::load(path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.system(), system);
    assert_eq!(s.workload_name(), workload);
    let judged = fuzz::judge(&s, true);
    let r = &judged.result;
    assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.explanation);
    let again = Scenario::parse(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(again.to_value().unwrap(), s.to_value().unwrap());
    (s, judged)
}

/// The error of parsing `base` with the value at `path` (a JSON pointer:
/// `/toy/crashes/0/nth`) replaced by `value`; fails if it parses.
pub fn error_with(base: &Value, path: &str, value: Value) -> String {
    let mut s = base.clone();
    let (parent, key) = path.rsplit_once('/').expect("a path");
    match s.pointer_mut(parent).unwrap_or_else(|| panic!("{parent}")) {
        Value::Object(m) => {
            m.insert(key.to_string(), value);
        }
        Value::Array(a) => a[key.parse::<usize>().expect("an index")] = value,
        other => panic!("{parent}: {other}"),
    }
    match Scenario::parse(&s.to_string()) {
        Ok(_) => panic!("{path}: parsed"),
        Err(e) => e.to_string(),
    }
}

/// Check each case (path, value, what the error must say) against the
/// scenario file `path`.
pub fn errors_name_the_field(path: &Path, cases: &[(&str, Value, &str)]) {
    let text = std::fs::read_to_string(path).unwrap();
    let base: Value = serde_json::from_str(&text).unwrap();
    for (at, value, want) in cases {
        let got = error_with(&base, at, value.clone());
        assert!(got.contains(want), "{at}: {got}");
    }
}

/// Judge the scenarios `generate` draws for seeds `0..seeds` of `mix` in
/// turn until one fails: the number of seeds judged when one failed, and
/// every verdict.
pub fn first_failure(
    seeds: u64,
    mix: &Mix,
    generate: impl Fn(u64, &Mix) -> Scenario,
) -> (Option<u64>, Vec<Verdict>) {
    let mut verdicts = Vec::new();
    for seed in 0..seeds {
        let r = fuzz::judge(&generate(seed, mix), false).result;
        verdicts.push(r.verdict);
        if r.verdict != Verdict::Pass {
            return (Some(seed + 1), verdicts);
        }
    }
    (None, verdicts)
}

/// Fail unless the scenarios `generate` draws for seeds `0..seeds` of
/// `mix` all pass.
pub fn all_pass(seeds: u64, mix: &Mix, generate: impl Fn(u64, &Mix) -> Scenario) {
    for seed in 0..seeds {
        let r = fuzz::judge(&generate(seed, mix), false).result;
        assert_eq!(r.verdict, Verdict::Pass, "seed {seed}: {:?}", r.explanation);
    }
}

/// The scenario file `name` of `examples/<dir>/`, as JSON.
pub fn example(dir: &str, name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(dir)
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).expect("JSON")
}

/// Load and judge the scenario `v` (its determinism not checked).
pub fn judge(v: Value) -> SeedResult {
    let s = Scenario::from_value(v).unwrap_or_else(|e| panic!("{e}"));
    fuzz::judge(&s, false).result
}

/// Fail unless, for each case `(bug, rule)`, the script `bug-<bug>.json`
/// of `examples/<dir>/` passes on the faithful build and fails under the
/// planted bug (set in the scenario's `section`) by `rule`; the message
/// lists every case that does not.
pub fn each_planted_bug_is_caught(dir: &str, section: &str, cases: &[(&str, &str)]) {
    let mut wrong = Vec::new();
    for (bug, rule) in cases {
        let file = format!("bug-{bug}.json");
        let faithful = judge(example(dir, &file));
        if faithful.verdict != Verdict::Pass {
            wrong.push(format!("{file} faithful: {:?}", faithful.explanation));
        }
        let mut v = example(dir, &file);
        v[section]["ablations"] = serde_json::json!([bug]);
        let r = judge(v);
        if r.verdict != Verdict::Safety || !r.violated_rules.iter().any(|x| x == rule) {
            wrong.push(format!(
                "{file} with {bug}: {:?} {:?} {:?}",
                r.verdict, r.violated_rules, r.explanation
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// Why the scenario `v`, changed by `edit`, is refused when it is loaded
/// and validated; fails if it is not.
pub fn refused(mut v: Value, edit: impl FnOnce(&mut Value)) -> String {
    edit(&mut v);
    let checked = Scenario::from_value(v).and_then(|s| s.validate());
    checked.expect_err("refused").to_string()
}
