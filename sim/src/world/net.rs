//! The network's part of the world: which links partitions cut, and the
//! late and duplicated copies the network carries on its own `wire` node.

use crate::world::ids::Counter;
use crate::world::{World, lock};
use madsim::net::rpc::Request;
use madsim::task::NodeId;
use madsim::time::{Duration, sleep};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// The port every node listens on.
pub const PORT: u16 = 1000;

/// The address of the network's own node.
pub(crate) fn wire_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)), PORT)
}

/// Message faults applied by senders.
#[derive(Debug, Clone, Copy, Default)]
pub struct NetFaults {
    /// Probability of sending a request a second time.
    pub duplicate_rate: f64,
    /// Largest delay of the copy.
    pub duplicate_max_delay_ms: u64,
}

impl World {
    /// Whether a partition cuts the link from node `from` to the node at `to`.
    pub fn link_cut(&self, from: NodeId, to: SocketAddr) -> bool {
        let cut = lock(&self.cut);
        if cut.is_empty() {
            return false;
        }
        let Some(&to) = lock(&self.node_ips).get(&to.ip()) else {
            return false;
        };
        cut.contains_key(&(from, to))
    }

    pub(crate) fn cut(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<(NodeId, NodeId), u32>> {
        lock(&self.cut)
    }

    pub(crate) fn set_net(&self, net: NetFaults) {
        *lock(&self.net) = net;
    }

    /// Remember which node has address `ip` (for partitions).
    pub(crate) fn register_ip(&self, ip: IpAddr, id: NodeId) {
        lock(&self.node_ips).insert(ip, id);
    }

    /// Late and duplicated copies still in flight.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    pub(crate) fn set_wire(&self, node: madsim::runtime::NodeHandle, ep: madsim::net::Endpoint) {
        let _ = self.wire.set((node, ep));
    }

    /// Under a duplication fault, the network delivers a copy of `req` to
    /// `dst` later. The copy is the network's from the moment `req` is sent:
    /// it travels on the wire node, so killing or pausing the sender does
    /// not recall or freeze it. A link cut by a partition makes no copy (the
    /// original is dropped too). Counted when the copy is delivered.
    pub fn maybe_duplicate<R: Request + Clone>(self: &Arc<Self>, dst: SocketAddr, req: &R) {
        let net = *lock(&self.net);
        if net.duplicate_rate <= 0.0 || madsim::rand::random::<f64>() >= net.duplicate_rate {
            return;
        }
        let delay = madsim::rand::random::<u64>() % (net.duplicate_max_delay_ms + 1);
        let Some((wire, ep)) = self.wire.get().cloned() else {
            return;
        };
        if self.link_cut(madsim::plugin::node(), dst) {
            return;
        }
        let copy = req.clone();
        let world = self.clone();
        world.in_flight.fetch_add(1, Ordering::Relaxed);
        wire.spawn(async move {
            sleep(Duration::from_millis(delay)).await;
            world.recorder().bump(Counter::NetDuplicated.name());
            let timeout = Duration::from_millis(world.cfg.rpc_timeout_ms);
            let _ = ep.call_timeout(dst, copy, timeout).await;
            world.in_flight.fetch_sub(1, Ordering::Relaxed);
        });
    }
}
