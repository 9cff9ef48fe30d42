//! A subscription's acknowledgment state with pending acks: an ack inside
//! a transaction stays pending until the transaction ends, a message
//! pending in one open transaction cannot be acked by another, and all of
//! it is durable and recovered after a restart. The dispatcher's memory
//! of which consumer holds which message is not ([`dispatch()`]).

mod ack;
#[cfg(test)]
mod batch_tests;
mod dispatch;
mod end;
mod recover;
mod state;

pub use ack::{AckTarget, ack, covered};
pub use dispatch::dispatch;
pub use end::end;
pub use recover::{SubLogs, recover};
pub use state::{AckError, Dispatch, SubLog, SubMutation, SubRecord, SubscribeError, Subscription};
