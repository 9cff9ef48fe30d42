//! Liveness judged on Percolator runs: the scripts of
//! `scenarios/examples/percolator/script/bug-*.json` pass on the faithful
//! build and fail with a liveness verdict (exit 3) under the planted bug
//! they name; the refresh setting is validated.

use percsim_scenarios::campaign::Verdict;
use percsim_scenarios::fuzz;
use percsim_scenarios::scenario::Scenario;
use serde_json::{Value, json};
use std::path::Path;

/// The example `name` of `examples/percolator/script/`, as JSON.
fn example(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/percolator/script")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).expect("JSON")
}

/// Load and judge a scenario.
fn judge(v: Value) -> percsim_scenarios::campaign::SeedResult {
    let s = Scenario::from_value(v).unwrap_or_else(|e| panic!("{e}"));
    fuzz::judge(&s, false).result
}

/// Each liveness bug's script passes on the faithful build and is a
/// liveness failure under the bug, by the rule it names, with an
/// explanation naming the owner, the lock and the thresholds.
#[test]
fn each_liveness_bug_has_a_script_that_catches_it() {
    let cases = [
        ("no-lock-refresh", "live_owner_rolled_back", "lock a/v"),
        ("stale-by-wall-time-only", "dead_owner_blocks", "lock b/v"),
    ];
    let mut wrong = Vec::new();
    for (bug, rule, lock) in cases {
        let file = format!("bug-{bug}.json");
        let faithful = judge(example(&file));
        if faithful.verdict != Verdict::Pass {
            wrong.push(format!("{file} faithful: {:?}", faithful.explanation));
        }
        let mut v = example(&file);
        v["percolator"]["ablations"] = json!([bug]);
        let r = judge(v);
        let text = r.explanation.clone().unwrap_or_default();
        let explained = text.contains("liveness thresholds: lock_ttl")
            && text.contains(&format!("liveness {rule}: "))
            && text.contains("T1 (start_ts")
            && text.contains(lock);
        if r.verdict != Verdict::Liveness
            || r.verdict.exit_code() != 3
            || !r.violated_rules.iter().any(|x| x == rule)
            || !explained
        {
            wrong.push(format!(
                "{file} with {bug}: {:?} {:?} {text}",
                r.verdict, r.violated_rules
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// `refreshes_per_ttl` must be at least 1 and leave at least 1 ms between
/// refreshes: bad input, naming the field.
#[test]
fn a_bad_refresh_setting_is_refused() {
    let mut v = example("bug-no-lock-refresh.json");
    v["percolator"]["client"]["refreshes_per_ttl"] = json!(0);
    let e = Scenario::parse(&v.to_string()).unwrap_err().to_string();
    assert!(
        e.contains("percolator.client.refreshes_per_ttl: must be at least 1"),
        "{e}"
    );
    v["percolator"]["client"]["refreshes_per_ttl"] = json!(5000);
    let e = Scenario::parse(&v.to_string()).unwrap_err().to_string();
    assert!(e.contains("less than 1 ms apart"), "{e}");
}
