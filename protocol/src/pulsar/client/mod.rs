//! The Pulsar client's procedures: begin, send, receive, ack, commit,
//! abort, and the consume-transform-produce step, written against a small
//! [`PulsarTransport`] that the simulator implements.

mod consumer;
mod process;
mod transport;
mod txn;

#[cfg(test)]
mod tests;

pub use consumer::{Consumer, ack, send};
pub use process::{Processed, process_one};
pub use transport::{
    BrokerReply, BrokerRequest, ClientEvent, ClientPoint, PulsarClientConfig, PulsarTransport,
    TcReply, TcRequest,
};
pub use txn::{AbortReason, ClientError, PulsarTxn, TxnOutcome};
