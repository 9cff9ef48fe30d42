//! Pulsar's simulated processes: each runs as a madsim node whose `init`
//! future is re-run on restart; only the cluster's durable logs survive.

pub(crate) mod broker;
pub(crate) mod client;
pub(crate) mod coordinator;
pub(crate) mod metadata;
pub(crate) mod route;
