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

pub(crate) mod config;
pub mod ids;
mod invariants;
pub(crate) mod nodes;
mod record;
mod rpc;
mod store;
pub(crate) mod workload;

use crate::world::driver::FaultControl;
use crate::world::ids::{FaultKind, Role};
use crate::world::net::PORT;
use crate::world::node::NodeName;
use crate::world::system_history::SystemHistory;
use crate::world::{BoxFuture, Control, NodeSpec, System, Tenant, Unsettled, World, WorldConfig};
use config::PulsarConfig;
use ids::{PulsarCounter, PulsarEvent, kinds};
use invariants::Watch;
use madsim::time::{Duration, sleep};
use percsim_checker as history;
use percsim_protocol::pulsar::ownership::{self, MetaRecord, OwnershipTable, Resource, SessionId};
use percsim_protocol::pulsar::points::ServerPoint;
use percsim_protocol::pulsar::types::Partition;
use record::{RunInfo, StreamRecorder};
use serde_json::json;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use store::Durable;
use workload::PulsarWorkload;

fn metadata_addr() -> SocketAddr {
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
        Arc::new(Installed(Arc::new(Cluster {
            world: world.clone(),
            cfg: self.cfg.clone(),
            clients: self.clients,
            durable: Mutex::new(durable),
            partitions,
            sessions: Mutex::new(vec![0; self.cfg.brokers]),
            workload: self.workload.clone(),
            stream: Mutex::default(),
            points: Mutex::default(),
            incarnations: Mutex::new(vec![0; self.clients]),
            watch: Mutex::new(Watch::new(self.cfg.ablations)),
        })))
    }
}

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
    /// How many metadata sessions each broker has opened.
    pub sessions: Mutex<Vec<u32>>,
    pub workload: Arc<dyn PulsarWorkload>,
    pub stream: Mutex<StreamRecorder>,
    /// How many times each server point was reached.
    pub points: Mutex<BTreeMap<ServerPoint, u64>>,
    /// How many lives each client has started.
    pub incarnations: Mutex<Vec<u32>>,
    /// What the assertions remember of the durable logs.
    pub watch: Mutex<Watch>,
}

impl Cluster {
    pub(crate) fn durable(&self) -> MutexGuard<'_, Durable> {
        crate::world::lock(&self.durable)
    }

    pub(crate) fn watch(&self) -> MutexGuard<'_, Watch> {
        crate::world::lock(&self.watch)
    }

    pub(crate) fn stream(&self) -> MutexGuard<'_, StreamRecorder> {
        crate::world::lock(&self.stream)
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.world.now_ns() / 1_000_000
    }

    /// Record one of Pulsar's events.
    pub(crate) fn event(&self, kind: PulsarEvent, fields: serde_json::Value) {
        self.world.event(kind.name(), fields);
    }

    /// Bump one of Pulsar's counters.
    pub(crate) fn bump(&self, counter: ids::PulsarCounter) {
        self.world.recorder().bump(counter.name());
    }

    /// `node`'s append to `resource`'s logs was refused by the fence: it
    /// stops serving the resource.
    pub(crate) fn fenced(&self, node: &str, resource: &Resource, f: ownership::Fenced) {
        self.event(
            PulsarEvent::StaleOwnerFenced,
            json!({"node": node, "resource": resource.to_string(), "log_epoch": f.log, "epoch": f.writer}),
        );
    }

    /// Broker `broker` opens a new metadata session: its generation.
    pub(crate) fn next_session(&self, broker: usize) -> SessionId {
        let mut s = crate::world::lock(&self.sessions);
        s[broker] += 1;
        SessionId {
            broker,
            generation: s[broker],
        }
    }

    /// The broker the metadata store names as the coordinator's owner.
    pub(crate) fn coordinator_owner(&self) -> Option<usize> {
        let d = self.durable();
        ownership::lookup(&d.meta, &Resource::Coordinator(store::COORDINATOR))
    }

    /// Server `node` reached `point`: count it (`pulsar.point.<name>`), and
    /// kill the server (or freeze it) if that is planned for this time.
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
        self.event(
            PulsarEvent::CrashAtPoint,
            json!({"node": node, "point": point.name(), "nth": n, "pause_ms": c.pause_ms}),
        );
        // Counted as the stop it is: a kill or a pause at a named point.
        let (class, counter) = match c.pause_ms {
            Some(_) => (FaultKind::PauseAtStep, PulsarCounter::BrokerPausedAtPoint),
            None => (FaultKind::CrashAtStep, PulsarCounter::BrokerKilledAtPoint),
        };
        self.world.recorder().bump(&class.counter());
        self.bump(counter);
        self.world.request(match c.pause_ms {
            Some(ms) => Control::Pause {
                node: node.to_string(),
                duration_ms: Some(ms),
            },
            None => Control::Kill {
                node: node.to_string(),
                restart_after_ms: Some(c.restart_after_ms),
            },
        });
        // The kill takes effect when the world's control task runs.
        sleep(Duration::from_millis(1)).await;
    }

    fn node(self: &Arc<Self>, name: NodeName, ip: IpAddr) -> NodeSpec {
        let (role, index) = (name.role(), name.index().unwrap_or(0));
        let c = self.clone();
        let init: crate::world::NodeInit = Arc::new(move || -> BoxFuture<()> {
            let c = c.clone();
            match role {
                Role::Master => Box::pin(nodes::metadata::main(c)),
                Role::DataServer => Box::pin(nodes::broker::main(c, index)),
                _ => Box::pin(nodes::client::main(c, index)),
            }
        });
        NodeSpec { name, ip, init }
    }
}

/// The installed cluster as the world sees it.
pub(crate) struct Installed(Arc<Cluster>);

/// What the healed phase reports for transactions still running.
const BUSY: &str = "transactions still running";

impl Tenant for Installed {
    fn nodes(&self) -> Vec<NodeSpec> {
        let c = &self.0;
        let mut out = vec![c.node(kinds::METADATA.single(), metadata_addr().ip())];
        for i in 0..c.cfg.brokers {
            out.push(c.node(kinds::BROKER.nth(i), broker_addr(i).ip()));
        }
        for i in 0..c.clients {
            out.push(c.node(kinds::CLIENT.nth(i), client_addr(i).ip()));
        }
        out
    }

    fn holder(&self, role: Role) -> Option<NodeName> {
        match role {
            Role::Coordinator => self.0.coordinator_owner().map(|b| kinds::BROKER.nth(b)),
            _ => None,
        }
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
        let (orphans, open, held, undrained) = {
            let d = c.durable();
            let undrained = d.undrained(&c.workload.subscriptions());
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
        Box::pin(async { Vec::new() })
    }

    fn history(
        &self,
        seed: u64,
        scenario: serde_json::Value,
        events: Vec<history::Event>,
    ) -> SystemHistory {
        let c = &self.0;
        let d = c.durable();
        let run = RunInfo {
            seed,
            scenario,
            events,
        };
        let h = c.stream().history(run, c.workload.subscriptions(), &d);
        SystemHistory::Stream(h)
    }

    fn helper_nodes(&self) -> Vec<String> {
        Vec::new()
    }
}
