//! Pulsar, the world's second tenant: a metadata service (broker sessions
//! and the ownership table), brokers that serve the topic partitions
//! (transaction buffers, subscriptions with pending acks) and the
//! transaction coordinator as the metadata service assigns them, and
//! clients running the protocol's client procedures
//! (`percsim_protocol::pulsar`). [`Pulsar`] is the [`System`]: a cluster
//! ([`PulsarConfig`]), the world's settings and a [`PulsarWorkload`].
//! Installed in a world it becomes a [`Cluster`], which its nodes share.
//!
//! Ownership moves: when a broker's session expires, what it owned goes to
//! a live broker at the next epoch, which fences the durable logs and
//! recovers from them; clients and the coordinator find owners by lookup
//! (see `docs/pulsar.md`, "Ownership, lookup and fencing").

mod cluster;
pub(crate) mod config;
pub mod control;
mod driver;
pub mod ids;
mod invariants;
pub(crate) mod nodes;
pub(crate) mod record;
mod rpc;
mod store;
pub(crate) mod workload;

use crate::world::driver::FaultControl;
use crate::world::ids::Role;
use crate::world::node::NodeName;
use crate::world::system_history::SystemHistory;
use crate::world::{BoxFuture, NodeSpec, System, Tenant, Unsettled, World, WorldConfig};
pub(crate) use cluster::{Cluster, broker_addr, client_addr, metadata_addr};
use config::PulsarConfig;
pub use driver::PulsarControl;
use ids::{PulsarEvent, kinds};
use invariants::Watch;
use madsim::time::{Duration, sleep};
use percsim_checker as history;
use percsim_protocol::pulsar::client::ClientPoint;
use percsim_protocol::pulsar::ownership::{self, MetaRecord, OwnershipTable, SessionId};
use percsim_protocol::pulsar::types::Partition;
use record::RunInfo;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use store::Durable;
use workload::PulsarWorkload;

/// Pulsar as a system under test.
pub struct Pulsar {
    world: WorldConfig,
    clients: usize,
    cfg: PulsarConfig,
    workload: Arc<dyn PulsarWorkload>,
}

impl Pulsar {
    /// Pulsar on cluster `cfg` running `workload`;
    /// `world` gives the phases, faults, clocks and RPC timeout.
    pub fn new(world: WorldConfig, cfg: PulsarConfig, workload: Arc<dyn PulsarWorkload>) -> Self {
        Pulsar {
            world,
            clients: cfg.clients,
            cfg,
            workload,
        }
    }
}

impl System for Pulsar {
    fn world_config(&self) -> WorldConfig {
        self.world.clone()
    }

    fn install(&self, world: &Arc<World>) -> Arc<dyn Tenant> {
        let partitions: Vec<Partition> = self
            .workload
            .topics()
            .iter()
            .flat_map(|t| (0..self.cfg.partitions).map(move |i| Partition::new(t, i)))
            .collect();
        let mut durable = Durable::new(&partitions);
        first_sessions(&mut durable.meta, self.cfg.brokers);
        let cluster = Arc::new(Cluster {
            world: world.clone(),
            cfg: self.cfg.clone(),
            clients: self.clients,
            durable: Mutex::new(durable),
            partitions,
            sessions: Mutex::new(vec![0; self.cfg.brokers]),
            stream: Mutex::default(),
            points: Mutex::default(),
            incarnations: Mutex::new(vec![0; self.clients]),
            watch: Mutex::new(Watch::new(self.cfg.ablations)),
            armed: Mutex::default(),
            unloads_done: Mutex::default(),
        });
        cluster.event(
            PulsarEvent::LivenessThresholds,
            serde_json::json!({
                "txn_timeout_ms": self.cfg.client.txn_timeout_ms,
                "timeout_scan_ms": self.cfg.timeout_scan_ms,
                "session_timeout_ms": self.cfg.session_timeout_ms,
                "bound_ms": LIVENESS_BOUND_MS,
            }),
        );
        Arc::new(Installed {
            cluster,
            workload: self.workload.clone(),
        })
    }
}

/// The slack the liveness rules allow a coordinator on top of a
/// transaction's timeout and its timeout scan: the log's appends, the
/// markers' round trips and the time to act.
pub const LIVENESS_BOUND_MS: u64 = 200;

/// The cluster as it starts: every broker's first session open and the
/// resources assigned among them (as if the brokers had registered before
/// the run).
fn first_sessions(meta: &mut OwnershipTable, brokers: usize) {
    for broker in 0..brokers {
        let session = SessionId {
            broker,
            generation: 1,
        };
        meta.apply(&MetaRecord::Opened { session, now_ms: 0 });
    }
    for r in ownership::assign(meta) {
        invariants::check_assignment(meta, &r);
        meta.apply(&r);
    }
}

/// The installed cluster as the world sees it, with the workload it runs.
pub(crate) struct Installed {
    /// What the nodes share.
    cluster: Arc<Cluster>,
    /// The workload.
    workload: Arc<dyn PulsarWorkload>,
}

impl Installed {
    /// The node `name` at `ip` and how it starts.
    fn node(&self, name: NodeName, ip: IpAddr) -> NodeSpec {
        let (role, index) = (name.role(), name.index().unwrap_or(0));
        let c = self.cluster.clone();
        let program: Arc<dyn nodes::client::Program> =
            Arc::new(ClientProgram(self.workload.clone()));
        let init: crate::world::NodeInit = Arc::new(move || -> BoxFuture<()> {
            let c = c.clone();
            match role {
                Role::Master => Box::pin(nodes::metadata::main(c)),
                Role::DataServer => Box::pin(nodes::broker::main(c, index)),
                _ => Box::pin(nodes::client::main(c, program.clone(), index)),
            }
        });
        NodeSpec { name, ip, init }
    }
}

/// The workload as a client process runs it.
struct ClientProgram(Arc<dyn PulsarWorkload>);

impl nodes::client::Program for ClientProgram {
    fn tasks(&self, client: usize, clients: usize) -> usize {
        self.0.tasks(client, clients)
    }

    fn task(&self, task: nodes::client::PulsarTask) -> BoxFuture<()> {
        self.0.task(task)
    }

    fn crash_rate(&self, point: ClientPoint) -> f64 {
        self.0.crash_rate(point)
    }
}

/// What the healed phase reports for transactions still running.
const BUSY: &str = "transactions still running";

impl Tenant for Installed {
    fn state_hash(&self) -> Option<u64> {
        let d = self.cluster.durable.try_lock().ok()?;
        Some(crate::world::explore::hash_of_debug(&*d))
    }

    fn nodes(&self) -> Vec<NodeSpec> {
        let c = &self.cluster;
        let mut out = vec![self.node(kinds::METADATA.single(), metadata_addr().ip())];
        for i in 0..c.cfg.brokers {
            out.push(self.node(kinds::BROKER.nth(i), broker_addr(i).ip()));
        }
        for i in 0..c.clients {
            out.push(self.node(kinds::CLIENT.nth(i), client_addr(i).ip()));
        }
        out
    }

    fn holder(&self, role: Role) -> Option<NodeName> {
        match role {
            Role::Coordinator => self
                .cluster
                .coordinator_owner()
                .map(|b| kinds::BROKER.nth(b)),
            _ => None,
        }
    }

    fn expire_session(&self, _client: usize) {
        // Pulsar's clients hold no liveness session in this model.
    }

    fn driver(&self, control: FaultControl) -> Option<BoxFuture<()>> {
        let control = PulsarControl::new(control, self.cluster.clone());
        self.workload.driver(control)
    }

    fn begin_healed(&self) -> BoxFuture<()> {
        Box::pin(async {})
    }

    fn unsettled(&self) -> Vec<Unsettled> {
        let c = &self.cluster;
        let (orphans, open, held, undrained) = {
            let d = c.durable();
            let undrained = d.undrained(&self.workload.subscriptions());
            let orphans = d.meta.orphans().len() as u64;
            (orphans, d.open_txns(), d.held_partitions(), undrained)
        };
        let busy = c.stream().running();
        vec![
            Unsettled {
                count: orphans,
                what: "resources without a live owner",
            },
            Unsettled {
                count: open,
                what: "transactions open at the coordinator",
            },
            Unsettled {
                count: held,
                what: "partitions held back by an open transaction",
            },
            Unsettled {
                count: undrained,
                what: "messages not yet consumed by a drained subscription",
            },
            Unsettled {
                count: busy,
                what: BUSY,
            },
        ]
    }

    fn settle(&self, _unsettled: &[Unsettled]) -> BoxFuture<()> {
        Box::pin(sleep(Duration::from_millis(100)))
    }

    fn final_check(&self) -> BoxFuture<Vec<String>> {
        self.workload.final_check()
    }

    fn history(
        &self,
        seed: u64,
        scenario: serde_json::Value,
        events: Vec<history::Event>,
    ) -> SystemHistory {
        let c = &self.cluster;
        let d = c.durable();
        let run = RunInfo {
            seed,
            scenario,
            events,
        };
        let h = c.stream().history(run, self.workload.subscriptions(), &d);
        SystemHistory::Stream(h)
    }

    fn helper_nodes(&self) -> Vec<String> {
        Vec::new()
    }
}
