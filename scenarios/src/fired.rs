//! Whether a scenario's configured stops happened: what a system's
//! [`TypedSystem::not_fired`](crate::typed::TypedSystem::not_fired) uses
//! for its section's entries keyed to the `nth` time (over the whole run)
//! a named point is reached. Such an entry fires only if the run gets
//! there, which depends on the seed; one that never fired tested nothing,
//! and a single run of a user's scenario fails with it
//! ([`crate::judge::require_fired`], exit code 7).

use percsim_sim::SystemHistory;
use serde_json::{Value, json};

/// One configured stop at a named point: a kill or a pause the `nth` time
/// the point is reached, as a section of a scenario file writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointStop {
    /// Its path in the scenario file (`pulsar.crashes[0]`).
    pub entry: String,
    /// The point's name, as the stop event's `point` field gives it.
    pub point: &'static str,
    /// Which time the point is reached (from 1), as the stop event's `nth`
    /// field gives it.
    pub nth: u64,
    /// What it asked for, in words (`kill the primary the 3rd time it
    /// reaches after_apply`).
    pub what: String,
}

/// The stops of `stops` with no event of kind `event` in `history` whose
/// `point` and `nth` fields are the stop's, each as `ENTRY (WHAT) never
/// fired`, in the order given.
pub fn point_stops_not_fired(
    history: &SystemHistory,
    event: &str,
    stops: &[PointStop],
) -> Vec<String> {
    let fired = |s: &PointStop| {
        let (point, nth) = (Value::from(s.point), json!(s.nth));
        history.events().iter().any(|e| {
            e.kind == event
                && e.fields.get("point") == Some(&point)
                && e.fields.get("nth") == Some(&nth)
        })
    };
    stops
        .iter()
        .filter(|s| !fired(s))
        .map(|s| format!("{} ({}) never fired", s.entry, s.what))
        .collect()
}

/// `1st`, `2nd`, `3rd`, `4th`, ... `11th`, `21st`: how a message names the
/// `nth` time.
pub fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transaction history with these events (kind, point, nth) only.
    fn history(events: &[(&str, &str, u64)]) -> SystemHistory {
        let events: Vec<Value> = events
            .iter()
            .map(|(kind, point, nth)| json!({"t_ns": 0, "kind": kind, "point": point, "nth": nth}))
            .collect();
        let h = json!({
            "format": percsim_checker::FORMAT,
            "transactions": [],
            "events": events,
            "final_state": {"cells": []},
        });
        SystemHistory::Transactions(serde_json::from_value(h).expect("a history"))
    }

    fn stop(point: &'static str, nth: u64) -> PointStop {
        PointStop {
            entry: format!("sys.crashes[{nth}]"),
            point,
            nth,
            what: format!("kill it the {} time it reaches {point}", ordinal(nth)),
        }
    }

    #[test]
    fn a_stop_fires_only_with_an_event_of_its_kind_point_and_time() {
        let h = history(&[("stop", "a", 1), ("other", "b", 1), ("stop", "a", 3)]);
        let stops = [stop("a", 1), stop("b", 1), stop("a", 2), stop("a", 3)];
        assert_eq!(
            point_stops_not_fired(&h, "stop", &stops),
            [
                "sys.crashes[1] (kill it the 1st time it reaches b) never fired",
                "sys.crashes[2] (kill it the 2nd time it reaches a) never fired",
            ]
        );
        assert!(point_stops_not_fired(&h, "stop", &[]).is_empty());
    }

    #[test]
    fn ordinals_read_as_english() {
        let words: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 101]
            .into_iter()
            .map(ordinal)
            .collect();
        assert_eq!(
            words,
            [
                "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"
            ]
        );
    }
}
