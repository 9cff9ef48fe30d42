//! The Percolator protocol (Peng & Dabek, OSDI 2010), with no I/O of its own.
//!
//! - [`types`]: timestamps, cells, locks and write records.
//! - [`row`]: a Bigtable row with Percolator's `data`/`lock`/`write`
//!   columns, and the mutations a row step returns.
//! - [`actions`]: the row steps (get, prewrite, commit, cleanup, resolve,
//!   touch): each reads a row and returns the mutation to apply atomically.
//! - [`oracle`]: the timestamp oracle's range persistence.
//! - [`client`]: transactions, two-phase commit and lock cleanup, written
//!   against a [`client::Host`] (a [`client::Transport`] and a
//!   [`client::Ledger`]) that the simulator implements.
//! - [`ablation`]: the planted bugs.

pub mod ablation;
pub mod actions;
pub mod client;
pub mod oracle;
pub mod row;
pub mod types;

pub use ablation::{Ablation, Ablations};
pub use types::{CellKey, Lock, LockInfo, MutationKind, SessionId, Ts, TxnTs, Write, WriteKind};
