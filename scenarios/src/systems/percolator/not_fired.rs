//! The cluster's stops that never happened: a `crashes` or `pauses` entry
//! is keyed to a client's n-th transaction and a `point_faults` entry to a
//! node's n-th time at a point, so whether it fires depends on the run
//! (the transaction aborted or only read, the node never got there).
//! Each entry is looked up among the run's stop events.

use crate::fired::ordinal;
use percsim_checker::Event;
use percsim_sim::{PercolatorConfig, PercolatorEvent, PointAction, SystemHistory};
use serde_json::{Value, json};

/// Each entry of `cluster`'s `crashes`, `pauses` and `point_faults` with no
/// stop event of its own in `history`, named by its path in the scenario
/// file and what it asked for.
pub(crate) fn not_fired(cluster: &PercolatorConfig, history: &SystemHistory) -> Vec<String> {
    let events: &[Event] = history
        .transactions()
        .map_or(&[][..], |h| h.events.as_slice());
    let crash = PercolatorEvent::CrashAtStep.name();
    let pause = PercolatorEvent::PauseAtStep.name();
    let stopped = |kind: &str, want: &[(&str, Value)]| {
        events
            .iter()
            .any(|e| e.kind == kind && want.iter().all(|(k, v)| e.fields.get(*k) == Some(v)))
    };
    let mut left = Vec::new();
    for (i, c) in cluster.crashes.iter().enumerate() {
        let want = [
            ("client", json!(c.client)),
            ("txn_number", json!(c.txn)),
            ("step", json!(c.step)),
        ];
        if !stopped(crash, &want) {
            left.push(format!(
                "percolator.crashes[{i}] (kill client {} in its transaction {} at {}) never fired",
                c.client,
                c.txn,
                words(&want[2].1)
            ));
        }
    }
    for (i, p) in cluster.pauses.iter().enumerate() {
        let want = [
            ("client", json!(p.client)),
            ("txn_number", json!(p.txn)),
            ("step", json!(p.step)),
        ];
        if !stopped(pause, &want) {
            left.push(format!(
                "percolator.pauses[{i}] (freeze client {} in its transaction {} at {}) never fired",
                p.client,
                p.txn,
                words(&want[2].1)
            ));
        }
    }
    for (i, f) in cluster.point_faults.iter().enumerate() {
        let node = f.node_name();
        let want = [
            ("node", json!(node)),
            ("nth", json!(f.nth)),
            ("point", json!(f.point.name())),
        ];
        let (kind, verb) = match f.fault {
            PointAction::Crash { .. } => (crash, "kill"),
            PointAction::Pause { .. } => (pause, "freeze"),
        };
        if !stopped(kind, &want) {
            left.push(format!(
                "percolator.point_faults[{i}] ({verb} {node} the {} time it reaches {}) never fired",
                ordinal(f.nth),
                f.point.name()
            ));
        }
    }
    left
}

/// A step as a scenario file writes it, without quotes.
fn words(step: &Value) -> String {
    match step {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ordinals_read_as_english() {
        let words: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 101]
            .into_iter()
            .map(super::ordinal)
            .collect();
        assert_eq!(
            words,
            [
                "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"
            ]
        );
    }
}
