//! percsim's history checker: judges a `percsim-history/1` file.
//!
//! It depends on no other percsim crate, so a history produced anywhere can be
//! fed to it. It judges only what clients observed and what the store holds.

mod history;

pub use history::*;
