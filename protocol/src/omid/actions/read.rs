//! Read: how a reader at snapshot `start_ts` resolves one version of a
//! cell ("Omid, Reloaded", section 3, Algorithm 2; "Taking Omid to the
//! Clouds", section 4). A version with a shadow cell is resolved locally.
//! One without is looked up in the commit table; one with neither belongs
//! to a transaction in flight or dead, and the reader **invalidates** it
//! (a conditional write of an invalid entry, so a late commit fails), then
//! reads its shadow cell once more, since the writer may have completed
//! and deleted its entry meanwhile.

use crate::omid::ids::{OmidAblation, OmidAblations};
use crate::omid::types::{CtEntry, DataVersion};

/// What a reader does with a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// It is committed below the snapshot: read it.
    Visible {
        /// Its commit timestamp.
        commit_ts: u64,
    },
    /// It is not in the snapshot: look at the next older version.
    Invisible,
    /// Look its writer up in the commit table.
    AskCommitTable,
    /// Invalidate its writer in the commit table.
    Invalidate,
    /// Its writer is invalid in the commit table: read its shadow cell
    /// once more (an invalidation can land after the writer completed and
    /// deleted its entry) and resolve with [`after_invalidation`].
    RereadShadow,
}

/// The version's commit timestamp `commit_ts` against the snapshot.
fn by_commit(commit_ts: u64, start_ts: u64) -> Resolution {
    if commit_ts < start_ts {
        Resolution::Visible { commit_ts }
    } else {
        Resolution::Invisible
    }
}

/// Resolve `v` from the version alone. A version written at or after the
/// snapshot (the reader's own, or a later transaction's) is never in it.
/// With [`OmidAblation::ReaderSkipsCommitTable`] a version without a shadow
/// cell is taken for aborted.
pub fn from_shadow(v: &DataVersion, start_ts: u64, ablations: &OmidAblations) -> Resolution {
    if v.start_ts >= start_ts {
        return Resolution::Invisible;
    }
    match v.shadow_ts {
        Some(c) => by_commit(c, start_ts),
        None if ablations.has(OmidAblation::ReaderSkipsCommitTable) => Resolution::Invisible,
        None => Resolution::AskCommitTable,
    }
}

/// Resolve a version without a shadow cell from its writer's commit-table
/// `entry`. An invalid entry is not final by itself: a late invalidation
/// may have landed after the writer wrote its shadow cells and deleted its
/// entry, so the shadow cell is read once more. With [`OmidAblation::NoInvalidation`] an absent entry is
/// skipped as in flight, and the writer may still commit below the
/// snapshot.
pub fn from_commit_table(
    entry: Option<CtEntry>,
    start_ts: u64,
    ablations: &OmidAblations,
) -> Resolution {
    match entry {
        Some(CtEntry::Committed { commit_ts }) => by_commit(commit_ts, start_ts),
        Some(CtEntry::Invalid) => Resolution::RereadShadow,
        None if ablations.has(OmidAblation::NoInvalidation) => Resolution::Invisible,
        None => Resolution::Invalidate,
    }
}

/// Resolve after invalidating: `entry` is what the commit table holds now,
/// `shadow_ts` the version's shadow cell read again after it. A writer that
/// completed (shadow cells written, entry deleted) before the invalidation
/// is found by its shadow cell.
pub fn after_invalidation(entry: CtEntry, shadow_ts: Option<u64>, start_ts: u64) -> Resolution {
    match (entry, shadow_ts) {
        (CtEntry::Committed { commit_ts }, _) => by_commit(commit_ts, start_ts),
        (CtEntry::Invalid, Some(c)) => by_commit(c, start_ts),
        (CtEntry::Invalid, None) => Resolution::Invisible,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::omid::actions::conflict::AbortReason;
    use crate::omid::actions::test_util::*;

    #[test]
    fn a_shadow_cell_resolves_a_version_without_the_commit_table() {
        let mut m = Model::new(100);
        let w = m.must_begin();
        m.must_write(w, "x", "v1");
        m.must_commit(w, &["x"]);
        m.must_complete(w, &["x"]);
        assert!(
            m.ct.is_empty(),
            "the entry is deleted after the shadow cells"
        );
        let r = m.must_begin();
        m.must_read(r, "x", Some("v1"));
        assert_eq!(m.ct_lookups, 0);
    }

    #[test]
    fn a_version_without_a_shadow_cell_is_resolved_by_the_commit_table() {
        let mut m = Model::new(100);
        let w = m.must_begin();
        m.must_write(w, "x", "v1");
        m.must_commit(w, &["x"]);
        let r = m.must_begin();
        m.must_read(r, "x", Some("v1"));
        assert_eq!(m.ct_lookups, 1);
    }

    #[test]
    fn skipping_the_commit_table_misses_a_committed_write() {
        let mut m = Model::new(100);
        m.ablations = OmidAblations::of(&[OmidAblation::ReaderSkipsCommitTable]);
        let w = m.must_begin();
        m.must_write(w, "x", "v1");
        m.must_commit(w, &["x"]);
        let r = m.must_begin();
        m.must_read(r, "x", None);
    }

    #[test]
    fn without_invalidation_a_skipped_writer_commits_below_the_snapshot() {
        let mut m = Model::new(100);
        m.ablations = OmidAblations::of(&[OmidAblation::NoInvalidation]);
        let w = m.must_begin();
        m.must_write(w, "x", "v1");
        let c = m.decide(w, &["x"]).expect("decided");
        let r = m.must_begin();
        assert!(c < r);
        // The decision is not yet in the commit table: the reader skips it.
        m.must_read(r, "x", None);
        m.persist(w, c).expect("nothing stops the late commit");
        // The same snapshot now reads what it missed.
        m.must_read(r, "x", Some("v1"));
    }

    #[test]
    fn an_invalidation_makes_the_late_commit_fail() {
        let mut m = Model::new(100);
        let w = m.must_begin();
        m.must_write(w, "x", "v1");
        let c = m.decide(w, &["x"]).expect("decided");
        let r = m.must_begin();
        m.must_read(r, "x", None);
        assert_eq!(m.persist(w, c), Err(AbortReason::Invalidated));
        m.must_read(r, "x", None);
    }

    #[test]
    fn a_late_invalid_entry_does_not_hide_a_completed_writer() {
        let mut m = Model::new(100);
        let w = m.must_begin();
        m.must_write(w, "x", "v1");
        let r = m.must_begin();
        m.must_commit(w, &["x"]);
        // The reader saw the version before its shadow cell...
        let stale = m.cells["x"][0].clone();
        m.must_complete(w, &["x"]);
        // ...and a late invalidation lands after the entry was deleted.
        m.ct.insert(w, CtEntry::Invalid);
        let none = OmidAblations::default();
        let step = from_commit_table(m.ct.get(&w).copied(), r + 10, &none);
        assert_eq!(step, Resolution::RereadShadow);
        assert_eq!(stale.shadow_ts, None);
        m.must_read(r + 10, "x", Some("v1"));
    }

    #[test]
    fn an_invalidation_that_lands_after_completion_reads_the_shadow_cell() {
        let v = DataVersion {
            start_ts: 3,
            value: Some("v".into()),
            shadow_ts: None,
        };
        let none = OmidAblations::default();
        assert_eq!(from_shadow(&v, 10, &none), Resolution::AskCommitTable);
        assert_eq!(from_commit_table(None, 10, &none), Resolution::Invalidate);
        let found = after_invalidation(CtEntry::Invalid, Some(5), 10);
        assert_eq!(found, Resolution::Visible { commit_ts: 5 });
        let later = after_invalidation(CtEntry::Committed { commit_ts: 12 }, None, 10);
        assert_eq!(later, Resolution::Invisible);
        assert_eq!(from_shadow(&v, 3, &none), Resolution::Invisible);
    }
}
