//! The client's procedures: transactions, commit and lock cleanup, written
//! against a [`Host`]: a small [`Transport`] for what they reach and a
//! [`Ledger`] for what they record, both implemented by the simulator.

mod error;
mod ledger;
mod observe;
mod outcome;
mod points;
mod resolve;
#[cfg(test)]
pub(crate) mod test_util;
mod transport;
mod txn;

pub use crate::common::RpcError;
pub use error::TxnError;
pub use ledger::{CleanupEvent, CleanupKind, Host, Ledger, Suspicion, TxnEvent};
pub use observe::{BodyFuture, Observed, ObserverBody, ObserverSpec, run_observer, weak_notify};
pub use outcome::{AbortReason, CommitOutcome};
pub use points::{Point, PointNode};
pub use transport::{ClientConfig, StepPoint, Transport};
pub use txn::Transaction;
