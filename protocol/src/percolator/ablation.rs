//! Ablations: each switches off exactly one of Percolator's mechanisms, so
//! users can see what the mechanism buys and percsim can show its checker
//! catches the loss. Off by default; named in scenario files and on the
//! command line (`--ablate NAME`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// One mechanism switched off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ablation {
    /// Get ignores locks below its start_ts and reads the latest write.
    GetIgnoresLocks,
    /// Prewrite ignores writes committed after start_ts (no write-write conflict check).
    NoWriteConflictCheck,
    /// Prewrite ignores other transactions' locks.
    PrewriteIgnoresLocks,
    /// Commit does not check that the lock is still there (the commit point races cleanup).
    CommitWithoutLockCheck,
    /// Secondaries are committed before the primary.
    SecondariesFirst,
    /// Cleanup rolls back a secondary without checking its primary.
    RollbackWithoutPrimaryCheck,
    /// Roll-forward writes the reader's start_ts instead of the primary's commit_ts.
    RollForwardReaderTs,
    /// Rollback leaves no rollback record (a late prewrite can re-lock).
    NoRollbackRecord,
    /// The oracle does not persist its range: after a restart it repeats timestamps.
    OracleForgets,
    /// A client takes its start_ts from its own wall clock instead of the oracle.
    WallClockStartTs,
    /// A lock's owner is judged only by the lock's wall time; its liveness token is ignored.
    StaleByWallTimeOnly,
    /// An observer does not check its acknowledgment column.
    ObserverIgnoresAck,
    /// The notify entry is cleared before the observer's transaction commits.
    NotifyClearedEarly,
    /// A committing owner never refreshes its primary lock's wall time.
    NoLockRefresh,
    /// A scan silently skips the cells it finds locked instead of waiting or
    /// cleaning up (a predicate read that drops rows).
    ScanSkipsLocks,
}

impl Ablation {
    /// Every ablation, in the order they were defined.
    pub const ALL: [Ablation; 15] = [
        Ablation::GetIgnoresLocks,
        Ablation::NoWriteConflictCheck,
        Ablation::PrewriteIgnoresLocks,
        Ablation::CommitWithoutLockCheck,
        Ablation::SecondariesFirst,
        Ablation::RollbackWithoutPrimaryCheck,
        Ablation::RollForwardReaderTs,
        Ablation::NoRollbackRecord,
        Ablation::OracleForgets,
        Ablation::WallClockStartTs,
        Ablation::StaleByWallTimeOnly,
        Ablation::ObserverIgnoresAck,
        Ablation::NotifyClearedEarly,
        Ablation::NoLockRefresh,
        Ablation::ScanSkipsLocks,
    ];

    /// The ablation's name, as scenario files and the CLI spell it.
    pub fn name(self) -> &'static str {
        match self {
            Ablation::GetIgnoresLocks => "get-ignores-locks",
            Ablation::NoWriteConflictCheck => "no-write-conflict-check",
            Ablation::PrewriteIgnoresLocks => "prewrite-ignores-locks",
            Ablation::CommitWithoutLockCheck => "commit-without-lock-check",
            Ablation::SecondariesFirst => "secondaries-first",
            Ablation::RollbackWithoutPrimaryCheck => "rollback-without-primary-check",
            Ablation::RollForwardReaderTs => "roll-forward-reader-ts",
            Ablation::NoRollbackRecord => "no-rollback-record",
            Ablation::OracleForgets => "oracle-forgets",
            Ablation::WallClockStartTs => "wall-clock-start-ts",
            Ablation::StaleByWallTimeOnly => "stale-by-wall-time-only",
            Ablation::ObserverIgnoresAck => "observer-ignores-ack",
            Ablation::NotifyClearedEarly => "notify-cleared-early",
            Ablation::NoLockRefresh => "no-lock-refresh",
            Ablation::ScanSkipsLocks => "scan-skips-locks",
        }
    }

    /// What the ablation switches off, in a sentence.
    pub fn describe(self) -> &'static str {
        match self {
            Ablation::GetIgnoresLocks => "Get ignores locks below its start_ts",
            Ablation::NoWriteConflictCheck => "Prewrite ignores writes committed after start_ts",
            Ablation::PrewriteIgnoresLocks => "Prewrite ignores existing locks",
            Ablation::CommitWithoutLockCheck => {
                "Commit of the primary does not check that its lock is still there"
            }
            Ablation::SecondariesFirst => "Secondaries are committed before the primary",
            Ablation::RollbackWithoutPrimaryCheck => {
                "Cleanup rolls back a secondary without checking its primary"
            }
            Ablation::RollForwardReaderTs => {
                "Roll-forward writes the reader's timestamp instead of the primary's commit_ts"
            }
            Ablation::NoRollbackRecord => "Rollback leaves no rollback record",
            Ablation::OracleForgets => "The oracle does not persist its range",
            Ablation::WallClockStartTs => "A client takes start_ts from its own wall clock",
            Ablation::StaleByWallTimeOnly => {
                "A lock is judged stale by wall time alone, ignoring the owner's liveness token"
            }
            Ablation::ObserverIgnoresAck => "An observer does not check its acknowledgment column",
            Ablation::NotifyClearedEarly => {
                "The notify entry is cleared before the observer's transaction commits"
            }
            Ablation::NoLockRefresh => "Lock wall time is never refreshed during long commits",
            Ablation::ScanSkipsLocks => "A scan silently skips the cells it finds locked",
        }
    }

    /// Whether switching it off can break safety (as opposed to costing
    /// liveness or throughput only).
    pub fn is_safety(self) -> bool {
        !matches!(
            self,
            Ablation::StaleByWallTimeOnly | Ablation::NoLockRefresh
        )
    }

    /// The ablation named `name`.
    pub fn from_name(name: &str) -> Option<Ablation> {
        Ablation::ALL.into_iter().find(|a| a.name() == name)
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl fmt::Display for Ablation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Ablation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Ablation {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Ablation::from_name(&name).ok_or_else(|| {
            let names: Vec<&str> = Ablation::ALL.iter().map(|a| a.name()).collect();
            serde::de::Error::custom(format!(
                "unknown ablation {name:?} (known: {})",
                names.join(", ")
            ))
        })
    }
}

/// A set of ablations (empty: the faithful protocol).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Ablations(u16);

impl Ablations {
    /// No ablation.
    pub const NONE: Ablations = Ablations(0);

    /// Just `a`.
    pub fn only(a: Ablation) -> Self {
        Ablations(a.bit())
    }

    /// Whether `a` is switched off.
    pub fn has(self, a: Ablation) -> bool {
        self.0 & a.bit() != 0
    }

    /// Add `a`.
    pub fn insert(&mut self, a: Ablation) {
        self.0 |= a.bit();
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The ablations in the set.
    pub fn iter(self) -> impl Iterator<Item = Ablation> {
        Ablation::ALL.into_iter().filter(move |a| self.has(*a))
    }
}

impl Serialize for Ablations {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Ablations {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let list = Vec::<Ablation>::deserialize(d)?;
        let mut set = Ablations::NONE;
        for a in list {
            set.insert(a);
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in Ablation::ALL {
            assert_eq!(Ablation::from_name(a.name()), Some(a));
        }
        assert_eq!(Ablation::from_name("nope"), None);
        let mut set = Ablations::NONE;
        set.insert(Ablation::OracleForgets);
        set.insert(Ablation::GetIgnoresLocks);
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            vec![Ablation::GetIgnoresLocks, Ablation::OracleForgets]
        );
        assert!(!set.has(Ablation::NoLockRefresh));
    }

    #[test]
    fn each_ablation_has_its_own_description_and_class() {
        let mut texts: Vec<&str> = Ablation::ALL.iter().map(|a| a.describe()).collect();
        texts.sort();
        texts.dedup();
        assert_eq!(texts.len(), Ablation::ALL.len());
        assert_eq!(
            Ablation::NoRollbackRecord.describe(),
            "Rollback leaves no rollback record"
        );
        let liveness: Vec<Ablation> = Ablation::ALL
            .into_iter()
            .filter(|a| !a.is_safety())
            .collect();
        assert_eq!(
            liveness,
            vec![Ablation::StaleByWallTimeOnly, Ablation::NoLockRefresh]
        );
        assert_eq!(Ablation::ScanSkipsLocks.to_string(), "scan-skips-locks");
    }

    #[test]
    fn a_set_is_empty_only_without_ablations_and_reads_from_names() {
        assert!(Ablations::NONE.is_empty());
        assert!(!Ablations::only(Ablation::GetIgnoresLocks).is_empty());
        let set: Ablations =
            serde_json::from_str(r#"["no-lock-refresh", "oracle-forgets"]"#).unwrap();
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            vec![Ablation::OracleForgets, Ablation::NoLockRefresh]
        );
        assert_eq!(
            serde_json::to_string(&set).unwrap(),
            r#"["oracle-forgets","no-lock-refresh"]"#
        );
        let err = serde_json::from_str::<Ablations>(r#"["nope"]"#).unwrap_err();
        assert!(
            err.to_string().contains("unknown ablation \"nope\""),
            "{err}"
        );
    }
}
