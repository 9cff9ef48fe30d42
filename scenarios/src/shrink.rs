//! The generic shrink: simplify a failing scenario's `world` section, the
//! part every system shares, while the failure persists. It drops timed
//! faults one by one, switches the random fault classes off one by one,
//! straightens the clocks and halves the workload phase. An edit is kept
//! when the smaller scenario (same seed, same system section and workload)
//! still fails as `still_fails` says; the edits are tried in a fixed order,
//! from the start again after each kept one, until none is kept or the
//! budget of runs is spent. Every step is deterministic.
//!
//! It is [`crate::system::SystemDef::shrink`]'s default: a system that can
//! also simplify its own section (fewer nodes, fewer crashes, a smaller
//! workload) shrinks in its own folder, and may run this first.
//!
//! A failing scenario given by hand (a scenario file, a script, a
//! capsule's: `percsim shrink`) shrinks through
//! [`crate::system::SystemDef::shrink_scenario`], by default [`scenario`]:
//! a script's steps dropped one by one, then the world section as above.
//! [`failure`] judges it first, refuses one that passes, and keeps an edit
//! only when the run still fails the same way ([`same_failure`]).

use crate::judge::{EXPECTATION_RULE, NOT_FIRED_RULE, SeedResult};
use crate::scenario::Scenario;
pub use crate::shrink_run::{Shrunk, failure};
use percsim_sim::WorldConfig;
use serde_json::{Value, json};

/// The shortest workload phase the shrink halves down to, in ms.
pub const MIN_RUN_MS: u64 = 100;

/// The smallest scenario found from `failing` by simplifying its world
/// section while `still_fails` holds, and the runs spent (at most
/// `budget`).
pub fn world(
    failing: &Scenario,
    still_fails: &mut dyn FnMut(&Scenario) -> bool,
    budget: usize,
) -> (Scenario, usize) {
    greedy(failing, &world_candidates, still_fails, budget)
}

/// `best` with each of its world's one-step simplifications
/// ([`world_edits`]), those that validate.
pub fn world_candidates(best: &Scenario) -> Vec<Scenario> {
    world_edits(&best.world)
        .into_iter()
        .map(|world| {
            let mut smaller = best.clone();
            smaller.world = world;
            smaller
        })
        .filter(|smaller| smaller.validate().is_ok())
        .collect()
}

/// The generic shrink of a failing scenario of any system: its script's
/// steps ([`script_edits`]), then its world section ([`world_candidates`]),
/// greedily ([`greedy`]). The default of
/// [`crate::system::SystemDef::shrink_scenario`].
pub fn scenario(
    failing: &Scenario,
    still_fails: &mut dyn FnMut(&Scenario) -> bool,
    budget: usize,
) -> (Scenario, usize) {
    let edits = |best: &Scenario| {
        let mut all = script_edits(best);
        all.extend(world_candidates(best));
        distinct(all)
    };
    greedy(failing, &edits, still_fails, budget)
}

/// Every one-step simplification of a script scenario (a workload with
/// `steps`, any system's), in the order tried: each `at_end` entry
/// dropped, then each step dropped, the last first (what follows the
/// failure usually goes). Candidates that no longer validate (a step
/// naming an actor or transaction whose declaring step went) are left
/// out. None for a workload that is no script.
pub fn script_edits(s: &Scenario) -> Vec<Scenario> {
    let Ok(v) = s.to_value() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for list in ["/workload/at_end", "/workload/steps"] {
        let Some(items) = v.pointer(list).and_then(Value::as_array) else {
            continue;
        };
        for i in (0..items.len()).rev() {
            let mut fewer = items.clone();
            fewer.remove(i);
            out.push(with(&v, list, Value::Array(fewer)));
        }
    }
    out.into_iter()
        .filter_map(|c| Scenario::from_value(c).ok())
        .filter(|c| c.validate().is_ok())
        .collect()
}

/// `candidates` without repeats (the same scenario offered by two kinds
/// of edit is tried once), in their first order.
pub fn distinct(candidates: Vec<Scenario>) -> Vec<Scenario> {
    let mut seen = std::collections::BTreeSet::new();
    candidates
        .into_iter()
        .filter(|c| seen.insert(serde_json::to_string(c).unwrap_or_default()))
        .collect()
}

/// Whether run `r` fails the way `failed` did: the same verdict and, when
/// `failed` broke a rule of the checker or of the workload, one of those
/// rules (a failed script expectation or a configured fault that never
/// fired does not stand in for a broken rule); when it broke none of
/// those, every rule it was listed under.
pub fn same_failure(failed: &SeedResult, r: &SeedResult) -> bool {
    let real = |rules: &[String]| -> Vec<String> {
        rules
            .iter()
            .filter(|x| *x != EXPECTATION_RULE && *x != NOT_FIRED_RULE)
            .cloned()
            .collect()
    };
    let wanted = real(&failed.violated_rules);
    r.verdict == failed.verdict
        && if wanted.is_empty() {
            failed
                .violated_rules
                .iter()
                .all(|x| r.violated_rules.contains(x))
        } else {
            wanted.iter().any(|x| r.violated_rules.contains(x))
        }
}

/// What a scenario's size is measured in when a shrink is reported: its
/// script's steps (and `at_end` entries), its world's faults (timed ones
/// and random classes switched on), and its JSON's length in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// Script steps and `at_end` entries (0 for a workload that is no
    /// script).
    pub steps: usize,
    /// Timed faults plus random fault classes switched on.
    pub faults: usize,
    /// The scenario's JSON, in bytes.
    pub bytes: usize,
}

/// The size of `s` ([`Size`]).
pub fn size(s: &Scenario) -> Size {
    let v = s.to_value().unwrap_or(Value::Null);
    let len = |p: &str| v.pointer(p).and_then(Value::as_array).map_or(0, Vec::len);
    let classes = v
        .pointer("/world/faults/random")
        .and_then(Value::as_object)
        .map_or(0, |r| r.values().filter(|c| !c.is_null()).count());
    Size {
        steps: len("/workload/steps") + len("/workload/at_end"),
        faults: len("/world/faults/schedule") + classes,
        bytes: v.to_string().len(),
    }
}

/// Greedy shrinking: try the candidates `edits` offers for the smallest
/// failing scenario so far, in order; keep the first that still fails as
/// `still_fails` says and start again from it; stop when none is kept or
/// `budget` runs are spent. Returns the smallest scenario and the runs.
/// Candidates that cannot run must be left out by `edits`: every candidate
/// tried costs a run.
pub fn greedy(
    failing: &Scenario,
    edits: &dyn Fn(&Scenario) -> Vec<Scenario>,
    still_fails: &mut dyn FnMut(&Scenario) -> bool,
    budget: usize,
) -> (Scenario, usize) {
    let mut best = failing.clone();
    let mut runs = 0;
    'outer: while runs < budget {
        for smaller in edits(&best) {
            if runs >= budget {
                break 'outer;
            }
            runs += 1;
            if still_fails(&smaller) {
                best = smaller;
                continue 'outer;
            }
        }
        break;
    }
    (best, runs)
}

/// Every one-step simplification of `world`, in the order tried: each
/// timed fault dropped, each random fault class switched off, each choice
/// an exploration forced dropped, the clocks
/// straightened, the workload phase halved (down to [`MIN_RUN_MS`]).
pub fn world_edits(world: &WorldConfig) -> Vec<WorldConfig> {
    let Ok(w) = serde_json::to_value(world) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(schedule) = w.pointer("/faults/schedule").and_then(Value::as_array) {
        for i in 0..schedule.len() {
            let mut fewer = schedule.clone();
            fewer.remove(i);
            out.push(with(&w, "/faults/schedule", Value::Array(fewer)));
        }
    }
    if let Some(random) = w.pointer("/faults/random").and_then(Value::as_object) {
        for class in random.iter().filter(|(_, v)| !v.is_null()).map(|(k, _)| k) {
            out.push(with(&w, &format!("/faults/random/{class}"), Value::Null));
        }
    }
    if let Some(forced) = w.pointer("/explore/forced").and_then(Value::as_array) {
        for i in 0..forced.len() {
            let mut fewer = forced.clone();
            fewer.remove(i);
            out.push(with(&w, "/explore/forced", Value::Array(fewer)));
        }
    }
    if w.pointer("/clocks")
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty())
    {
        out.push(with(&w, "/clocks", json!([])));
    }
    if world.run_ms >= 2 * MIN_RUN_MS {
        out.push(with(&w, "/run_ms", json!(world.run_ms / 2)));
    }
    out.into_iter()
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect()
}

/// `v` with the value at `path` (which exists) replaced by `new`.
fn with(v: &Value, path: &str, new: Value) -> Value {
    let mut out = v.clone();
    if let Some(slot) = out.pointer_mut(path) {
        *slot = new;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::Verdict;
    use percsim_sim::{ClockEntry, ClockSkew, Fault, FaultClass, TimedFault};

    fn class() -> FaultClass {
        FaultClass {
            probability: 0.1,
            min_duration_ms: 10,
            max_duration_ms: 20,
            rate: 0.0,
        }
    }

    fn kill(node: &str) -> TimedFault {
        TimedFault {
            at_ms: 10,
            fault: Fault::Kill {
                node: node.into(),
                restart_after_ms: None,
            },
        }
    }

    #[test]
    fn edits_drop_each_timed_fault_and_class_then_clocks_then_halve_the_run() {
        let mut w = WorldConfig {
            run_ms: 1_000,
            clocks: vec![ClockEntry::by_position(ClockSkew {
                offset_ms: 5,
                drift_ppm: 0,
            })],
            ..WorldConfig::default()
        };
        w.faults.schedule = vec![kill("a"), kill("b")];
        w.faults.random.pause = Some(class());
        w.faults.random.kill_client = Some(class());
        let edits = world_edits(&w);
        assert_eq!(edits.len(), 6, "{edits:?}");
        assert_eq!(edits[0].faults.schedule, vec![kill("b")]);
        assert_eq!(edits[1].faults.schedule, vec![kill("a")]);
        assert!(edits[2].faults.random.kill_client.is_none());
        assert!(edits[2].faults.random.pause.is_some());
        assert!(edits[3].faults.random.pause.is_none());
        assert!(edits[4].clocks.is_empty());
        assert_eq!(edits[5].run_ms, 500);
        assert_eq!(edits[5].faults, w.faults);
    }

    /// A Pulsar script of three steps and one `at_end` entry, as a
    /// scenario.
    fn script() -> Scenario {
        Scenario::parse(
            &json!({
                "format": "percsim-scenario/2", "system": "pulsar", "seed": 1,
                "pulsar": {"clients": 1, "brokers": 1, "partitions": 1},
                "workload": {"name": "script", "steps": [
                    {"do": "producer", "actor": "p", "client": 0},
                    {"do": "send", "actor": "p", "partition": 0, "value": "a"},
                    {"do": "sleep", "ms": 10}
                ], "at_end": [
                    {"do": "assert_log", "partition": 0, "entries": ["a"]}
                ]}
            })
            .to_string(),
        )
        .expect("a valid script")
    }

    /// The steps of a script scenario's candidate, as their `do` words.
    fn verbs(s: &Scenario) -> Vec<String> {
        let v = s.to_value().expect("JSON");
        let list = |p: &str| -> Vec<String> {
            v.pointer(p)
                .and_then(Value::as_array)
                .map_or(Vec::new(), |a| {
                    a.iter()
                        .map(|x| x["do"].as_str().unwrap_or("").to_string())
                        .collect()
                })
        };
        [list("/workload/steps"), list("/workload/at_end")].concat()
    }

    #[test]
    fn script_edits_drop_the_at_end_entries_then_each_step_last_first_if_still_valid() {
        let candidates: Vec<Vec<String>> = script_edits(&script()).iter().map(verbs).collect();
        // Dropping the producer leaves a send by no actor: not offered.
        assert_eq!(
            candidates,
            [
                vec!["producer", "send", "sleep"],
                vec!["producer", "send", "assert_log"],
                vec!["producer", "sleep", "assert_log"],
            ]
        );
        let percolator = Scenario::parse(
            r#"{"format":"percsim-scenario/2","seed":3,"workload":{"name":"bank"}}"#,
        )
        .expect("a scenario");
        assert!(script_edits(&percolator).is_empty());
        assert_eq!(size(&script()).steps, 4);
    }

    #[test]
    fn the_generic_shrink_keeps_only_edits_that_still_fail() {
        // "Fails" while the send is there: the steps after it go, the
        // producer and the send stay.
        let mut runs_seen = 0;
        let mut still = |s: &Scenario| {
            runs_seen += 1;
            verbs(s).iter().any(|v| v == "send")
        };
        let (smallest, runs) = scenario(&script(), &mut still, 50);
        assert_eq!(verbs(&smallest), ["producer", "send"]);
        assert_eq!(runs, runs_seen);
        let (same, runs) = scenario(&script(), &mut |_: &Scenario| false, 50);
        assert_eq!(verbs(&same), verbs(&script()));
        assert!(runs > 0);
    }

    fn result(verdict: Verdict, rules: &[&str]) -> SeedResult {
        let mut r = SeedResult::empty("pulsar", 1, "script");
        r.verdict = verdict;
        r.violated_rules = rules.iter().map(|x| x.to_string()).collect();
        r
    }

    #[test]
    fn the_same_failure_needs_the_verdict_and_a_real_rule() {
        let failed = result(Verdict::Safety, &["read_uncommitted", EXPECTATION_RULE]);
        let same = |r: &SeedResult| same_failure(&failed, r);
        assert!(same(&result(Verdict::Safety, &["read_uncommitted"])));
        assert!(!same(&result(Verdict::Safety, &[EXPECTATION_RULE])));
        assert!(!same(&result(Verdict::Safety, &["lost_write"])));
        assert!(!same(&result(Verdict::Crash, &["read_uncommitted"])));
        let expectation = result(Verdict::ExpectationFailed, &[EXPECTATION_RULE]);
        assert!(same_failure(&expectation, &expectation));
        assert!(!same_failure(
            &expectation,
            &result(Verdict::ExpectationFailed, &[NOT_FIRED_RULE])
        ));
    }

    #[test]
    fn a_world_without_faults_and_a_short_run_has_no_edits() {
        let w = WorldConfig {
            run_ms: 2 * MIN_RUN_MS - 1,
            ..WorldConfig::default()
        };
        assert!(world_edits(&w).is_empty());
    }
}
