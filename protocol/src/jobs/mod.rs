//! Jobs that more than one system runs, as pure data and rules: what the
//! rows are called, how values are encoded and what a final store must
//! satisfy. Each system drives the job with its own clients.
//!
//! - [`tpce`]: TPC-E-lite, a brokerage benchmark after TPC-E.

pub mod tpce;
