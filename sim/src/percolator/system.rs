//! Percolator as a [`System`]: a cluster configuration and a workload,
//! which, installed in a world, become the shared [`Cluster`] and the
//! [`Tenant`] the world drives (its nodes, faults, healed phase and
//! history).

use super::config::PercolatorConfig;
use super::nodes::client::{Client, Program};
use super::store::{Durable, Tablets};
use super::workload::Workload;
use super::{
    Cluster, SWEEPER_NODE, client_addr, inspect, liveness_addr, master_addr, nodes, oracle_addr,
    record, tablet_server_addr,
};
use crate::percolator::ids::{PercolatorEvent, kinds};
use crate::world::driver::FaultControl;
use crate::world::ids::Role;
use crate::world::node::NodeName;
use crate::world::system_history::SystemHistory;
use crate::world::txn_history::TxnHistory;
use crate::world::{BoxFuture, NodeSpec, System, Tenant, Unsettled, World, WorldConfig};
use madsim::time::{Duration, sleep};
use percsim_checker as history;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};

/// Timestamps of the initial load: it commits before the oracle's first.
const LOAD_START_TS: u64 = 1;
const LOAD_COMMIT_TS: u64 = 2;

/// Percolator as a system under test: a cluster and a workload.
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
        let mut txn_history = TxnHistory::default();
        record::bootstrap(
            &mut txn_history,
            &mut world.recorder(),
            &initial,
            LOAD_START_TS,
            LOAD_COMMIT_TS,
        );
        let program = Arc::new(Program {
            worker: {
                let workload = self.workload.clone();
                Box::new(move |worker| workload.worker(worker))
            },
            observers: self.workload.observers(),
        });
        world.event(
            PercolatorEvent::LivenessThresholds.name(),
            serde_json::json!({
                "lock_ttl_ms": cfg.client.lock_ttl_ms,
                "session_ttl_ms": cfg.session_ttl_ms,
                "bound_ms": cfg.liveness_bound_ms,
                "scan_interval_ms": nodes::client::SCAN_INTERVAL_MS,
                "observer_run_ms": observer_run_ms(cfg, &self.world),
                "notify_bound_ms": cfg.notify_bound_ms,
            }),
        );
        Arc::new(Installed {
            cluster: Arc::new(Cluster {
                world: world.clone(),
                cfg: cfg.clone(),
                durable: Mutex::new(durable),
                txn_history: Mutex::new(txn_history),
                tablets,
                incarnations: Mutex::default(),
                sessions: Mutex::default(),
                row_locks: Mutex::default(),
                granted: Mutex::new(LOAD_COMMIT_TS),
                point_hits: Mutex::default(),
                armed_points: Mutex::default(),
                rolled_back: Mutex::default(),
            }),
            sweeper: Arc::default(),
            workload: self.workload.clone(),
            program,
        })
    }
}

/// The longest one observer run may take once the faults are healed: a
/// wait on the lock of an owner that died (its lock's or its session's
/// TTL, the longer), one row request's attempts each waiting out the
/// RPC time-out, and the scanner's longest backoff after a failed run.
fn observer_run_ms(cfg: &PercolatorConfig, world: &WorldConfig) -> u64 {
    let lock_wait_ms = cfg.client.lock_ttl_ms.max(cfg.session_ttl_ms);
    let rpc_ms = world.rpc_timeout_ms * u64::from(cfg.rpc_attempts);
    lock_wait_ms + rpc_ms + nodes::client::OBSERVER_BACKOFF_MAX_MS
}

/// A node of `cluster` with `role`, as the world starts it.
fn node(at: &Installed, name: NodeName, addr: SocketAddr) -> NodeSpec {
    let (role, index) = (name.role(), name.index().unwrap_or(0));
    let (c, program) = (at.cluster.clone(), at.program.clone());
    let init: crate::world::NodeInit = Arc::new(move || -> BoxFuture<()> {
        let (c, program) = (c.clone(), program.clone());
        match role {
            Role::Coordinator => Box::pin(nodes::oracle::main(c)),
            Role::Liveness => Box::pin(nodes::liveness::main(c)),
            Role::Master => Box::pin(nodes::master::main(c)),
            Role::DataServer => Box::pin(nodes::tablet::main(c, index)),
            Role::Client => Box::pin(nodes::client::main(c, program, index)),
        }
    });
    NodeSpec {
        name,
        ip: addr.ip(),
        init,
    }
}

/// The installed cluster as the world sees it, with the healed phase's
/// sweeper and final checker. The sweeper (whose client holds the
/// cluster) lives here, not in the cluster: that would be a cycle of
/// `Arc`s, and every run would leak its whole cluster.
pub(crate) struct Installed {
    /// What the nodes share.
    cluster: Arc<Cluster>,
    /// The healed phase's sweeper, once it runs.
    sweeper: Arc<OnceLock<Arc<Client>>>,
    /// The workload.
    workload: Arc<dyn Workload>,
    /// What the clients run of the workload.
    program: Arc<Program>,
}

impl Tenant for Installed {
    fn state_hash(&self) -> Option<u64> {
        let d = self.cluster.durable.try_lock().ok()?;
        let state = (&d.rows, d.oracle_max, &d.tablet_owner, &d.raw);
        Some(crate::world::explore::hash_of(&state))
    }

    fn nodes(&self) -> Vec<NodeSpec> {
        let c = &self.cluster;
        let mut out = vec![
            node(self, kinds::ORACLE.single(), oracle_addr()),
            node(self, kinds::LIVENESS.single(), liveness_addr()),
            node(self, kinds::MASTER.single(), master_addr()),
        ];
        for i in 0..c.cfg.tablet_servers {
            out.push(node(self, kinds::TABLET.nth(i), tablet_server_addr(i)));
        }
        for i in 0..c.cfg.clients {
            out.push(node(self, kinds::CLIENT.nth(i), client_addr(i)));
        }
        out
    }

    fn expire_session(&self, client: usize) {
        let c = &self.cluster;
        c.lock(&c.sessions).retain(|_, (owner, _)| *owner != client);
    }

    fn driver(&self, control: FaultControl) -> Option<BoxFuture<()>> {
        let control = inspect::Controller::new(control, self.cluster.clone());
        self.workload.driver(control)
    }

    fn begin_healed(&self) -> BoxFuture<()> {
        let (c, slot) = (self.cluster.clone(), self.sweeper.clone());
        let program = self.program.clone();
        Box::pin(async move {
            let sweeper = nodes::client::start_on_new_node(c.clone(), program, c.cfg.clients).await;
            let _ = slot.set(sweeper);
        })
    }

    fn unsettled(&self) -> Vec<Unsettled> {
        let c = &self.cluster;
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
        let sweeper = self.sweeper.get().cloned();
        Box::pin(async move {
            if let Some(s) = sweeper {
                nodes::client::sweep(&s).await;
            }
            if wait {
                sleep(Duration::from_millis(100)).await;
            }
        })
    }

    fn final_check(&self) -> BoxFuture<Vec<String>> {
        match self.sweeper.get() {
            Some(s) => self.workload.final_check(s.clone()),
            None => Box::pin(async { Vec::new() }),
        }
    }

    fn history(
        &self,
        seed: u64,
        scenario: serde_json::Value,
        events: Vec<history::Event>,
    ) -> SystemHistory {
        let c = &self.cluster;
        let built = c.txn_history().build(&mut c.recorder());
        let observers = self
            .program
            .observers
            .iter()
            .map(|(spec, _)| history::ObserverDecl {
                name: spec.name.clone(),
                col: spec.col.clone(),
                weak: spec.weak,
            })
            .collect();
        SystemHistory::Transactions(history::History {
            format: history::FORMAT.to_string(),
            // The paper's promise: snapshot isolation.
            model: Some(history::Model::SnapshotIsolation),
            seed,
            scenario,
            transactions: built.transactions,
            events,
            final_state: c.durable().dump(),
            observers,
        })
    }

    fn helper_nodes(&self) -> Vec<String> {
        vec![SWEEPER_NODE.to_string()]
    }
}

/// What the healed phase reports for transactions still running.
const BUSY: &str = "transactions still running";
