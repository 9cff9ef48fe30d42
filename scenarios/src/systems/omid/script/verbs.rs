//! The words of an Omid script: its verbs, counts, wait conditions,
//! intercept rules and named points.

use crate::script::{Countable, MsgFate, MsgLeg, SystemVerb};
use percsim_protocol::omid::OmidPoint;
use percsim_sim::FaultKind;
use percsim_sim::omid::OmidCounter;
use serde::{Deserialize, Deserializer, Serialize};

fn is_false(b: &bool) -> bool {
    !*b
}

/// The column a step names when it names none.
pub const DEFAULT_COL: &str = "v";

fn default_col() -> String {
    DEFAULT_COL.to_string()
}

/// Deserialize a present field (even `null`) as `Some`, so a missing
/// expectation and an expected missing value differ.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// The outcome a commit step expects its client to be told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpectOutcome {
    /// Committed.
    Committed,
    /// Aborted (by the TSO, or invalidated).
    Aborted,
}

/// What a commit-table entry must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpectEntry {
    /// No entry (never decided, or deleted after post-commit).
    None,
    /// A commit decision.
    Committed,
    /// A reader's invalidation.
    Invalid,
}

/// Omid's verbs of a script (the engine's verbs are in
/// [`crate::script::Step`]). A transaction is the engine's thread: `begin`
/// opens it on its client, `commit` or `abort` closes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case", deny_unknown_fields)]
pub enum OmidVerb {
    /// Begin transaction `txn` on `client`: a start timestamp from the
    /// primary TSO.
    Begin {
        /// The client that runs the transaction.
        client: usize,
        /// The transaction's name in the script.
        txn: String,
        /// Go on with the next step without waiting for this one.
        #[serde(default, skip_serializing_if = "is_false")]
        no_wait: bool,
    },
    /// Read a cell in the transaction's snapshot; `expect` (a string, or
    /// null for no value) is checked.
    Get {
        /// The transaction.
        txn: String,
        /// Row key.
        row: String,
        /// Column (default `v`).
        #[serde(default = "default_col")]
        col: String,
        /// The value the read must return (null: none).
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        expect: Option<Option<String>>,
        /// Go on with the next step without waiting for this one.
        #[serde(default, skip_serializing_if = "is_false")]
        no_wait: bool,
    },
    /// Write a cell: its data cell goes to the store at once, at the
    /// transaction's start timestamp.
    Put {
        /// The transaction.
        txn: String,
        /// Row key.
        row: String,
        /// Column (default `v`).
        #[serde(default = "default_col")]
        col: String,
        /// Value.
        value: String,
        /// Go on with the next step without waiting for this one.
        #[serde(default, skip_serializing_if = "is_false")]
        no_wait: bool,
    },
    /// Delete a cell: a tombstone goes to the store at once, as a data
    /// cell at the transaction's start timestamp (a snapshot that sees it
    /// reads no value; the history records a delete).
    Delete {
        /// The transaction.
        txn: String,
        /// Row key.
        row: String,
        /// Column (default `v`).
        #[serde(default = "default_col")]
        col: String,
        /// Go on with the next step without waiting for this one.
        #[serde(default, skip_serializing_if = "is_false")]
        no_wait: bool,
    },
    /// Commit through the TSO; `expect` is checked against what the client
    /// is told.
    Commit {
        /// The transaction.
        txn: String,
        /// The outcome the client must be told.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect: Option<ExpectOutcome>,
        /// Go on with the next step without waiting for this one.
        #[serde(default, skip_serializing_if = "is_false")]
        no_wait: bool,
    },
    /// Roll back on the client's word: its data cells are removed.
    Abort {
        /// The transaction.
        txn: String,
    },
    /// Check a transaction's commit-table entry now.
    AssertCommitTable {
        /// The transaction (begun by an earlier step).
        txn: String,
        /// What the entry must be.
        entry: ExpectEntry,
    },
    /// Check the data cell a transaction wrote to (`row`, `col`) now: whether
    /// it is there, whether its shadow cell is, its value.
    AssertCell {
        /// The transaction (begun by an earlier step).
        txn: String,
        /// Row key.
        row: String,
        /// Column (default `v`).
        #[serde(default = "default_col")]
        col: String,
        /// Whether the transaction's data cell is in the store.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<bool>,
        /// Whether its shadow cell is (a data cell without one has none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shadow: Option<bool>,
        /// The data cell's value.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<String>,
    },
}

/// The do-words of [`OmidVerb`].
pub const VERBS: &[&str] = &[
    "begin",
    "get",
    "put",
    "delete",
    "commit",
    "abort",
    "assert_commit_table",
    "assert_cell",
];

impl OmidVerb {
    /// The transaction it names.
    pub fn txn(&self) -> &str {
        match self {
            OmidVerb::Begin { txn, .. }
            | OmidVerb::Get { txn, .. }
            | OmidVerb::Put { txn, .. }
            | OmidVerb::Delete { txn, .. }
            | OmidVerb::Commit { txn, .. }
            | OmidVerb::Abort { txn }
            | OmidVerb::AssertCommitTable { txn, .. }
            | OmidVerb::AssertCell { txn, .. } => txn,
        }
    }
}

impl SystemVerb for OmidVerb {
    fn thread(&self) -> Option<&str> {
        match self {
            OmidVerb::AssertCommitTable { .. } | OmidVerb::AssertCell { .. } => None,
            other => Some(other.txn()),
        }
    }

    fn opens(&self) -> Option<usize> {
        match self {
            OmidVerb::Begin { client, .. } => Some(*client),
            _ => None,
        }
    }

    fn closes(&self) -> bool {
        matches!(self, OmidVerb::Commit { .. } | OmidVerb::Abort { .. })
    }

    fn no_wait(&self) -> bool {
        match self {
            OmidVerb::Begin { no_wait, .. }
            | OmidVerb::Get { no_wait, .. }
            | OmidVerb::Put { no_wait, .. }
            | OmidVerb::Delete { no_wait, .. }
            | OmidVerb::Commit { no_wait, .. } => *no_wait,
            _ => false,
        }
    }

    fn is_assertion(&self) -> bool {
        self.thread().is_none()
    }
}

percsim_sim::identities! {
    /// What an Omid script's `assert_count` counts.
    pub enum OmidCount {
        /// A reader consulted the commit table.
        CtLookup => ("ct_lookup", "a reader consulted the commit table about a version without a shadow cell"),
        /// A reader invalidated an undecided transaction.
        Invalidated => ("invalidated", "a reader invalidated an undecided transaction in the commit table"),
        /// The TSO aborted a transaction below its low watermark.
        BelowLowWatermark => ("below_low_watermark", "the TSO aborted a transaction that started below its low watermark"),
        /// A commit found its transaction invalidated.
        CommitInvalidated => ("commit_invalidated", "a commit found its transaction invalidated in the commit table"),
        /// A TSO took the lease over.
        Takeover => ("takeover", "a TSO took the lease in a new epoch"),
        /// A TSO stepped down.
        SteppedDown => ("stepped_down", "a TSO found its lease gone and stopped serving"),
        /// A client looked the primary up again.
        Redirected => ("redirected", "a client's TSO call went unanswered or was refused"),
        /// A deposed TSO's decision was refused by the fence.
        FencedDecision => ("fenced_decision", "a deposed TSO's decision was refused by the commit table's fence"),
        /// A call was sent again.
        CallRetried => ("call_retried", "a call went unanswered and was sent again"),
        /// A node was killed at a named point.
        CrashAtPoint => ("crash_at_point", "a node was killed at a named point"),
        /// A node was frozen at a named point.
        PauseAtPoint => ("pause_at_point", "a node was frozen at a named point"),
    }
}

impl Serialize for OmidCount {
    fn serialize<Z: serde::Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for OmidCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        OmidCount::from_name(&name).ok_or_else(|| {
            let known: Vec<&str> = OmidCount::ALL.iter().map(|c| c.name()).collect();
            serde::de::Error::custom(format!(
                "unknown count {name:?} (known: {})",
                known.join(", ")
            ))
        })
    }
}

impl Countable for OmidCount {
    fn counter(self) -> String {
        let c = match self {
            OmidCount::CtLookup => OmidCounter::CtLookup,
            OmidCount::Invalidated => OmidCounter::Invalidated,
            OmidCount::BelowLowWatermark => OmidCounter::BelowLowWatermark,
            OmidCount::CommitInvalidated => OmidCounter::CommitInvalidated,
            OmidCount::Takeover => OmidCounter::Takeover,
            OmidCount::SteppedDown => OmidCounter::SteppedDown,
            OmidCount::Redirected => OmidCounter::Redirected,
            OmidCount::FencedDecision => OmidCounter::FencedDecision,
            OmidCount::CallRetried => OmidCounter::CallRetried,
            OmidCount::CrashAtPoint => return FaultKind::CrashAtStep.counter(),
            OmidCount::PauseAtPoint => return FaultKind::PauseAtStep.counter(),
        };
        c.name().to_string()
    }
}

/// Omid's conditions of a `wait` step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum OmidWait {
    /// The named transaction's client was told its outcome.
    TxnFinished(String),
}

/// The calls a rule can name: the client's to the TSO, and the store's
/// steps (from a client, or the TSO's commit-table writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OmidCall {
    /// A start timestamp, asked of the TSO.
    Begin,
    /// A commit, asked of the TSO.
    Commit,
    /// A data cell written.
    Write,
    /// An aborted transaction's data cell removed.
    Remove,
    /// A shadow cell written.
    Shadow,
    /// A cell's versions read.
    Read,
    /// A commit-table lookup.
    CtGet,
    /// A commit-table put (a decision, or an invalidation).
    CtPut,
    /// A commit-table entry deleted.
    CtDelete,
}

impl OmidCall {
    /// The call's tag on the wire.
    pub fn tag(self) -> &'static str {
        match self {
            OmidCall::Begin => "begin",
            OmidCall::Commit => "commit",
            OmidCall::Write => "write",
            OmidCall::Remove => "remove",
            OmidCall::Shadow => "shadow",
            OmidCall::Read => "read",
            OmidCall::CtGet => "ct_get",
            OmidCall::CtPut => "ct_put",
            OmidCall::CtDelete => "ct_delete",
        }
    }
}

fn request() -> MsgLeg {
    MsgLeg::Request
}

/// An `intercept` step of an Omid script: messages of one call kind, sent
/// by one client (or any sender), of one transaction (its client's own
/// calls) or any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OmidRule {
    /// The rule's name, for its `release` step.
    pub name: String,
    /// The call it matches.
    pub call: OmidCall,
    /// The client whose messages it matches (else every sender's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<usize>,
    /// The transaction whose client's calls it matches (begun before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn: Option<String>,
    /// Request (the default) or reply.
    #[serde(default = "request")]
    pub leg: MsgLeg,
    /// What happens to a matched message.
    pub fate: MsgFate,
    /// How many messages it acts on at most (else every one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
}

crate::intercept_rule!(OmidRule);

/// Where `stop_at` stops a node: a named point, for one transaction if
/// given (`"tso_after_decision"` or `{"at": "tso_after_decision", "txn": "T1"}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OmidScriptPoint {
    /// The next time the node reaches it.
    Any(OmidPoint),
    /// The next time the node reaches it about one transaction.
    Targeted {
        /// The point.
        at: OmidPoint,
        /// The transaction (begun before the `stop_at` step).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        txn: Option<String>,
    },
}

impl OmidScriptPoint {
    /// The point and its transaction.
    pub fn parts(&self) -> (OmidPoint, Option<&str>) {
        match self {
            OmidScriptPoint::Any(p) => (*p, None),
            OmidScriptPoint::Targeted { at, txn } => (*at, txn.as_deref()),
        }
    }
}

/// What `stop_at` does to a node at its point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum OmidPointFault {
    /// Kill it; restart it this long after (else at the healed phase).
    Kill {
        /// The restart delay, in simulated ms.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        restart_after_ms: Option<u64>,
    },
    /// Freeze it this long.
    Pause {
        /// How long, in simulated ms.
        ms: u64,
    },
}
