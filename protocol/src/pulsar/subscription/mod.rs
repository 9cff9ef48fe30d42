//! A subscription's acknowledgment state with pending acks: an ack inside
//! a transaction stays pending until the transaction ends, a message
//! pending in one open transaction cannot be acked by another, and all of
//! it is durable and recovered after a restart.

mod ack;
mod end;
mod recover;
mod state;

pub use ack::ack;
pub use end::end;
pub use recover::recover;
pub use state::{AckError, SubMutation, SubRecord, Subscription};
