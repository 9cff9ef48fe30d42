//! Resolve: roll one secondary lock forward or back once the primary has
//! settled the transaction's fate (paper, "roll-forward"; TiKV's
//! `resolve_lock`).
//!
//! Rolling forward writes the commit record the owner would have written,
//! with the primary's commit_ts. Rolling back erases the lock and data and
//! leaves a rollback record so a late prewrite of this cell fails. Both are
//! idempotent.

use crate::percolator::ablation::Ablations;
use crate::percolator::actions::cleanup::rollback;
use crate::percolator::row::{Row, RowMutation, RowOp};
use crate::percolator::types::{Ts, Write, WriteKind};
use serde::{Deserialize, Serialize};

/// What to do with a secondary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Resolution {
    /// The primary committed at this commit_ts: roll forward.
    Commit {
        /// The primary's commit_ts.
        commit_ts: Ts,
    },
    /// The transaction is rolled back: roll back.
    Rollback,
}

/// What a resolve did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResolveAction {
    /// Replaced the lock with a commit record.
    RolledForward,
    /// Erased the lock (or pre-empted a late prewrite) with a rollback record.
    RolledBack,
    /// The cell already records this outcome.
    AlreadyDone,
}

/// Why a resolve could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum ResolveError {
    /// Asked to roll forward a cell that records a rollback.
    #[error("cannot roll forward: the cell records a rollback")]
    AlreadyRolledBack,
    /// Asked to roll back a cell that records a commit.
    #[error("cannot roll back: the cell is committed at {commit_ts}")]
    AlreadyCommitted {
        /// The commit record's timestamp.
        commit_ts: Ts,
    },
    /// Asked to roll forward a cell with neither a lock nor a record.
    #[error("nothing to roll forward")]
    NothingToRollForward,
}

/// Resolve the lock of the transaction at `start_ts` on `col` of `row`.
pub fn resolve(
    row: &Row,
    col: &str,
    start_ts: Ts,
    resolution: Resolution,
    ablations: Ablations,
) -> Result<(RowMutation, ResolveAction), ResolveError> {
    let c = row.col(col);
    let lock = c.lock.get(&start_ts);
    let record = c.write_of(start_ts);
    match resolution {
        Resolution::Commit { commit_ts } => match (lock, record) {
            (Some(lock), _) => {
                let mut m = RowMutation::none();
                m.push(RowOp::EraseLock {
                    col: col.to_string(),
                    ts: start_ts,
                })
                .push(RowOp::PutWrite {
                    col: col.to_string(),
                    commit_ts,
                    write: Write {
                        start_ts,
                        kind: lock.kind.into(),
                    },
                });
                Ok((m, ResolveAction::RolledForward))
            }
            (None, Some((_, w))) if w.is_commit() => {
                Ok((RowMutation::none(), ResolveAction::AlreadyDone))
            }
            (None, Some(_)) => Err(ResolveError::AlreadyRolledBack),
            (None, None) => Err(ResolveError::NothingToRollForward),
        },
        Resolution::Rollback => match (lock, record) {
            (Some(_), _) | (None, None) => Ok((
                rollback(c, col, start_ts, ablations),
                ResolveAction::RolledBack,
            )),
            (None, Some((commit_ts, w))) if w.kind != WriteKind::Rollback => {
                Err(ResolveError::AlreadyCommitted { commit_ts })
            }
            (None, Some(_)) => Ok((RowMutation::none(), ResolveAction::AlreadyDone)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::{Resolution, ResolveAction, ResolveError};
    use crate::percolator::actions::cleanup::TxnStatus;
    use crate::percolator::actions::test_util::*;

    /// Prewrite primary `p` and secondary `s` for the transaction at 10.
    fn two_cell_txn() -> MemStore {
        let mut s = MemStore::default();
        s.must_prewrite_put("p", "pv", "p", 10);
        s.must_prewrite_put("s", "sv", "p", 10);
        s
    }

    #[test]
    fn roll_forward_after_primary_committed() {
        let mut s = two_cell_txn();
        s.must_commit("p", 10, 12);
        // The owner died before committing the secondary; a reader finds its lock.
        let status = s.cleanup("p", 10).0;
        assert_eq!(status, TxnStatus::Committed { commit_ts: ts(12) });
        let action = s.resolve("s", 10, Resolution::Commit { commit_ts: ts(12) });
        assert_eq!(action, Ok(ResolveAction::RolledForward));
        s.must_get("s", 13, "sv");
        s.must_get_none("s", 11);
        // Idempotent.
        assert_eq!(
            s.resolve("s", 10, Resolution::Commit { commit_ts: ts(12) }),
            Ok(ResolveAction::AlreadyDone)
        );
    }

    #[test]
    fn roll_back_while_primary_locked() {
        let mut s = two_cell_txn();
        assert_eq!(s.cleanup("p", 10).0, TxnStatus::RolledBack);
        assert_eq!(
            s.resolve("s", 10, Resolution::Rollback),
            Ok(ResolveAction::RolledBack)
        );
        s.must_get_none("s", 20);
        // The owner wakes up: its primary commit fails and so does a late prewrite.
        assert!(s.commit("p", 10, 12).is_err());
        assert!(s.prewrite_put("s", "sv", "p", 10).is_err());
    }

    #[test]
    fn a_second_roll_back_is_already_done() {
        let mut s = two_cell_txn();
        s.cleanup("p", 10);
        assert_eq!(
            s.resolve("s", 10, Resolution::Rollback),
            Ok(ResolveAction::RolledBack)
        );
        let before = s.column("s").clone();
        // A second cleaning reader (or a duplicated request) finds the
        // rollback record: nothing to do, and no error.
        assert_eq!(
            s.resolve("s", 10, Resolution::Rollback),
            Ok(ResolveAction::AlreadyDone)
        );
        assert_eq!(s.column("s"), &before);
    }

    #[test]
    fn rollback_before_secondary_prewrite_arrives() {
        let mut s = MemStore::default();
        s.must_prewrite_put("p", "pv", "p", 10);
        s.cleanup("p", 10);
        assert_eq!(
            s.resolve("s", 10, Resolution::Rollback),
            Ok(ResolveAction::RolledBack)
        );
        assert!(s.prewrite_put("s", "sv", "p", 10).is_err());
        assert!(s.column("s").lock.is_empty());
    }

    #[test]
    fn committed_cell_is_never_rolled_back() {
        let mut s = two_cell_txn();
        s.must_commit("p", 10, 12);
        s.must_commit("s", 10, 12);
        assert_eq!(
            s.resolve("s", 10, Resolution::Rollback),
            Err(ResolveError::AlreadyCommitted { commit_ts: ts(12) })
        );
    }

    #[test]
    fn rolled_back_cell_is_never_rolled_forward() {
        let mut s = two_cell_txn();
        s.cleanup("p", 10);
        s.resolve("s", 10, Resolution::Rollback).unwrap();
        assert_eq!(
            s.resolve("s", 10, Resolution::Commit { commit_ts: ts(12) }),
            Err(ResolveError::AlreadyRolledBack)
        );
    }

    #[test]
    fn stale_prewrite_cannot_relock_a_committed_transaction() {
        let mut s = two_cell_txn();
        s.must_commit("p", 10, 12);
        s.must_commit("s", 10, 12);
        // A duplicated prewrite of the secondary arrives late.
        assert!(s.prewrite_put("s", "sv", "p", 10).is_err());
        assert!(s.column("s").lock.is_empty());
        s.must_get("s", 13, "sv");
    }
}
