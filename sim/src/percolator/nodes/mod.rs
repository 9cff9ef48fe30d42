//! The simulated processes: each runs as a madsim node whose `init` future
//! is re-run on restart, with only the cluster's
//! durable state surviving a crash.

pub(crate) mod client;
pub(crate) mod liveness;
pub(crate) mod master;
pub(crate) mod oracle;
pub(crate) mod tablet;
