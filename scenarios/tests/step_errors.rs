//! A script step that cannot be read is named by its index (counting from
//! 0), in `steps` and in `at_end`, for every system that takes scripts
//! (Percolator, Pulsar, the toy of `tests/toy/`): a step with no `"do"`, a
//! misspelt verb, an unknown field, a missing field and a field of the
//! wrong type, each on a step of the system's own verbs.

mod toy;

use percsim_scenarios::scenario::Scenario;
use percsim_scenarios::systems;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Once;

/// The JSON of the scenario file at `path` (from the crate's root).
fn file(path: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("JSON")
}

/// The toy, registered once for the whole test binary.
fn register_toy() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| systems::register(&toy::TOY).expect("the toy registers once"));
    systems::find(toy::NAME).expect("registered");
}

/// Why `v` is refused (it must be).
fn refused(v: Value) -> String {
    match Scenario::from_value(v).and_then(|s| s.validate()) {
        Ok(()) => panic!("accepted"),
        Err(e) => e.to_string(),
    }
}

/// `verb` misspelt: its third letter left out (`commit` -> `comit`).
fn misspelt(verb: &str) -> String {
    let mut s = verb.to_string();
    s.remove(2);
    s
}

/// Each kind of mistake made to the step `list[i]` of `v` (`list` is
/// `steps` or `at_end`), whose field `field` is required, with what the
/// refusal must say.
fn mistakes(v: &Value, list: &str, i: usize, field: &str) -> Vec<(&'static str, Value, String)> {
    let step = v["workload"][list][i].clone();
    let verb = step["do"].as_str().expect("a verb").to_string();
    let at = format!("workload.{list}[{i}]");
    let with = |f: &dyn Fn(&mut Value)| {
        let mut changed = v.clone();
        f(&mut changed["workload"][list][i]);
        changed
    };
    let wrong = misspelt(&verb);
    vec![
        (
            "no do word",
            with(&|s| drop(s.as_object_mut().unwrap().remove("do"))),
            format!("{at}: a step needs a \"do\" word, one of: "),
        ),
        (
            "a misspelt verb",
            with(&|s| s["do"] = json!(wrong)),
            format!("{at}: unknown verb \"{wrong}\" (verbs: "),
        ),
        (
            "an unknown field",
            with(&|s| s["bogus"] = json!(1)),
            format!("{at} (do \"{verb}\"): unknown field `bogus`"),
        ),
        (
            "a missing field",
            with(&|s| drop(s.as_object_mut().unwrap().remove(field))),
            format!("{at} (do \"{verb}\"): missing field `{field}`"),
        ),
        (
            "a field of the wrong type",
            with(&|s| s[field] = json!(3)),
            format!("{at} (do \"{verb}\"): invalid type: integer `3`"),
        ),
    ]
}

/// Every mistake to `steps[step.0]` and `at_end[at_end.0]` of the file is
/// refused naming the step, its verb where known, and the mistake.
fn every_mistake_is_named(path: &str, step: (usize, &str), at_end: (usize, &str)) {
    let v = file(path);
    let mut cases = mistakes(&v, "steps", step.0, step.1);
    cases.extend(mistakes(&v, "at_end", at_end.0, at_end.1));
    for (kind, changed, says) in cases {
        let why = refused(changed);
        assert!(
            why.contains(&says),
            "{path}, {kind}: {says:?} not in {why:?}"
        );
    }
}

#[test]
fn percolators_step_mistakes_are_named_by_step() {
    every_mistake_is_named(
        "examples/script/interrupted-commits.json",
        (4, "txn"),
        (0, "txn"),
    );
    // A value a field cannot take: a protocol step that does not exist.
    let mut v = file("examples/script/interrupted-commits.json");
    v["workload"]["steps"][3]["step"] = json!("after_comit_primary");
    let why = refused(v);
    assert!(
        why.contains("workload.steps[3] (do \"crash_at\"): unknown variant `after_comit_primary`"),
        "{why}"
    );
}

#[test]
fn pulsars_step_mistakes_are_named_by_step() {
    every_mistake_is_named(
        "examples/pulsar/script/consumers.json",
        (3, "actor"),
        (0, "txn"),
    );
}

#[test]
fn the_toys_step_mistakes_are_named_by_step() {
    register_toy();
    every_mistake_is_named("tests/toy/script.json", (0, "op"), (0, "versions"));
}

#[test]
fn the_mistakes_are_real_ones() {
    // Unchanged, each file loads: only the mistake is refused.
    register_toy();
    for path in [
        "examples/script/interrupted-commits.json",
        "examples/pulsar/script/consumers.json",
        "tests/toy/script.json",
    ] {
        let s = Scenario::from_value(file(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        s.validate().unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    assert_eq!(misspelt("commit"), "comit");
}

/// The error `percsim run` and a scenario file's test give for the file
/// `name` holding `v`: what `regress::run_file` returns.
fn file_error(name: &str, v: &Value) -> String {
    let dir = std::env::temp_dir().join(format!("percsim-step-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let path = dir.join(name);
    std::fs::write(&path, v.to_string()).expect("written");
    let e = percsim_scenarios::regress::run_file(&path).expect_err("refused");
    e.strip_prefix(&format!("{}: ", path.display()))
        .unwrap_or_else(|| panic!("the file is not named first: {e}"))
        .to_string()
}

/// A step that cannot be read and a step that reads but cannot run are
/// named alike: the file, `bad scenario:`, the step's place, its verb,
/// then the problem (the field first when the problem is one field's).
#[test]
fn reading_and_checking_errors_name_a_step_alike() {
    let v = file("examples/script/interrupted-commits.json");
    let step = |i: usize, f: &dyn Fn(&mut Value)| {
        let mut changed = v.clone();
        f(&mut changed["workload"]["steps"][i]);
        changed
    };
    let at = "bad scenario: workload.steps[4] (do \"commit\"): ";
    let cases = [
        (
            "read.json",
            step(4, &|s| s["bogus"] = json!(1)),
            "unknown field `bogus`",
        ),
        (
            "checked.json",
            step(4, &|s| s["txn"] = json!("T9")),
            "txn: transaction \"T9\" is used before it is begun",
        ),
    ];
    for (name, changed, problem) in cases {
        let e = file_error(name, &changed);
        assert!(e.starts_with(&format!("{at}{problem}")), "{name}: {e}");
    }
    let mut changed = v.clone();
    changed["workload"]["at_end"][0] = json!({"do": "sleep", "ms": 1});
    let e = file_error("at-end.json", &changed);
    assert_eq!(
        e,
        "bad scenario: workload.at_end[0] (do \"sleep\"): only assert_* steps may run at the end"
    );
    changed["workload"]["at_end"][0] = json!({"do": "sleep"});
    let e = file_error("at-end-read.json", &changed);
    assert_eq!(
        e,
        "bad scenario: workload.at_end[0] (do \"sleep\"): missing field `ms`"
    );
}
