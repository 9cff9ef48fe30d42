//! The `percsim-history/1` format: what clients observed and what the store
//! holds after a run. Documented with an example in `docs/history-format.md`.
//!
//! These types are the contract between whatever produced a history (the
//! percsim simulator, or anything else) and the checker. Unknown fields are
//! ignored when reading.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The format tag every history file carries.
pub const FORMAT: &str = "percsim-history/1";

/// A whole recorded run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// Always [`FORMAT`].
    pub format: String,
    /// The consistency model the system that wrote the history promises
    /// (Percolator and Omid: snapshot isolation), which `percsim check`
    /// judges it against unless asked for another; `None` (the field left
    /// out): [`crate::Model::DEFAULT`], said so in the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<crate::Model>,
    /// The seed the run was made with (informational).
    #[serde(default)]
    pub seed: u64,
    /// The scenario that produced the run, as the producer described it (informational).
    #[serde(default)]
    pub scenario: serde_json::Value,
    /// Every transaction any client began, in the order they were begun.
    pub transactions: Vec<Transaction>,
    /// Protocol and fault events (cleanups, crashes, restarts, ...), in time order.
    #[serde(default)]
    pub events: Vec<Event>,
    /// The store after the run and its quiescence phase.
    pub final_state: FinalState,
    /// The observers the run registered (empty when there were none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observers: Vec<ObserverDecl>,
}

/// An observer: a function run in a new transaction after a change to the
/// column it observes (paper, "Notifications").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObserverDecl {
    /// The observer's name.
    pub name: String,
    /// The column it observes (in any row).
    pub col: String,
    /// The column only receives weak notifications (it is never written,
    /// and several runs may commit for one notification).
    #[serde(default)]
    pub weak: bool,
}

/// What an observer transaction was run for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObserverRun {
    /// The observer's name.
    pub name: String,
    /// The row of the notified cell.
    pub row: String,
    /// The observed column.
    pub col: String,
}

/// One transaction as its client saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transaction {
    /// Unique id of the transaction within the history.
    pub id: u64,
    /// The client (worker) that ran it.
    pub client: u64,
    /// The snapshot timestamp the oracle handed out.
    pub start_ts: u64,
    /// The commit timestamp, when the client knows it committed with one.
    #[serde(default)]
    pub commit_ts: Option<u64>,
    /// Simulated time (ns) at which the client began the transaction,
    /// before it asked for its start timestamp.
    pub invoke_ns: u64,
    /// Simulated time (ns) at which the client learnt the outcome; `None`
    /// when it never did (it crashed, or the outcome is unknown).
    #[serde(default)]
    pub complete_ns: Option<u64>,
    /// What the client reported.
    pub outcome: Outcome,
    /// Why the client aborted, when it did (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_reason: Option<String>,
    /// Reads and buffered writes, in the order the client issued them.
    pub ops: Vec<Op>,
    /// The scans (predicate reads) the transaction completed, in order; the
    /// cells each returned are also among `ops` as reads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scans: Vec<Scan>,
    /// Set when this transaction ran an observer's function for a
    /// notification (it found the cell changed since the last
    /// acknowledgment and wrote the acknowledgment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observer: Option<ObserverRun>,
}

/// A scan: a predicate read of columns `cols` (every column when empty) of
/// every row in `[start_row, end_row)` at `start_ts`, with what it returned.
/// Rule `predicate_reads` judges that it returned exactly the cells with a
/// value visible at `start_ts` in its range, each with that value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scan {
    /// The first row of the range (included).
    pub start_row: String,
    /// The end of the range (excluded; rows compare as strings, by bytes).
    pub end_row: String,
    /// The columns read; empty means every column.
    #[serde(default)]
    pub cols: Vec<String>,
    /// The snapshot the scan read.
    pub start_ts: u64,
    /// The cells with a value it returned (missing and deleted cells are not returned).
    pub returned: Vec<ScanCell>,
}

/// One cell a scan returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanCell {
    /// Row key.
    pub row: String,
    /// Column name.
    pub col: String,
    /// The value returned.
    pub value: String,
}

/// The outcome a client reported for a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The primary was committed: the transaction is durable.
    Committed,
    /// The transaction did not commit and never will.
    Aborted,
    /// The client could not tell (a lost reply at the commit point, or a crash).
    Unknown,
}

/// One operation of a transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "f", rename_all = "snake_case")]
pub enum Op {
    /// A snapshot read; `value` is `None` when the cell had no visible value.
    Read {
        /// Row key.
        row: String,
        /// Column name.
        col: String,
        /// The value seen, or `None` for a missing or deleted cell.
        value: Option<String>,
    },
    /// A buffered write of a value.
    Write {
        /// Row key.
        row: String,
        /// Column name.
        col: String,
        /// The value written.
        value: String,
    },
    /// A buffered delete.
    Delete {
        /// Row key.
        row: String,
        /// Column name.
        col: String,
    },
}

/// A protocol or fault event. `kind` names it (for example `roll_forward`,
/// `roll_back`, `crash`, `restart`); the other fields depend on the kind and
/// are kept as they were written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Simulated time of the event in nanoseconds.
    pub t_ns: u64,
    /// What happened.
    pub kind: String,
    /// Everything else the producer recorded about it.
    #[serde(flatten)]
    pub fields: BTreeMap<String, serde_json::Value>,
}

/// The store after quiescence.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FinalState {
    /// Every cell that has any write record, with all its versions.
    pub cells: Vec<CellState>,
    /// Every lock still present.
    #[serde(default)]
    pub locks: Vec<LockState>,
    /// Every notify entry still present (a dirty cell no observer has
    /// processed yet).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notify: Vec<CellRef>,
}

/// The write history of one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellState {
    /// Row key.
    pub row: String,
    /// Column name.
    pub col: String,
    /// Every write record of the cell (puts, deletes and rollback records).
    pub versions: Vec<Version>,
}

/// One write record in the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Version {
    /// The start timestamp of the transaction that wrote it.
    pub start_ts: u64,
    /// The timestamp of the write record (for a rollback record, the start timestamp).
    pub commit_ts: u64,
    /// What the record says.
    pub kind: VersionKind,
    /// The value for a put; `None` otherwise (and for a put whose data is missing).
    #[serde(default)]
    pub value: Option<String>,
    /// A put record whose data is not in the store: the write record says
    /// the transaction committed a value here, but the value itself is gone
    /// (a store bug the checker reports as `missing_data`). Only a put can
    /// carry it, and then without a value.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub data_missing: bool,
}

/// The kind of a write record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VersionKind {
    /// A committed value.
    Put,
    /// A committed delete.
    Delete,
    /// A rollback record: the transaction at `start_ts` will never commit here.
    Rollback,
}

/// A lock left in the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockState {
    /// Row key.
    pub row: String,
    /// Column name.
    pub col: String,
    /// The start timestamp of the transaction holding it.
    pub start_ts: u64,
    /// Where that transaction's primary lock is.
    pub primary: CellRef,
}

/// The address of a cell.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CellRef {
    /// Row key.
    pub row: String,
    /// Column name.
    pub col: String,
}
