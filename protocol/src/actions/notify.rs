//! Notify steps (paper, "Notifications"): the `notify` column marks dirty
//! cells for the observers' scanners. It is not transactional: a weak
//! notification sets it directly, and an observer clears it only after its
//! transaction committed, and only if nothing newer arrived meanwhile.

use crate::row::{Row, RowMutation, RowOp};
use crate::types::{Ts, WriteKind};

/// Set the notify entry of `col` without a transactional write (a weak
/// notification), keeping the larger value.
pub fn weak_notify(col: &str, value: u64) -> RowMutation {
    let mut m = RowMutation::none();
    m.push(RowOp::SetNotify {
        col: col.to_string(),
        value,
    });
    m
}

/// Clear the notify entry of `col` after an observer processed it: only if
/// the entry still holds `seen` (no newer notification), no lock is on the
/// cell (no write in flight) and no commit record is newer than
/// `observed_commit_ts`, the version the observer saw (`None`: the observer
/// saw no version). Returns the mutation and whether the entry is cleared.
pub fn clear_notify(
    row: &Row,
    col: &str,
    seen: u64,
    observed_commit_ts: Option<Ts>,
) -> (RowMutation, bool) {
    if row.notify.get(col) != Some(&seen) {
        return (RowMutation::none(), !row.notify.contains_key(col));
    }
    let c = row.col(col);
    let newest = c
        .write
        .iter()
        .rev()
        .find(|(_, w)| w.kind != WriteKind::Rollback)
        .map(|(ts, _)| *ts);
    if !c.lock.is_empty() || newest > observed_commit_ts {
        return (RowMutation::none(), false);
    }
    let mut m = RowMutation::none();
    m.push(RowOp::ClearNotify {
        col: col.to_string(),
    });
    (m, true)
}

#[cfg(test)]
mod tests {
    use crate::actions::test_util::*;
    use crate::actions::{RowReply, RowRequest};

    fn notify_of(s: &MemStore, row: &str) -> Option<u64> {
        s.rows.get(row).and_then(|r| r.notify.get(COL).copied())
    }

    fn clear(s: &mut MemStore, row: &str, seen: u64, observed: Option<u64>) -> bool {
        let req = RowRequest::ClearNotify {
            col: COL.into(),
            seen,
            observed_commit_ts: observed.map(ts),
        };
        match s.step(row, req) {
            RowReply::NotifyCleared(b) => b,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    #[test]
    fn observed_write_sets_notify_at_prewrite() {
        let mut s = MemStore::default();
        s.must_prewrite_observed("k", "v", 10);
        assert_eq!(notify_of(&s, "k"), Some(10));
        s.must_commit("k", 10, 11);
        assert_eq!(notify_of(&s, "k"), Some(10));
    }

    #[test]
    fn clear_after_the_observer_saw_the_newest_version() {
        let mut s = MemStore::default();
        s.must_prewrite_observed("k", "v", 10);
        s.must_commit("k", 10, 11);
        assert!(clear(&mut s, "k", 10, Some(11)));
        assert_eq!(notify_of(&s, "k"), None);
    }

    #[test]
    fn no_clear_while_a_newer_write_is_in_flight_or_committed() {
        let mut s = MemStore::default();
        s.must_prewrite_observed("k", "v1", 10);
        s.must_commit("k", 10, 11);
        // A second writer prewrites after the observer's snapshot.
        s.must_prewrite_observed("k", "v2", 20);
        assert!(!clear(&mut s, "k", 20, Some(11)), "a lock is on the cell");
        s.must_commit("k", 20, 21);
        assert!(
            !clear(&mut s, "k", 20, Some(11)),
            "a newer version committed"
        );
        assert!(clear(&mut s, "k", 20, Some(21)));
    }

    #[test]
    fn no_clear_when_a_newer_notification_arrived() {
        let mut s = MemStore::default();
        s.step(
            "k",
            RowRequest::WeakNotify {
                col: COL.into(),
                value: 5,
            },
        );
        s.step(
            "k",
            RowRequest::WeakNotify {
                col: COL.into(),
                value: 9,
            },
        );
        assert!(!clear(&mut s, "k", 5, None));
        assert!(clear(&mut s, "k", 9, None));
        assert_eq!(notify_of(&s, "k"), None);
    }
}
