//! The world's side of its message transport (see [`crate::world::port`]):
//! binding a node's port, and carrying requests and replies over the links
//! between nodes (partitions, packet loss, latency).

use crate::world::World;
use crate::world::guard::lock;
use crate::world::net::Delivery;
use crate::world::node::Incarnation;
use crate::world::port::{
    Body, Carried, Envelope, HANDLING, Link, LinkFaults, Port, PortInner, ReplyTo, Transport,
};
use madsim::task::NodeId;
use madsim::time::{Duration, Instant};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

impl Port {
    /// Bind `addr` for the current node. A later binding of the same
    /// address (a restarted node) replaces this one.
    pub fn bind(world: &Arc<World>, addr: SocketAddr) -> Port {
        let node = madsim::plugin::node();
        let inner = Arc::new(PortInner::new(addr, node, world.incarnation(node)));
        lock(&world.ports).insert(addr, Arc::downgrade(&inner));
        let transport: Weak<dyn Transport> = Arc::downgrade(world) as Weak<World>;
        Port::from_parts(inner, transport)
    }
}

impl Transport for World {
    fn listening(&self, dst: SocketAddr) -> bool {
        lock(&self.ports)
            .get(&dst)
            .is_some_and(|p| p.strong_count() > 0)
    }

    fn send_request(&self, from: NodeId, dst: SocketAddr, kind: u64, e: Envelope, now: Instant) {
        let Some(port) = lock(&self.ports).get(&dst).and_then(Weak::upgrade) else {
            return;
        };
        let link = Link {
            from,
            to: port.node(),
        };
        let carried = Carried { kind, reply: false };
        let Some(arrival) = self.route(link, carried, now) else {
            return;
        };
        let seq = self.message_seq.fetch_add(1, Ordering::Relaxed);
        port.deliver(kind, (arrival, seq), e);
    }

    fn send_reply(&self, from: NodeId, to: ReplyTo, body: Body, now: Instant) {
        let link = Link {
            from,
            to: to.node(),
        };
        let carried = Carried {
            kind: to.kind(),
            reply: true,
        };
        let Some(arrival) = self.route(link, carried, now) else {
            return;
        };
        to.answer(arrival, body);
    }

    fn check_receiver(&self, me: &Incarnation) {
        World::check_receiver(self, me);
    }

    fn count_delivery(&self, from: SocketAddr) {
        self.delivered(Delivery::of(from));
    }
}

impl World {
    /// When a message carrying `carried` sent on `link` at `now` (the
    /// current instant) arrives, or `None` if the network loses it (a
    /// partition, packet loss).
    fn route(&self, path: Link, carried: Carried, now: Instant) -> Option<Instant> {
        {
            let cut = self.net.cut();
            if !cut.is_empty() && cut.contains_key(&(path.from, path.to)) {
                return None;
            }
        }
        let link = *lock(&self.link);
        if link.loss_rate > 0.0 && madsim::rand::random::<f64>() < link.loss_rate {
            return None;
        }
        let min_ns = link.min_latency_ms * 1_000_000;
        let span_ns = link
            .max_latency_ms
            .saturating_sub(link.min_latency_ms)
            .max(1)
            * 1_000_000;
        let latency_ns = min_ns + madsim::rand::random::<u64>() % span_ns;
        let arrival = now + HANDLING + Duration::from_nanos(latency_ns);
        let arrival = match &self.chooser {
            None => arrival,
            Some(c) => self.explore_message(c, (path, carried), now, arrival)?,
        };
        self.messages.fetch_add(1, Ordering::Relaxed);
        Some(arrival)
    }

    /// Messages the transport carried (lost ones not counted, as madsim).
    pub(crate) fn messages(&self) -> u64 {
        self.messages.load(Ordering::Relaxed)
    }

    /// Put the link faults in force.
    pub(crate) fn set_link(&self, link: LinkFaults) {
        *lock(&self.link) = link;
    }
}
