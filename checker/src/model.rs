//! Consistency models as an input: which anomalies each model forbids, as
//! Elle relates Adya's phenomena to models (`elle/consistency_model.clj`:
//! its `models` graph of implications and `direct-proscribed-anomalies`),
//! and the verdict of a report re-filed under the model asked for.
//!
//! Elle's facts used here, restricted to the models offered:
//! - serializable (PL-3) implies repeatable read and snapshot isolation;
//!   each of those implies read committed (PL-2), which implies read
//!   uncommitted (PL-1).
//! - Read uncommitted forbids G0 and duplicate elements (a version order
//!   must be total).
//! - Read committed forbids G1 (G1a, G1b, G1c); an incompatible order
//!   implies G1a.
//! - Repeatable read forbids G2-item and lost update.
//! - Snapshot isolation forbids G-SI and G-nonadjacent (so G-single, and
//!   G-nonadjacent-item), and lost update (through cursor stability).
//! - Serializable forbids G2 (so every cycle), and all of the above.
//!
//! percsim's own rules that Elle has no phenomenon for are placed as they
//! read: the timestamp rules (a read of its snapshot, first committer wins,
//! timestamps in real-time order) and the scans judged at their snapshot are
//! snapshot isolation's promise; the store's integrity (atomic commits, no
//! lock left) and the observer rules hold under every model.

use crate::FindingClass;
use std::fmt;

/// A consistency model a history can be judged against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Model {
    /// Adya's PL-1: no G0 (write cycles).
    ReadUncommitted,
    /// Adya's PL-2: in addition no G1 (aborted, intermediate or circular reads).
    ReadCommitted,
    /// Adya's PL-2.99: in addition no G2-item and no lost update.
    RepeatableRead,
    /// Adya's PL-SI: read committed, and no cycle whose anti-dependencies
    /// are never two in a row (G-single, G-nonadjacent), no lost update;
    /// percsim's timestamp rules besides.
    SnapshotIsolation,
    /// Adya's PL-3 (conflict serializability): no dependency cycle at all,
    /// and everything snapshot isolation and repeatable read forbid.
    Serializable,
}

impl Model {
    /// The model a history that names none is judged against (when no
    /// model is asked for): snapshot isolation, what the checker's rules
    /// were first written for.
    pub const DEFAULT: Model = Model::SnapshotIsolation;

    /// Every model, strongest first.
    pub const ALL: [Model; 5] = [
        Model::Serializable,
        Model::SnapshotIsolation,
        Model::RepeatableRead,
        Model::ReadCommitted,
        Model::ReadUncommitted,
    ];

    /// The model's name, as `--model` takes it and reports spell it
    /// (Elle's friendly names).
    pub fn name(self) -> &'static str {
        match self {
            Model::ReadUncommitted => "read-uncommitted",
            Model::ReadCommitted => "read-committed",
            Model::RepeatableRead => "repeatable-read",
            Model::SnapshotIsolation => "snapshot-isolation",
            Model::Serializable => "serializable",
        }
    }

    /// The model in words, as a sentence's object ("allowed under ...").
    pub fn prose(self) -> &'static str {
        match self {
            Model::ReadUncommitted => "read uncommitted",
            Model::ReadCommitted => "read committed",
            Model::RepeatableRead => "repeatable read",
            Model::SnapshotIsolation => "snapshot isolation",
            Model::Serializable => "serializability",
        }
    }

    /// What the model forbids, in a sentence.
    pub fn describe(self) -> &'static str {
        match self {
            Model::ReadUncommitted => "Adya's PL-1: no G0 (a cycle of write dependencies)",
            Model::ReadCommitted => {
                "Adya's PL-2: no G0 and no G1 (G1a aborted read, G1b intermediate read, G1c circular information flow)"
            }
            Model::RepeatableRead => {
                "Adya's PL-2.99: read committed, and no G2-item (an item anti-dependency cycle) and no lost update"
            }
            Model::SnapshotIsolation => {
                "Adya's PL-SI: read committed, no G-single or G-nonadjacent cycle and no lost update; reads of the snapshot at start_ts and first committer wins"
            }
            Model::Serializable => {
                "Adya's PL-3: no dependency cycle at all, and everything snapshot isolation and repeatable read forbid"
            }
        }
    }

    /// The model named `name` (see [`Model::name`]); an unknown name is an
    /// error that lists the known ones.
    pub fn from_name(name: &str) -> Result<Model, UnknownModel> {
        Model::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| UnknownModel(name.to_string()))
    }

    /// Whether every history that satisfies `self` satisfies `other`
    /// (Elle's `models` graph, reflexive and transitive).
    pub fn implies(self, other: Model) -> bool {
        use Model::*;
        match self {
            Serializable => true,
            SnapshotIsolation | RepeatableRead => {
                matches!(other, ReadCommitted | ReadUncommitted) || other == self
            }
            ReadCommitted => matches!(other, ReadCommitted | ReadUncommitted),
            ReadUncommitted => other == ReadUncommitted,
        }
    }

    /// Whether a history with a finding of `class` cannot satisfy the model.
    pub fn forbids(self, class: FindingClass) -> bool {
        weakest_forbidding(class)
            .iter()
            .any(|&weaker| self.implies(weaker))
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for Model {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// A model is read as its name; another name is an error naming the known
/// ones.
impl<'de> serde::Deserialize<'de> for Model {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Model, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Model::from_name(&name).map_err(serde::de::Error::custom)
    }
}

impl std::str::FromStr for Model {
    type Err = UnknownModel;
    fn from_str(s: &str) -> Result<Model, UnknownModel> {
        Model::from_name(s)
    }
}

/// A model name no model has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown consistency model {name:?}: expected one of {known}", name = .0, known = known_models())]
pub struct UnknownModel(pub String);

/// The known model names, comma-separated, strongest first.
fn known_models() -> String {
    let names: Vec<&str> = Model::ALL.iter().map(|m| m.name()).collect();
    names.join(", ")
}

/// The weakest models that forbid `class`: every model implying one of
/// them forbids it too.
fn weakest_forbidding(class: FindingClass) -> &'static [Model] {
    use FindingClass::*;
    use Model::*;
    match class {
        // Elle: PL-1 forbids G0 and duplicate elements; an element appended
        // twice breaks the total version order the same way.
        G0 | DuplicateElements | DuplicateAppends => &[ReadUncommitted],
        // Elle: PL-2 forbids G1; incompatible-order implies G1a.
        G1a | G1b | G1c | UncommittedRead | IncompatibleOrder => &[ReadCommitted],
        // Elle: lost update is forbidden by cursor stability (so by
        // repeatable read and, through consistent view, snapshot
        // isolation); G-single-item and G-nonadjacent-item imply both
        // G2-item (repeatable read) and G-nonadjacent (snapshot isolation).
        LostUpdate | GSingle | G2ItemNonadjacent => &[RepeatableRead, SnapshotIsolation],
        // Write skew: G2-item, which snapshot isolation allows.
        G2Item => &[RepeatableRead],
        // Timestamps and snapshots: snapshot isolation's own promise.
        StaleRead | FutureRead | OverlappingWrites | DuplicateTimestamp | CommitNotAfterStart
        | RealtimeOrder | ClientOrder | MissingRow | Phantom | WrongVersion => &[SnapshotIsolation],
        // The store's integrity and the observers' promises: every model.
        PartialCommit | CommittedNotInStore | AbortedButCommitted | CommitTsMismatch
        | MultipleCommitTs | ValueMismatch | MissingData | CommitAndRollback | UnwrittenData
        | LockLeft | DuplicateRun | RunWithoutChange | UnprocessedChange | NotifyLeft => {
            &[ReadUncommitted]
        }
    }
}

/// Why a report was judged against its model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelSource {
    /// The caller asked for it (`percsim check --model`).
    Asked,
    /// The history names it (its `model` field): the promise of the system
    /// that wrote it.
    History,
    /// Nobody asked and the history names no model (an Elle history never
    /// does): [`Model::DEFAULT`].
    Default,
}

impl ModelSource {
    /// Every source.
    pub const ALL: [ModelSource; 3] = [
        ModelSource::Asked,
        ModelSource::History,
        ModelSource::Default,
    ];

    /// The source's name, as reports spell it.
    pub fn name(self) -> &'static str {
        match self {
            ModelSource::Asked => "asked",
            ModelSource::History => "history",
            ModelSource::Default => "default",
        }
    }

    /// The source in words, for the text report.
    pub fn describe(self) -> &'static str {
        match self {
            ModelSource::Asked => "as asked",
            ModelSource::History => "named by the history: what the system that wrote it promises",
            ModelSource::Default => "default: the history names no model",
        }
    }

    /// The model to judge a history by, and why: `asked` when given, else
    /// the one the history names, else [`Model::DEFAULT`].
    pub fn choose(asked: Option<Model>, named: Option<Model>) -> (Model, ModelSource) {
        match (asked, named) {
            (Some(m), _) => (m, ModelSource::Asked),
            (None, Some(m)) => (m, ModelSource::History),
            (None, None) => (Model::DEFAULT, ModelSource::Default),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_an_unknown_one_is_named() {
        for m in Model::ALL {
            assert_eq!(Model::from_name(m.name()), Ok(m));
            assert!(!m.describe().is_empty() && !m.prose().is_empty());
        }
        let e = Model::from_name("linearizable").unwrap_err().to_string();
        assert!(
            e.contains("\"linearizable\"") && e.contains("read-committed"),
            "{e}"
        );
    }

    /// The implications are Elle's: a partial order with serializable on
    /// top and read uncommitted at the bottom, snapshot isolation and
    /// repeatable read incomparable.
    #[test]
    fn implications_form_elles_order() {
        for a in Model::ALL {
            assert!(a.implies(a));
            assert!(Model::Serializable.implies(a));
            assert!(a.implies(Model::ReadUncommitted));
            for b in Model::ALL {
                if a != b && a.implies(b) {
                    assert!(!b.implies(a), "{a} and {b}");
                }
            }
        }
        assert!(!Model::SnapshotIsolation.implies(Model::RepeatableRead));
        assert!(!Model::RepeatableRead.implies(Model::SnapshotIsolation));
        assert!(!Model::ReadCommitted.implies(Model::SnapshotIsolation));
    }

    /// A stronger model forbids everything a weaker one does; write skew
    /// divides snapshot isolation from serializability, G-single read
    /// committed from snapshot isolation, G1 read uncommitted from read
    /// committed.
    #[test]
    fn a_stronger_model_forbids_more() {
        for class in FindingClass::ALL {
            for a in Model::ALL {
                for b in Model::ALL {
                    if a.implies(b) && b.forbids(class) {
                        assert!(a.forbids(class), "{a} allows {class}, {b} forbids it");
                    }
                }
            }
            assert!(Model::Serializable.forbids(class), "{class}");
        }
        let si = Model::SnapshotIsolation;
        assert!(!si.forbids(FindingClass::G2Item));
        assert!(Model::RepeatableRead.forbids(FindingClass::G2Item));
        assert!(si.forbids(FindingClass::GSingle));
        assert!(!Model::ReadCommitted.forbids(FindingClass::GSingle));
        assert!(Model::ReadCommitted.forbids(FindingClass::G1c));
        assert!(!Model::ReadUncommitted.forbids(FindingClass::G1a));
        assert!(Model::ReadUncommitted.forbids(FindingClass::G0));
    }

    /// `--model` wins, then the history's model, then the default.
    #[test]
    fn the_model_is_the_one_asked_then_named_then_the_default() {
        use ModelSource::*;
        let (rc, ser) = (Model::ReadCommitted, Model::Serializable);
        assert_eq!(ModelSource::choose(Some(rc), Some(ser)), (rc, Asked));
        assert_eq!(ModelSource::choose(None, Some(ser)), (ser, History));
        assert_eq!(ModelSource::choose(None, None), (Model::DEFAULT, Default));
        for s in ModelSource::ALL {
            assert!(!s.describe().is_empty() && !s.name().is_empty());
        }
    }

    /// A model is written as its name and read back; another name is an
    /// error naming it.
    #[test]
    fn a_model_serializes_as_its_name() {
        for m in Model::ALL {
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.name()));
            assert_eq!(serde_json::from_str::<Model>(&json).unwrap(), m);
        }
        let e = serde_json::from_str::<Model>("\"strict-1sr\"").unwrap_err();
        assert!(
            e.to_string()
                .contains("unknown consistency model \"strict-1sr\""),
            "{e}"
        );
    }
}
