//! Touch: refresh the wall time in a primary lock while a long commit runs
//! (paper: "workers periodically update this wall time while committing").

use crate::percolator::row::{Row, RowMutation, RowOp};
use crate::percolator::types::{Lock, Ts};

/// Raise the wall time of the lock at `start_ts` on `col` to `wall_ms`.
/// Returns whether the lock is still there.
pub fn touch(row: &Row, col: &str, start_ts: Ts, wall_ms: u64) -> (RowMutation, bool) {
    let Some(lock) = row.col(col).lock.get(&start_ts) else {
        return (RowMutation::none(), false);
    };
    let mut m = RowMutation::none();
    if wall_ms > lock.wall_ms {
        m.push(RowOp::PutLock {
            col: col.to_string(),
            ts: start_ts,
            lock: Lock {
                wall_ms,
                ..lock.clone()
            },
        });
    }
    (m, true)
}

#[cfg(test)]
mod tests {
    use crate::percolator::actions::test_util::*;

    #[test]
    fn touch_raises_wall_time_only_forward() {
        let mut s = MemStore::default();
        s.must_prewrite_put("p", "v", "p", 10);
        assert!(s.touch("p", 10, 500));
        assert_eq!(s.column("p").lock.get(&ts(10)).unwrap().wall_ms, 500);
        assert!(s.touch("p", 10, 100));
        assert_eq!(s.column("p").lock.get(&ts(10)).unwrap().wall_ms, 500);
    }

    #[test]
    fn touch_with_the_same_wall_time_writes_nothing() {
        let mut s = MemStore::default();
        s.must_prewrite_put("p", "v", "p", 10);
        let row = s.rows.get("p").unwrap();
        // The lock already says 0: no write (a needless durable write
        // otherwise), yet the lock is reported present.
        let (m, present) = super::touch(row, COL, ts(10), 0);
        assert!(present);
        assert!(m.is_empty(), "{m:?}");
        let (m, _) = super::touch(row, COL, ts(10), 1);
        assert_eq!(m.ops.len(), 1);
    }

    #[test]
    fn touch_after_cleanup_reports_lock_gone() {
        let mut s = MemStore::default();
        s.must_prewrite_put("p", "v", "p", 10);
        s.cleanup("p", 10);
        assert!(!s.touch("p", 10, 500));
        assert!(s.column("p").lock.is_empty());
    }
}
