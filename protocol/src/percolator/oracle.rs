//! The timestamp oracle's logic (paper, "Timestamps").
//!
//! It hands out strictly increasing timestamps from memory, within a range
//! whose upper end it has written to stable storage first. After a crash it
//! resumes above the persisted upper end, so it never hands out a timestamp
//! twice and never goes backwards.

use crate::percolator::types::Ts;

/// A batch of consecutive timestamps `first..first + count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocation {
    /// The first timestamp of the batch.
    pub first: Ts,
    /// How many timestamps the batch holds.
    pub count: u64,
}

/// What the oracle must do before it may reply with an allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The timestamps to hand out.
    pub allocation: Allocation,
    /// A new upper end to persist (durably) before replying, if the
    /// allocation goes beyond the persisted range.
    pub persist_max: Option<u64>,
}

/// The oracle's in-memory state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Oracle {
    next: u64,
    persisted_max: u64,
    range: u64,
}

impl Oracle {
    /// An oracle that resumes after `persisted_max` (0 for a fresh cluster)
    /// and persists ranges of `range` timestamps at a time.
    pub fn recover(persisted_max: u64, range: u64) -> Self {
        Oracle {
            next: persisted_max + 1,
            persisted_max,
            range: range.max(1),
        }
    }

    /// Allocate `count` (at least one) consecutive timestamps.
    pub fn allocate(&mut self, count: u64) -> Grant {
        let count = count.max(1);
        let first = self.next;
        let last = first + count - 1;
        self.next = last + 1;
        let persist_max = if last > self.persisted_max {
            self.persisted_max = last + self.range;
            Some(self.persisted_max)
        } else {
            None
        };
        Grant {
            allocation: Allocation {
                first: Ts(first),
                count,
            },
            persist_max,
        }
    }

    /// The highest timestamp handed out so far (0 if none).
    pub fn last_served(&self) -> u64 {
        self.next - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_from_memory_within_the_persisted_range() {
        let mut o = Oracle::recover(0, 100);
        let g = o.allocate(1);
        assert_eq!(g.allocation.first, Ts(1));
        assert_eq!(g.persist_max, Some(101));
        let g = o.allocate(5);
        assert_eq!((g.allocation.first, g.allocation.count), (Ts(2), 5));
        assert_eq!(g.persist_max, None);
        assert_eq!(o.last_served(), 6);
    }

    #[test]
    fn a_grant_ending_at_the_persisted_end_needs_no_write() {
        // recover(0, 10) persists 1 + 10 = 11 on the first grant; the
        // second grant ends exactly at 11, still inside the range.
        let mut o = Oracle::recover(0, 10);
        assert_eq!(o.allocate(1).persist_max, Some(11));
        let g = o.allocate(10);
        assert_eq!((g.allocation.first, g.allocation.count), (Ts(2), 10));
        assert_eq!(g.persist_max, None);
        assert_eq!(o.allocate(1).persist_max, Some(22));
    }

    #[test]
    fn persists_before_leaving_the_range() {
        let mut o = Oracle::recover(0, 10);
        o.allocate(1);
        let g = o.allocate(20);
        assert_eq!(g.allocation.first, Ts(2));
        assert_eq!(g.persist_max, Some(21 + 10));
    }

    #[test]
    fn restart_jumps_forward_never_backwards() {
        let mut o = Oracle::recover(0, 100);
        let mut persisted = 0;
        let mut served = Vec::new();
        for _ in 0..3 {
            let g = o.allocate(1);
            if let Some(m) = g.persist_max {
                persisted = m;
            }
            served.push(g.allocation.first.0);
        }
        // Crash: memory is lost, the persisted upper end survives.
        let mut o = Oracle::recover(persisted, 100);
        let g = o.allocate(1);
        assert_eq!(g.allocation.first, Ts(102));
        assert!(served.iter().all(|&t| t < g.allocation.first.0));
    }
}
