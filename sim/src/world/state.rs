//! The world's shared state: [`World`], which one run's nodes share and
//! which outlives every crash, and the [`Control`] requests nodes send it.

use super::{
    Carried, ClockSkew, NetFaults, NodeName, WorldConfig, explore, intercept, net, port, watchdog,
};
use crate::world::guard::lock;
use crate::world::ids::EventKind;
use crate::world::net::{Delivery, Network};
use crate::world::node::Incarnation;
use crate::world::recorder::Recorder;
use futures::channel::mpsc::UnboundedSender;
use madsim::net::rpc::Request;
use madsim::task::NodeId;
use madsim::time::Instant;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// Requests to the world from inside nodes (a node reached a named crash
/// or pause point of its system).
#[derive(Debug, Clone)]
pub enum Control {
    /// Kill a node now; restart it after `restart_after_ms` (else at the
    /// healed phase).
    Kill {
        /// The node.
        node: String,
        /// Restart delay.
        restart_after_ms: Option<u64>,
    },
    /// Freeze a node now, for `duration_ms` (until something resumes it,
    /// if `None`).
    Pause {
        /// The node.
        node: String,
        /// How long.
        duration_ms: Option<u64>,
    },
}

/// The state one run's world shares with its nodes. Everything here
/// belongs to the world, not to any node: it survives every crash.
pub struct World {
    pub(super) cfg: WorldConfig,
    pub(super) recorder: Mutex<Recorder>,
    pub(super) start: Instant,
    pub(super) stopping: AtomicBool,
    pub(super) control: UnboundedSender<Control>,
    /// The workload's driver finished: the workload phase may end early.
    pub(super) workload_done: AtomicBool,
    /// Nodes whose transaction threads are stalled, until when.
    pub(super) stalled: Mutex<BTreeMap<NodeName, Instant>>,
    /// The network: message faults, partitions, addresses, copies in flight.
    pub(super) net: Arc<Network>,
    /// The network's own node, which carries late and duplicated copies of
    /// messages: once sent, a copy is the network's, and its sender's death
    /// or pause neither recalls nor freezes it. Set once the node exists.
    pub(super) wire: OnceLock<net::Wire>,
    /// Targeted message faults in force (see [`intercept`](super::intercept)).
    pub(super) intercepts: Mutex<intercept::Intercepts>,
    /// Whether any targeted message fault is in force.
    pub(super) intercepting: AtomicBool,
    /// Ends the run if it stops making progress.
    pub(super) watchdog: watchdog::Watchdog,
    /// Each node's latest incarnation and whether it runs now.
    pub(super) running: Mutex<BTreeMap<String, (u32, bool)>>,
    /// The names of the nodes whose incarnations the world tracks, by id.
    pub(super) node_names: Mutex<BTreeMap<NodeId, String>>,
    /// The latest simulated time [`World::now_ns`] returned: time never
    /// goes backwards.
    pub(super) latest_ns: AtomicU64,
    /// The transport's bound ports, by address (see [`port`](super::port)).
    pub(super) ports: Mutex<BTreeMap<std::net::SocketAddr, std::sync::Weak<port::PortInner>>>,
    /// Packet loss and latency in force on the transport.
    pub(super) link: Mutex<port::LinkFaults>,
    /// Messages the transport carried.
    pub(super) messages: AtomicU64,
    /// Orders messages that arrive at the same instant.
    pub(super) message_seq: AtomicU64,
    /// The exploration's chooser, if a schedule steers this run (see
    /// [`explore`](super::explore)); `None` leaves every choice to the seed.
    pub(super) chooser: Option<Mutex<explore::Chooser>>,
    /// Where the system's state hash comes from: the installed system's
    /// `state_hash`, held weakly (see [`explore`](super::explore)).
    pub(super) state_source: OnceLock<explore::StateSource>,
}

impl World {
    pub(crate) fn new(cfg: WorldConfig, control: UnboundedSender<Control>) -> Self {
        let cfg_explore = cfg.explore.clone();
        World {
            cfg,
            recorder: Mutex::default(),
            start: Instant::now(),
            stopping: AtomicBool::new(false),
            control,
            workload_done: AtomicBool::new(false),
            stalled: Mutex::default(),
            net: Arc::default(),
            wire: OnceLock::new(),
            intercepts: Mutex::default(),
            intercepting: AtomicBool::new(false),
            watchdog: watchdog::Watchdog::from_env(),
            running: Mutex::default(),
            node_names: Mutex::default(),
            latest_ns: AtomicU64::new(0),
            ports: Mutex::default(),
            link: Mutex::default(),
            messages: AtomicU64::new(0),
            message_seq: AtomicU64::new(0),
            chooser: cfg_explore.map(|s| Mutex::new(explore::Chooser::new(s))),
            state_source: OnceLock::new(),
        }
    }

    /// The world's settings.
    pub fn config(&self) -> &WorldConfig {
        &self.cfg
    }

    /// Simulated time since the run started, in ns. Time never goes
    /// backwards: a time earlier than one already returned is a bug of
    /// the world, and the run stops.
    pub fn now_ns(&self) -> u64 {
        let now = (Instant::now() - self.start).as_nanos() as u64;
        let latest = self.latest_ns.fetch_max(now, Ordering::Relaxed);
        if now < latest {
            crate::invariant::violated(&format!(
                "time went backwards: {} after {}",
                percsim_checker::units::Ms(now),
                percsim_checker::units::Ms(latest)
            ));
        }
        now
    }

    /// When the run started.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// The history recorder.
    pub fn recorder(&self) -> MutexGuard<'_, Recorder> {
        lock(&self.recorder)
    }

    /// Whether the workload phase is over.
    pub fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    pub(crate) fn set_stopping(&self) {
        self.stopping.store(true, Ordering::Relaxed);
    }

    pub(crate) fn workload_done(&self) -> bool {
        self.workload_done.load(Ordering::Relaxed)
    }

    pub(crate) fn set_workload_done(&self) {
        self.workload_done.store(true, Ordering::Relaxed);
    }

    /// Count one RPC towards the watchdog's budgets (see [`watchdog`]); a
    /// run past them panics with [`watchdog::STUCK_MARKER`].
    pub fn watchdog_tick(&self) {
        self.watchdog.tick();
    }

    /// Ask the world to kill or pause a node (from a crash or pause point).
    pub fn request(&self, c: Control) {
        let _ = self.control.unbounded_send(c);
    }

    /// Until when `node`'s transaction threads are stalled.
    pub fn stalled_until(&self, node: &NodeName) -> Option<Instant> {
        lock(&self.stalled).get(node).copied()
    }

    pub(crate) fn stalled(&self) -> MutexGuard<'_, BTreeMap<NodeName, Instant>> {
        lock(&self.stalled)
    }

    /// `node`'s wall clock: the skew the first entry of the settings'
    /// `clocks` that is `node`'s gives it (a perfect clock if none does).
    pub fn clock(&self, node: &NodeName) -> ClockSkew {
        let mut entries = self.cfg.clocks.iter().enumerate();
        let entry = entries.find(|(i, c)| c.is_for(*i, node));
        entry.map(|(_, c)| c.skew()).unwrap_or_default()
    }

    /// The wall time (ms) `node`'s clock shows now.
    pub fn wall_ms(&self, node: &NodeName) -> u64 {
        self.clock(node).wall_ms(self.now_ns())
    }

    /// Record a fault or cluster event at the current time.
    pub fn event(&self, kind: &str, fields: serde_json::Value) {
        let now = self.now_ns();
        self.recorder().event(now, kind, fields);
    }

    /// Record one of the world's own events.
    pub(crate) fn world_event(&self, kind: EventKind, fields: serde_json::Value) {
        self.event(kind.name(), fields);
    }

    /// A node starts an incarnation. A node never runs two incarnations at
    /// once: starting one while another runs is a bug of the world, and
    /// the run stops (a crash verdict).
    pub(crate) fn node_started(&self, name: &str) {
        let mut running = lock(&self.running);
        let (n, live) = running.entry(name.to_string()).or_insert((0, false));
        if *live {
            let n = *n;
            drop(running);
            crate::invariant::violated(&format!(
                "node {name} starts incarnation {} while incarnation {n} still runs",
                n + 1
            ));
        }
        *n += 1;
        *live = true;
    }

    /// A node's incarnation ended (it was killed).
    pub(crate) fn node_stopped(&self, name: &str) {
        if let Some((_, live)) = lock(&self.running).get_mut(name) {
            *live = false;
        }
    }

    /// Track the incarnations of node `id`, named `name` (see
    /// [`World::node_started`]).
    pub(crate) fn register_node(&self, name: &str, id: NodeId) {
        lock(&self.node_names).insert(id, name.to_string());
    }

    /// The latest incarnation of node `id`, if the world tracks the node
    /// (not the network's own node, nor a test's).
    pub(crate) fn incarnation(&self, id: NodeId) -> Option<Incarnation> {
        let name = lock(&self.node_names).get(&id)?.clone();
        let number = lock(&self.running).get(&name).map_or(0, |(n, _)| *n);
        Some(Incarnation { node: name, number })
    }

    /// A message reached incarnation `to` of its destination: that
    /// incarnation must run now. A message taken in by a dead incarnation,
    /// or by an older one than runs now, is a bug of the world (a message
    /// is lost with its receiver's memory), and the run stops.
    pub(crate) fn check_receiver(&self, to: &Incarnation) {
        let running = lock(&self.running);
        let (now, live) = running.get(&to.node).copied().unwrap_or((0, false));
        drop(running);
        let Incarnation { node, number } = to;
        if now != *number {
            crate::invariant::violated(&format!(
                "a message reached incarnation {number} of node {node} while incarnation {now} runs"
            ));
        }
        if !live {
            crate::invariant::violated(&format!(
                "a message reached incarnation {number} of node {node}, which is dead"
            ));
        }
    }
}

/// The network's part of the world (see `net`).
impl World {
    /// Whether a partition cuts the link from node `from` to the node at `to`.
    pub fn link_cut(&self, from: NodeId, to: SocketAddr) -> bool {
        self.net.link_cut(from, to)
    }

    /// The links cut now, with how many partitions cut each.
    pub(crate) fn cut(&self) -> MutexGuard<'_, BTreeMap<(NodeId, NodeId), u32>> {
        self.net.cut()
    }

    /// Put message faults in force.
    pub(crate) fn set_net(&self, net: NetFaults) {
        self.net.set_faults(net);
    }

    /// Remember which node has address `ip` (for partitions).
    pub(crate) fn register_ip(&self, ip: IpAddr, id: NodeId) {
        self.net.register_ip(ip, id);
    }

    /// Late and duplicated copies still in flight.
    pub fn in_flight(&self) -> u64 {
        self.net.in_flight()
    }

    /// The network took a late or duplicated copy to carry.
    pub(crate) fn copy_sent(&self) {
        self.net.copy_sent();
    }

    /// The network is done with a copy (delivered or lost); see
    /// [`Network::copy_landed`].
    pub(crate) fn copy_landed(&self) {
        self.net.copy_landed();
    }

    pub(crate) fn set_wire(&self, wire: net::Wire) {
        let _ = self.wire.set(wire);
    }

    /// Count a message delivered by the network's own node (a duplicated
    /// copy or a held-back request) when it reaches its receiver.
    pub(crate) fn delivered(&self, how: Delivery) {
        if let Some(counter) = how.counter() {
            self.recorder().bump(counter.name());
        }
    }

    /// What the network does with `req`, which the caller is sending to
    /// `dst` now. Under a duplication fault it either schedules a copy for
    /// later (the caller still sends the original: [`Carried::Now`]) or
    /// holds the request itself and delivers it late ([`Carried::Late`]:
    /// the caller must not send it). Either way the delayed message is the
    /// network's from this moment: it travels on the wire node, so killing
    /// or pausing the sender neither recalls nor freezes it, and it can
    /// overtake later messages between the same nodes. A link cut by a
    /// partition carries nothing extra (the original is dropped anyway).
    /// Counted when delivered (see `World::delivered`).
    pub fn carry<R: Request + Clone>(&self, dst: SocketAddr, req: &R) -> Carried {
        let timeout_ms = self.cfg.rpc_timeout_ms;
        self.net.carry(self.wire.get(), dst, req, timeout_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::ClockEntry;

    /// Run `f` on a fresh world inside a simulation.
    fn in_world(f: impl FnOnce(&World) + Send + 'static) {
        let rt = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
        rt.block_on(async move {
            let (tx, _rx) = futures::channel::mpsc::unbounded();
            f(&World::new(WorldConfig::default(), tx));
        });
    }

    #[test]
    fn a_node_restarts_after_it_stopped() {
        in_world(|w| {
            w.node_started("client-0");
            w.node_stopped("client-0");
            w.node_started("client-0");
            assert_eq!(lock(&w.running).get("client-0"), Some(&(2, true)));
        });
    }

    #[test]
    fn a_node_reads_the_clock_its_entry_gives_it() {
        use crate::world::{ids::Role, node::NodeKind};
        let kind = |role, label| NodeKind {
            role,
            label,
            numbered: true,
            reads_clock: true,
            stalls: true,
        };
        let (client, tablet) = (
            kind(Role::Client, "client"),
            kind(Role::DataServer, "tablet"),
        );
        let entry = |node: Option<&str>, offset_ms| ClockEntry {
            node: node.map(str::to_string),
            offset_ms,
            drift_ppm: 0,
        };
        let cfg = WorldConfig {
            clocks: vec![
                entry(None, 5),
                entry(Some("tablet-1"), -7),
                entry(Some("client-2"), 9),
            ],
            ..WorldConfig::default()
        };
        let rt = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
        let offsets = rt.block_on(async move {
            let (tx, _rx) = futures::channel::mpsc::unbounded();
            let w = World::new(cfg, tx);
            let nodes = [
                client.nth(0),
                client.nth(1),
                client.nth(2),
                tablet.nth(1),
                tablet.nth(0),
            ];
            let base = w.wall_ms(&client.nth(1));
            nodes.map(|n| w.wall_ms(&n) as i64 - base as i64)
        });
        assert_eq!(offsets, [5, 0, 9, -7, 0]);
    }

    #[test]
    fn time_stands_still_within_a_step() {
        in_world(|w| assert_eq!(w.now_ns(), w.now_ns()));
    }

    #[test]
    #[should_panic(expected = "invariant violated: time went backwards: ")]
    fn time_going_backwards_trips_the_assertion() {
        in_world(|w| {
            let now = w.now_ns();
            w.latest_ns.store(now + 1, Ordering::Relaxed);
            w.now_ns();
        });
    }

    /// A tracked node "server-0" in its first incarnation, in world `w`.
    fn tracked_server(w: &World) -> Incarnation {
        let id = madsim::runtime::Handle::current()
            .create_node()
            .name("server-0")
            .build()
            .id();
        w.register_node("server-0", id);
        w.node_started("server-0");
        w.incarnation(id).expect("the world tracks server-0")
    }

    #[test]
    fn the_running_incarnation_takes_messages() {
        in_world(|w| {
            let first = tracked_server(w);
            assert_eq!(first.number, 1);
            w.check_receiver(&first);
        });
    }

    #[test]
    #[should_panic(
        expected = "invariant violated: a message reached incarnation 1 of node server-0, which is dead"
    )]
    fn a_message_to_a_dead_incarnation_trips_the_assertion() {
        in_world(|w| {
            let first = tracked_server(w);
            w.node_stopped("server-0");
            w.check_receiver(&first);
        });
    }

    #[test]
    #[should_panic(
        expected = "invariant violated: a message reached incarnation 1 of node server-0 while incarnation 2 runs"
    )]
    fn a_message_to_an_older_incarnation_trips_the_assertion() {
        in_world(|w| {
            let first = tracked_server(w);
            w.node_stopped("server-0");
            w.node_started("server-0");
            w.check_receiver(&first);
        });
    }

    #[test]
    #[should_panic(
        expected = "invariant violated: node client-0 starts incarnation 2 while incarnation 1 still runs"
    )]
    fn two_incarnations_at_once_trip_the_assertion() {
        in_world(|w| {
            w.node_started("client-0");
            w.node_started("client-0");
        });
    }
}
