//! What both systems share: the error of a request that got no answer,
//! which each client's transport reports.

use serde::{Deserialize, Serialize};

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
