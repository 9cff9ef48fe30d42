//! Omid's records in the store: a data cell's version with its shadow cell,
//! and a commit-table entry.

use serde::{Deserialize, Serialize};

/// One version of a data cell, written at its transaction's start
/// timestamp, with the shadow cell the transaction writes beside it after
/// it commits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataVersion {
    /// The writer's start timestamp (the version's number).
    pub start_ts: u64,
    /// The value written; `None`: a tombstone (the transaction deleted
    /// the cell, as Omid's delete writes a tombstone cell).
    pub value: Option<String>,
    /// The shadow cell: the writer's commit timestamp, once written.
    pub shadow_ts: Option<u64>,
}

/// A commit-table entry, keyed by a transaction's start timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CtEntry {
    /// The transaction committed at this timestamp.
    Committed {
        /// Its commit timestamp.
        commit_ts: u64,
    },
    /// A reader invalidated the transaction: it never commits.
    Invalid,
}
