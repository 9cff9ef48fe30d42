//! What the client procedures reach in the world around them: the
//! servers, the oracle, the client's clock and timers, and their settings.

use crate::common::RpcError;
use crate::percolator::ablation::Ablations;
use crate::percolator::actions::{GetResult, RowReply, RowRequest};
use crate::percolator::types::{CellKey, SessionId, Ts};
use serde::{Deserialize, Serialize};
use std::future::Future;

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
    /// A committing owner refreshes its primary lock's wall time every
    /// `lock_ttl_ms / refreshes_per_ttl` ms while it holds its locks (from
    /// its prewrites until the commit of its primary is answered), as the
    /// paper's workers do ("periodically update this wall time while
    /// committing") and TiKV's TTL manager does (twice per TTL). At least 1,
    /// at most `lock_ttl_ms`.
    pub refreshes_per_ttl: u64,
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
            refreshes_per_ttl: 3,
            commit_retries: 3,
        }
    }
}

impl ClientConfig {
    /// How often a committing owner refreshes its primary lock, in ms:
    /// `lock_ttl_ms / refreshes_per_ttl`, at least 1.
    pub fn refresh_interval_ms(&self) -> u64 {
        (self.lock_ttl_ms / self.refreshes_per_ttl.max(1)).max(1)
    }

    /// Why these settings cannot run, if they cannot: the field at fault
    /// and the problem.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        if self.lock_ttl_ms == 0 {
            return Some(("lock_ttl_ms", "must be at least 1".into()));
        }
        if self.refreshes_per_ttl == 0 {
            return Some(("refreshes_per_ttl", "must be at least 1".into()));
        }
        if self.refreshes_per_ttl > self.lock_ttl_ms {
            return Some((
                "refreshes_per_ttl",
                format!(
                    "{} refreshes within a TTL of {} ms would be less than 1 ms apart",
                    self.refreshes_per_ttl, self.lock_ttl_ms
                ),
            ));
        }
        None
    }
}

/// The world a client's procedures reach: their settings and the
/// client's identity and clock, the servers, and the client's timers.
/// Futures are `Send` so the simulator can spawn client tasks. What the
/// procedures record is the client's [`super::Ledger`].
pub trait Transport: Send + Sync {
    /// Settings of the client procedures.
    fn config(&self) -> &ClientConfig;
    /// Mechanisms switched off (see [`crate::percolator::ablation`]); none by default.
    fn ablations(&self) -> Ablations {
        Ablations::NONE
    }
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
}
