//! Omid's identity in the registry: its name and its [`SystemDef`]'s
//! value; what the system does is in the files beside it.

/// Omid in the registry.
pub static OMID: OmidDef = OmidDef;

/// Omid's [`SystemDef`](crate::system::SystemDef).
pub struct OmidDef;

/// The name Omid is known by: a scenario file's `"system"` and the key of
/// its section.
pub const NAME: &str = "omid";
