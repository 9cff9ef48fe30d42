//! Commit: the TSO's conflict detection ("Omid, Reloaded", section 4.1).
//! The TSO keeps, in memory, the commit timestamp of the last committed
//! write of each cell (or row), in a map of bounded size. A transaction
//! commits when no key of its write set was committed after it started.
//! The map forgets its oldest entries when it is full; each eviction
//! raises the **low watermark** to the evicted commit timestamp, and a
//! transaction that started below the low watermark is aborted, since a
//! conflict with it might have been forgotten.

use crate::omid::ids::{Granularity, OmidAblation, OmidAblations};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Why the TSO aborts a transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum AbortReason {
    /// It started below the low watermark.
    BelowLowWatermark {
        /// The low watermark then.
        low_watermark: u64,
    },
    /// A key of its write set was committed after it started.
    Conflict {
        /// The key.
        key: String,
        /// When that key was last committed.
        commit_ts: u64,
    },
    /// A reader invalidated it in the commit table first.
    Invalidated,
}

impl AbortReason {
    /// Its short name (the history's abort reason, the counter
    /// `abort.<name>`).
    pub fn name(&self) -> &'static str {
        match self {
            AbortReason::BelowLowWatermark { .. } => "below_low_watermark",
            AbortReason::Conflict { .. } => "write_conflict",
            AbortReason::Invalidated => "invalidated",
        }
    }

    /// The reason as the history's `abort_reason`.
    pub fn describe(&self) -> String {
        match self {
            AbortReason::BelowLowWatermark { low_watermark } => {
                format!("started below the low watermark {low_watermark}")
            }
            AbortReason::Conflict { key, commit_ts } => {
                format!("write conflict on {key} (committed at {commit_ts})")
            }
            AbortReason::Invalidated => "invalidated by a reader".to_string(),
        }
    }
}

/// The TSO's bounded conflict map and its low watermark (memory: lost
/// with the TSO's incarnation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictMap {
    /// The most keys it holds.
    pub capacity: usize,
    /// Each key's last commit timestamp.
    pub entries: BTreeMap<String, u64>,
    /// No conflict of a transaction that started below it can be checked.
    pub low_watermark: u64,
}

impl ConflictMap {
    /// An empty map of `capacity` keys (at least one) whose low watermark
    /// starts at `low_watermark`.
    pub fn new(capacity: usize, low_watermark: u64) -> Self {
        ConflictMap {
            capacity: capacity.max(1),
            entries: BTreeMap::new(),
            low_watermark,
        }
    }
}

/// The conflict key of cell (`row`, `col`) at `granularity`.
pub fn key_of(row: &str, col: &str, granularity: Granularity) -> String {
    match granularity {
        Granularity::Cell => format!("{row}/{col}"),
        Granularity::Row => row.to_string(),
    }
}

/// Check the write set `keys` of the transaction that started at
/// `start_ts`. With [`OmidAblation::NoLowWatermarkAbort`] a transaction
/// below the low watermark is checked against the map as if nothing had
/// been evicted.
pub fn check(
    map: &ConflictMap,
    start_ts: u64,
    keys: &[String],
    ablations: &OmidAblations,
) -> Result<(), AbortReason> {
    if start_ts < map.low_watermark && !ablations.has(OmidAblation::NoLowWatermarkAbort) {
        return Err(AbortReason::BelowLowWatermark {
            low_watermark: map.low_watermark,
        });
    }
    for key in keys {
        if let Some(&commit_ts) = map.entries.get(key)
            && commit_ts > start_ts
        {
            return Err(AbortReason::Conflict {
                key: key.clone(),
                commit_ts,
            });
        }
    }
    Ok(())
}

/// Record the committed write set `keys` at `commit_ts`, evicting the
/// oldest entries beyond the capacity; answers how many were evicted.
pub fn record(map: &mut ConflictMap, keys: &[String], commit_ts: u64) -> usize {
    for key in keys {
        map.entries.insert(key.clone(), commit_ts);
    }
    let mut evicted = 0;
    while map.entries.len() > map.capacity {
        let Some((oldest, ts)) = map
            .entries
            .iter()
            .min_by_key(|(k, ts)| (**ts, (*k).clone()))
            .map(|(k, ts)| (k.clone(), *ts))
        else {
            break;
        };
        map.entries.remove(&oldest);
        map.low_watermark = map.low_watermark.max(ts);
        evicted += 1;
    }
    evicted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::omid::actions::test_util::*;

    #[test]
    fn concurrent_writers_of_a_cell_conflict_and_later_ones_do_not() {
        let mut m = Model::new(100);
        let a = m.must_begin();
        let b = m.must_begin();
        m.must_commit(a, &["x"]);
        m.must_abort_conflict(b, &["x"]);
        let c = m.must_begin();
        m.must_commit(c, &["x"]);
    }

    #[test]
    fn an_eviction_raises_the_low_watermark_and_aborts_older_transactions() {
        let mut m = Model::new(1);
        let old = m.must_begin();
        let a = m.must_begin();
        m.must_commit(a, &["x"]);
        let b = m.must_begin();
        let cb = m.must_commit(b, &["y"]);
        assert_eq!(m.map.low_watermark, cb - 2, "x's entry was evicted");
        // `old` conflicts with `a` on x, which the map forgot: the low
        // watermark aborts it.
        m.must_abort_below_watermark(old, &["x"]);
    }

    #[test]
    fn without_the_low_watermark_a_forgotten_conflict_commits() {
        let mut m = Model::new(1);
        m.ablations = OmidAblations::of(&[OmidAblation::NoLowWatermarkAbort]);
        let old = m.must_begin();
        let a = m.must_begin();
        m.must_commit(a, &["x"]);
        let b = m.must_begin();
        m.must_commit(b, &["y"]);
        m.must_commit(old, &["x"]);
    }

    #[test]
    fn row_granularity_makes_two_columns_of_a_row_conflict() {
        assert_eq!(key_of("r", "a", Granularity::Cell), "r/a");
        assert_eq!(key_of("r", "a", Granularity::Row), "r");
        let mut map = ConflictMap::new(10, 0);
        record(&mut map, &[key_of("r", "a", Granularity::Row)], 5);
        let other = [key_of("r", "b", Granularity::Row)];
        assert!(check(&map, 3, &other, &OmidAblations::default()).is_err());
        let cells = [key_of("r", "b", Granularity::Cell)];
        assert!(check(&map, 3, &cells, &OmidAblations::default()).is_ok());
    }

    #[test]
    fn reasons_read_as_sentences() {
        let r = AbortReason::Conflict {
            key: "x".into(),
            commit_ts: 4,
        };
        assert_eq!(r.describe(), "write conflict on x (committed at 4)");
        let low = AbortReason::BelowLowWatermark { low_watermark: 9 };
        assert_eq!(low.describe(), "started below the low watermark 9");
        assert_eq!(
            AbortReason::Invalidated.describe(),
            "invalidated by a reader"
        );
        assert_eq!(r.name(), "write_conflict");
        assert_eq!(low.name(), "below_low_watermark");
    }
}
