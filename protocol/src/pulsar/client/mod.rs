//! The Pulsar client's procedures: begin, send, receive, ack, commit,
//! abort, and the consume-transform-produce step, written against a
//! [`PulsarHost`]: a small [`PulsarTransport`] for what they reach and a
//! [`PulsarLedger`] for what they record, both implemented by the
//! simulator.

mod consumer;
mod ledger;
mod outcome;
mod process;
mod transport;
mod txn;

#[cfg(test)]
mod tests;

pub use consumer::{Consumer, ack, ack_target, send, send_batch};
pub use ledger::{ClientEvent, ClientPoint, PulsarHost, PulsarLedger};
pub use outcome::{AbortReason, ClientError, TxnOutcome};
pub use process::{Processed, process_one};
pub use transport::{
    BrokerReply, BrokerRequest, PulsarClientConfig, PulsarTransport, TcReply, TcRequest,
};
pub use txn::PulsarTxn;
