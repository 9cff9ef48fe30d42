//! The error a transaction's read or write reports when it cannot go on.

use crate::common::RpcError;
use crate::percolator::types::{CellKey, Ts};
use serde::{Deserialize, Serialize};

/// Why a read failed; its transaction should abort.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum TxnError {
    /// A live owner's lock blocked the read for too long.
    #[error("waited too long on the lock of the transaction started at {start_ts} on {cell}")]
    LockWaitTimeout {
        /// The blocked cell.
        cell: CellKey,
        /// The lock's start_ts.
        start_ts: Ts,
    },
    /// The store or the oracle did not answer.
    #[error("rpc: {0}")]
    Rpc(#[from] RpcError),
}
