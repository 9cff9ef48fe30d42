//! The transaction coordinator (TC): hands out TxnIds, logs every state
//! change before acting on it, ends transactions by sending markers, aborts
//! transactions past their timeout, and recovers by replaying its log.
//! One file per step; each reads the [`TcState`] and returns the
//! [`TcAction`]s to carry out (the records to log, the markers to send,
//! the reply), with trace tests at the bottom.

mod end;
mod finish;
mod open;
mod recover;
mod register;
mod state;
mod timeout;

pub use end::end;
pub use finish::finish;
pub use open::open;
pub use recover::recover;
pub use register::add_participant;
pub use state::{LogRecord, TcAction, TcError, TcOp, TcState, TxnMeta, TxnState};
pub use timeout::{due, timeout};
