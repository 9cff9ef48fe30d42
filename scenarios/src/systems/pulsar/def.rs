//! Pulsar's identity in the registry: its name and its [`SystemDef`]'s
//! value; what the system does is in the files beside it.

/// Pulsar in the registry.
pub static PULSAR: PulsarDef = PulsarDef;

/// Pulsar's [`SystemDef`](crate::system::SystemDef).
pub struct PulsarDef;

/// The name Pulsar is known by.
pub(super) const NAME: &str = "pulsar";
