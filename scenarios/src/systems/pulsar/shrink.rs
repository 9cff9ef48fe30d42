//! Shrinking a failing Pulsar scenario. Pulsar scenarios are drawn straight
//! from the seed's random stream (no shrinkable tree), so they shrink by
//! editing the scenario itself: switch off one fault class, drop one server
//! crash or one unload, drop the clock skew, halve the workload or the run, take away a
//! client, a broker or a partition. An edit is kept when the smaller
//! scenario (same seed) still fails the same way; the edits are tried in a
//! fixed order, from the start again after each kept one, until none is
//! kept or the budget of runs is spent. Every step is deterministic.

use crate::scenario::Scenario;
use serde_json::{Value, json};

/// The smallest scenario found that still fails as `still_fails` says, and
/// the runs spent (at most `budget`).
pub(crate) fn shrink(
    failing: &Scenario,
    still_fails: &mut dyn FnMut(&Scenario) -> bool,
    budget: usize,
) -> (Scenario, usize) {
    let candidates = |best: &Scenario| {
        let Ok(current) = serde_json::to_value(best) else {
            return Vec::new();
        };
        edits(&current)
            .into_iter()
            .filter_map(|candidate| Scenario::parse(&candidate.to_string()).ok())
            .collect()
    };
    crate::shrink::greedy(failing, &candidates, still_fails, budget)
}

/// The smallest scenario found from `failing`, a Pulsar scenario given as
/// it is (a script, a scenario file, a capsule's), that still fails as
/// `still_fails` says, and the runs spent (at most `budget`): a script's
/// steps dropped first, then the edits of a campaign's scenario, then the
/// world's own (its timed faults).
pub(crate) fn shrink_scenario(
    failing: &Scenario,
    still_fails: &mut dyn FnMut(&Scenario) -> bool,
    budget: usize,
) -> (Scenario, usize) {
    let candidates = |best: &Scenario| {
        let mut all = crate::shrink::script_edits(best);
        if let Ok(current) = serde_json::to_value(best) {
            let own = edits(&current).into_iter();
            all.extend(own.filter_map(|c| Scenario::parse(&c.to_string()).ok()));
        }
        all.extend(crate::shrink::world_candidates(best));
        crate::shrink::distinct(all)
    };
    crate::shrink::greedy(failing, &candidates, still_fails, budget)
}

/// Every one-step simplification of `s` (a scenario as JSON), biggest
/// first. Some may be invalid (the caller skips what does not parse).
fn edits(s: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(random) = s.pointer("/world/faults/random").and_then(Value::as_object) {
        for class in random.iter().filter(|(_, v)| !v.is_null()).map(|(k, _)| k) {
            out.push(with(
                s,
                &format!("/world/faults/random/{class}"),
                Value::Null,
            ));
        }
    }
    for list in ["/pulsar/crashes", "/pulsar/unloads"] {
        if let Some(items) = s.pointer(list).and_then(Value::as_array) {
            for i in 0..items.len() {
                let mut fewer = items.clone();
                fewer.remove(i);
                out.push(with(s, list, Value::Array(fewer)));
            }
        }
    }
    if s.pointer("/world/clocks")
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty())
    {
        out.push(with(s, "/world/clocks", json!([])));
    }
    for (field, smaller) in [
        ("documents", half as fn(u64) -> u64),
        ("subscriptions", less),
        ("max_batch", less),
    ] {
        let path = format!("/workload/{field}");
        if let Some(n) = s.pointer(&path).and_then(Value::as_u64).filter(|&n| n > 1) {
            out.push(with(s, &path, json!(smaller(n))));
        }
    }
    if s.pointer("/workload/crash_rate")
        .and_then(Value::as_f64)
        .is_some_and(|r| r > 0.0)
    {
        out.push(with(s, "/workload/crash_rate", json!(0.0)));
    }
    if let Some(ms) = s
        .pointer("/world/run_ms")
        .and_then(Value::as_u64)
        .filter(|&ms| ms >= 1_000)
    {
        out.push(with(s, "/world/run_ms", json!(half(ms))));
    }
    out.extend(fewer_clients(s));
    for field in ["/pulsar/brokers", "/pulsar/partitions"] {
        if let Some(n) = s.pointer(field).and_then(Value::as_u64).filter(|&n| n > 1) {
            out.push(with(s, field, json!(n - 1)));
        }
    }
    out
}

fn half(n: u64) -> u64 {
    n / 2
}

fn less(n: u64) -> u64 {
    n - 1
}

/// One client fewer (the last), with its clock.
fn fewer_clients(s: &Value) -> Option<Value> {
    let n = s
        .pointer("/pulsar/clients")
        .and_then(Value::as_u64)
        .filter(|&n| n > 1)?;
    let mut out = with(s, "/pulsar/clients", json!(n - 1));
    if let Some(clocks) = out
        .pointer_mut("/world/clocks")
        .and_then(Value::as_array_mut)
    {
        clocks.truncate((n - 1) as usize);
    }
    Some(out)
}

/// `s` with the value at `path` (which exists) replaced by `v`.
fn with(s: &Value, path: &str, v: Value) -> Value {
    let mut out = s.clone();
    if let Some(slot) = out.pointer_mut(path) {
        *slot = v;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scenario's edits, as (path, new value) pairs in the order tried.
    fn changes(s: &Value) -> Vec<String> {
        edits(s)
            .iter()
            .map(|e| {
                let mut d = Vec::new();
                diff("", s, e, &mut d);
                d.join(" ")
            })
            .collect()
    }

    fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for (k, v) in x {
                    diff(&format!("{path}/{k}"), v, &y[k], out);
                }
            }
            _ if a != b => out.push(format!("{path}={b}")),
            _ => {}
        }
    }

    #[test]
    fn edits_switch_off_each_class_crash_and_unload_then_shrink_sizes() {
        let s = json!({
            "world": {
                "run_ms": 4000,
                "clocks": [{"offset_ms": 5}, {"offset_ms": 6}, {"offset_ms": 7}],
                "faults": {"random": {"duplicate": {"rate": 0.5}, "kill_client": null, "pause": {"rate": 0.0}}}
            },
            "pulsar": {"clients": 3, "brokers": 2, "partitions": 1, "crashes": [{"nth": 1}, {"nth": 2}],
                       "unloads": [{"at_ms": 9}]},
            "workload": {"name": "stream-pipeline", "documents": 44, "crash_rate": 0.01}
        });
        assert_eq!(
            changes(&s),
            [
                "/world/faults/random/duplicate=null",
                "/world/faults/random/pause=null",
                "/pulsar/crashes=[{\"nth\":2}]",
                "/pulsar/crashes=[{\"nth\":1}]",
                "/pulsar/unloads=[]",
                "/world/clocks=[]",
                "/workload/documents=22",
                "/workload/crash_rate=0.0",
                "/world/run_ms=2000",
                "/pulsar/clients=2 /world/clocks=[{\"offset_ms\":5},{\"offset_ms\":6}]",
                "/pulsar/brokers=1",
            ]
        );
    }

    #[test]
    fn a_minimal_scenario_has_no_edits() {
        let s = json!({
            "world": {"run_ms": 500, "clocks": [], "faults": {"random": {"pause": null}}},
            "pulsar": {"clients": 1, "brokers": 1, "partitions": 1, "crashes": []},
            "workload": {"name": "stream", "subscriptions": 1, "max_batch": 1}
        });
        assert!(edits(&s).is_empty(), "{:?}", changes(&s));
    }
}
