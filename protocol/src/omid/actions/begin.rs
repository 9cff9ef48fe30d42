//! Begin: the TSO hands out timestamps from a range whose ceiling it
//! persists before handing out any timestamp at or above it, so a TSO that
//! restarts (or a backup that takes over) starts above everything the
//! previous one may have handed out ("Omid, Reloaded", section 4: the TSO
//! persists timestamp ranges in the store).

use serde::{Deserialize, Serialize};

/// The TSO's timestamps in memory: the next one to hand out, and the
/// persisted ceiling it may not reach without persisting a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TsRange {
    /// The next timestamp to hand out.
    pub next: u64,
    /// The persisted ceiling: no timestamp at or above it was handed out.
    pub ceiling: u64,
}

/// What taking a timestamp asks of the TSO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Take {
    /// The timestamp handed out.
    pub ts: u64,
    /// A new ceiling to persist before handing `ts` out, when the range ran out.
    pub persist_ceiling: Option<u64>,
}

/// The range a TSO starts from after reading `persisted_ceiling`: every
/// timestamp it hands out is at or above it, and so is its low watermark
/// (a transaction that began under an earlier TSO cannot be checked against
/// a conflict map that is gone).
pub fn recover(persisted_ceiling: u64) -> TsRange {
    TsRange {
        next: persisted_ceiling.max(1),
        ceiling: persisted_ceiling.max(1),
    }
}

/// Take the next timestamp from `range`; a range that ran out grows by
/// `batch` (at least 1), and the new ceiling must be persisted first.
pub fn take(range: &mut TsRange, batch: u64) -> Take {
    let ts = range.next;
    range.next += 1;
    let persist_ceiling = if range.next > range.ceiling {
        range.ceiling = ts + batch.max(1);
        Some(range.ceiling)
    } else {
        None
    };
    Take {
        ts,
        persist_ceiling,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_is_persisted_before_it_is_used_and_recovery_starts_above_it() {
        let mut r = recover(0);
        let first = take(&mut r, 10);
        assert_eq!(first.ts, 1);
        assert_eq!(first.persist_ceiling, Some(11));
        for want in 2..=10 {
            let t = take(&mut r, 10);
            assert_eq!((t.ts, t.persist_ceiling), (want, None));
        }
        let t = take(&mut r, 10);
        assert_eq!((t.ts, t.persist_ceiling), (11, Some(21)));
        let mut again = recover(21);
        assert!(take(&mut again, 10).ts > t.ts);
    }

    #[test]
    fn a_zero_batch_still_grows_the_range() {
        let mut r = recover(5);
        let t = take(&mut r, 0);
        assert_eq!((t.ts, t.persist_ceiling), (5, Some(6)));
        assert_eq!(take(&mut r, 0).ts, 6);
    }
}
