//! Ablations of the Pulsar model: each plants one bug from a real incident
//! into one step, so the checker can show it catches the loss. Off by
//! default. Separate from Percolator's [`crate::percolator::Ablation`]: the two systems
//! share no mechanism.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// One planted bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PulsarAblation {
    /// A partition applies a marker to its producer's ongoing transaction
    /// (by producer id and epoch), not to the TxnID the marker names.
    MarkerByProducerEpoch,
    /// Redelivered (replayed) messages bypass the aborted-transaction filter.
    ReplayIgnoresAborted,
    /// Dispatch reads to the end of the partition, past open transactions.
    NoMaxReadPosition,
    /// Pending acks are kept in memory only (a commit still logs its acks):
    /// a broker restart or unload while they are pending forgets them.
    PendingAckNotDurable,
    /// The coordinator answers "committed" before COMMITTING is durable.
    CommitBeforeLogDurable,
    /// The timeout abort does not check the transaction's state.
    TimeoutRacesCommit,
}

impl PulsarAblation {
    /// Every ablation, in the order they were defined.
    pub const ALL: [PulsarAblation; 6] = [
        PulsarAblation::MarkerByProducerEpoch,
        PulsarAblation::ReplayIgnoresAborted,
        PulsarAblation::NoMaxReadPosition,
        PulsarAblation::PendingAckNotDurable,
        PulsarAblation::CommitBeforeLogDurable,
        PulsarAblation::TimeoutRacesCommit,
    ];

    /// The ablation's name, as scenario files and the CLI spell it.
    pub fn name(self) -> &'static str {
        match self {
            PulsarAblation::MarkerByProducerEpoch => "marker-by-producer-epoch",
            PulsarAblation::ReplayIgnoresAborted => "replay-ignores-aborted",
            PulsarAblation::NoMaxReadPosition => "no-max-read-position",
            PulsarAblation::PendingAckNotDurable => "pending-ack-not-durable",
            PulsarAblation::CommitBeforeLogDurable => "commit-before-log-durable",
            PulsarAblation::TimeoutRacesCommit => "timeout-races-commit",
        }
    }

    /// What the ablation breaks, in a sentence (with the incident behind it).
    pub fn describe(self) -> &'static str {
        match self {
            PulsarAblation::MarkerByProducerEpoch => {
                "Markers name a transaction by producer id and epoch, so a late marker lands on \
                 the producer's next transaction (Kafka, Jepsen 2024; KIP-890)"
            }
            PulsarAblation::ReplayIgnoresAborted => {
                "Redelivered messages bypass the aborted-transaction filter (Pulsar #19814)"
            }
            PulsarAblation::NoMaxReadPosition => {
                "Consumers read past the first message of a still-open transaction"
            }
            PulsarAblation::PendingAckNotDurable => {
                "Pending acks are not logged, so a broker restart while they are pending forgets them"
            }
            PulsarAblation::CommitBeforeLogDurable => {
                "The coordinator answers committed before COMMITTING is durable"
            }
            PulsarAblation::TimeoutRacesCommit => {
                "The timeout abort does not check the transaction's state"
            }
        }
    }

    /// The ablation named `name`.
    pub fn from_name(name: &str) -> Option<PulsarAblation> {
        PulsarAblation::ALL.into_iter().find(|a| a.name() == name)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for PulsarAblation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for PulsarAblation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for PulsarAblation {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        PulsarAblation::from_name(&name).ok_or_else(|| {
            let names: Vec<&str> = PulsarAblation::ALL.iter().map(|a| a.name()).collect();
            serde::de::Error::custom(format!(
                "unknown pulsar ablation {name:?} (known: {})",
                names.join(", ")
            ))
        })
    }
}

/// A set of Pulsar ablations (empty: the faithful model).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PulsarAblations(u8);

impl PulsarAblations {
    /// No ablation.
    pub const NONE: PulsarAblations = PulsarAblations(0);

    /// Just `a`.
    pub fn only(a: PulsarAblation) -> Self {
        PulsarAblations(a.bit())
    }

    /// Whether `a` is planted.
    pub fn has(self, a: PulsarAblation) -> bool {
        self.0 & a.bit() != 0
    }

    /// Add `a`.
    pub fn insert(&mut self, a: PulsarAblation) {
        self.0 |= a.bit();
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The ablations in the set.
    pub fn iter(self) -> impl Iterator<Item = PulsarAblation> {
        PulsarAblation::ALL
            .into_iter()
            .filter(move |a| self.has(*a))
    }
}

impl Serialize for PulsarAblations {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for PulsarAblations {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut set = PulsarAblations::NONE;
        for a in Vec::<PulsarAblation>::deserialize(d)? {
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
        for a in PulsarAblation::ALL {
            assert_eq!(PulsarAblation::from_name(a.name()), Some(a));
            assert!(!a.describe().is_empty());
        }
        assert_eq!(PulsarAblation::from_name("get-ignores-locks"), None);
        let mut set = PulsarAblations::NONE;
        set.insert(PulsarAblation::TimeoutRacesCommit);
        set.insert(PulsarAblation::MarkerByProducerEpoch);
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            vec![
                PulsarAblation::MarkerByProducerEpoch,
                PulsarAblation::TimeoutRacesCommit
            ]
        );
        assert!(!set.has(PulsarAblation::NoMaxReadPosition));
    }

    #[test]
    fn each_ablation_has_its_own_description_and_sets_read_from_names() {
        let mut texts: Vec<&str> = PulsarAblation::ALL.iter().map(|a| a.describe()).collect();
        texts.sort();
        texts.dedup();
        assert_eq!(texts.len(), PulsarAblation::ALL.len());
        let a = PulsarAblation::TimeoutRacesCommit;
        assert_eq!(a.to_string(), a.name());
        assert!(PulsarAblations::NONE.is_empty());
        assert!(!PulsarAblations::only(a).is_empty());
        let json = format!("[\"{}\"]", a.name());
        let set: PulsarAblations = serde_json::from_str(&json).unwrap();
        assert_eq!(set, PulsarAblations::only(a));
    }
}
