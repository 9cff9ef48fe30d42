//! The network's part of the world: which links partitions cut, and the
//! late and duplicated copies the network carries on its own `wire` node.

use crate::world::guard::lock;
use crate::world::ids::Counter;
use crate::world::port::Port;
use madsim::net::rpc::Request;
use madsim::task::NodeId;
use madsim::time::{Duration, sleep};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The port every node listens on.
pub const PORT: u16 = 1000;

/// The address from which the network's own node delivers duplicated
/// copies of requests.
pub(crate) fn wire_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)), PORT)
}

/// The address from which the network's own node delivers requests it held
/// back (late originals): a receiver tells the two kinds apart by the port.
pub(crate) fn wire_late_addr() -> SocketAddr {
    SocketAddr::new(wire_addr().ip(), PORT + 1)
}

/// The network's own node and its two endpoints (see [`wire_addr`] and
/// [`wire_late_addr`]).
#[derive(Clone)]
pub(crate) struct Wire {
    pub node: madsim::runtime::NodeHandle,
    pub copies: Port,
    pub late: Port,
}

/// Message faults in force: what the network does to a request as it is sent.
#[derive(Debug, Clone, Copy, Default)]
pub struct NetFaults {
    /// Probability that the network interferes with a request: it either
    /// delivers a second copy later (the original goes now) or holds the
    /// request itself back and delivers it late (half and half).
    pub duplicate_rate: f64,
    /// Largest delay of a copy or of a held-back request.
    pub duplicate_max_delay_ms: u64,
}

/// What the network does with a request the caller is about to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carried {
    /// The caller sends it now (the network may also have scheduled a copy).
    Now,
    /// The network holds it and delivers it late, whatever happens to the
    /// sender; the caller will not hear back in time (its call times out).
    Late,
}

/// Which of the network's deliveries a receiver saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// A message sent by its node, on time.
    Direct,
    /// A duplicated copy of a request delivered by the network.
    Copy,
    /// A request the network held back, delivered late.
    Late,
}

impl Delivery {
    /// How a message from `from` reached its receiver.
    pub(crate) fn of(from: SocketAddr) -> Delivery {
        if from == wire_addr() {
            Delivery::Copy
        } else if from == wire_late_addr() {
            Delivery::Late
        } else {
            Delivery::Direct
        }
    }
}

impl Delivery {
    /// The world's counter of messages delivered this way (none for a
    /// direct message).
    pub(crate) fn counter(self) -> Option<Counter> {
        match self {
            Delivery::Direct => None,
            Delivery::Copy => Some(Counter::NetDuplicated),
            Delivery::Late => Some(Counter::NetLate),
        }
    }
}

/// The network's state in one world: the message faults in force, the
/// links partitions cut, which node has which address, and the late and
/// duplicated copies still in flight. It belongs to the world and survives
/// every crash.
#[derive(Debug, Default)]
pub(crate) struct Network {
    /// Message faults applied by senders (duplication).
    faults: Mutex<NetFaults>,
    /// Links cut by partitions, (from, to) by node, with how many partitions
    /// cut each (partitions may overlap).
    cut: Mutex<BTreeMap<(NodeId, NodeId), u32>>,
    /// Late and duplicated copies the network still carries: the healed
    /// phase is over only when none is left.
    in_flight: AtomicU64,
    /// Which node has which address.
    node_ips: Mutex<BTreeMap<IpAddr, NodeId>>,
}

impl Network {
    /// Whether a partition cuts the link from node `from` to the node at `to`.
    pub(crate) fn link_cut(&self, from: NodeId, to: SocketAddr) -> bool {
        let cut = lock(&self.cut);
        if cut.is_empty() {
            return false;
        }
        let Some(&to) = lock(&self.node_ips).get(&to.ip()) else {
            return false;
        };
        cut.contains_key(&(from, to))
    }

    /// The links cut now, with how many partitions cut each.
    pub(crate) fn cut(&self) -> MutexGuard<'_, BTreeMap<(NodeId, NodeId), u32>> {
        lock(&self.cut)
    }

    /// The message faults in force.
    pub(crate) fn faults(&self) -> NetFaults {
        *lock(&self.faults)
    }

    /// Put message faults in force.
    pub(crate) fn set_faults(&self, net: NetFaults) {
        *lock(&self.faults) = net;
    }

    /// Remember which node has address `ip` (for partitions).
    pub(crate) fn register_ip(&self, ip: IpAddr, id: NodeId) {
        lock(&self.node_ips).insert(ip, id);
    }

    /// Late and duplicated copies still in flight.
    pub(crate) fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// The network took a late or duplicated copy to carry.
    pub(crate) fn copy_sent(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    /// The network is done with a copy (delivered or lost). It never lands
    /// more copies than it took: that would hide copies still in flight
    /// from the healed phase, and the run stops.
    pub(crate) fn copy_landed(&self) {
        let before = self.in_flight.fetch_sub(1, Ordering::Relaxed);
        if before == 0 {
            crate::invariant::violated("the network landed a copy it was not carrying");
        }
    }

    /// What the network does with `req`, which the caller is sending to
    /// `dst` now, over `wire` (none yet: nothing extra is carried); a
    /// carried message waits at most `rpc_timeout_ms` for its answer. See
    /// [`crate::world::World::carry`].
    pub(crate) fn carry<R: Request + Clone>(
        self: &Arc<Self>,
        wire: Option<&Wire>,
        dst: SocketAddr,
        req: &R,
        rpc_timeout_ms: u64,
    ) -> Carried {
        let net = self.faults();
        if net.duplicate_rate <= 0.0 || madsim::rand::random::<f64>() >= net.duplicate_rate {
            return Carried::Now;
        }
        let late = madsim::rand::random::<bool>();
        let delay = madsim::rand::random::<u64>() % (net.duplicate_max_delay_ms + 1);
        let Some(wire) = wire.cloned() else {
            return Carried::Now;
        };
        if self.link_cut(madsim::plugin::node(), dst) {
            return Carried::Now;
        }
        let (ep, carried, delay) = if late {
            // Held back past the sender's time-out: it cannot answer in time.
            let delay = delay.max(rpc_timeout_ms + 1);
            (wire.late, Carried::Late, delay)
        } else {
            (wire.copies, Carried::Now, delay)
        };
        let copy = req.clone();
        let net = self.clone();
        net.copy_sent();
        wire.node.spawn(async move {
            sleep(Duration::from_millis(delay)).await;
            let timeout = Duration::from_millis(rpc_timeout_ms);
            let _ = crate::world::deadline::call(&ep, dst, copy, timeout).await;
            net.copy_landed();
        });
        carried
    }
}
