//! The checker's identities: its rules and the classes of what they find.
//! Reports carry them as strings ([`crate::RuleReport::id`],
//! [`crate::Finding::class`]); those strings are [`Rule::name`] and
//! [`FindingClass::name`], so a rename here is a rename everywhere, and a
//! class cannot be filed under a rule it does not belong to.

use crate::identity::{ClassOf, Named, RuleOf};
use std::fmt;

/// A rule of the checker (of `percsim-history/1` and Elle list-append
/// histories; stream histories have [`crate::stream::StreamRule`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// Every read returns the newest version committed before its start_ts.
    SnapshotReads,
    /// No two committed writers of a cell overlap between start_ts and commit_ts.
    NoWriteConflicts,
    /// Timestamps are unique, commit follows start, real-time order is respected.
    TimestampOrder,
    /// All of a transaction's writes commit with one commit_ts, or none; no lock is left.
    AtomicCommits,
    /// No dependency cycle snapshot isolation forbids, no aborted or intermediate read, no lost update.
    NoDependencyCycles,
    /// At most one observer transaction commits per change of an observed cell.
    ObserverAtMostOnce,
    /// Every change to an observed cell is processed; no notify entry is left.
    NoLostNotification,
    /// Every scan returns exactly the visible cells of its range.
    PredicateReads,
    /// Elle list-append histories only: the lists read agree with one another.
    ConsistentLists,
}

impl Rule {
    /// Every rule: those of `percsim-history/1` in report order, then the
    /// one only Elle list-append histories have.
    pub const ALL: [Rule; 9] = [
        Rule::SnapshotReads,
        Rule::NoWriteConflicts,
        Rule::TimestampOrder,
        Rule::AtomicCommits,
        Rule::NoDependencyCycles,
        Rule::ObserverAtMostOnce,
        Rule::NoLostNotification,
        Rule::PredicateReads,
        Rule::ConsistentLists,
    ];

    /// The rule's id, as reports spell it.
    pub fn name(self) -> &'static str {
        match self {
            Rule::SnapshotReads => "snapshot_reads",
            Rule::NoWriteConflicts => "no_write_conflicts",
            Rule::TimestampOrder => "timestamp_order",
            Rule::AtomicCommits => "atomic_commits",
            Rule::NoDependencyCycles => "no_dependency_cycles",
            Rule::ObserverAtMostOnce => "observer_at_most_once",
            Rule::NoLostNotification => "no_lost_notification",
            Rule::PredicateReads => "predicate_reads",
            Rule::ConsistentLists => "consistent_lists",
        }
    }

    /// What must hold, in a sentence.
    pub fn describe(self) -> &'static str {
        match self {
            Rule::SnapshotReads => {
                "every read returns the newest version committed before its start_ts"
            }
            Rule::NoWriteConflicts => {
                "no two committed writers of a cell overlap between start_ts and commit_ts"
            }
            Rule::TimestampOrder => {
                "timestamps are unique, commit follows start, real-time order is respected"
            }
            Rule::AtomicCommits => {
                "all of a transaction's writes are committed with one commit_ts, or none; no lock left"
            }
            Rule::NoDependencyCycles => {
                "no G0, G1a, G1b, G1c, G-single, lost update or non-adjacent G2 cycle"
            }
            Rule::ObserverAtMostOnce => {
                "at most one observer transaction commits per change of an observed cell"
            }
            Rule::NoLostNotification => {
                "every change to an observed cell is followed by a committed observer run that saw it; no notify entry is left"
            }
            Rule::PredicateReads => {
                "every scan returns exactly the cells of its range with a value visible at its start_ts"
            }
            Rule::ConsistentLists => {
                "every read of a list is a prefix of the longest read of it; no element twice; each appended once"
            }
        }
    }
}

impl Named for Rule {
    const ALL: &'static [Rule] = &Rule::ALL;
    fn name(self) -> &'static str {
        Rule::name(self)
    }
}

impl RuleOf for Rule {
    type Class = FindingClass;
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A class of finding: a kind of violation, or (for [`FindingClass::G2Item`])
/// an anomaly snapshot isolation allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FindingClass {
    /// A read returned a version older than the newest one before its start_ts.
    StaleRead,
    /// A read returned a version committed at or after its start_ts.
    FutureRead,
    /// A read returned a value no committed transaction wrote.
    UncommittedRead,
    /// Two committed writers of a cell overlap between start_ts and commit_ts.
    OverlappingWrites,
    /// One timestamp was handed out twice.
    DuplicateTimestamp,
    /// A commit_ts is not above its start_ts.
    CommitNotAfterStart,
    /// A transaction invoked after another completed has a smaller start_ts.
    RealtimeOrder,
    /// As [`FindingClass::RealtimeOrder`], for two transactions of one client.
    ClientOrder,
    /// Some but not all of a committed transaction's writes are in the store.
    PartialCommit,
    /// None of a committed transaction's writes are in the store.
    CommittedNotInStore,
    /// The store holds a commit of a transaction its client was told aborted.
    AbortedButCommitted,
    /// The store's commit_ts differs from the one the client was told.
    CommitTsMismatch,
    /// One transaction's writes carry several commit_ts.
    MultipleCommitTs,
    /// The store holds a different value than the transaction wrote.
    ValueMismatch,
    /// A committed put's data is missing from the store.
    MissingData,
    /// The store holds both a commit and a rollback of one write.
    CommitAndRollback,
    /// The store holds a write no transaction made.
    UnwrittenData,
    /// A lock is left in the final state.
    LockLeft,
    /// A cycle of write dependencies only.
    G0,
    /// A committed read of a value whose writer never committed.
    G1a,
    /// A read of a value its writer overwrote in the same transaction.
    G1b,
    /// A cycle of write and read dependencies, no anti-dependency.
    G1c,
    /// A cycle with exactly one anti-dependency (read skew).
    GSingle,
    /// Two committed transactions read the same version of a cell and both wrote it.
    LostUpdate,
    /// A cycle with two adjacent anti-dependencies (write skew): allowed.
    G2Item,
    /// A cycle with several anti-dependencies, no two adjacent.
    G2ItemNonadjacent,
    /// Two committed observer runs for one change of an observed cell.
    DuplicateRun,
    /// A committed observer run with no change to process.
    RunWithoutChange,
    /// A change to an observed cell no committed observer run saw.
    UnprocessedChange,
    /// A notify entry is left in the final state.
    NotifyLeft,
    /// A scan missed a cell of its range visible at its start_ts.
    MissingRow,
    /// A scan returned a cell not visible at its start_ts.
    Phantom,
    /// A scan returned a visible cell with the wrong value.
    WrongVersion,
    /// A read of a list is not a prefix of the longest read of it.
    IncompatibleOrder,
    /// A list holds one element twice.
    DuplicateElements,
    /// One element is appended by two operations.
    DuplicateAppends,
}

impl FindingClass {
    /// Every class, grouped by rule in report order.
    pub const ALL: [FindingClass; 36] = [
        FindingClass::StaleRead,
        FindingClass::FutureRead,
        FindingClass::UncommittedRead,
        FindingClass::OverlappingWrites,
        FindingClass::DuplicateTimestamp,
        FindingClass::CommitNotAfterStart,
        FindingClass::RealtimeOrder,
        FindingClass::ClientOrder,
        FindingClass::PartialCommit,
        FindingClass::CommittedNotInStore,
        FindingClass::AbortedButCommitted,
        FindingClass::CommitTsMismatch,
        FindingClass::MultipleCommitTs,
        FindingClass::ValueMismatch,
        FindingClass::MissingData,
        FindingClass::CommitAndRollback,
        FindingClass::UnwrittenData,
        FindingClass::LockLeft,
        FindingClass::G0,
        FindingClass::G1a,
        FindingClass::G1b,
        FindingClass::G1c,
        FindingClass::GSingle,
        FindingClass::LostUpdate,
        FindingClass::G2Item,
        FindingClass::G2ItemNonadjacent,
        FindingClass::DuplicateRun,
        FindingClass::RunWithoutChange,
        FindingClass::UnprocessedChange,
        FindingClass::NotifyLeft,
        FindingClass::MissingRow,
        FindingClass::Phantom,
        FindingClass::WrongVersion,
        FindingClass::IncompatibleOrder,
        FindingClass::DuplicateElements,
        FindingClass::DuplicateAppends,
    ];

    /// The class's name, as reports spell it.
    pub fn name(self) -> &'static str {
        use FindingClass::*;
        match self {
            StaleRead => "stale_read",
            FutureRead => "future_read",
            UncommittedRead => "uncommitted_read",
            OverlappingWrites => "overlapping_writes",
            DuplicateTimestamp => "duplicate_timestamp",
            CommitNotAfterStart => "commit_not_after_start",
            RealtimeOrder => "realtime_order",
            ClientOrder => "client_order",
            PartialCommit => "partial_commit",
            CommittedNotInStore => "committed_not_in_store",
            AbortedButCommitted => "aborted_but_committed",
            CommitTsMismatch => "commit_ts_mismatch",
            MultipleCommitTs => "multiple_commit_ts",
            ValueMismatch => "value_mismatch",
            MissingData => "missing_data",
            CommitAndRollback => "commit_and_rollback",
            UnwrittenData => "unwritten_data",
            LockLeft => "lock_left",
            G0 => "G0",
            G1a => "G1a",
            G1b => "G1b",
            G1c => "G1c",
            GSingle => "G-single",
            LostUpdate => "lost-update",
            G2Item => "G2-item",
            G2ItemNonadjacent => "G2-item-nonadjacent",
            DuplicateRun => "duplicate_run",
            RunWithoutChange => "run_without_change",
            UnprocessedChange => "unprocessed_change",
            NotifyLeft => "notify_left",
            MissingRow => "missing_row",
            Phantom => "phantom",
            WrongVersion => "wrong_version",
            IncompatibleOrder => "incompatible-order",
            DuplicateElements => "duplicate-elements",
            DuplicateAppends => "duplicate-appends",
        }
    }

    /// The class's name in Elle's list-append analysis, where it has its
    /// own (`G-single-item`, `G-nonadjacent-item`: Elle names a cycle
    /// through key items by its kind with `-item`); otherwise [`Self::name`].
    /// Reports on Elle histories use it.
    pub fn elle_name(self) -> &'static str {
        match self {
            FindingClass::GSingle => "G-single-item",
            FindingClass::G2ItemNonadjacent => "G-nonadjacent-item",
            other => other.name(),
        }
    }

    /// What the class means, in a sentence.
    pub fn describe(self) -> &'static str {
        use FindingClass::*;
        match self {
            StaleRead => "A read returned a version older than the newest one before its start_ts",
            FutureRead => "A read returned a version committed at or after its start_ts",
            UncommittedRead => "A read returned a value no committed transaction wrote",
            OverlappingWrites => {
                "Two committed writers of a cell overlap between start_ts and commit_ts"
            }
            DuplicateTimestamp => "One timestamp was handed out twice",
            CommitNotAfterStart => "A commit_ts is not above its start_ts",
            RealtimeOrder => "A transaction invoked after another completed has a smaller start_ts",
            ClientOrder => "As realtime_order, for two transactions of one client",
            PartialCommit => {
                "Some but not all of a committed transaction's writes are in the store"
            }
            CommittedNotInStore => "None of a committed transaction's writes are in the store",
            AbortedButCommitted => {
                "The store holds a commit of a transaction its client was told aborted"
            }
            CommitTsMismatch => "The store's commit_ts differs from the one the client was told",
            MultipleCommitTs => "One transaction's writes carry several commit_ts",
            ValueMismatch => "The store holds a different value than the transaction wrote",
            MissingData => "A committed put's data is missing from the store",
            CommitAndRollback => "The store holds both a commit and a rollback of one write",
            UnwrittenData => "The store holds a write no transaction made",
            LockLeft => "A lock is left in the final state",
            G0 => "A cycle of write dependencies only",
            G1a => "A committed read of a value whose writer never committed",
            G1b => "A read of a value its writer overwrote in the same transaction",
            G1c => "A cycle of write and read dependencies, no anti-dependency",
            GSingle => "A cycle with exactly one anti-dependency (read skew)",
            LostUpdate => {
                "Two committed transactions read the same version of a cell and both wrote it"
            }
            G2Item => "A cycle with two adjacent anti-dependencies (write skew): allowed",
            G2ItemNonadjacent => "A cycle with several anti-dependencies, no two adjacent",
            DuplicateRun => "Two committed observer runs for one change of an observed cell",
            RunWithoutChange => "A committed observer run with no change to process",
            UnprocessedChange => "A change to an observed cell no committed observer run saw",
            NotifyLeft => "A notify entry is left in the final state",
            MissingRow => "A scan missed a cell of its range visible at its start_ts",
            Phantom => "A scan returned a cell not visible at its start_ts",
            WrongVersion => "A scan returned a visible cell with the wrong value",
            IncompatibleOrder => "A read of a list is not a prefix of the longest read of it",
            DuplicateElements => "A list holds one element twice",
            DuplicateAppends => "One element is appended by two operations",
        }
    }

    /// The rule that reports this class.
    pub fn rule(self) -> Rule {
        use FindingClass::*;
        match self {
            StaleRead | FutureRead | UncommittedRead => Rule::SnapshotReads,
            OverlappingWrites => Rule::NoWriteConflicts,
            DuplicateTimestamp | CommitNotAfterStart | RealtimeOrder | ClientOrder => {
                Rule::TimestampOrder
            }
            PartialCommit | CommittedNotInStore | AbortedButCommitted | CommitTsMismatch
            | MultipleCommitTs | ValueMismatch | MissingData | CommitAndRollback
            | UnwrittenData | LockLeft => Rule::AtomicCommits,
            G0 | G1a | G1b | G1c | GSingle | LostUpdate | G2Item | G2ItemNonadjacent => {
                Rule::NoDependencyCycles
            }
            DuplicateRun | RunWithoutChange => Rule::ObserverAtMostOnce,
            UnprocessedChange | NotifyLeft => Rule::NoLostNotification,
            MissingRow | Phantom | WrongVersion => Rule::PredicateReads,
            IncompatibleOrder | DuplicateElements | DuplicateAppends => Rule::ConsistentLists,
        }
    }

    /// Whether snapshot isolation allows it: such findings go to the report's
    /// "allowed" section and never fail a check.
    pub fn is_allowed(self) -> bool {
        self == FindingClass::G2Item
    }

    /// The class with this name, if there is one ([`Named::from_name`],
    /// callable without the trait in scope).
    pub fn from_name(name: &str) -> Option<FindingClass> {
        <FindingClass as Named>::from_name(name)
    }
}

impl Named for FindingClass {
    const ALL: &'static [FindingClass] = &FindingClass::ALL;
    fn name(self) -> &'static str {
        FindingClass::name(self)
    }
}

impl ClassOf for FindingClass {
    type Rule = Rule;
    fn rule_of(self) -> Rule {
        self.rule()
    }
}

impl fmt::Display for FindingClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_identity_is_described() {
        assert!(Rule::ALL.iter().all(|r| !r.describe().is_empty()));
        assert!(FindingClass::ALL.iter().all(|c| !c.describe().is_empty()));
        assert_eq!(FindingClass::from_name("G2"), None);
    }

    #[test]
    fn all_lists_every_variant_in_rule_order() {
        // Discriminants count up from 0 in declaration order, so ALL holds
        // every variant exactly once when ALL[i] is variant i and the last
        // variant is the last entry.
        for (i, c) in FindingClass::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i, "{c:?}");
        }
        assert_eq!(
            FindingClass::ALL.len(),
            FindingClass::DuplicateAppends as usize + 1
        );
        for (i, r) in Rule::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i, "{r:?}");
        }
        assert_eq!(Rule::ALL.len(), Rule::ConsistentLists as usize + 1);
        assert_eq!(
            FindingClass::ALL.iter().filter(|c| c.is_allowed()).count(),
            1
        );
    }
}
