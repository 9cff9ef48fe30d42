//! What a client records as its procedures run: its transactions and what
//! happens to them, its cleanups, the named points it reaches (where a
//! fault schedule may stop it), its counts, and the observers registered
//! with it. The simulator turns these into the run's history.

use super::outcome::CommitOutcome;
use super::transport::{StepPoint, Transport};
use crate::percolator::types::{CellKey, LockInfo, Ts};
use serde::{Deserialize, Serialize};
use std::future::Future;

/// What a client reports about one of its transactions, as it happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnEvent {
    /// The oracle handed out the start timestamp.
    Started {
        /// The snapshot timestamp.
        start_ts: Ts,
    },
    /// A read returned.
    Read {
        /// The cell read.
        cell: CellKey,
        /// What it returned.
        value: Option<String>,
    },
    /// A write was buffered (`None` deletes).
    Buffered {
        /// The cell written.
        cell: CellKey,
        /// The value, or `None` for a delete.
        value: Option<String>,
    },
    /// A scan (a predicate read) returned: columns `cols` (every column
    /// when empty) of the rows in `[start_row, end_row)` at `start_ts`, and
    /// the cells with a value it returned (each also reported as a `Read`).
    Scanned {
        /// The first row of the range.
        start_row: String,
        /// The end of the range (excluded).
        end_row: String,
        /// The columns read; empty for every column.
        cols: Vec<String>,
        /// The snapshot read.
        start_ts: Ts,
        /// The cells returned, in row then column order.
        cells: Vec<(CellKey, String)>,
    },
    /// The oracle handed out the commit timestamp (kept even if the outcome
    /// stays unknown).
    CommitTs {
        /// The commit timestamp.
        commit_ts: Ts,
    },
    /// The client learnt the outcome.
    Finished(CommitOutcome),
    /// The transaction runs an observer for a notification of `cell`.
    Observer {
        /// The observer.
        name: String,
        /// The notified cell.
        cell: CellKey,
    },
}

/// Why a reader suspected a lock's owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Suspicion {
    /// The owner's liveness token is gone.
    TokenGone,
    /// The lock's wall time is too old by the reader's clock.
    Stale,
    /// The transaction cleans up after itself on abort.
    OwnAbort,
}

/// What a cleanup did to a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CleanupKind {
    /// A secondary was given the primary's commit record.
    RollForward,
    /// A lock was erased and a rollback record left.
    RollBack,
    /// A rollback record was left where no prewrite had arrived yet.
    RollBackBeforePrewrite,
}

/// A cleanup performed by a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanupEvent {
    /// What was done.
    pub kind: CleanupKind,
    /// The cell it was done to.
    pub cell: CellKey,
    /// The cleaned-up transaction's start_ts.
    pub start_ts: Ts,
    /// Its commit_ts, for a roll-forward.
    pub commit_ts: Option<Ts>,
    /// Why the owner was suspected.
    pub suspicion: Suspicion,
}

/// A client's bookkeeping, kept apart from its [`Transport`]: what the
/// procedures report, the points they reach, and the observers they must
/// keep notified.
pub trait Ledger: Send + Sync {
    /// Register a new transaction (its invocation) and return its id.
    fn begin_txn(&self) -> u64;
    /// Record what happened to transaction `txn`.
    fn txn_event(&self, txn: u64, event: TxnEvent);
    /// Record a cleanup this client performed.
    fn cleanup_event(&self, event: CleanupEvent);
    /// The commit procedure reached `point` of transaction `txn`; a fault
    /// schedule may stop the client here for good.
    fn reached(&self, txn: u64, point: StepPoint) -> impl Future<Output = ()> + Send;
    /// A lock met by a read that the reader had to wait for (for counts).
    fn lock_wait(&self, _lock: &LockInfo) {}
    /// Whether some observer watches data column `col` (a write to it must
    /// set the cell's notify entry); none by default.
    fn observed(&self, _col: &str) -> bool {
        false
    }
    /// The acknowledgment columns of every observer of data column `col`
    /// that keeps one (see [`super::ObserverSpec::ack_col`]): a notify entry
    /// is cleared only once all of them acknowledged the change.
    fn observer_acks(&self, col: &str) -> Vec<String>;
}

/// A client process as its procedures see it: its [`Transport`] and its
/// [`Ledger`]. Every type with both is one.
pub trait Host: Transport + Ledger {}

impl<T: Transport + Ledger> Host for T {}
