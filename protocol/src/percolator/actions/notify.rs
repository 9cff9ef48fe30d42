//! Notify steps (paper, "Notifications"): the `notify` column marks dirty
//! cells for the observers' scanners. It is not transactional: a weak
//! notification sets it directly, and an observer clears it only after its
//! transaction committed, and only if nothing newer arrived meanwhile.

use crate::percolator::row::{Row, RowMutation, RowOp};
use crate::percolator::types::{Ts, WriteKind};

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
/// cell (no write in flight), no commit record is newer than
/// `observed_commit_ts`, the version the observer saw (`None`: the observer
/// saw no version), and every acknowledgment column in `acks` (one per
/// observer of the column) acknowledges that version: its newest committed
/// value, the start_ts of that observer's last committed run, is above the
/// version's commit_ts. Returns the mutation and whether the entry is cleared.
pub fn clear_notify(
    row: &Row,
    col: &str,
    seen: u64,
    observed_commit_ts: Option<Ts>,
    acks: &[String],
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
    if let Some(version) = newest
        && !acks.iter().all(|a| acknowledged(row, a) > Some(version.0))
    {
        // Another observer of the column has not processed this version.
        return (RowMutation::none(), false);
    }
    let mut m = RowMutation::none();
    m.push(RowOp::ClearNotify {
        col: col.to_string(),
    });
    (m, true)
}

/// The newest committed value of acknowledgment column `ack`: the start_ts
/// of its observer's last committed run (`None` if it never committed one).
fn acknowledged(row: &Row, ack: &str) -> Option<u64> {
    let c = row.col(ack);
    let (_, w) = c
        .write
        .iter()
        .rev()
        .find(|(_, w)| w.kind != WriteKind::Rollback)?;
    c.data.get(&w.start_ts)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use crate::percolator::actions::test_util::*;
    use crate::percolator::actions::{RowReply, RowRequest};

    fn notify_of(s: &MemStore, row: &str) -> Option<u64> {
        s.rows.get(row).and_then(|r| r.notify.get(COL).copied())
    }

    fn clear(s: &mut MemStore, row: &str, seen: u64, observed: Option<u64>) -> bool {
        clear_acked(s, row, seen, observed, &[])
    }

    fn clear_acked(
        s: &mut MemStore,
        row: &str,
        seen: u64,
        observed: Option<u64>,
        acks: &[&str],
    ) -> bool {
        let req = RowRequest::ClearNotify {
            col: COL.into(),
            seen,
            observed_commit_ts: observed.map(ts),
            acks: acks.iter().map(|a| a.to_string()).collect(),
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

    /// Commit `value` to column `col` of `row` in a one-cell transaction.
    fn put_col(s: &mut MemStore, row: &str, col: &str, value: &str, start: u64, commit: u64) {
        use crate::percolator::actions::Prewrite;
        use crate::percolator::types::{Lock, MutationKind, TxnTs};
        use crate::percolator::{CellKey, SessionId};
        let req = RowRequest::Prewrite(Prewrite {
            col: col.into(),
            start_ts: ts(start),
            value: Some(value.into()),
            lock: Lock {
                primary: CellKey::new(row, col),
                kind: MutationKind::Put,
                wall_ms: 0,
                owner: SessionId(1),
            },
            notify: false,
        });
        assert_eq!(s.step(row, req), RowReply::Prewrite(Ok(())));
        let t = TxnTs {
            start_ts: ts(start),
            commit_ts: ts(commit),
        };
        let req = RowRequest::Commit {
            col: col.into(),
            ts: t,
        };
        assert!(matches!(s.step(row, req), RowReply::Commit(Ok(_))));
    }

    /// An acknowledgment must be strictly above the version's commit_ts: a
    /// run that acknowledges with its start_ts saw the version only if it
    /// started after the version committed.
    #[test]
    fn an_acknowledgment_equal_to_the_commit_ts_does_not_acknowledge_it() {
        let mut s = MemStore::default();
        s.must_prewrite_observed("k", "v", 10);
        s.must_commit("k", 10, 11);
        put_col(&mut s, "k", "ack:b", "11", 3, 4);
        assert!(!clear_acked(&mut s, "k", 10, Some(11), &["ack:b"]));
        assert_eq!(notify_of(&s, "k"), Some(10));
        put_col(&mut s, "k", "ack:b", "12", 12, 13);
        assert!(clear_acked(&mut s, "k", 10, Some(11), &["ack:b"]));
    }

    /// Two observers, A and B, watch one column. A processes the change,
    /// commits its acknowledgment and clears; B's run aborted (its
    /// acknowledgment is older than the change). The entry must stay so a
    /// scanner runs B again: clearing it would lose B's change forever.
    #[test]
    fn one_observers_clear_keeps_the_entry_for_another_that_has_not_acknowledged() {
        let mut s = MemStore::default();
        // B acknowledged an older version (its run at start_ts 3).
        put_col(&mut s, "k", "ack:b", "3", 3, 4);
        // The change, with its notify entry.
        s.must_prewrite_observed("k", "v", 10);
        s.must_commit("k", 10, 11);
        // A's run at 20 saw it and committed its acknowledgment.
        put_col(&mut s, "k", "ack:a", "20", 20, 21);
        assert!(
            !clear_acked(&mut s, "k", 10, Some(11), &["ack:a", "ack:b"]),
            "B has not acknowledged the change"
        );
        assert_eq!(notify_of(&s, "k"), Some(10));
        // B's next run at 30 commits its acknowledgment: now it clears.
        put_col(&mut s, "k", "ack:b", "30", 30, 31);
        assert!(clear_acked(&mut s, "k", 10, Some(11), &["ack:a", "ack:b"]));
        assert_eq!(notify_of(&s, "k"), None);
    }
}
