//! Pulsar, the world's second tenant: one transaction coordinator, brokers
//! owning topic partitions (transaction buffers, subscriptions with pending
//! acks), and clients running the protocol's client procedures
//! (`percsim_protocol::pulsar`). [`Pulsar`] is the [`System`]: a cluster
//! ([`PulsarConfig`]), the world's settings and a [`PulsarWorkload`].
//! Installed in a world it becomes a [`Cluster`], which its nodes share.
//!
//! Ownership is fixed: partition `i` lives on broker `i % brokers` and the
//! coordinator on its own node; a dead owner restarts with its durable
//! state (see `docs/pulsar.md`, "In the simulator").

pub(crate) mod config;
pub(crate) mod ids;
pub(crate) mod nodes;
mod record;
mod rpc;
mod store;
pub(crate) mod workload;

use crate::world::driver::FaultControl;
use crate::world::ids::Role;
use crate::world::net::PORT;
use crate::world::{BoxFuture, Control, NodeSpec, System, Tenant, Unsettled, World, WorldConfig};
use config::PulsarConfig;
use madsim::time::{Duration, sleep};
use percsim_checker as history;
use percsim_checker::stream::StreamHistory;
use percsim_protocol::pulsar::points::ServerPoint;
use percsim_protocol::pulsar::types::Partition;
use record::StreamRecorder;
use serde_json::json;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use store::Durable;
use workload::PulsarWorkload;

/// The coordinator's node name.
const COORDINATOR_NODE: &str = "coordinator";

fn coordinator_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 3, 0, 1)), PORT)
}
fn broker_addr(i: usize) -> SocketAddr {
    SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(10, 4, (i / 250) as u8, (i % 250 + 1) as u8)),
        PORT,
    )
}
fn client_addr(i: usize) -> SocketAddr {
    SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(10, 5, (i / 250) as u8, (i % 250 + 1) as u8)),
        PORT,
    )
}

/// Pulsar as a system under test.
pub struct Pulsar {
    world: WorldConfig,
    clients: usize,
    cfg: PulsarConfig,
    workload: Arc<dyn PulsarWorkload>,
}

impl Pulsar {
    /// Pulsar on cluster `cfg` with `clients` clients running `workload`;
    /// `world` gives the phases, faults, clocks and RPC timeout.
    pub fn new(
        world: WorldConfig,
        clients: usize,
        cfg: PulsarConfig,
        workload: Arc<dyn PulsarWorkload>,
    ) -> Self {
        Pulsar {
            world,
            clients,
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
        let owner = partitions
            .iter()
            .enumerate()
            .map(|(i, p)| (p.clone(), i % self.cfg.brokers))
            .collect();
        Arc::new(Installed(Arc::new(Cluster {
            world: world.clone(),
            cfg: self.cfg.clone(),
            clients: self.clients,
            durable: Mutex::new(Durable::new(&partitions)),
            partitions,
            owner,
            workload: self.workload.clone(),
            stream: Mutex::default(),
            points: Mutex::default(),
            incarnations: Mutex::new(vec![0; self.clients]),
        })))
    }
}

/// A Pulsar cluster installed in a world: what its nodes share. Only
/// `durable` is the servers' state; the rest is the world's (the history
/// being recorded, how often each point was reached).
pub(crate) struct Cluster {
    pub world: Arc<World>,
    pub cfg: PulsarConfig,
    pub clients: usize,
    pub durable: Mutex<Durable>,
    /// Every partition of every topic.
    pub partitions: Vec<Partition>,
    /// Which broker owns each partition (fixed).
    pub owner: BTreeMap<Partition, usize>,
    pub workload: Arc<dyn PulsarWorkload>,
    pub stream: Mutex<StreamRecorder>,
    /// How many times each server point was reached.
    pub points: Mutex<BTreeMap<ServerPoint, u64>>,
    /// How many lives each client has started.
    pub incarnations: Mutex<Vec<u32>>,
}

impl Cluster {
    pub(crate) fn durable(&self) -> MutexGuard<'_, Durable> {
        crate::world::lock(&self.durable)
    }

    pub(crate) fn stream(&self) -> MutexGuard<'_, StreamRecorder> {
        crate::world::lock(&self.stream)
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.world.now_ns() / 1_000_000
    }

    /// Server `node` reached `point`: count it (`pulsar.point.<name>`), and
    /// kill the server if a crash is planned for this time.
    pub(crate) async fn reached(&self, node: &str, point: ServerPoint) {
        let n = {
            let mut points = crate::world::lock(&self.points);
            let n = points.entry(point).or_default();
            *n += 1;
            *n
        };
        let planned = self
            .cfg
            .crashes
            .iter()
            .find(|c| c.point == point && c.nth == n);
        let Some(c) = planned else {
            return;
        };
        self.world.event(
            "crash_at_point",
            json!({"node": node, "point": point.name(), "nth": n}),
        );
        self.world.request(Control::Kill {
            node: node.to_string(),
            restart_after_ms: Some(c.restart_after_ms),
        });
        // The kill takes effect when the world's control task runs.
        sleep(Duration::from_millis(1)).await;
    }

    fn node(self: &Arc<Self>, name: String, role: Role, index: usize, ip: IpAddr) -> NodeSpec {
        let c = self.clone();
        let init: crate::world::NodeInit = Arc::new(move || -> BoxFuture<()> {
            let c = c.clone();
            match role {
                Role::Coordinator => Box::pin(nodes::coordinator::main(c)),
                Role::DataServer => Box::pin(nodes::broker::main(c, index)),
                _ => Box::pin(nodes::client::main(c, index)),
            }
        });
        NodeSpec {
            name,
            role,
            index,
            ip,
            init,
        }
    }
}

/// The installed cluster as the world sees it.
pub(crate) struct Installed(Arc<Cluster>);

/// What the healed phase reports for transactions still running.
const BUSY: &str = "transactions still running";

impl Tenant for Installed {
    fn nodes(&self) -> Vec<NodeSpec> {
        let c = &self.0;
        let mut out = vec![c.node(
            COORDINATOR_NODE.into(),
            Role::Coordinator,
            0,
            coordinator_addr().ip(),
        )];
        for i in 0..c.cfg.brokers {
            out.push(c.node(
                format!("broker-{i}"),
                Role::DataServer,
                i,
                broker_addr(i).ip(),
            ));
        }
        for i in 0..c.clients {
            out.push(c.node(format!("client-{i}"), Role::Client, i, client_addr(i).ip()));
        }
        out
    }

    fn expire_session(&self, _client: usize) {
        // Pulsar's clients hold no liveness session in this model.
    }

    fn driver(&self, _control: FaultControl) -> Option<BoxFuture<()>> {
        None
    }

    fn begin_healed(&self) -> BoxFuture<()> {
        Box::pin(async {})
    }

    fn unsettled(&self) -> Vec<Unsettled> {
        let c = &self.0;
        let (open, held, undrained) = {
            let d = c.durable();
            let undrained = d.undrained(&c.workload.subscriptions());
            (d.open_txns(), d.held_partitions(), undrained)
        };
        let busy = c.stream().running();
        vec![
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
        Box::pin(async { Vec::new() })
    }

    fn dump(&self) -> history::FinalState {
        history::FinalState::default()
    }

    fn stream_history(&self, seed: u64, scenario: serde_json::Value) -> Option<StreamHistory> {
        let c = &self.0;
        let d = c.durable();
        let h = c
            .stream()
            .history(seed, scenario, c.workload.subscriptions(), &d);
        Some(h)
    }

    fn observers(&self) -> Vec<history::ObserverDecl> {
        Vec::new()
    }

    fn helper_nodes(&self) -> Vec<String> {
        Vec::new()
    }
}
