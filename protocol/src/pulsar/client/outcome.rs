//! How a client step fails and how a transaction ends, as its client
//! knows it: what the ledger records and the transaction reports.

use crate::common::RpcError;
use crate::pulsar::buffer::AppendError;
use crate::pulsar::coordinator::TcError;
use crate::pulsar::subscription::{AckError, SubscribeError};
use serde::{Deserialize, Serialize};

/// Why a client step failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum ClientError {
    /// No answer, or no server.
    #[error("rpc: {0}")]
    Rpc(#[from] RpcError),
    /// The coordinator refused.
    #[error("coordinator: {0}")]
    Coordinator(#[from] TcError),
    /// The partition refused the message.
    #[error("send: {0}")]
    Send(#[from] AppendError),
    /// The subscription refused the ack.
    #[error("ack: {0}")]
    Ack(#[from] AckError),
    /// The subscription refused the consumer.
    #[error("subscribe: {0}")]
    Subscribe(#[from] SubscribeError),
    /// A server answered with a reply of another kind.
    #[error("unexpected reply")]
    UnexpectedReply,
    /// A batch with no message was to be sent.
    #[error("a batch needs at least one message")]
    EmptyBatch,
}

/// Why a transaction aborted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AbortReason {
    /// Another open transaction holds a pending ack on the input.
    AckConflict,
    /// The input was already acknowledged for good (another consumer
    /// processed it).
    AlreadyAcked,
    /// The coordinator had aborted it already (its timeout passed).
    TimedOut,
    /// A server did not answer, or refused, before commit was asked for.
    Unavailable,
    /// The caller chose to abort.
    User,
}

impl AbortReason {
    /// The reason a failed step gives.
    pub fn of(e: &ClientError) -> AbortReason {
        match e {
            ClientError::Ack(AckError::Conflict { .. }) => AbortReason::AckConflict,
            ClientError::Ack(AckError::AlreadyAcked(_)) => AbortReason::AlreadyAcked,
            ClientError::Coordinator(TcError::InvalidState { .. } | TcError::NotFound(_)) => {
                AbortReason::TimedOut
            }
            _ => AbortReason::Unavailable,
        }
    }
}

/// How a transaction ended, as its client knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TxnOutcome {
    /// The coordinator answered committed.
    Committed,
    /// It did not commit and never will.
    Aborted {
        /// Why.
        reason: AbortReason,
    },
    /// The client cannot tell (a commit request may have landed).
    Unknown,
}
