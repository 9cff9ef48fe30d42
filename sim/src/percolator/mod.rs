//! Percolator, the world's first tenant: the timestamp oracle, the
//! liveness (lock) service, the master, tablet servers, clients with their
//! observers and notify scanners. [`system::Percolator`] is the
//! [`System`](crate::world::System): a cluster configuration
//! ([`config::PercolatorConfig`]) and a [`workload::Workload`]. Installed
//! in a world, it becomes a [`Cluster`], which its nodes share.

mod cluster;
pub(crate) mod config;
pub(crate) mod ids;
pub(crate) mod inspect;
mod invariants;
pub(crate) mod nodes;
pub(crate) mod points;
mod record;
pub(crate) mod rpc;
mod stops;
mod store;
pub(crate) mod system;
pub(crate) mod tags;
pub(crate) mod workload;

pub(crate) use cluster::{
    Cluster, CpuKind, SWEEPER_NODE, client_addr, liveness_addr, master_addr, oracle_addr,
    tablet_server_addr,
};
pub(crate) use store::Durable;
