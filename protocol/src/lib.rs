//! The protocols of percsim's systems under test, as pure steps with no
//! I/O of their own.
//!
//! - [`percolator`]: Percolator (Peng & Dabek, OSDI 2010): row steps,
//!   transactions, two-phase commit and lock cleanup.
//! - [`pulsar`]: Apache Pulsar's coordinator-based transactions (2.8).
//! - [`omid`]: Apache Omid's transaction manager: TSO, commit table,
//!   shadow cells and invalidation.
//! - [`common`]: what both share (the RPC error).
//! - [`jobs`]: jobs more than one system runs (TPC-E-lite's schema and
//!   invariants).

pub mod common;
pub mod jobs;
pub mod omid;
pub mod percolator;
pub mod pulsar;
