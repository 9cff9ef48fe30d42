//! The Percolator vocabulary: timestamps, cells, locks and write records.
//!
//! Column layout follows `percolator-paper.en-zh.txt` (Figure 5) and
//! `percolator-transaction-model.zh.txt`: beside each data column `c` the
//! store keeps `c:lock` (versioned by the writer's start_ts), `c:write`
//! (versioned by commit_ts, pointing at the data's start_ts) and `c:data`
//! (versioned by start_ts).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A timestamp handed out by the oracle.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct Ts(pub u64);

impl fmt::Display for Ts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The two timestamps of a committing transaction, kept together so they
/// cannot be swapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TxnTs {
    /// The snapshot timestamp; locks and data are written at it.
    pub start_ts: Ts,
    /// The timestamp at which the transaction's writes become visible.
    pub commit_ts: Ts,
}

/// The address of a cell: a row and a data column.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CellKey {
    /// Row key.
    pub row: String,
    /// Data column name.
    pub col: String,
}

impl CellKey {
    /// A cell address from a row and a column.
    pub fn new(row: impl Into<String>, col: impl Into<String>) -> Self {
        CellKey {
            row: row.into(),
            col: col.into(),
        }
    }
}

impl fmt::Display for CellKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.row, self.col)
    }
}

/// A liveness token: the session a worker holds in the liveness service.
/// A lock names its owner's session so readers can ask whether it is alive.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct SessionId(pub u64);

/// What a lock (and later its write record) will do to the cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MutationKind {
    /// Write a value.
    Put,
    /// Delete the cell.
    Delete,
}

/// A lock in a cell's `lock` column, versioned by the writer's start_ts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Lock {
    /// Where the transaction's primary lock is (the commit point).
    pub primary: CellKey,
    /// Put or delete.
    pub kind: MutationKind,
    /// The owner's wall clock when it wrote or last refreshed the lock (ms).
    pub wall_ms: u64,
    /// The owner's liveness session.
    pub owner: SessionId,
}

/// A lock as a reader meets it: the lock and the start_ts it is at.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LockInfo {
    /// The cell the lock is on.
    pub cell: CellKey,
    /// The start timestamp of the transaction holding it.
    pub start_ts: Ts,
    /// The lock itself.
    pub lock: Lock,
}

/// What a write record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WriteKind {
    /// The data at `start_ts` is visible from the record's commit_ts on.
    Put,
    /// The cell is deleted from the record's commit_ts on.
    Delete,
    /// The transaction at `start_ts` is rolled back here and must never
    /// lock or commit this cell (its record sits at commit_ts = start_ts).
    Rollback,
}

impl From<MutationKind> for WriteKind {
    fn from(kind: MutationKind) -> Self {
        match kind {
            MutationKind::Put => WriteKind::Put,
            MutationKind::Delete => WriteKind::Delete,
        }
    }
}

/// A record in a cell's `write` column, versioned by commit_ts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Write {
    /// The start timestamp of the transaction that wrote it (where its data is).
    pub start_ts: Ts,
    /// Put, delete or rollback.
    pub kind: WriteKind,
}

impl Write {
    /// Whether the record makes a value (or a delete) visible.
    pub fn is_commit(&self) -> bool {
        self.kind != WriteKind::Rollback
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_and_timestamps_display_as_histories_and_errors_name_them() {
        assert_eq!(CellKey::new("bob", "bal").to_string(), "bob/bal");
        assert_eq!(Ts(42).to_string(), "42");
        assert_eq!(format!("{}@{}", CellKey::new("r", "c"), Ts(7)), "r/c@7");
    }
}
