//! The world's own message transport: ports that nodes bind, requests
//! queued at their receivers by arrival time, replies put where their
//! callers wait.
//!
//! madsim's `Endpoint` did for every message: a 1 ms sleep on send and on
//! receive (each a random draw, a timer and a wake-up of the task), the
//! destination formatted into a `String` for its virtual-server lookup,
//! six SipHash lookups in its network tables, and a task per answered
//! request. A [`Port`] does what the simulation needs and no more: the
//! sender decides the message's fate at once (a partition or packet loss
//! loses it, else it arrives after the link's latency), the message goes
//! straight into its receiver's queue, and one timer wakes the receiver when
//! it arrives. Simulated time is kept as madsim counted it: a message
//! arrives 2 ms (madsim's send and receive sleeps) plus the link's latency
//! after it was sent.
//!
//! Faults behave as they did. A message belongs to the network once sent:
//! the sender's death does not recall it. It is bound, when sent, to the
//! receiving node's incarnation: if that dies, the message is lost with the
//! node's memory (its queue), as madsim's socket was. A paused receiver
//! takes its messages once it resumes. Partitions (the world's `cut`
//! links) and packet loss are judged when a message is sent, as madsim did.

use crate::world::guard::lock;
use crate::world::node::Incarnation;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use madsim::net::rpc::Request;
use madsim::task::NodeId;
use madsim::time::{Duration, Instant};
use std::any::Any;
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};

/// What a message spends on its way besides its link's latency: madsim's
/// endpoints slept 1 ms on every send and every receive.
pub(super) const HANDLING: Duration = Duration::from_millis(2);

/// A message's content.
pub(crate) type Body = Box<dyn Any + Send>;

/// The link faults in force for every message: packet loss and latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LinkFaults {
    /// Probability that a message is lost.
    pub loss_rate: f64,
    /// Fewest milliseconds of latency.
    pub min_latency_ms: u64,
    /// Latency stays below this many milliseconds.
    pub max_latency_ms: u64,
}

impl Default for LinkFaults {
    /// madsim's default network: no loss, 1-10 ms of latency.
    fn default() -> Self {
        LinkFaults {
            loss_rate: 0.0,
            min_latency_ms: 1,
            max_latency_ms: 10,
        }
    }
}

/// What a handler makes of a request: its reply at once, or a future
/// that makes it (one that waits for CPU time or at a crash or pause point).
pub(crate) enum Answer<T, F> {
    /// The reply, sent as the request is handled.
    Now(T),
    /// The reply once this future is done.
    Later(F),
}

/// A request on its way: where it came from, where its reply goes, what
/// it asks.
pub(crate) struct Envelope {
    from: SocketAddr,
    reply: ReplyTo,
    body: Body,
}

/// Where a reply goes: the caller's slot (gone once the caller stopped
/// waiting or died), the caller's node (for partitions) and the kind of
/// the request it answers (an explored reply's place).
pub(crate) struct ReplyTo {
    slot: Weak<Slot>,
    node: NodeId,
    kind: u64,
}

/// Where a caller waits for its reply.
#[derive(Default)]
struct Slot(Mutex<SlotState>);

#[derive(Default)]
struct SlotState {
    /// The reply and when it arrives.
    reply: Option<(Instant, Body)>,
    /// The waiting caller's task.
    waiter: Option<Waker>,
}

/// The requests of one kind that reached a port, in order of arrival, and
/// the task that serves them.
#[derive(Default)]
struct Queue {
    waiting: BTreeMap<Arrival, Envelope>,
    server: Option<Waker>,
}

/// When a request arrives, and the order of its sending (ties broken in
/// the order sent).
pub(super) type Arrival = (Instant, u64);

/// One direction between two nodes, for partitions.
#[derive(Debug, Clone, Copy)]
pub(super) struct Link {
    /// The sending node.
    pub from: NodeId,
    /// The receiving node.
    pub to: NodeId,
}

/// What a message on a link carries, as far as an exploration tells
/// messages apart: the kind of request it is or answers, and which.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Carried {
    /// The request's kind (its `Request::ID`).
    pub kind: u64,
    /// Whether it is the reply to such a request.
    pub reply: bool,
}

/// The world as its ports see it: where requests and replies go, and
/// whether a receiver is the incarnation of its node that runs. The world
/// implements it; a port holds it weakly (see [`Port`]).
pub(crate) trait Transport: Send + Sync {
    /// Send a request of kind `kind` from node `from` to the port bound at
    /// `dst` (lost if none is bound there now).
    fn send_request(&self, from: NodeId, dst: SocketAddr, kind: u64, e: Envelope, now: Instant);
    /// Send a reply from node `from` to the caller waiting at `to`.
    fn send_reply(&self, from: NodeId, to: ReplyTo, body: Body, now: Instant);
    /// Check that `me`, a receiver, is the incarnation of its node that runs.
    fn check_receiver(&self, me: &Incarnation);
    /// Count a request from `from` (a late or duplicated copy, if the
    /// network's own node sent it) reaching its receiver.
    fn count_delivery(&self, from: SocketAddr);
    /// Whether a running node has a port bound at `dst` now.
    fn listening(&self, dst: SocketAddr) -> bool;
}

/// A bound port's state: its address, its node (and the incarnation of it
/// that bound the port, if the world tracks the node), its request queues.
pub(crate) struct PortInner {
    addr: SocketAddr,
    node: NodeId,
    incarnation: Option<Incarnation>,
    queues: Mutex<BTreeMap<u64, Queue>>,
}

/// A node's address on the world's transport: it sends requests
/// ([`Port::call`]) and serves them ([`crate::world::serve`]). It belongs
/// to the node incarnation that bound it. It does not keep the world alive
/// (the world keeps the `wire` node's ports: a strong reference would be a
/// cycle, and every run's world would leak).
#[derive(Clone)]
pub struct Port {
    inner: Arc<PortInner>,
    world: Weak<dyn Transport>,
}

/// Wake `waker` at `at` (one timer in madsim's heap).
fn wake_at(at: Instant, waker: &Waker) {
    let mut sleep = pin!(madsim::time::sleep_until(at));
    let _ = sleep.as_mut().poll(&mut Context::from_waker(waker));
}

impl Port {
    /// The port of `inner` on `world`'s transport (see `Port::bind`).
    pub(super) fn from_parts(inner: Arc<PortInner>, world: Weak<dyn Transport>) -> Port {
        Port { inner, world }
    }

    /// This port's address.
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// The world this port belongs to (`None` once the run is over).
    pub(crate) fn world(&self) -> Option<Arc<dyn Transport>> {
        self.world.upgrade()
    }

    /// Send `req` to `dst` and wait for its reply, however long: callers
    /// bound the wait (see `crate::world::deadline`).
    pub async fn call<R: Request>(&self, dst: SocketAddr, req: R) -> std::io::Result<R::Response> {
        let slot = Arc::new(Slot::default());
        let reply = ReplyTo {
            slot: Arc::downgrade(&slot),
            node: self.inner.node,
            kind: R::ID,
        };
        let envelope = Envelope {
            from: self.inner.addr,
            reply,
            body: Box::new(req),
        };
        let Some(world) = self.world.upgrade() else {
            return Err(std::io::Error::other("the run is over"));
        };
        let now = Instant::now();
        world.send_request(self.inner.node, dst, R::ID, envelope, now);
        let body = std::future::poll_fn(|cx| slot.poll_reply(cx)).await;
        body.downcast::<R::Response>()
            .map(|b| *b)
            .map_err(|_| std::io::Error::other("a reply of another type"))
    }

    /// Wait until a port is bound at `dst` (at once if one is), checking
    /// every simulated millisecond: a connection retried until its peer
    /// listens, as a client of a lock service connects when it starts. A
    /// request sent to an address nobody has bound is lost and waits out
    /// its caller's time-out; a node whose first call goes to a service
    /// started at the same instant waits here first. Returns at once when
    /// the run is over.
    pub async fn wait_listening(&self, dst: SocketAddr) {
        while let Some(world) = self.world.upgrade() {
            if world.listening(dst) {
                return;
            }
            drop(world);
            madsim::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Send `req` to `dst` without waiting for its reply: the request is the
    /// network's from now on, and its reply, if one comes, is lost on
    /// arrival (a process that sent a request and died before reading the
    /// answer).
    pub(crate) fn send<R: Request>(&self, dst: SocketAddr, req: R) {
        let Some(world) = self.world.upgrade() else {
            return;
        };
        let envelope = Envelope {
            from: self.inner.addr,
            reply: ReplyTo {
                slot: Weak::new(),
                node: self.inner.node,
                kind: R::ID,
            },
            body: Box::new(req),
        };
        world.send_request(self.inner.node, dst, R::ID, envelope, Instant::now());
    }

    /// Serve requests of kind `R` with `handler` until this node dies: each
    /// request is handled when it arrives, and a reply that is not ready at
    /// once (the handler's future) runs in this task beside the next
    /// requests.
    pub(crate) async fn serve<R, F, Fut>(self, handler: F)
    where
        R: Request,
        F: Fn(R, SocketAddr) -> Answer<R::Response, Fut>,
        Fut: Future<Output = R::Response>,
    {
        let Some(world) = self.world.upgrade() else {
            return;
        };
        let (world, node) = (&*world, self.inner.node);
        let mut replies = FuturesUnordered::new();
        std::future::poll_fn(|cx| {
            // Simulated time stands still while a task runs.
            let now = Instant::now();
            loop {
                while let Some(e) = self.inner.take_arrived(R::ID, cx.waker(), now) {
                    if let Some(me) = &self.inner.incarnation {
                        world.check_receiver(me);
                    }
                    let Ok(req) = e.body.downcast::<R>() else {
                        continue;
                    };
                    match handler(*req, e.from) {
                        Answer::Now(rsp) => world.send_reply(node, e.reply, Box::new(rsp), now),
                        Answer::Later(reply) => replies.push(async move {
                            let rsp = reply.await;
                            world.send_reply(node, e.reply, Box::new(rsp), Instant::now());
                        }),
                    }
                }
                match replies.poll_next_unpin(cx) {
                    Poll::Ready(Some(())) => continue,
                    Poll::Ready(None) | Poll::Pending => return Poll::<()>::Pending,
                }
            }
        })
        .await
    }
}

impl PortInner {
    /// The state of a port bound at `addr` by `node` (its `incarnation`,
    /// if the world tracks the node), with no request queued.
    pub(super) fn new(addr: SocketAddr, node: NodeId, incarnation: Option<Incarnation>) -> Self {
        PortInner {
            addr,
            node,
            incarnation,
            queues: Mutex::default(),
        }
    }

    /// The node that bound the port.
    pub(super) fn node(&self) -> NodeId {
        self.node
    }

    /// Hash the requests of each kind waiting in the port's queues, as
    /// how long after `now` each arrives in ns (for an exploration's state
    /// hash), straight into `h`.
    pub(super) fn hash_queued(&self, now: Instant, h: &mut impl std::hash::Hasher) {
        use std::hash::Hash;
        let queues = lock(&self.queues);
        queues.len().hash(h);
        for (k, q) in queues.iter() {
            k.hash(h);
            q.waiting.len().hash(h);
            for (at, _) in q.waiting.keys() {
                at.saturating_duration_since(now).as_nanos().hash(h);
            }
        }
    }

    /// Queue a request of kind `kind` arriving as `key` says; wake its
    /// server then.
    pub(super) fn deliver(&self, kind: u64, key: Arrival, e: Envelope) {
        let mut queues = lock(&self.queues);
        let q = queues.entry(kind).or_default();
        let at = key.0;
        q.waiting.insert(key, e);
        if let Some(w) = &q.server {
            wake_at(at, w);
        }
    }

    /// The next request of kind `kind` that has arrived, if any; `waker`
    /// serves the queue from now on.
    fn take_arrived(&self, kind: u64, waker: &Waker, now: Instant) -> Option<Envelope> {
        let mut queues = lock(&self.queues);
        let q = queues.entry(kind).or_default();
        if !q.server.as_ref().is_some_and(|w| w.will_wake(waker)) {
            // A new server: wake it when each waiting request arrives.
            for &(arrival, _) in q.waiting.keys() {
                wake_at(arrival, waker);
            }
            q.server = Some(waker.clone());
        }
        let first = q.waiting.first_entry()?;
        if first.key().0 > now {
            return None;
        }
        Some(first.remove())
    }
}

impl Slot {
    /// The reply once it has arrived.
    fn poll_reply(&self, cx: &mut Context<'_>) -> Poll<Body> {
        let mut s = lock(&self.0);
        match &s.reply {
            Some((at, _)) if *at <= Instant::now() => {
                let (_, body) = s.reply.take().expect("a reply is here");
                return Poll::Ready(body);
            }
            Some((at, _)) if !s.waiter.as_ref().is_some_and(|w| w.will_wake(cx.waker())) => {
                // The caller moved to another task waker: wake that one.
                wake_at(*at, cx.waker());
            }
            _ => {}
        }
        s.waiter = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl ReplyTo {
    /// The caller's node.
    pub(super) fn node(&self) -> NodeId {
        self.node
    }

    /// The kind of the request this reply answers.
    pub(super) fn kind(&self) -> u64 {
        self.kind
    }

    /// Put `body` where the caller waits, arriving at `arrival` (lost if
    /// the caller no longer waits).
    pub(super) fn answer(self, arrival: Instant, body: Body) {
        let Some(slot) = self.slot.upgrade() else {
            return;
        };
        let mut s = lock(&slot.0);
        s.reply = Some((arrival, body));
        if let Some(w) = &s.waiter {
            wake_at(arrival, w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::World;
    use crate::world::config::WorldConfig;
    use crate::world::deadline;
    use crate::world::serve::serve;
    use madsim::runtime::{Handle, Runtime};
    use madsim::time::sleep;
    use serde::{Deserialize, Serialize};
    use std::net::{IpAddr, Ipv4Addr};
    use std::sync::atomic::Ordering;

    /// A request answered with its own number.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    struct Echo(u64);

    impl Request for Echo {
        type Response = u64;
        const ID: u64 = 0x6563_686f;
    }

    fn addr(last: u8) -> SocketAddr {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 7, 0, last)), 1)
    }

    /// A world with an echo server on node "server" and a client node;
    /// `f` runs on the client with its port, the world and the server's id.
    fn with_echo<T: Send + 'static, Fut>(
        f: impl FnOnce(Port, Arc<World>, NodeId) -> Fut + Send + 'static,
    ) -> T
    where
        Fut: Future<Output = T> + Send + 'static,
    {
        let rt = Runtime::with_seed_and_config(5, madsim::Config::default());
        rt.block_on(async move {
            let (tx, _rx) = futures::channel::mpsc::unbounded();
            let world = Arc::new(World::new(WorldConfig::default(), tx));
            let w = world.clone();
            let server = Handle::current()
                .create_node()
                .name("server")
                .ip(addr(1).ip())
                .init(move || {
                    let w = w.clone();
                    async move {
                        let port = Port::bind(&w, addr(1));
                        serve(&port, |Echo(n)| async move { n });
                        std::future::pending::<()>().await
                    }
                })
                .build();
            sleep(Duration::from_millis(1)).await;
            let client = Handle::current()
                .create_node()
                .name("client")
                .ip(addr(2).ip())
                .build();
            let (w, id) = (world.clone(), server.id());
            client
                .spawn(async move { f(Port::bind(&w, addr(2)), w, id).await })
                .await
                .expect("client task")
        })
    }

    const TIMEOUT: Duration = Duration::from_millis(500);

    #[test]
    fn a_call_takes_two_ms_and_two_latencies_each_way() {
        let (reply, took) = with_echo(|port, _, _| async move {
            let t = Instant::now();
            let reply = deadline::call(&port, addr(1), Echo(7), TIMEOUT).await;
            (reply.ok(), t.elapsed())
        });
        assert_eq!(reply, Some(7));
        // Each way: 2 ms of handling plus 1-10 ms of latency.
        assert!(
            took >= Duration::from_millis(6) && took < Duration::from_millis(24),
            "{took:?}"
        );
    }

    #[test]
    fn a_partition_or_total_loss_loses_the_call() {
        let lost = with_echo(|port, w, server| async move {
            let me = madsim::plugin::node();
            w.cut().insert((me, server), 1);
            let cut = deadline::call(&port, addr(1), Echo(1), TIMEOUT)
                .await
                .is_err();
            w.cut().clear();
            let healed = deadline::call(&port, addr(1), Echo(2), TIMEOUT)
                .await
                .is_ok();
            w.set_link(LinkFaults {
                loss_rate: 1.0,
                ..LinkFaults::default()
            });
            let lossy = deadline::call(&port, addr(1), Echo(3), TIMEOUT)
                .await
                .is_err();
            (cut, healed, lossy)
        });
        assert_eq!(lost, (true, true, true));
    }

    #[test]
    fn a_killed_server_loses_its_queue_and_its_restart_serves_again() {
        let got = with_echo(|port, _, server| async move {
            // The request is in the server's queue when the server dies.
            let call = deadline::call(&port, addr(1), Echo(1), TIMEOUT);
            let kill = async {
                sleep(Duration::from_millis(1)).await;
                Handle::current().kill(server);
            };
            let (first, ()) = futures::join!(call, kill);
            Handle::current().restart(server);
            sleep(Duration::from_millis(1)).await;
            let second = deadline::call(&port, addr(1), Echo(2), TIMEOUT).await;
            (first.ok(), second.ok())
        });
        assert_eq!(got, (None, Some(2)));
    }

    #[test]
    fn a_request_outlives_its_senders_death() {
        let served = with_echo(|_, w, _| async move {
            let seen = Arc::new(AtomicU64Counter::default());
            // A second server counts what reaches it.
            let s = seen.clone();
            let w2 = w.clone();
            Handle::current()
                .create_node()
                .name("counter")
                .ip(addr(3).ip())
                .init(move || {
                    let (w, s) = (w2.clone(), s.clone());
                    async move {
                        let port = Port::bind(&w, addr(3));
                        serve(&port, move |Echo(n)| {
                            s.0.fetch_add(1, Ordering::Relaxed);
                            async move { n }
                        });
                        std::future::pending::<()>().await
                    }
                })
                .build();
            sleep(Duration::from_millis(1)).await;
            let sender = Handle::current()
                .create_node()
                .name("sender")
                .ip(addr(4).ip())
                .build();
            let w3 = w.clone();
            sender.spawn(async move {
                let port = Port::bind(&w3, addr(4));
                let _ = port.call(addr(3), Echo(9)).await;
            });
            // The sender dies before its request can arrive (>= 3 ms).
            sleep(Duration::from_millis(1)).await;
            Handle::current().kill(sender.id());
            sleep(Duration::from_millis(50)).await;
            seen.0.load(Ordering::Relaxed)
        });
        assert_eq!(served, 1);
    }

    #[test]
    #[should_panic(expected = "invariant violated: a message reached incarnation 1 of node server")]
    fn a_request_served_by_a_dead_incarnation_trips_the_assertion() {
        let rt = Runtime::with_seed_and_config(5, madsim::Config::default());
        rt.block_on(async move {
            let (tx, _rx) = futures::channel::mpsc::unbounded();
            let world = Arc::new(World::new(WorldConfig::default(), tx));
            let w = world.clone();
            let server = Handle::current()
                .create_node()
                .name("server")
                .ip(addr(1).ip())
                .init(move || {
                    w.node_started("server");
                    let w = w.clone();
                    async move {
                        let port = Port::bind(&w, addr(1));
                        serve(&port, |Echo(n)| async move { n });
                        std::future::pending::<()>().await
                    }
                })
                .build();
            world.register_node("server", server.id());
            sleep(Duration::from_millis(1)).await;
            let client = Handle::current()
                .create_node()
                .name("client")
                .ip(addr(2).ip())
                .build();
            let w = world.clone();
            client
                .spawn(async move {
                    let port = Port::bind(&w, addr(2));
                    let served = deadline::call(&port, addr(1), Echo(1), TIMEOUT).await;
                    assert_eq!(served.ok(), Some(1), "the running incarnation serves");
                    // The world counts a new incarnation, but the old one's
                    // serving task still runs: a bug the assertion catches.
                    w.node_stopped("server");
                    w.node_started("server");
                    let _ = deadline::call(&port, addr(1), Echo(2), TIMEOUT).await;
                })
                .await
                .expect("client task");
        });
    }

    /// Requests a test server saw.
    #[derive(Default)]
    struct AtomicU64Counter(std::sync::atomic::AtomicU64);

    #[test]
    fn a_reply_to_a_caller_that_gave_up_is_dropped() {
        let got = with_echo(|port, w, _| async move {
            // A time-out shorter than any round trip: the reply finds no caller.
            let early = deadline::call(&port, addr(1), Echo(1), Duration::from_millis(1)).await;
            sleep(Duration::from_millis(50)).await;
            let later = deadline::call(&port, addr(1), Echo(2), TIMEOUT).await;
            (early.is_err(), later.ok(), w.messages())
        });
        assert_eq!(got, (true, Some(2), 4));
    }
}
