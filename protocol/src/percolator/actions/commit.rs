//! Commit: replace a cell's lock with a write record at commit_ts (paper,
//! Figure 6, `Commit`, second phase).
//!
//! For the primary this is the commit point: it succeeds only while the lock
//! is still there, so it races safely with a cleanup that rolls the
//! transaction back. A repeat after success finds its own commit record and
//! succeeds again with the same commit_ts (idempotent commit).

use crate::percolator::ablation::{Ablation, Ablations};
use crate::percolator::row::{Row, RowMutation, RowOp};
use crate::percolator::types::{Ts, TxnTs, Write, WriteKind};
use serde::{Deserialize, Serialize};

/// Why a commit failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum CommitError {
    /// The transaction was rolled back here (a cleanup got there first).
    #[error("rolled back")]
    RolledBack,
    /// Neither the lock nor any record of the transaction is here.
    #[error("lock not found")]
    LockNotFound,
}

/// Commit `col` of `row` for the transaction `ts`. On success returns the
/// mutation and the commit_ts now in effect for this cell.
///
/// With [`Ablation::CommitWithoutLockCheck`] a commit whose lock is gone
/// writes its commit record anyway (unless one is already there).
pub fn commit(
    row: &Row,
    col: &str,
    ts: TxnTs,
    ablations: Ablations,
) -> Result<(RowMutation, Ts), CommitError> {
    let c = row.col(col);
    if ablations.has(Ablation::CommitWithoutLockCheck) && !c.lock.contains_key(&ts.start_ts) {
        if let Some((commit_ts, _)) = c.write_of(ts.start_ts).filter(|(_, w)| w.is_commit()) {
            return Ok((RowMutation::none(), commit_ts));
        }
        let kind = if c.data.contains_key(&ts.start_ts) {
            WriteKind::Put
        } else {
            WriteKind::Delete
        };
        let mut m = RowMutation::none();
        m.push(RowOp::PutWrite {
            col: col.to_string(),
            commit_ts: ts.commit_ts,
            write: Write {
                start_ts: ts.start_ts,
                kind,
            },
        });
        return Ok((m, ts.commit_ts));
    }
    if let Some(lock) = c.lock.get(&ts.start_ts) {
        let mut m = RowMutation::none();
        m.push(RowOp::EraseLock {
            col: col.to_string(),
            ts: ts.start_ts,
        })
        .push(RowOp::PutWrite {
            col: col.to_string(),
            commit_ts: ts.commit_ts,
            write: Write {
                start_ts: ts.start_ts,
                kind: lock.kind.into(),
            },
        });
        return Ok((m, ts.commit_ts));
    }
    match c.write_of(ts.start_ts) {
        Some((commit_ts, w)) if w.is_commit() => Ok((RowMutation::none(), commit_ts)),
        Some((_, w)) if w.kind == WriteKind::Rollback => Err(CommitError::RolledBack),
        _ => Err(CommitError::LockNotFound),
    }
}

#[cfg(test)]
mod tests {
    use super::CommitError;
    use crate::percolator::actions::test_util::*;
    use crate::percolator::types::WriteKind;

    #[test]
    fn lock_present_commits() {
        let mut s = MemStore::default();
        s.must_prewrite_put("k", "v", "k", 10);
        assert_eq!(s.must_commit("k", 10, 11).0, 11);
        let c = s.column("k");
        assert!(c.lock.is_empty());
        let w = c.write.get(&ts(11)).unwrap();
        assert_eq!((w.start_ts.0, w.kind), (10, WriteKind::Put));
        s.must_get("k", 12, "v");
    }

    #[test]
    fn lock_gone_after_rollback_fails() {
        let mut s = MemStore::default();
        s.must_prewrite_put("k", "v", "k", 10);
        s.must_cleanup_rolled_back("k", 10);
        assert_eq!(s.commit("k", 10, 11), Err(CommitError::RolledBack));
        s.must_get_none("k", 12);
    }

    #[test]
    fn lock_gone_with_commit_record_is_idempotent() {
        let mut s = MemStore::default();
        s.must_prewrite_put("k", "v", "k", 10);
        s.must_commit("k", 10, 11);
        let before = s.column("k").clone();
        // The reply was lost; the client retries.
        assert_eq!(s.must_commit("k", 10, 11).0, 11);
        assert_eq!(s.column("k"), &before);
    }

    #[test]
    fn lock_gone_without_any_record_fails() {
        let mut s = MemStore::default();
        assert_eq!(s.commit("k", 10, 11), Err(CommitError::LockNotFound));
        assert!(s.column("k").is_empty());
    }

    #[test]
    fn delete_commits_as_delete_record() {
        let mut s = MemStore::default();
        s.must_put("k", "v", 5, 6);
        s.must_prewrite_delete("k", "k", 10);
        s.must_commit("k", 10, 11);
        assert_eq!(
            s.column("k").write.get(&ts(11)).unwrap().kind,
            WriteKind::Delete
        );
        s.must_get_none("k", 12);
    }

    #[test]
    fn ablated_commit_succeeds_after_a_rollback() {
        let mut s =
            MemStore::ablated(crate::percolator::ablation::Ablation::CommitWithoutLockCheck);
        s.must_prewrite_put("k", "v", "k", 10);
        s.must_cleanup_rolled_back("k", 10);
        // The commit point no longer races safely with the cleanup.
        assert_eq!(s.commit("k", 10, 11), Ok(ts(11)));
        let c = s.column("k");
        assert_eq!(
            c.write.get(&ts(10)).map(|w| w.kind),
            Some(WriteKind::Rollback)
        );
        assert!(c.write.get(&ts(11)).is_some_and(|w| w.start_ts == ts(10)));
    }
}
