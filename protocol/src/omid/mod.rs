//! Apache Omid's transaction manager as pure steps (no simulation, no I/O).
//!
//! Omid ("Omid, Reloaded", FAST 2017; "Taking Omid to the Clouds", PVLDB
//! 2018) gives snapshot isolation over a multi-version store:
//!
//! - the **TSO** hands out start and commit timestamps ([`actions::begin`])
//!   and decides commits by checking the write set against a bounded
//!   in-memory conflict map whose evictions raise a low watermark
//!   ([`actions::conflict`]);
//! - a committed transaction is recorded in the **commit table** before its
//!   client is told; a reader that finds a version of an undecided
//!   transaction **invalidates** it there, so a late commit fails
//!   ([`actions::commit_table`]);
//! - a client writes **shadow cells** (the commit timestamp beside each data
//!   cell) after the commit, and a reader resolves a version from its
//!   shadow cell, else from the commit table ([`actions::read`]).
//!
//! [`ids`] names the planted bugs, crash points and conflict granularity.

pub mod actions;
pub mod ids;
pub mod types;

pub use ids::{Granularity, OmidAblation, OmidAblations, OmidPoint, OmidPointOwner, PostCommit};
pub use types::{CtEntry, DataVersion};
