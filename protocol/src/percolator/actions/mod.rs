//! Row steps: each reads one row and returns the mutation to apply, which a
//! tablet server applies atomically (one file per step, named as the verb).

pub mod cleanup;
pub mod commit;
pub mod get;
pub mod notify;
pub mod prewrite;
pub mod resolve;
pub mod touch;

#[cfg(test)]
pub(crate) mod test_util;

use crate::percolator::ablation::Ablations;
use crate::percolator::row::{Row, RowMutation};
use crate::percolator::types::{Ts, TxnTs};
use serde::{Deserialize, Serialize};

pub use cleanup::{CleanupAction, Staleness, TxnStatus};
pub use commit::CommitError;
pub use get::GetResult;
pub use prewrite::{Prewrite, PrewriteError};
pub use resolve::{Resolution, ResolveAction, ResolveError};

/// A request for one row step, as a client sends it to a tablet server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RowRequest {
    /// Snapshot read of one column.
    Get {
        /// Data column.
        col: String,
        /// The reader's snapshot.
        start_ts: Ts,
    },
    /// Lock and write one cell.
    Prewrite(Prewrite),
    /// Replace a lock by a commit record.
    Commit {
        /// Data column.
        col: String,
        /// The transaction's timestamps.
        ts: TxnTs,
    },
    /// Settle a transaction at its primary (roll back if still locked).
    Cleanup {
        /// The primary's data column.
        col: String,
        /// The transaction's start_ts.
        start_ts: Ts,
        /// Roll back only if the primary lock is stale by this measure
        /// (absent: roll back whatever the lock's wall time).
        #[serde(default)]
        stale: Option<Staleness>,
    },
    /// Roll a secondary forward or back.
    Resolve {
        /// Data column.
        col: String,
        /// The transaction's start_ts.
        start_ts: Ts,
        /// Forward (with commit_ts) or back.
        resolution: Resolution,
    },
    /// Snapshot read that also returns the commit_ts of the version read.
    GetVersion {
        /// Data column.
        col: String,
        /// The reader's snapshot.
        start_ts: Ts,
    },
    /// Clear a notify entry after an observer processed it (conditional).
    ClearNotify {
        /// Data column.
        col: String,
        /// The entry's value when the scanner found it.
        seen: u64,
        /// The commit_ts of the version the observer saw, if any.
        observed_commit_ts: Option<Ts>,
        /// The acknowledgment columns of the other observers of `col` that
        /// keep one: the entry is cleared only once each of them acknowledged
        /// the newest version (one observer's commit must not clear a change
        /// another observer of the column has not processed yet).
        #[serde(default)]
        acks: Vec<String>,
    },
    /// A weak notification: set the notify entry, no transaction.
    WeakNotify {
        /// Data column.
        col: String,
        /// The notification's value (larger values win).
        value: u64,
    },
    /// Refresh a primary lock's wall time.
    Touch {
        /// The primary's data column.
        col: String,
        /// The transaction's start_ts.
        start_ts: Ts,
        /// The owner's wall clock now.
        wall_ms: u64,
    },
}

/// The reply to a [`RowRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RowReply {
    /// Reply to `Get`.
    Get(GetResult),
    /// Reply to `Prewrite`.
    Prewrite(Result<(), PrewriteError>),
    /// Reply to `Commit`: the commit_ts in effect.
    Commit(Result<Ts, CommitError>),
    /// Reply to `Cleanup`.
    Cleanup(TxnStatus, CleanupAction),
    /// Reply to `Resolve`.
    Resolve(Result<ResolveAction, ResolveError>),
    /// Reply to `Touch`: whether the lock is still there.
    Touch(bool),
    /// Reply to `GetVersion`: the result and the commit_ts of the version read.
    Version(GetResult, Option<Ts>),
    /// Reply to `ClearNotify`: whether the entry is gone.
    NotifyCleared(bool),
    /// Reply to `WeakNotify`.
    Notified,
}

/// Run one row step: read `row` (whose key is `row_key`), decide, and return
/// the reply with the mutation the tablet server must apply atomically.
/// `ablations` switches off mechanisms (see [`crate::percolator::ablation`]).
pub fn execute(
    row: &Row,
    row_key: &str,
    req: &RowRequest,
    ablations: Ablations,
) -> (RowReply, RowMutation) {
    match req {
        RowRequest::Get { col, start_ts } => (
            RowReply::Get(get::get(row, row_key, col, *start_ts, ablations)),
            RowMutation::none(),
        ),
        RowRequest::Prewrite(p) => match prewrite::prewrite(row, row_key, p, ablations) {
            Ok(m) => (RowReply::Prewrite(Ok(())), m),
            Err(e) => (RowReply::Prewrite(Err(e)), RowMutation::none()),
        },
        RowRequest::Commit { col, ts } => match commit::commit(row, col, *ts, ablations) {
            Ok((m, commit_ts)) => (RowReply::Commit(Ok(commit_ts)), m),
            Err(e) => (RowReply::Commit(Err(e)), RowMutation::none()),
        },
        RowRequest::Cleanup {
            col,
            start_ts,
            stale,
        } => {
            let (m, status, action) = cleanup::cleanup(row, col, *start_ts, *stale, ablations);
            (RowReply::Cleanup(status, action), m)
        }
        RowRequest::Resolve {
            col,
            start_ts,
            resolution,
        } => match resolve::resolve(row, col, *start_ts, *resolution, ablations) {
            Ok((m, action)) => (RowReply::Resolve(Ok(action)), m),
            Err(e) => (RowReply::Resolve(Err(e)), RowMutation::none()),
        },
        RowRequest::GetVersion { col, start_ts } => {
            let (result, version) = get::get_version(row, row_key, col, *start_ts, ablations);
            (RowReply::Version(result, version), RowMutation::none())
        }
        RowRequest::ClearNotify {
            col,
            seen,
            observed_commit_ts,
            acks,
        } => {
            let (m, cleared) = notify::clear_notify(row, col, *seen, *observed_commit_ts, acks);
            (RowReply::NotifyCleared(cleared), m)
        }
        RowRequest::WeakNotify { col, value } => {
            (RowReply::Notified, notify::weak_notify(col, *value))
        }
        RowRequest::Touch {
            col,
            start_ts,
            wall_ms,
        } => {
            let (m, present) = touch::touch(row, col, *start_ts, *wall_ms);
            (RowReply::Touch(present), m)
        }
    }
}
