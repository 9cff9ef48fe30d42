//! How a transaction ends: committed, aborted (and why), or unknown to
//! its client. The ledger records it and the transaction reports it.

use super::error::TxnError;
use crate::percolator::types::Ts;
use serde::{Deserialize, Serialize};

/// Why a transaction aborted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AbortReason {
    /// Prewrite met a write committed after start_ts.
    WriteConflict,
    /// Prewrite met another transaction's lock.
    LockConflict,
    /// A cleanup rolled this transaction back before its primary committed.
    RolledBack,
    /// A read waited too long on a lock.
    LockWaitTimeout,
    /// The store or the oracle did not answer before the commit point.
    Unavailable,
    /// The workload chose to abort.
    User,
}

impl AbortReason {
    /// A short snake_case name for histories and summaries.
    pub fn name(&self) -> &'static str {
        match self {
            AbortReason::WriteConflict => "write_conflict",
            AbortReason::LockConflict => "lock_conflict",
            AbortReason::RolledBack => "rolled_back",
            AbortReason::LockWaitTimeout => "lock_wait_timeout",
            AbortReason::Unavailable => "unavailable",
            AbortReason::User => "user",
        }
    }
}

impl From<&TxnError> for AbortReason {
    fn from(e: &TxnError) -> Self {
        match e {
            TxnError::LockWaitTimeout { .. } => AbortReason::LockWaitTimeout,
            TxnError::Rpc(_) => AbortReason::Unavailable,
        }
    }
}

/// What `commit` reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CommitOutcome {
    /// Committed. `commit_ts` is `None` for a read-only transaction, which
    /// needs no commit timestamp.
    Committed {
        /// The commit timestamp.
        commit_ts: Option<Ts>,
    },
    /// Did not commit and never will.
    Aborted {
        /// Why.
        reason: AbortReason,
    },
    /// The client cannot tell (the reply at the commit point was lost).
    Unknown,
}
