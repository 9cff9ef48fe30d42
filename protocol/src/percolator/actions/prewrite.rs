//! Prewrite: lock one cell and write its data at start_ts (paper, Figure 6,
//! `Prewrite`).
//!
//! Aborts on a write record at or after start_ts (a write-write conflict, or
//! this transaction's own rollback record) and on a lock at any timestamp.
//! A repeat of a prewrite that already succeeded (a retried or duplicated
//! message) finds its own lock and succeeds without changing anything.

use crate::percolator::ablation::{Ablation, Ablations};
use crate::percolator::row::{RowMutation, RowOp};
use crate::percolator::types::{CellKey, Lock, LockInfo, MutationKind, Ts, WriteKind};
use serde::{Deserialize, Serialize};

/// A request to prewrite one cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prewrite {
    /// Data column.
    pub col: String,
    /// The transaction's start timestamp.
    pub start_ts: Ts,
    /// The value to write, or `None` to delete the cell.
    pub value: Option<String>,
    /// The lock to leave (primary location, wall time, owner).
    pub lock: Lock,
    /// The column is observed: also set the cell's notify entry (in the
    /// same row transaction as the lock).
    #[serde(default)]
    pub notify: bool,
}

/// Why a prewrite failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum PrewriteError {
    /// Another transaction committed this cell at or after our start_ts.
    #[error("write conflict: committed at {commit_ts} by the transaction started at {start_ts}")]
    WriteConflict {
        /// The conflicting record's commit_ts.
        commit_ts: Ts,
        /// The conflicting transaction's start_ts.
        start_ts: Ts,
    },
    /// Another transaction holds a lock on the cell.
    #[error("locked by the transaction started at {}", .0.start_ts)]
    Locked(LockInfo),
    /// This transaction was already rolled back here: a late prewrite.
    #[error("already rolled back")]
    RolledBack,
}

/// Prewrite `req` into `row` (whose key is `row_key`).
// The error carries the lock met, for the reader's cleanup decision.
#[allow(clippy::result_large_err)]
/// [`Ablation::NoWriteConflictCheck`] and [`Ablation::PrewriteIgnoresLocks`]
/// switch off the two conflict checks.
pub fn prewrite(
    row: &crate::percolator::row::Row,
    row_key: &str,
    req: &Prewrite,
    ablations: Ablations,
) -> Result<RowMutation, PrewriteError> {
    let c = row.col(&req.col);
    if let Some(existing) = c.lock.get(&req.start_ts)
        && existing.primary == req.lock.primary
    {
        return Ok(RowMutation::none());
    }
    // A rollback record sits at commit_ts = start_ts of the rolled-back transaction.
    if c.write
        .get(&req.start_ts)
        .is_some_and(|w| w.kind == WriteKind::Rollback && w.start_ts == req.start_ts)
    {
        return Err(PrewriteError::RolledBack);
    }
    let newer = match ablations.has(Ablation::NoWriteConflictCheck) {
        true => None,
        false => c.write.range(req.start_ts..).next_back(),
    };
    if let Some((commit_ts, w)) = newer {
        return Err(PrewriteError::WriteConflict {
            commit_ts: *commit_ts,
            start_ts: w.start_ts,
        });
    }
    let other = match ablations.has(Ablation::PrewriteIgnoresLocks) {
        true => None,
        false => c.lock.iter().next(),
    };
    if let Some((ts, lock)) = other {
        return Err(PrewriteError::Locked(LockInfo {
            cell: CellKey::new(row_key, req.col.clone()),
            start_ts: *ts,
            lock: lock.clone(),
        }));
    }
    let mut m = RowMutation::none();
    if let Some(value) = &req.value {
        m.push(RowOp::PutData {
            col: req.col.clone(),
            ts: req.start_ts,
            value: value.clone(),
        });
    }
    let kind = if req.value.is_some() {
        MutationKind::Put
    } else {
        MutationKind::Delete
    };
    if req.notify {
        m.push(RowOp::SetNotify {
            col: req.col.clone(),
            value: req.start_ts.0,
        });
    }
    m.push(RowOp::PutLock {
        col: req.col.clone(),
        ts: req.start_ts,
        lock: Lock {
            kind,
            ..req.lock.clone()
        },
    });
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::PrewriteError;
    use crate::percolator::actions::test_util::*;

    #[test]
    fn prewrite_writes_lock_and_data() {
        let mut s = MemStore::default();
        s.must_prewrite_put("k", "v", "k", 10);
        let c = s.column("k");
        assert_eq!(c.data.get(&ts(10)).map(String::as_str), Some("v"));
        assert_eq!(c.lock.get(&ts(10)).unwrap().primary, cell("k"));
        assert!(c.write.is_empty());
    }

    #[test]
    fn conflicts_with_newer_write() {
        let mut s = MemStore::default();
        s.must_put("k", "v1", 12, 15);
        match s.prewrite_put("k", "v2", "k", 10) {
            Err(PrewriteError::WriteConflict {
                commit_ts,
                start_ts,
            }) => {
                assert_eq!((commit_ts.0, start_ts.0), (15, 12));
            }
            other => panic!("expected a write conflict, got {other:?}"),
        }
        // A write committed before our start_ts is no conflict.
        s.must_prewrite_put("k", "v3", "k", 16);
    }

    #[test]
    fn conflicts_with_lock_at_any_ts() {
        let mut s = MemStore::default();
        s.must_prewrite_put("k", "v1", "k", 20);
        assert!(matches!(
            s.prewrite_put("k", "v2", "k", 10),
            Err(PrewriteError::Locked(_))
        ));
        assert!(matches!(
            s.prewrite_put("k", "v2", "k", 30),
            Err(PrewriteError::Locked(_))
        ));
    }

    #[test]
    fn fails_on_own_rollback_record() {
        let mut s = MemStore::default();
        s.must_prewrite_put("k", "v", "k", 10);
        s.must_cleanup_rolled_back("k", 10);
        assert_eq!(
            s.prewrite_put("k", "v", "k", 10),
            Err(PrewriteError::RolledBack)
        );
    }

    #[test]
    fn a_commit_record_at_our_start_ts_is_a_conflict_not_a_rollback() {
        let mut s = MemStore::default();
        // Another transaction (started at 5) committed at exactly 10: a
        // record at our start_ts that is not our rollback record.
        s.must_put("k", "v1", 5, 10);
        assert_eq!(
            s.prewrite_put("k", "v2", "k", 10),
            Err(PrewriteError::WriteConflict {
                commit_ts: ts(10),
                start_ts: ts(5),
            })
        );
    }

    #[test]
    fn own_rollback_record_below_a_newer_write() {
        let mut s = MemStore::default();
        // Rolled back before its prewrite arrived, then someone else committed.
        s.must_cleanup_rolled_back("k", 10);
        s.must_put("k", "other", 11, 12);
        assert_eq!(
            s.prewrite_put("k", "v", "k", 10),
            Err(PrewriteError::RolledBack)
        );
    }

    #[test]
    fn repeat_is_idempotent() {
        let mut s = MemStore::default();
        s.must_prewrite_put("k", "v", "k", 10);
        let before = s.column("k").clone();
        s.must_prewrite_put("k", "v", "k", 10);
        assert_eq!(s.column("k"), &before);
    }

    #[test]
    fn delete_leaves_lock_without_data() {
        let mut s = MemStore::default();
        s.must_prewrite_delete("k", "k", 10);
        let c = s.column("k");
        assert!(c.data.is_empty());
        assert_eq!(c.lock.len(), 1);
    }

    #[test]
    fn ablated_prewrite_misses_a_newer_write() {
        let mut s = MemStore::ablated(crate::percolator::ablation::Ablation::NoWriteConflictCheck);
        s.must_put("k", "v1", 12, 15);
        s.must_prewrite_put("k", "v2", "k", 10);
        assert_eq!(s.column("k").lock.len(), 1);
    }

    #[test]
    fn ablated_prewrite_locks_over_another_lock() {
        let mut s = MemStore::ablated(crate::percolator::ablation::Ablation::PrewriteIgnoresLocks);
        s.must_prewrite_put("k", "v1", "k", 20);
        s.must_prewrite_put("k", "v2", "k", 10);
        assert_eq!(s.column("k").lock.len(), 2);
    }
}
