//! A second system under test: Apache Pulsar's coordinator-based
//! transactions (2.8), as pure steps with no I/O of their own, in the house
//! style of [`crate::percolator::actions`] and [`crate::percolator::client`]. The model and each
//! choice where the reference text is silent are in `docs/pulsar.md`.
//!
//! - [`types`]: TxnIds, partitions, subscriptions, messages and markers.
//! - [`coordinator`]: the transaction coordinator and its durable log.
//! - [`buffer`]: the transaction buffer of a partition.
//! - [`dedup`]: producer deduplication on a partition.
//! - [`broker`]: one request or marker run on a partition and its
//!   subscriptions: the reply and the durable write.
//! - [`subscription`]: acks and pending acks of a subscription.
//! - [`client`]: begin, send, receive, ack, commit, abort and the
//!   consume-transform-produce step, written against a
//!   [`client::PulsarHost`] (a [`client::PulsarTransport`] and a
//!   [`client::PulsarLedger`]).
//! - [`ownership`]: which broker serves the coordinator and each
//!   partition (sessions, assignment, lookup) and the fencing of logs.
//! - [`points`]: named crash and pause points of the servers.
//! - [`ablation`]: the planted bugs.

pub mod ablation;
pub mod broker;
pub mod buffer;
pub mod client;
pub mod coordinator;
pub mod dedup;
pub mod ownership;
pub mod points;
pub mod subscription;
pub mod types;

#[cfg(test)]
pub(crate) mod test_util;

pub use ablation::{PulsarAblation, PulsarAblations};
