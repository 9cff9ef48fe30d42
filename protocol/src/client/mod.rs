//! The client's procedures: transactions, commit and lock cleanup, written
//! against a small [`Transport`] that the simulator implements.

mod error;
mod observe;
mod points;
mod resolve;
#[cfg(test)]
pub(crate) mod test_util;
mod transport;
mod txn;

pub use error::TxnError;
pub use observe::{BodyFuture, Observed, ObserverBody, ObserverSpec, run_observer, weak_notify};
pub use points::{Point, PointNode};
pub use transport::{
    CleanupEvent, CleanupKind, ClientConfig, RpcError, StepPoint, Suspicion, Transport, TxnEvent,
};
pub use txn::{AbortReason, CommitOutcome, Transaction};
