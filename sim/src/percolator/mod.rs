//! Percolator, the world's first tenant: the timestamp oracle, the
//! liveness (lock) service, the master, tablet servers, clients with their
//! observers and notify scanners. [`Percolator`] is the [`System`]: a
//! cluster configuration ([`PercolatorConfig`]) and a [`Workload`]. Installed in a
//! world, it becomes a [`Cluster`], which its nodes share.

use ids::{PercolatorCounter, PercolatorEvent};
pub(crate) mod config;
pub(crate) mod ids;
pub(crate) mod inspect;
mod invariants;
pub(crate) mod nodes;
pub(crate) mod points;
mod record;
pub(crate) mod rpc;
mod store;
pub(crate) mod tags;
pub(crate) mod workload;

use crate::world::driver::FaultControl;
use crate::world::ids::Role;
use crate::world::net::PORT;
use crate::world::serve::Server;
use crate::world::{BoxFuture, NodeSpec, System, Tenant, Unsettled, World, WorldConfig};
use config::PercolatorConfig;
use madsim::time::{Duration, Instant, sleep};
use nodes::client::Client;
use percsim_checker as history;
use percsim_protocol::client::{ObserverBody, ObserverSpec, Point};
use percsim_protocol::{SessionId, Ts};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
pub(crate) use store::{Durable, Tablets};
use workload::Workload;

/// Timestamps of the initial load: it commits before the oracle's first.
const LOAD_START_TS: u64 = 1;
const LOAD_COMMIT_TS: u64 = 2;

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

/// Percolator as a system under test: the world's settings, a cluster and
/// a workload.
pub struct Percolator {
    world: WorldConfig,
    cfg: PercolatorConfig,
    workload: Arc<dyn Workload>,
}

impl Percolator {
    /// Percolator on cluster `cfg` in a world set up by `world`, running
    /// `workload`.
    pub fn new(world: WorldConfig, cfg: PercolatorConfig, workload: Arc<dyn Workload>) -> Self {
        Percolator {
            world,
            cfg,
            workload,
        }
    }
}

impl System for Percolator {
    fn world_config(&self) -> WorldConfig {
        self.world.clone()
    }

    fn install(&self, world: &Arc<World>) -> Arc<dyn Tenant> {
        let cfg = &self.cfg;
        let tablets = Tablets::new(self.workload.split_points(cfg.tablets));
        let initial = self.workload.initial_data();
        let mut durable = Durable::new(LOAD_COMMIT_TS, tablets.count(), cfg.tablet_servers);
        durable.load(&initial, LOAD_START_TS, LOAD_COMMIT_TS);
        record::bootstrap(world, &initial, LOAD_START_TS, LOAD_COMMIT_TS);
        Arc::new(Installed(
            Arc::new(Cluster {
                world: world.clone(),
                cfg: cfg.clone(),
                durable: Mutex::new(durable),
                tablets,
                workload: self.workload.clone(),
                observers: self.workload.observers(),
                incarnations: Mutex::default(),
                sessions: Mutex::default(),
                row_locks: Mutex::default(),
                granted: Mutex::new(LOAD_COMMIT_TS),
                point_hits: Mutex::default(),
                armed_points: Mutex::default(),
                rolled_back: Mutex::default(),
            }),
            Arc::default(),
        ))
    }
}

/// A Percolator cluster installed in a world: what its nodes share. The
/// durable store survives every crash; the sessions and scanner row locks
/// are the liveness service's memory (cleared when it restarts), kept here
/// so that a fault can expire one.
pub(crate) struct Cluster {
    pub world: Arc<World>,
    pub cfg: PercolatorConfig,
    pub durable: Mutex<Durable>,
    pub tablets: Tablets,
    pub workload: Arc<dyn Workload>,
    /// The workload's observers.
    pub observers: Vec<(ObserverSpec, Arc<dyn ObserverBody<Client>>)>,
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
    pub armed_points: Mutex<Vec<(Point, usize, points::PointAction)>>,
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

    /// A node of `role` as the world starts it.
    fn node(
        self: &Arc<Self>,
        name: String,
        role: Role,
        index: usize,
        addr: SocketAddr,
    ) -> NodeSpec {
        let c = self.clone();
        let init: crate::world::NodeInit = Arc::new(move || -> BoxFuture<()> {
            let c = c.clone();
            match role {
                Role::Coordinator => Box::pin(nodes::oracle::main(c)),
                Role::Liveness => Box::pin(nodes::liveness::main(c)),
                Role::Master => Box::pin(nodes::master::main(c)),
                Role::DataServer => Box::pin(nodes::tablet::main(c, index)),
                Role::Client => Box::pin(nodes::client::main(c, index)),
            }
        });
        NodeSpec {
            name,
            role,
            index,
            ip: addr.ip(),
            init,
        }
    }
}

/// The installed cluster as the world sees it, with the healed phase's
/// sweeper and final checker. The sweeper (whose client holds the
/// cluster) lives here, not in the cluster: that would be a cycle of
/// `Arc`s, and every run would leak its whole cluster.
pub(crate) struct Installed(Arc<Cluster>, Arc<OnceLock<Arc<Client>>>);

impl Tenant for Installed {
    fn nodes(&self) -> Vec<NodeSpec> {
        let c = &self.0;
        let mut out = vec![
            c.node("oracle".into(), Role::Coordinator, 0, oracle_addr()),
            c.node("liveness".into(), Role::Liveness, 0, liveness_addr()),
            c.node("master".into(), Role::Master, 0, master_addr()),
        ];
        for i in 0..c.cfg.tablet_servers {
            out.push(c.node(
                format!("tablet-{i}"),
                Role::DataServer,
                i,
                tablet_server_addr(i),
            ));
        }
        for i in 0..c.cfg.clients {
            out.push(c.node(format!("client-{i}"), Role::Client, i, client_addr(i)));
        }
        out
    }

    fn expire_session(&self, client: usize) {
        let c = &self.0;
        c.lock(&c.sessions).retain(|_, (owner, _)| *owner != client);
    }

    fn driver(&self, control: FaultControl) -> Option<BoxFuture<()>> {
        let control = inspect::Controller::new(control, self.0.clone());
        self.0.workload.driver(control)
    }

    fn begin_healed(&self) -> BoxFuture<()> {
        let (c, slot) = (self.0.clone(), self.1.clone());
        Box::pin(async move {
            let sweeper = nodes::client::start_on_new_node(c.clone(), c.cfg.clients).await;
            let _ = slot.set(sweeper);
        })
    }

    fn unsettled(&self) -> Vec<Unsettled> {
        let c = &self.0;
        let (locks, notify) = {
            let d = c.durable();
            (d.lock_count(), d.notify_count())
        };
        let busy = c.recorder().in_progress() as u64;
        vec![
            Unsettled {
                count: locks,
                what: "locks left",
            },
            Unsettled {
                count: busy,
                what: BUSY,
            },
            Unsettled {
                count: notify,
                what: "notifications unprocessed",
            },
        ]
    }

    fn settle(&self, unsettled: &[Unsettled]) -> BoxFuture<()> {
        // Sweep even while observers still run: their secondaries may sit
        // in cells nobody else reads. While transactions still run or late
        // copies fly, give them time.
        let wait = unsettled
            .iter()
            .any(|u| u.count > 0 && (u.what == BUSY || u.what == Unsettled::IN_FLIGHT));
        let sweeper = self.1.get().cloned();
        Box::pin(async move {
            if let Some(s) = sweeper {
                store::sweep(&s).await;
            }
            if wait {
                sleep(Duration::from_millis(100)).await;
            }
        })
    }

    fn final_check(&self) -> BoxFuture<Vec<String>> {
        match self.1.get() {
            Some(s) => self.0.workload.final_check(s.clone()),
            None => Box::pin(async { Vec::new() }),
        }
    }

    fn dump(&self) -> history::FinalState {
        self.0.durable().dump()
    }

    fn observers(&self) -> Vec<history::ObserverDecl> {
        self.0
            .observers
            .iter()
            .map(|(spec, _)| history::ObserverDecl {
                name: spec.name.clone(),
                col: spec.col.clone(),
                weak: spec.weak,
            })
            .collect()
    }

    fn helper_nodes(&self) -> Vec<String> {
        vec![SWEEPER_NODE.to_string()]
    }
}

/// What the healed phase reports for transactions still running.
const BUSY: &str = "transactions still running";
