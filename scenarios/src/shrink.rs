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

use crate::scenario::Scenario;
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
    let edits = |best: &Scenario| {
        world_edits(&best.world)
            .into_iter()
            .map(|world| {
                let mut smaller = best.clone();
                smaller.world = world;
                smaller
            })
            .filter(|smaller| smaller.validate().is_ok())
            .collect()
    };
    greedy(failing, &edits, still_fails, budget)
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

    #[test]
    fn a_world_without_faults_and_a_short_run_has_no_edits() {
        let w = WorldConfig {
            run_ms: 2 * MIN_RUN_MS - 1,
            ..WorldConfig::default()
        };
        assert!(world_edits(&w).is_empty());
    }
}
