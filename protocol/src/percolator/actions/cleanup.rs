//! Cleanup: settle a transaction's fate at its primary (paper, "lazy
//! cleanup"; TiKV's `cleanup`/`check_txn_status`).
//!
//! Run as one row transaction on the primary's row, so it races safely with
//! the owner's commit of the primary: if the primary lock is still there the
//! transaction is rolled back (lock and data erased, a rollback record left);
//! if the primary has a commit record the transaction committed and its
//! secondaries must be rolled forward. If there is neither (the primary's
//! prewrite has not arrived yet), a rollback record is written so that a late
//! prewrite fails.
//!
//! A reader that suspects an owner only because a lock's wall time looks old
//! asks for a rollback [`Staleness`]-conditioned: the primary lock's own wall
//! time decides, since the owner refreshes the primary alone while it commits
//! (paper: "workers periodically update this wall time while committing";
//! TiKV's `check_txn_status` judges the primary lock's TTL likewise).

use crate::percolator::ablation::{Ablation, Ablations};
use crate::percolator::row::{Column, Row, RowMutation, RowOp};
use crate::percolator::types::{Ts, Write, WriteKind};
use serde::{Deserialize, Serialize};

/// The fate of a transaction as its primary records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TxnStatus {
    /// The primary is committed at `commit_ts`: roll secondaries forward.
    Committed {
        /// The transaction's commit_ts.
        commit_ts: Ts,
    },
    /// The transaction is rolled back: roll secondaries back.
    RolledBack,
    /// The primary is still locked and its wall time is fresh: the owner is
    /// alive, nothing was done, and the reader must wait.
    Live,
}

/// The condition of a rollback asked for because a lock looked stale: roll
/// back only if the primary lock's wall time is older than `ttl_ms` as of
/// `now_wall_ms` (the asking reader's clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Staleness {
    /// The reader's wall time when it asked.
    pub now_wall_ms: u64,
    /// How old a lock's wall time may be before its owner counts as stuck.
    pub ttl_ms: u64,
}

impl Staleness {
    /// Whether a lock written (or last refreshed) at `wall_ms` is still fresh.
    pub fn is_fresh(&self, wall_ms: u64) -> bool {
        self.now_wall_ms.saturating_sub(wall_ms) <= self.ttl_ms
    }
}

/// What a cleanup did to the row, for the history's event counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CleanupAction {
    /// Nothing: the fate was already recorded.
    None,
    /// Erased the lock and wrote a rollback record.
    RolledBack,
    /// No lock and no record: wrote a rollback record ahead of the prewrite.
    RolledBackBeforePrewrite,
}

/// Settle the transaction started at `start_ts` whose primary is `col` of
/// `row`. With `stale`, a primary lock whose wall time is still fresh is left
/// alone ([`TxnStatus::Live`]).
pub fn cleanup(
    row: &Row,
    col: &str,
    start_ts: Ts,
    stale: Option<Staleness>,
    ablations: Ablations,
) -> (RowMutation, TxnStatus, CleanupAction) {
    let c = row.col(col);
    if let Some(lock) = c.lock.get(&start_ts) {
        if stale.is_some_and(|s| s.is_fresh(lock.wall_ms)) {
            return (RowMutation::none(), TxnStatus::Live, CleanupAction::None);
        }
        return (
            rollback(c, col, start_ts, ablations),
            TxnStatus::RolledBack,
            CleanupAction::RolledBack,
        );
    }
    match c.write_of(start_ts) {
        Some((commit_ts, w)) if w.is_commit() => (
            RowMutation::none(),
            TxnStatus::Committed { commit_ts },
            CleanupAction::None,
        ),
        Some(_) => (
            RowMutation::none(),
            TxnStatus::RolledBack,
            CleanupAction::None,
        ),
        None => (
            rollback(c, col, start_ts, ablations),
            TxnStatus::RolledBack,
            CleanupAction::RolledBackBeforePrewrite,
        ),
    }
}

/// The mutation that rolls back the transaction at `start_ts` in one column:
/// erase its lock and data, and leave a rollback record at `start_ts` (unless
/// a record already sits there). [`Ablation::NoRollbackRecord`] leaves none.
pub(crate) fn rollback(c: &Column, col: &str, start_ts: Ts, ablations: Ablations) -> RowMutation {
    let mut m = RowMutation::none();
    if c.lock.contains_key(&start_ts) {
        m.push(RowOp::EraseLock {
            col: col.to_string(),
            ts: start_ts,
        });
    }
    if c.data.contains_key(&start_ts) {
        m.push(RowOp::EraseData {
            col: col.to_string(),
            ts: start_ts,
        });
    }
    if !c.write.contains_key(&start_ts) && !ablations.has(Ablation::NoRollbackRecord) {
        m.push(RowOp::PutWrite {
            col: col.to_string(),
            commit_ts: start_ts,
            write: Write {
                start_ts,
                kind: WriteKind::Rollback,
            },
        });
    }
    m
}

#[cfg(test)]
mod tests {
    use super::{CleanupAction, TxnStatus};
    use crate::percolator::actions::test_util::*;
    use crate::percolator::types::WriteKind;

    fn stale_check(now_wall_ms: u64) -> Option<super::Staleness> {
        Some(super::Staleness {
            now_wall_ms,
            ttl_ms: 300,
        })
    }

    #[test]
    fn a_refreshed_primary_is_left_to_its_live_owner() {
        let mut s = MemStore::default();
        s.must_prewrite_put("p", "v", "p", 10);
        assert!(s.touch("p", 10, 500));
        let (status, action) = s.cleanup_if("p", 10, stale_check(800));
        assert_eq!((status, action), (TxnStatus::Live, CleanupAction::None));
        assert!(s.column("p").lock.contains_key(&ts(10)));
    }

    #[test]
    fn a_primary_stale_by_its_own_wall_time_is_rolled_back() {
        let mut s = MemStore::default();
        s.must_prewrite_put("p", "v", "p", 10);
        assert!(s.touch("p", 10, 500));
        let (status, action) = s.cleanup_if("p", 10, stale_check(801));
        assert_eq!(
            (status, action),
            (TxnStatus::RolledBack, CleanupAction::RolledBack)
        );
        assert!(s.column("p").lock.is_empty());
    }

    #[test]
    fn an_unconditioned_cleanup_rolls_back_a_fresh_primary() {
        let mut s = MemStore::default();
        s.must_prewrite_put("p", "v", "p", 10);
        assert!(s.touch("p", 10, 500));
        assert_eq!(s.cleanup("p", 10).0, TxnStatus::RolledBack);
    }

    #[test]
    fn locked_primary_is_rolled_back() {
        let mut s = MemStore::default();
        s.must_prewrite_put("p", "v", "p", 10);
        let (status, action) = s.cleanup("p", 10);
        assert_eq!(
            (status, action),
            (TxnStatus::RolledBack, CleanupAction::RolledBack)
        );
        let c = s.column("p");
        assert!(c.lock.is_empty() && c.data.is_empty());
        assert_eq!(c.write.get(&ts(10)).unwrap().kind, WriteKind::Rollback);
    }

    #[test]
    fn committed_primary_reports_commit_ts() {
        let mut s = MemStore::default();
        s.must_prewrite_put("p", "v", "p", 10);
        s.must_commit("p", 10, 14);
        let (status, action) = s.cleanup("p", 10);
        assert_eq!(status, TxnStatus::Committed { commit_ts: ts(14) });
        assert_eq!(action, CleanupAction::None);
    }

    #[test]
    fn rollback_before_the_prewrite_arrives() {
        let mut s = MemStore::default();
        let (status, action) = s.cleanup("p", 10);
        assert_eq!(
            (status, action),
            (
                TxnStatus::RolledBack,
                CleanupAction::RolledBackBeforePrewrite
            )
        );
        // The late prewrite now fails and leaves nothing behind.
        assert!(s.prewrite_put("p", "v", "p", 10).is_err());
        assert!(s.column("p").lock.is_empty());
    }

    #[test]
    fn cleanup_is_idempotent() {
        let mut s = MemStore::default();
        s.must_prewrite_put("p", "v", "p", 10);
        s.cleanup("p", 10);
        let before = s.column("p").clone();
        assert_eq!(
            s.cleanup("p", 10),
            (TxnStatus::RolledBack, CleanupAction::None)
        );
        assert_eq!(s.column("p"), &before);
    }

    #[test]
    fn cleanup_then_owner_commit_fails() {
        let mut s = MemStore::default();
        s.must_prewrite_put("p", "v", "p", 10);
        s.cleanup("p", 10);
        assert!(s.commit("p", 10, 12).is_err());
    }

    #[test]
    fn ablated_rollback_leaves_no_record_and_a_late_prewrite_relocks() {
        let mut s = MemStore::ablated(crate::percolator::ablation::Ablation::NoRollbackRecord);
        s.must_prewrite_put("p", "v", "p", 10);
        s.must_cleanup_rolled_back("p", 10);
        assert!(s.column("p").write.is_empty());
        s.must_prewrite_put("p", "v", "p", 10);
        assert_eq!(s.column("p").lock.len(), 1);
    }
}
