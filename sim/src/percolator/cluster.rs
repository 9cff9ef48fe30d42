//! A Percolator cluster installed in a world: what its nodes share (the
//! durable store, the history being built, the liveness service's memory)
//! and where its nodes listen. It knows no workload: the workload reaches
//! the clients through [`crate::percolator::nodes::client::Program`].

use crate::percolator::config::PercolatorConfig;
use crate::percolator::ids::{PercolatorCounter, PercolatorEvent};
use crate::percolator::points::PointAction;
use crate::percolator::store::{Durable, Tablets};
use crate::world::World;
use crate::world::net::PORT;
use crate::world::serve::Server;
use crate::world::txn_history::TxnHistory;
use madsim::time::Instant;
use percsim_protocol::percolator::client::Point;
use percsim_protocol::percolator::{SessionId, Ts};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};

/// The kinds of Percolator node that spend CPU time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CpuKind {
    /// A tablet server.
    Tablet,
    /// The timestamp oracle.
    Oracle,
    /// The liveness (lock) service.
    Liveness,
    /// The master.
    Master,
}

impl CpuKind {
    /// The counter of busy CPU microseconds for this kind of node, summed
    /// over its nodes during the workload phase.
    pub(crate) fn counter(self) -> &'static str {
        match self {
            CpuKind::Tablet => "cpu.busy_us.tablet",
            CpuKind::Oracle => "cpu.busy_us.oracle",
            CpuKind::Liveness => "cpu.busy_us.liveness",
            CpuKind::Master => "cpu.busy_us.master",
        }
    }

    /// A node of this kind serving at `ep`, with an idle processor of as
    /// many cores as the cost model gives the kind.
    pub(crate) fn server<'a>(
        self,
        ep: &'a crate::world::port::Port,
        cluster: &'a Arc<Cluster>,
    ) -> Server<'a, Cluster> {
        let c = &cluster.cfg.costs;
        let cores = match self {
            CpuKind::Tablet => c.tablet_cores,
            CpuKind::Oracle => c.oracle_cores,
            CpuKind::Liveness | CpuKind::Master => c.service_cores,
        };
        Server::new(
            ep,
            &cluster.world,
            cluster,
            (self.counter(), cores),
            c.enabled,
        )
    }
}

/// The node of the healed phase's sweeper.
pub(crate) const SWEEPER_NODE: &str = "sweeper";

/// Network addresses of the nodes.
pub(crate) fn oracle_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), PORT)
}
pub(crate) fn liveness_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), PORT)
}
pub(crate) fn master_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 3)), PORT)
}
pub(crate) fn tablet_server_addr(i: usize) -> SocketAddr {
    SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(10, 1, (i / 250) as u8, (i % 250 + 1) as u8)),
        PORT,
    )
}
pub(crate) fn client_addr(i: usize) -> SocketAddr {
    SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(10, 2, (i / 250) as u8, (i % 250 + 1) as u8)),
        PORT,
    )
}

/// A Percolator cluster installed in a world: what its nodes share. The
/// durable store survives every crash; the sessions and scanner row locks
/// are the liveness service's memory (cleared when it restarts), kept here
/// so that a fault can expire one.
pub(crate) struct Cluster {
    pub world: Arc<World>,
    pub cfg: PercolatorConfig,
    pub durable: Mutex<Durable>,
    /// What each transaction did, in the `percsim-history/1` format's
    /// terms (the world records who ran it, when, and how it ended).
    pub txn_history: Mutex<TxnHistory>,
    pub tablets: Tablets,
    /// How many lives each client has started.
    pub incarnations: Mutex<Vec<u32>>,
    /// Liveness sessions: owner client and expiry.
    pub sessions: Mutex<BTreeMap<SessionId, (usize, Instant)>>,
    /// The scanners' row locks: holder, lease end.
    pub row_locks: Mutex<BTreeMap<String, (u64, Instant)>>,
    /// The highest timestamp the oracle has granted (over all its lives).
    pub granted: Mutex<u64>,
    /// How often each node reached each named point (for `point_faults`).
    pub point_hits: Mutex<BTreeMap<(Point, usize), u64>>,
    /// Stops armed by a script for a node's next visit to a point.
    pub armed_points: Mutex<Vec<(Point, usize, PointAction)>>,
    /// Every cell where a transaction was rolled back, as (row, column) by
    /// start_ts: the simulator's own record for coverage, kept whether or
    /// not the protocol leaves a rollback record (an ablation may not).
    /// The protocol never reads it. Keyed by start_ts so that a prewrite or
    /// commit of a transaction never rolled back looks it up without
    /// building a key.
    pub rolled_back: Mutex<BTreeMap<Ts, Vec<(String, String)>>>,
}

impl Cluster {
    pub(crate) fn now_ns(&self) -> u64 {
        self.world.now_ns()
    }

    pub(crate) fn durable(&self) -> MutexGuard<'_, Durable> {
        crate::world::lock(&self.durable)
    }

    pub(crate) fn recorder(&self) -> MutexGuard<'_, crate::world::recorder::Recorder> {
        self.world.recorder()
    }

    /// The history builder. Whoever also needs the world's recorder takes
    /// this lock first.
    pub(crate) fn txn_history(&self) -> MutexGuard<'_, TxnHistory> {
        crate::world::lock(&self.txn_history)
    }

    pub(crate) fn stopping(&self) -> bool {
        self.world.stopping()
    }

    pub(crate) fn lock<'a, T>(&self, m: &'a Mutex<T>) -> MutexGuard<'a, T> {
        crate::world::lock(m)
    }

    pub(crate) fn event(&self, kind: PercolatorEvent, fields: serde_json::Value) {
        self.world.event(kind.name(), fields);
    }

    /// Bump one of Percolator's counters.
    pub(crate) fn bump(&self, counter: PercolatorCounter) {
        self.recorder().bump(counter.name());
    }
}
