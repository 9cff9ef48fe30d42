//! What the client procedures need from the world around them.

use crate::ablation::Ablations;
use crate::actions::{GetResult, RowReply, RowRequest};
use crate::types::{CellKey, LockInfo, SessionId, Ts};
use serde::{Deserialize, Serialize};
use std::future::Future;

/// Why a request got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum RpcError {
    /// No reply in time: the request may or may not have been applied.
    #[error("timed out: outcome unknown")]
    Timeout,
    /// The request was refused and not applied (for example no server
    /// serves the row right now).
    #[error("unavailable")]
    Unavailable,
}

/// Named points of a client's procedures (commit, lock cleanup, observer
/// runs), where a fault schedule can kill or freeze a client exactly. Each
/// is at one [`super::Point`]; the secondaries' points carry their number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepPoint {
    /// Commit was called; nothing is written yet.
    BeforePrewrite,
    /// The prewrite of the primary has left the client (the network has
    /// it); no reply has come back.
    PrewritePrimarySent,
    /// The primary is locked; no secondary is.
    AfterPrewritePrimary,
    /// This many secondaries are locked (1-based).
    AfterPrewriteSecondary(usize),
    /// Every cell is locked and the commit timestamp is known.
    BeforeCommitPrimary,
    /// The first commit request of the primary has left the client (the
    /// network has it); no reply has come back.
    CommitPrimarySent,
    /// The primary is committed (the commit point); no secondary is.
    AfterCommitPrimary,
    /// This many secondaries are committed (1-based).
    AfterCommitSecondary(usize),
    /// A reader cleaning up a dead owner's lock found the primary committed
    /// and has not rolled the lock it met forward yet.
    RollForwardBetweenCells,
    /// A reader cleaning up a dead owner's lock rolled the primary back and
    /// has not rolled the lock it met back yet.
    RollBackBetweenCells,
    /// An observer's body buffered its writes; the acknowledgment is not
    /// buffered yet.
    ObserverAfterWrites,
    /// An observer's transaction committed; the notify entry is not cleared.
    ObserverBeforeClear,
}

/// Client-side protocol settings. Missing fields take their defaults;
/// unknown ones are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClientConfig {
    /// A lock whose wall time is older than this (by the reader's clock) is
    /// cleaned up even if its owner's liveness token is valid.
    pub lock_ttl_ms: u64,
    /// First backoff when a read meets a live lock.
    pub backoff_min_ms: u64,
    /// Largest backoff.
    pub backoff_max_ms: u64,
    /// A read gives up (and its transaction aborts) after waiting this long
    /// on locks.
    pub lock_wait_max_ms: u64,
    /// A committing owner refreshes its primary lock's wall time once every
    /// lock is answered, if this long has passed since it sent them (one
    /// refresh per commit; none during the commit of the primary).
    pub touch_interval_ms: u64,
    /// How many times the commit of the primary is retried before the
    /// outcome is reported unknown.
    pub commit_retries: u32,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            lock_ttl_ms: 3_000,
            backoff_min_ms: 10,
            backoff_max_ms: 400,
            lock_wait_max_ms: 10_000,
            touch_interval_ms: 1_000,
            commit_retries: 3,
        }
    }
}

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
    Finished(crate::client::CommitOutcome),
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

/// The world as a client sees it. Futures are `Send` so the simulator can
/// spawn client tasks.
pub trait Transport: Send + Sync {
    /// Settings of the client procedures.
    fn config(&self) -> &ClientConfig;
    /// This client's liveness session, written into its locks.
    fn session(&self) -> SessionId;
    /// This client's wall clock in ms (it may be skewed).
    fn wall_ms(&self) -> u64;
    /// Run one row step at the tablet server that serves `row`.
    fn row(
        &self,
        row: &str,
        req: RowRequest,
    ) -> impl Future<Output = Result<RowReply, RpcError>> + Send;
    /// Read columns `cols` of every row in `[start_row, end_row)` at
    /// `start_ts`; returns the cells that have a visible value or a lock.
    fn scan(
        &self,
        start_row: &str,
        end_row: &str,
        cols: &[String],
        start_ts: Ts,
    ) -> impl Future<Output = Result<Vec<(CellKey, GetResult)>, RpcError>> + Send;
    /// One timestamp from the oracle.
    fn timestamp(&self) -> impl Future<Output = Result<Ts, RpcError>> + Send;
    /// Whether the liveness session `owner` is still alive.
    fn owner_alive(&self, owner: SessionId) -> impl Future<Output = Result<bool, RpcError>> + Send;
    /// Sleep on this client's timers.
    fn sleep_ms(&self, ms: u64) -> impl Future<Output = ()> + Send;
    /// The commit procedure reached `point` of transaction `txn`; a fault
    /// schedule may stop the client here for good.
    fn reached(&self, txn: u64, point: StepPoint) -> impl Future<Output = ()> + Send;
    /// [`Transport::row`] for transaction `txn` at a step whose point is a
    /// request on the wire (`point` is [`StepPoint::PrewritePrimarySent`] or
    /// [`StepPoint::CommitPrimarySent`]): a fault schedule may stop the
    /// client right after the request left, before any reply. A client
    /// killed there never returns; one frozen there retries the request
    /// when it resumes (its first call timed out while it was frozen). By
    /// default no fault is scheduled: just the row step.
    fn row_at(
        &self,
        txn: u64,
        point: StepPoint,
        row: &str,
        req: RowRequest,
    ) -> impl Future<Output = Result<RowReply, RpcError>> + Send {
        let _ = (txn, point);
        self.row(row, req)
    }
    /// Register a new transaction (its invocation) and return its id.
    fn begin_txn(&self) -> u64;
    /// Record what happened to transaction `txn`.
    fn txn_event(&self, txn: u64, event: TxnEvent);
    /// Record a cleanup this client performed.
    fn cleanup_event(&self, event: CleanupEvent);
    /// Whether some observer watches data column `col` (a write to it must
    /// set the cell's notify entry); none by default.
    fn observed(&self, _col: &str) -> bool {
        false
    }
    /// The acknowledgment columns of every observer of data column `col`
    /// that keeps one (see [`super::ObserverSpec::ack_col`]): a notify entry
    /// is cleared only once all of them acknowledged the change.
    fn observer_acks(&self, col: &str) -> Vec<String>;
    /// Mechanisms switched off (see [`crate::ablation`]); none by default.
    fn ablations(&self) -> Ablations {
        Ablations::NONE
    }
    /// A lock met by a read that the reader had to wait for (for counts).
    fn lock_wait(&self, _lock: &LockInfo) {}
}
