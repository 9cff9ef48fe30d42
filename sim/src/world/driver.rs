//! The fault driver: applies timed faults, rolls random fault classes every
//! tick, undoes faults when their time is up, and heals everything at the
//! end of the workload phase. Every fault is recorded as a history event.

pub use crate::world::control::FaultControl;
use crate::world::control::Injector;
use crate::world::faults::{FAULT_TICK_MS, Fault, FaultClass, RandomFaults};
use crate::world::ids::{EventKind, FaultKind, Role};
use crate::world::node::NodeName;
use crate::world::port::LinkFaults;
use crate::world::{NetFaults, Tenant, World};
use madsim::net::NetSim;
use madsim::runtime::Handle;
use madsim::task::NodeId;
use madsim::time::{Duration, Instant, sleep};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

/// Something to undo when a fault's time is up.
#[derive(Debug, Clone)]
enum Undo {
    Restart(String),
    Resume(String),
    Unclog(Vec<(NodeId, NodeId)>),
    Unstall(NodeName),
    EndNet(u64),
}

/// A message fault in force.
#[derive(Debug, Clone, Copy)]
enum NetFault {
    Loss(f64),
    Latency(u64, u64),
    Duplicate(f64, u64),
}

/// A node as the fault driver knows it.
#[derive(Debug, Clone)]
pub(crate) struct Known {
    /// Its madsim node.
    pub id: NodeId,
    /// Its name (its role and index).
    pub name: NodeName,
}

/// The nodes of a run, in the order they started.
#[derive(Debug, Clone, Default)]
pub(crate) struct Registry {
    order: Vec<String>,
    nodes: BTreeMap<String, Known>,
}

impl Registry {
    pub(crate) fn add(&mut self, name: String, known: Known) {
        self.order.push(name.clone());
        self.nodes.insert(name, known);
    }

    fn get(&self, name: &str) -> Option<&Known> {
        self.nodes.get(name)
    }

    fn id(&self, name: &str) -> Option<NodeId> {
        self.get(name).map(|k| k.id)
    }

    /// Every node's name, in start order.
    pub(crate) fn names(&self) -> &[String] {
        &self.order
    }

    /// The names of the nodes of `role`, in start order.
    fn of(&self, role: Role) -> Vec<&String> {
        self.order
            .iter()
            .filter(|n| self.nodes[n.as_str()].name.role() == role)
            .collect()
    }

    fn count(&self, role: Role) -> usize {
        self.of(role).len()
    }

    /// Client `index`, if it runs.
    fn client(&self, index: usize) -> Option<NodeName> {
        self.nodes
            .values()
            .map(|k| k.name)
            .find(|n| n.is_client(index))
    }
}

/// Fault state shared by the driver loop and the crash-at-step handler.
pub(crate) struct Faults {
    world: Arc<World>,
    tenant: Arc<dyn Tenant>,
    ids: Registry,
    killed: BTreeSet<String>,
    paused: BTreeSet<String>,
    undo: Vec<(Instant, Undo)>,
    net: BTreeMap<u64, NetFault>,
    next_net_id: u64,
}

pub(crate) type SharedFaults = Arc<Mutex<Faults>>;

impl Faults {
    pub(crate) fn new(world: Arc<World>, tenant: Arc<dyn Tenant>, ids: Registry) -> SharedFaults {
        Arc::new(Mutex::new(Faults {
            world,
            tenant,
            ids,
            killed: BTreeSet::new(),
            paused: BTreeSet::new(),
            undo: Vec::new(),
            net: BTreeMap::new(),
            next_net_id: 0,
        }))
    }

    /// Kill `node` now; restart it after `restart_after_ms` (else at heal).
    /// Counted as a kill of the role it plays (`fault.kill_<role>`).
    pub(crate) fn kill(&mut self, node: &str, restart_after_ms: Option<u64>) {
        if let Some(role) = self.kill_node(node, restart_after_ms) {
            self.world
                .recorder()
                .bump(&FaultKind::kill_of(role).counter());
        }
    }

    /// Kill `node` now at a named point of its system, which asked for it
    /// and counts the stop as its own: no kill class is counted.
    pub(crate) fn kill_at_point(&mut self, node: &str, restart_after_ms: Option<u64>) {
        self.kill_node(node, restart_after_ms);
    }

    /// Kill `node` now; restart it after `restart_after_ms` (else at
    /// heal). Returns the role the kill takes down (the first role that
    /// moved onto it, else its own), or `None` if no such node is up.
    fn kill_node(&mut self, node: &str, restart_after_ms: Option<u64>) -> Option<Role> {
        let known = self.ids.get(node).cloned()?;
        if self.killed.contains(node) {
            return None;
        }
        if self.paused.remove(node) {
            Handle::current().resume(known.id);
        }
        // The roles that moved onto this node die with it.
        let hosts: Vec<Role> = Role::ALL
            .iter()
            .copied()
            .filter(|r| {
                self.tenant
                    .holder(*r)
                    .is_some_and(|h| h.to_string() == node)
            })
            .collect();
        Handle::current().kill(known.id);
        self.world.node_stopped(node);
        self.killed.insert(node.to_string());
        let role = hosts.first().copied().unwrap_or(known.name.role());
        if let (Role::Client, Some(index)) = (known.name.role(), known.name.index()) {
            // Its transactions in progress will never finish.
            self.world.recorder().orphan(index as u64);
        }
        let fields = if hosts.is_empty() {
            json!({"node": node})
        } else {
            let names: Vec<&str> = hosts.iter().map(|r| r.name()).collect();
            json!({"node": node, "hosts": names})
        };
        self.world.world_event(EventKind::Kill, fields);
        if let Some(ms) = restart_after_ms {
            self.undo.push((
                Instant::now() + Duration::from_millis(ms),
                Undo::Restart(node.to_string()),
            ));
        }
        Some(role)
    }

    fn restart(&mut self, node: &str) {
        let Some(id) = self.ids.id(node) else {
            return;
        };
        if !self.killed.remove(node) {
            return;
        }
        Handle::current().restart(id);
        self.world
            .world_event(EventKind::Restart, json!({"node": node}));
    }

    /// Inject `fault` now: from the fault driver or a workload's driver,
    /// only in the workload phase. A fault other than a restart or a
    /// resume in the healed phase, which must be fault-free, is a bug of
    /// the world, and the run stops.
    pub(crate) fn apply(&mut self, fault: &Fault) {
        if self.world.stopping() && !fault.heals() {
            crate::invariant::violated(&format!(
                "fault {fault:?} injected after the workload phase"
            ));
        }
        self.inject_now(fault);
    }

    /// Inject `fault` now, counted by its class if it happened: a pause
    /// of a node that is down or frozen already, or a stall of no node,
    /// did not, and is not counted.
    fn inject_now(&mut self, fault: &Fault) {
        if !self.take_effect(fault) {
            return;
        }
        if let Some(class) = fault.kind() {
            self.world.recorder().bump(&class.counter());
        }
    }

    /// Make `fault` take effect now; whether it did.
    fn take_effect(&mut self, fault: &Fault) -> bool {
        let now = Instant::now();
        let after = |ms: u64| now + Duration::from_millis(ms);
        match fault {
            Fault::Kill {
                node,
                restart_after_ms,
            } => self.kill(node, *restart_after_ms),
            Fault::Restart { node } => self.restart(node),
            Fault::Resume { node } => self.run_undo(Undo::Resume(node.clone())),
            Fault::Pause { node, duration_ms } => return self.pause(node, *duration_ms),
            Fault::Stall {
                client,
                node,
                duration_ms,
            } => return self.stall(*client, node.as_deref(), *duration_ms),
            Fault::Partition { .. } => self.partition(fault),
            Fault::PacketLoss { rate, duration_ms } => {
                self.world.world_event(
                    EventKind::PacketLoss,
                    json!({"rate": rate, "duration_ms": duration_ms}),
                );
                self.start_net(NetFault::Loss(*rate), after(*duration_ms));
            }
            Fault::Latency {
                min_ms,
                max_ms,
                duration_ms,
            } => {
                self.world.world_event(
                    EventKind::Latency,
                    json!({"min_ms": min_ms, "max_ms": max_ms, "duration_ms": duration_ms}),
                );
                self.start_net(NetFault::Latency(*min_ms, *max_ms), after(*duration_ms));
            }
            Fault::Duplicate {
                rate,
                max_delay_ms,
                duration_ms,
            } => {
                self.world.world_event(
                    EventKind::Duplicate,
                    json!({"rate": rate, "max_delay_ms": max_delay_ms, "duration_ms": duration_ms}),
                );
                self.start_net(
                    NetFault::Duplicate(*rate, *max_delay_ms),
                    after(*duration_ms),
                );
            }
            Fault::ExpireSession { client } => {
                self.tenant.expire_session(*client);
                self.world
                    .world_event(EventKind::SessionExpired, json!({"client": client}));
            }
        }
        true
    }

    /// Freeze `node` for `duration_ms` at a named point of its system,
    /// which asked for it and counts the stop as its own: no pause class
    /// is counted. Applies in any phase (its node is resumed in the healed
    /// phase too).
    pub(crate) fn pause_at_point(&mut self, node: &str, duration_ms: u64) {
        self.pause(node, duration_ms);
    }

    /// Freeze `node` for `duration_ms` (not if it is dead or paused
    /// already); whether it froze it.
    fn pause(&mut self, node: &str, duration_ms: u64) -> bool {
        let Some(id) = self.ids.id(node) else {
            return false;
        };
        if self.killed.contains(node) || !self.paused.insert(node.to_string()) {
            return false;
        }
        Handle::current().pause(id);
        self.world.world_event(
            EventKind::Pause,
            json!({"node": node, "duration_ms": duration_ms}),
        );
        let until = Instant::now() + Duration::from_millis(duration_ms);
        self.undo.push((until, Undo::Resume(node.to_string())));
        true
    }

    /// Stall the transaction threads of `client` (by index) or else of
    /// `node` (by name) for `duration_ms` (nothing if no such node runs);
    /// whether it stalled one.
    fn stall(&mut self, client: Option<usize>, node: Option<&str>, duration_ms: u64) -> bool {
        let target = match (client, node) {
            (Some(c), _) => self.ids.client(c),
            (None, Some(n)) => self.ids.get(n).map(|k| k.name),
            (None, None) => None,
        };
        let Some(target) = target else {
            return false;
        };
        let until = Instant::now() + Duration::from_millis(duration_ms);
        let mut stalled = self.world.stalled();
        let end = stalled.entry(target).or_insert(until);
        *end = (*end).max(until);
        drop(stalled);
        let fields = match client {
            Some(c) => json!({"client": c, "duration_ms": duration_ms}),
            None => json!({"node": target, "duration_ms": duration_ms}),
        };
        self.world.world_event(EventKind::Stall, fields);
        self.undo.push((until, Undo::Unstall(target)));
        true
    }

    /// Cut the links of a [`Fault::Partition`].
    fn partition(&mut self, fault: &Fault) {
        let Fault::Partition {
            a,
            b,
            one_way,
            duration_ms,
        } = fault
        else {
            return;
        };
        let net = NetSim::current();
        let mut links = Vec::new();
        for x in a.iter().filter_map(|n| self.ids.id(n)) {
            for y in b.iter().filter_map(|n| self.ids.id(n)) {
                if x == y {
                    continue;
                }
                links.push((x, y));
                if !one_way {
                    links.push((y, x));
                }
            }
        }
        let mut cut = self.world.cut();
        for (x, y) in &links {
            net.clog_link(*x, *y);
            *cut.entry((*x, *y)).or_default() += 1;
        }
        drop(cut);
        self.world.world_event(
            EventKind::Partition,
            json!({"a": a, "b": b, "one_way": one_way, "duration_ms": duration_ms}),
        );
        let until = Instant::now() + Duration::from_millis(*duration_ms);
        self.undo.push((until, Undo::Unclog(links)));
    }

    fn start_net(&mut self, f: NetFault, until: Instant) {
        let id = self.next_net_id;
        self.next_net_id += 1;
        self.net.insert(id, f);
        self.undo.push((until, Undo::EndNet(id)));
        self.sync_net();
    }

    /// Put the message faults in force into the network and the transport.
    fn sync_net(&self) {
        let mut loss: f64 = 0.0;
        let mut latency = (1, 10);
        let (mut dup_rate, mut dup_delay) = (0.0f64, 0);
        for f in self.net.values() {
            match *f {
                NetFault::Loss(r) => loss = loss.max(r),
                NetFault::Latency(a, b) => latency = (a, b),
                NetFault::Duplicate(r, d) => {
                    dup_rate = dup_rate.max(r);
                    dup_delay = dup_delay.max(d);
                }
            }
        }
        NetSim::current().update_config(|c| {
            c.packet_loss_rate = loss;
            c.send_latency = Duration::from_millis(latency.0)
                ..Duration::from_millis(latency.1.max(latency.0 + 1));
        });
        self.world.set_link(LinkFaults {
            loss_rate: loss,
            min_latency_ms: latency.0,
            max_latency_ms: latency.1.max(latency.0 + 1),
        });
        self.world.set_net(NetFaults {
            duplicate_rate: dup_rate,
            duplicate_max_delay_ms: dup_delay,
        });
    }

    fn run_undo(&mut self, u: Undo) {
        match u {
            Undo::Restart(node) => self.restart(&node),
            Undo::Resume(node) => {
                if self.paused.remove(&node)
                    && let Some(id) = self.ids.id(&node)
                {
                    Handle::current().resume(id);
                    self.world
                        .world_event(EventKind::Resume, json!({"node": node}));
                }
            }
            Undo::Unclog(links) => {
                let net = NetSim::current();
                let mut cut = self.world.cut();
                for (x, y) in links {
                    let Some(left) = cut.get(&(x, y)).map(|n| n - 1) else {
                        drop(cut);
                        crate::invariant::violated(&format!(
                            "a partition heals the link {x} -> {y}, which no partition cuts"
                        ));
                    };
                    if left == 0 {
                        cut.remove(&(x, y));
                        net.unclog_link(x, y);
                    } else {
                        cut.insert((x, y), left);
                    }
                }
                drop(cut);
                self.world
                    .world_event(EventKind::PartitionHealed, json!({}));
            }
            Undo::Unstall(client) => {
                let mut stalled = self.world.stalled();
                if stalled.get(&client).is_some_and(|t| *t <= Instant::now()) {
                    stalled.remove(&client);
                }
            }
            Undo::EndNet(id) => {
                self.net.remove(&id);
                self.sync_net();
            }
        }
    }

    /// The world, for [`crate::inspect`].
    pub(crate) fn world(&self) -> &Arc<World> {
        &self.world
    }

    /// Whether `node` is killed or paused now.
    pub(crate) fn is_down(&self, node: &str) -> bool {
        self.killed.contains(node) || self.paused.contains(node)
    }

    /// Heal every partition in force now (a script's `heal` step).
    pub(crate) fn heal_partitions(&mut self) {
        let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.undo)
            .into_iter()
            .partition(|(_, u)| matches!(u, Undo::Unclog(_)));
        self.undo = keep;
        for (_, u) in due {
            self.run_undo(u);
        }
    }

    /// Undo everything whose time has come.
    fn undo_due(&mut self) {
        let now = Instant::now();
        let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.undo)
            .into_iter()
            .partition(|(t, _)| *t <= now);
        self.undo = keep;
        for (_, u) in due {
            self.run_undo(u);
        }
    }

    /// The healed phase: undo every fault, restart every dead node.
    pub(crate) fn heal(&mut self) {
        for (_, u) in std::mem::take(&mut self.undo) {
            self.run_undo(u);
        }
        self.world.stalled().clear();
        for node in self.paused.clone() {
            self.run_undo(Undo::Resume(node));
        }
        for node in self.killed.clone() {
            self.restart(&node);
        }
        self.net.clear();
        self.sync_net();
        self.world.clear_intercepts();
        self.check_healed();
    }

    /// The healed phase starts with every node up, every link whole and no
    /// fault pending; else the world failed to heal, and the run stops.
    fn check_healed(&self) {
        let cut = self.world.cut().len();
        crate::invariant::check(
            self.killed.is_empty() && self.paused.is_empty() && cut == 0 && self.undo.is_empty(),
            || {
                format!(
                    "the healed phase starts with killed nodes {:?}, paused nodes {:?}, {cut} cut links and {} faults to undo",
                    self.killed,
                    self.paused,
                    self.undo.len()
                )
            },
        );
    }
}

/// Run the workload phase until `until`: timed faults at their times,
/// random classes rolled every [`FAULT_TICK_MS`].
pub(crate) async fn drive(faults: SharedFaults, world: Arc<World>, seed: u64, until: Instant) {
    let start = world.start();
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6661_756c_7473);
    let mut schedule = world.config().faults.schedule.clone();
    schedule.sort_by_key(|t| t.at_ms);
    let mut schedule = schedule.into_iter().peekable();
    let random = world.config().faults.random.clone();
    let nodes = lock_faults(&faults).ids.clone();
    let tick = Duration::from_millis(10);
    let mut next_roll = Instant::now() + Duration::from_millis(FAULT_TICK_MS);
    let mut ticks = 0u64;
    while Instant::now() < until && !world.workload_done() {
        let now_ms = (Instant::now() - start).as_millis() as u64;
        {
            let mut f = lock_faults(&faults);
            while let Some(t) = schedule.next_if(|t| t.at_ms <= now_ms) {
                f.apply(&t.fault);
            }
            f.undo_due();
            if Instant::now() >= next_roll {
                next_roll += Duration::from_millis(FAULT_TICK_MS);
                let tenant = f.tenant.clone();
                for fault in roll(&random, &nodes, tenant.as_ref(), &mut rng) {
                    f.apply(&fault);
                }
                for fault in roll_roles(&random, &f, &mut rng) {
                    f.apply(&fault);
                }
            }
        }
        sleep(tick).await;
        ticks += 1;
        if ticks.is_multiple_of(20) {
            // madsim 0.2.34 keeps finished RPC tasks until their count is read.
            let _ = Handle::current().metrics().num_tasks();
        }
    }
}

pub(crate) fn lock_faults(f: &SharedFaults) -> std::sync::MutexGuard<'_, Faults> {
    f.lock().unwrap_or_else(|e| e.into_inner())
}

fn duration(rng: &mut ChaCha8Rng, c: &FaultClass) -> u64 {
    rng.random_range(c.min_duration_ms..=c.max_duration_ms)
}

/// Whether class `c` (if on) fires at this tick.
fn fire(c: &Option<FaultClass>, rng: &mut ChaCha8Rng) -> Option<FaultClass> {
    let c = c.as_ref()?;
    rng.random_bool(c.probability.clamp(0.0, 1.0))
        .then(|| c.clone())
}

/// A random node of `role` (none if the system has no such node).
fn pick(nodes: &Registry, role: Role, rng: &mut ChaCha8Rng) -> Option<String> {
    let of = nodes.of(role);
    if of.is_empty() {
        return None;
    }
    Some(of[rng.random_range(0..of.len())].clone())
}

/// Roll the kill classes: clients and data servers at random, the single
/// coordinator, liveness service and master by role (the node that holds
/// the role now, if the tenant moves it between nodes).
fn roll_kills(
    r: &RandomFaults,
    nodes: &Registry,
    tenant: &dyn Tenant,
    rng: &mut ChaCha8Rng,
    out: &mut Vec<Fault>,
) {
    for (class, role) in [
        (&r.kill_client, Role::Client),
        (&r.kill_data_server, Role::DataServer),
    ] {
        if let Some(c) = fire(class, rng)
            && let Some(node) = pick(nodes, role, rng)
        {
            out.push(Fault::Kill {
                node,
                restart_after_ms: Some(duration(rng, &c)),
            });
        }
    }
    for (class, role) in [
        (&r.kill_coordinator, Role::Coordinator),
        (&r.kill_liveness, Role::Liveness),
        (&r.kill_master, Role::Master),
    ] {
        if let Some(c) = fire(class, rng)
            && let Some(node) = tenant
                .holder(role)
                .map(|h| h.to_string())
                .or_else(|| nodes.of(role).first().map(|n| n.to_string()))
        {
            out.push(Fault::Kill {
                node,
                restart_after_ms: Some(duration(rng, &c)),
            });
        }
    }
}

/// Roll the node classes: pause, stall, partition, session expiry.
fn roll_nodes(r: &RandomFaults, nodes: &Registry, rng: &mut ChaCha8Rng, out: &mut Vec<Fault>) {
    let clients = nodes.count(Role::Client);
    if let Some(c) = fire(&r.pause, rng) {
        let role = if rng.random_bool(0.5) {
            Role::Client
        } else {
            Role::DataServer
        };
        if let Some(node) = pick(nodes, role, rng) {
            out.push(Fault::Pause {
                node,
                duration_ms: duration(rng, &c),
            });
        }
    }
    if let Some(c) = fire(&r.stall, rng)
        && clients > 0
    {
        let client = rng.random_range(0..clients);
        out.push(Fault::Stall {
            client: Some(client),
            node: None,
            duration_ms: duration(rng, &c),
        });
    }
    if let Some(c) = fire(&r.partition, rng) {
        let names = nodes.names();
        let victim = names[rng.random_range(0..names.len())].clone();
        let rest: Vec<String> = names.iter().filter(|n| **n != victim).cloned().collect();
        let one_way = rng.random_bool(0.3);
        out.push(Fault::Partition {
            a: vec![victim],
            b: rest,
            one_way,
            duration_ms: duration(rng, &c),
        });
    }
}

/// Roll the classes aimed at a role (`pause:<role>`, `stall:<role>`), after
/// every other class (a run without them draws as it always did). Each
/// fires on a node of its role that is up now, at random (the node that
/// holds the role, for a role that moves), and a stall only on a node
/// that honours stalls: a fault rolled is a fault that takes effect.
fn roll_roles(r: &RandomFaults, f: &Faults, rng: &mut ChaCha8Rng) -> Vec<Fault> {
    let mut out = Vec::new();
    let targets = |role: Role, stall: bool| -> Vec<String> {
        let candidates: Vec<String> = match f.tenant.holder(role) {
            Some(held) => vec![held.to_string()],
            None => f.ids.of(role).into_iter().cloned().collect(),
        };
        candidates
            .into_iter()
            .filter(|n| f.ids.get(n).is_some_and(|k| !stall || k.name.kind().stalls))
            .filter(|n| !f.is_down(n))
            .collect()
    };
    for (stall, classes) in [(false, &r.pause_of), (true, &r.stall_of)] {
        for (role, class) in classes {
            let Some(c) = fire(&Some(class.clone()), rng) else {
                continue;
            };
            let nodes = targets(*role, stall);
            if nodes.is_empty() {
                continue;
            }
            let node = nodes[rng.random_range(0..nodes.len())].clone();
            let duration_ms = duration(rng, &c);
            out.push(match stall {
                false => Fault::Pause { node, duration_ms },
                true => Fault::Stall {
                    client: None,
                    node: Some(node),
                    duration_ms,
                },
            });
        }
    }
    out
}

/// Roll the message classes: loss, latency, duplication.
fn roll_messages(r: &RandomFaults, rng: &mut ChaCha8Rng, out: &mut Vec<Fault>) {
    if let Some(c) = fire(&r.packet_loss, rng) {
        out.push(Fault::PacketLoss {
            rate: c.rate,
            duration_ms: duration(rng, &c),
        });
    }
    if let Some(c) = fire(&r.latency, rng) {
        let max_ms = 2 + (c.rate * 500.0) as u64;
        out.push(Fault::Latency {
            min_ms: 1,
            max_ms,
            duration_ms: duration(rng, &c),
        });
    }
    if let Some(c) = fire(&r.duplicate, rng) {
        let d = duration(rng, &c);
        out.push(Fault::Duplicate {
            rate: c.rate,
            max_delay_ms: c.max_duration_ms.max(1),
            duration_ms: d,
        });
    }
}

/// Roll every random fault class once, in a fixed order (the order is
/// part of the seed's meaning: changing it changes every run).
fn roll(
    r: &RandomFaults,
    nodes: &Registry,
    tenant: &dyn Tenant,
    rng: &mut ChaCha8Rng,
) -> Vec<Fault> {
    let mut out = Vec::new();
    roll_kills(r, nodes, tenant, rng, &mut out);
    roll_nodes(r, nodes, rng, &mut out);
    roll_messages(r, rng, &mut out);
    let clients = nodes.count(Role::Client);
    if fire(&r.session_expiry, rng).is_some() && clients > 0 {
        out.push(Fault::ExpireSession {
            client: rng.random_range(0..clients),
        });
    }
    out
}

impl FaultControl {
    /// A control over the faults of one run.
    pub(crate) fn new(faults: SharedFaults) -> Self {
        FaultControl::over(Arc::new(Controls(faults)))
    }
}

/// What a [`FaultControl`] does, on the run's shared fault state.
struct Controls(SharedFaults);

impl Injector for Controls {
    fn inject(&self, fault: &Fault) {
        let mut faults = lock_faults(&self.0);
        if faults.world.stopping() && !fault.heals() {
            let fields = json!({
                "fault": serde_json::to_value(fault).unwrap_or_default(),
                "why": "the workload phase is over",
            });
            faults.world.world_event(EventKind::FaultRefused, fields);
            return;
        }
        faults.apply(fault);
    }

    fn node_up(&self, node: &str) -> bool {
        !lock_faults(&self.0).is_down(node)
    }

    fn counter(&self, name: &str) -> u64 {
        let faults = lock_faults(&self.0);
        let n = faults.world().recorder().counters().get(name).copied();
        n.unwrap_or(0)
    }

    fn heal_partitions(&self) {
        lock_faults(&self.0).heal_partitions();
    }
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
