//! Percolator's identity in the registry: its name and its [`SystemDef`]'s
//! value; what the system does is in the files beside it.

/// Percolator in the registry.
pub static PERCOLATOR: PercolatorDef = PercolatorDef;

/// Percolator's [`SystemDef`](crate::system::SystemDef).
pub struct PercolatorDef;

/// The name Percolator is known by.
pub(super) const NAME: &str = "percolator";
