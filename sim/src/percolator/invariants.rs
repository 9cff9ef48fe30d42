//! Percolator's assertions on what must never happen (on in release
//! builds; see [`crate::invariant`]). Each holds for the faithful protocol;
//! an ablation that switches off the mechanism behind one disarms it, so
//! that the history checker, not the assertion, is what catches the
//! ablated protocol.

use crate::invariant;
use percsim_protocol::percolator::{Ablation, Ablations};

/// Whether the oracle's grants are monotone in this run (the oracle
/// persists its range).
pub(crate) fn oracle_monotone(ablations: Ablations) -> bool {
    !ablations.has(Ablation::OracleForgets)
}

/// Whether a committing transaction's commit_ts must exceed its start_ts
/// (both come from a monotone oracle).
pub(crate) fn commit_after_start(ablations: Ablations) -> bool {
    oracle_monotone(ablations) && !ablations.has(Ablation::WallClockStartTs)
}

/// Assert that a grant starting at `first` lies above every timestamp
/// granted before (`high`).
pub(crate) fn check_grant(high: u64, first: u64) {
    invariant::check(first > high, || {
        format!("the oracle granted {first} after already granting up to {high}")
    });
}

/// Assert that a transaction commits after it started.
pub(crate) fn check_commit(txn: u64, start_ts: u64, commit_ts: u64) {
    invariant::check(commit_ts > start_ts, || {
        format!("transaction {txn} commits at {commit_ts}, not above its start_ts {start_ts}")
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faithful_timestamps_pass() {
        check_grant(10, 11);
        check_commit(1, 5, 6);
        assert!(commit_after_start(Ablations::NONE));
        assert!(!commit_after_start(Ablations::only(
            Ablation::WallClockStartTs
        )));
        assert!(!oracle_monotone(Ablations::only(Ablation::OracleForgets)));
    }

    #[test]
    #[should_panic(
        expected = "invariant violated: the oracle granted 10 after already granting up to 10"
    )]
    fn a_repeated_grant_trips() {
        check_grant(10, 10);
    }

    #[test]
    #[should_panic(expected = "invariant violated: transaction 3 commits at 5")]
    fn a_commit_at_or_below_start_trips() {
        check_commit(3, 5, 5);
    }
}
