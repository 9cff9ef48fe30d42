//! Get: read a cell at a snapshot (paper, Figure 6, `Get`).
//!
//! A lock in `[0, start_ts]` means a transaction that may commit below our
//! snapshot is in flight: the reader must not guess, it reports the lock and
//! the client backs off or cleans up. Otherwise the newest commit record at
//! or below start_ts (rollback records are skipped) names the data to return.

use crate::percolator::ablation::{Ablation, Ablations};
use crate::percolator::row::Row;
use crate::percolator::types::{CellKey, LockInfo, Ts, WriteKind};
use serde::{Deserialize, Serialize};

/// What a get found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum GetResult {
    /// The visible value, or `None` when the cell is missing or deleted.
    Value(Option<String>),
    /// A lock at or below start_ts blocks the read.
    Locked(LockInfo),
}

/// Read `col` of `row` (whose key is `row_key`) as of `start_ts`.
/// With [`Ablation::GetIgnoresLocks`] locks are not looked at.
pub fn get(row: &Row, row_key: &str, col: &str, start_ts: Ts, ablations: Ablations) -> GetResult {
    get_version(row, row_key, col, start_ts, ablations).0
}

/// Like [`get`], also returning the commit_ts of the version read (`None`
/// when no version is visible).
pub fn get_version(
    row: &Row,
    row_key: &str,
    col: &str,
    start_ts: Ts,
    ablations: Ablations,
) -> (GetResult, Option<Ts>) {
    let c = row.col(col);
    let lock = match ablations.has(Ablation::GetIgnoresLocks) {
        true => None,
        false => c.lock.range(..=start_ts).next_back(),
    };
    if let Some((ts, lock)) = lock {
        let info = LockInfo {
            cell: CellKey::new(row_key, col),
            start_ts: *ts,
            lock: lock.clone(),
        };
        return (GetResult::Locked(info), None);
    }
    let latest = c
        .write
        .range(..=start_ts)
        .rev()
        .find(|(_, w)| w.kind != WriteKind::Rollback);
    match latest {
        None => (GetResult::Value(None), None),
        Some((commit_ts, w)) if w.kind == WriteKind::Delete => {
            (GetResult::Value(None), Some(*commit_ts))
        }
        Some((commit_ts, w)) => (
            GetResult::Value(c.data.get(&w.start_ts).cloned()),
            Some(*commit_ts),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::GetResult;
    use crate::percolator::actions::test_util::*;

    #[test]
    fn no_write_reads_nothing() {
        let s = MemStore::default();
        s.must_get_none("k", 10);
    }

    #[test]
    fn latest_write_below_start_ts() {
        let mut s = MemStore::default();
        s.must_put("k", "v1", 5, 6);
        s.must_put("k", "v2", 8, 9);
        s.must_get("k", 7, "v1");
        s.must_get("k", 10, "v2");
        s.must_get_none("k", 4);
    }

    #[test]
    fn lock_below_start_ts_blocks() {
        let mut s = MemStore::default();
        s.must_put("k", "v1", 5, 6);
        s.must_prewrite_put("k", "v2", "k", 8);
        match s.get("k", 10) {
            GetResult::Locked(info) => {
                assert_eq!(info.start_ts.0, 8);
                assert_eq!(info.lock.primary, cell("k"));
            }
            other => panic!("expected a lock, got {other:?}"),
        }
        // A lock at exactly start_ts also blocks (the range is inclusive).
        assert!(matches!(s.get("k", 8), GetResult::Locked(_)));
    }

    #[test]
    fn lock_above_start_ts_is_ignored() {
        let mut s = MemStore::default();
        s.must_put("k", "v1", 5, 6);
        s.must_prewrite_put("k", "v2", "k", 12);
        s.must_get("k", 10, "v1");
    }

    #[test]
    fn delete_hides_older_value() {
        let mut s = MemStore::default();
        s.must_put("k", "v1", 5, 6);
        s.must_prewrite_delete("k", "k", 8);
        s.must_commit("k", 8, 9);
        s.must_get_none("k", 10);
        s.must_get("k", 7, "v1");
    }

    #[test]
    fn rollback_record_is_skipped() {
        let mut s = MemStore::default();
        s.must_put("k", "v1", 5, 6);
        s.must_prewrite_put("k", "v2", "k", 8);
        s.must_cleanup_rolled_back("k", 8);
        s.must_get("k", 10, "v1");
    }

    #[test]
    fn ablated_get_reads_past_a_lock() {
        let mut s = MemStore::ablated(crate::percolator::ablation::Ablation::GetIgnoresLocks);
        s.must_put("k", "v1", 5, 6);
        s.must_prewrite_put("k", "v2", "k", 8);
        // The writer at 8 may commit below 10, yet the reader does not wait.
        s.must_get("k", 10, "v1");
    }
}
