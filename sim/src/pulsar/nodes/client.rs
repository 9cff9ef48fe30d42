//! A Pulsar client process: runs the workload's tasks, each over a [`Conn`]
//! (the protocol's `PulsarTransport` on the world's RPC) with a producer
//! session of its own. The process looks up the broker that owns the
//! coordinator or a partition and caches the answer; "not owner" or no
//! answer makes it look up again.

use crate::pulsar::control::{At, calls};
use crate::pulsar::ids::{PulsarCounter, PulsarEvent, kinds};
use crate::pulsar::nodes::route::Router;
use crate::pulsar::record::Reporter;
use crate::pulsar::rpc::{BrokerCall, Refusal, TcCall};
use crate::pulsar::store::COORDINATOR;
use crate::pulsar::{Cluster, broker_addr, client_addr};
use crate::world::ids::FaultKind;
use crate::world::intercept::MsgTag;
use crate::world::port::Port;
use crate::world::{BoxFuture, Carried, Control, deadline};
use madsim::net::rpc::Request;
use madsim::time::{Duration, sleep};
use percsim_checker::stream::Source;
use percsim_protocol::common::RpcError;
use percsim_protocol::pulsar::client::{
    BrokerReply, BrokerRequest, ClientEvent, ClientPoint, PulsarClientConfig, PulsarLedger,
    PulsarTransport, TcReply, TcRequest, TxnOutcome,
};
use percsim_protocol::pulsar::ownership::Resource;
use percsim_protocol::pulsar::points::ServerPoint;
use percsim_protocol::pulsar::types::{ConsumerRef, Partition, ProducerRef, TxnId};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a client process runs of its workload: how many tasks, the loop
/// each task runs, and where the process may crash (see
/// [`crate::pulsar::workload::PulsarWorkload`], which the system hands
/// its clients as a `Program`).
pub(crate) trait Program: Send + Sync {
    /// How many tasks client `client` of `clients` runs.
    fn tasks(&self, client: usize, clients: usize) -> usize;
    /// The loop one task runs.
    fn task(&self, task: PulsarTask) -> BoxFuture<()>;
    /// The probability that the client dies at `point`.
    fn crash_rate(&self, point: ClientPoint) -> f64;
}

/// One incarnation of a client process.
struct Process {
    cluster: Arc<Cluster>,
    program: Arc<dyn Program>,
    index: usize,
    incarnation: u32,
    ep: Port,
    router: Router,
}

/// Client `me`'s process: one life of it, running `program`'s tasks.
pub(crate) async fn main(cluster: Arc<Cluster>, program: Arc<dyn Program>, me: usize) {
    let incarnation = {
        let mut inc = crate::world::lock(&cluster.incarnations);
        inc[me] += 1;
        inc[me]
    };
    if incarnation > 1 {
        cluster.stream().orphan(me);
    }
    let ep = Port::bind(&cluster.world, client_addr(me));
    let process = Arc::new(Process {
        cluster: cluster.clone(),
        program: program.clone(),
        index: me,
        incarnation,
        ep,
        router: Router::default(),
    });
    for task in 0..program.tasks(me, cluster.clients) {
        let producer = ProducerRef {
            producer_id: ((me as u64) << 32) | ((incarnation as u64) << 16) | task as u64,
            epoch: 0,
        };
        let conn = Conn {
            process: process.clone(),
            task,
            producer,
            sequence: Arc::default(),
            session: (incarnation as u64) << 32,
        };
        let t = PulsarTask {
            conn,
            index: task,
            rng: ChaCha8Rng::seed_from_u64(madsim::rand::random::<u64>()),
        };
        madsim::task::spawn(program.task(t));
    }
    std::future::pending::<()>().await
}

/// One task of a client.
pub struct PulsarTask {
    /// Its connection to the cluster (a
    /// [`percsim_protocol::pulsar::client::PulsarHost`] with a
    /// producer session of its own).
    pub conn: Conn,
    /// Its index within the client.
    pub index: usize,
    /// Its random source, seeded from the run's seed.
    pub rng: ChaCha8Rng,
}

/// One task's connection to the cluster: the protocol's
/// [`PulsarTransport`] over the world's RPC, with its own producer session,
/// and its [`PulsarLedger`] into the stream history.
pub struct Conn {
    process: Arc<Process>,
    task: usize,
    producer: ProducerRef,
    /// The producer's next sequence id (shared by the reopened copies of
    /// this connection, which keep its producer).
    sequence: Arc<AtomicU64>,
    /// The consumer session it reads on: the incarnation in the high half,
    /// how often the task reopened its consumer in the low half.
    session: u64,
}

/// What a message says about itself, for the world's message rules.
struct Tag {
    call: &'static str,
    txn: Option<TxnId>,
    partition: Option<Partition>,
}

impl Tag {
    fn of_tc(req: &TcRequest) -> Tag {
        let (call, txn) = match req {
            TcRequest::Open { .. } => (calls::OPEN, None),
            TcRequest::AddParticipant { txn, .. } => (calls::ADD_PARTICIPANT, Some(*txn)),
            TcRequest::End { txn, .. } => (calls::END_TXN, Some(*txn)),
        };
        Tag {
            call,
            txn,
            partition: None,
        }
    }

    fn of_broker(partition: &Partition, req: &BrokerRequest) -> Tag {
        let (call, txn) = match req {
            BrokerRequest::Send(m) => (calls::SEND, m.txn),
            BrokerRequest::Ack { txn, .. } => (calls::ACK, *txn),
            BrokerRequest::Read { .. } | BrokerRequest::Close { .. } => (calls::READ, None),
        };
        Tag {
            call,
            txn,
            partition: Some(partition.clone()),
        }
    }
}

impl Conn {
    /// Whether the workload phase is over (producers stop).
    pub fn stopping(&self) -> bool {
        self.process.cluster.world.stopping()
    }

    /// This client's index.
    pub fn client(&self) -> usize {
        self.process.index
    }

    /// A name unique to this task in the run (`client.incarnation.task`),
    /// for unique payloads.
    pub fn tag(&self) -> String {
        format!(
            "{}.{}.{}",
            self.process.index, self.process.incarnation, self.task
        )
    }

    /// Another task's connection on the same client process (a scripted
    /// actor's): its own producer session and consumer name.
    pub fn sibling(&self, task: usize) -> Conn {
        let p = &self.process;
        Conn {
            process: p.clone(),
            task,
            producer: ProducerRef {
                producer_id: ((p.index as u64) << 32)
                    | ((p.incarnation as u64) << 16)
                    | task as u64,
                epoch: 0,
            },
            sequence: Arc::default(),
            session: self.session,
        }
    }

    /// The same connection with its consumer reopened: it reads on a new
    /// session, which closes the earlier one (the dispatcher takes back
    /// what that one held).
    pub fn reopened(&self) -> Conn {
        Conn {
            process: self.process.clone(),
            task: self.task,
            producer: self.producer,
            sequence: self.sequence.clone(),
            session: self.session + 1,
        }
    }

    /// How many clients the cluster has.
    pub fn clients(&self) -> usize {
        self.process.cluster.clients
    }

    /// The partitions of `topic`.
    pub fn partitions(&self, topic: &str) -> Vec<Partition> {
        let c = &self.process.cluster;
        c.partitions
            .iter()
            .filter(|p| p.topic == topic)
            .cloned()
            .collect()
    }

    /// Output message `payload` is made from `source` (recorded with its send).
    pub fn source(&self, payload: &str, source: Source) {
        self.process.cluster.stream().source(payload, source);
    }

    fn reporter(&self) -> Reporter {
        Reporter {
            client: self.process.index,
            incarnation: self.process.incarnation,
            worker: self.task,
        }
    }

    async fn call<R: Request + Clone>(
        &self,
        dst: SocketAddr,
        req: R,
        tag: &Tag,
    ) -> Result<R::Response, RpcError> {
        let p = &self.process;
        p.cluster.world.watchdog_tick();
        self.wait_if_stalled().await;
        let timeout = Duration::from_millis(p.cluster.world.config().rpc_timeout_ms);
        let world = &p.cluster.world;
        if world.intercepting() {
            let tag = MsgTag {
                call: tag.call,
                txn: tag.txn.map(|t| t.seq),
                item: tag.partition.as_ref().map(|p| p.to_string()),
                from: kinds::CLIENT.nth(p.index).to_string(),
            };
            let call = world.call_tagged(&p.ep, dst, req, tag, timeout);
            return call.await.map_err(|()| RpcError::Timeout);
        }
        if p.cluster.world.carry(dst, &req) == Carried::Late {
            // The network holds the request back: no reply comes in time.
            madsim::time::sleep(timeout).await;
            return Err(RpcError::Timeout);
        }
        deadline::call(&p.ep, dst, req, timeout)
            .await
            .map_err(|_| RpcError::Timeout)
    }

    async fn wait_if_stalled(&self) {
        let world = &self.process.cluster.world;
        let me = kinds::CLIENT.nth(self.process.index);
        while let Some(t) = world.stalled_until(&me) {
            if t <= madsim::time::Instant::now() {
                return;
            }
            madsim::time::sleep_until(t).await;
        }
    }

    /// Send `make()` to the broker that owns `resource`: looked up (or
    /// cached); after "not owner" (the request was not applied) look up
    /// again and resend, and after "recovering" (not applied either) resend
    /// to the same owner, up to the configured retries; after no answer,
    /// forget the owner and report the timeout (the caller decides whether
    /// to retry: the request may have landed).
    async fn routed<R, T>(
        &self,
        resource: &Resource,
        make: impl Fn() -> R,
        tag: Tag,
    ) -> Result<T, RpcError>
    where
        R: Request<Response = Result<T, Refusal>> + Clone,
    {
        let p = &self.process;
        let mut tries = 0;
        loop {
            let owner = match p.router.owner(&p.cluster, &p.ep, resource).await {
                Ok(owner) => owner,
                Err(RpcError::Unavailable) if tries < p.cluster.cfg.client.retries => {
                    // Nobody owns it right now: it is being moved.
                    tries += 1;
                    sleep(Duration::from_millis(p.cluster.cfg.client.retry_backoff_ms)).await;
                    continue;
                }
                Err(e) => return Err(e),
            };
            match self.call(broker_addr(owner), make(), &tag).await {
                Ok(Ok(reply)) => return Ok(reply),
                Ok(Err(refusal)) => {
                    if refusal == Refusal::NotOwner {
                        p.cluster.bump(PulsarCounter::NotOwner);
                        p.router.forget(resource);
                    }
                    if tries >= p.cluster.cfg.client.retries {
                        return Err(RpcError::Unavailable);
                    }
                    tries += 1;
                    sleep(Duration::from_millis(p.cluster.cfg.client.retry_backoff_ms)).await;
                }
                Err(e) => {
                    p.router.forget(resource);
                    return Err(e);
                }
            }
        }
    }

    /// When a driver armed [`ServerPoint::AfterEndSent`] on this client
    /// for `txn`: send the end-txn `req` to the coordinator's owner, then
    /// stop there (a kill: the request goes on without us; a pause: we
    /// wait for its answer after). `None` when nothing is armed.
    async fn end_then_stop(
        &self,
        txn: TxnId,
        req: &TcRequest,
    ) -> Option<Result<TcReply, RpcError>> {
        let p = &self.process;
        let me = kinds::CLIENT.nth(p.index).to_string();
        let at = At {
            txn: Some(txn),
            partition: None,
        };
        if !p.cluster.armed_on(&me, ServerPoint::AfterEndSent, &at) {
            return None;
        }
        let resource = Resource::Coordinator(COORDINATOR);
        let owner = match p.router.owner(&p.cluster, &p.ep, &resource).await {
            Ok(owner) => owner,
            Err(e) => return Some(Err(e)),
        };
        let world = &p.cluster.world;
        let reply = world.send_apart(broker_addr(owner), TcCall(req.clone()));
        p.cluster.reached(&me, ServerPoint::AfterEndSent, at).await;
        let timeout = Duration::from_millis(world.config().rpc_timeout_ms);
        Some(match deadline::within(timeout, reply).await {
            Ok(Ok(Ok(reply))) => Ok(reply),
            Ok(Ok(Err(_))) => Err(RpcError::Unavailable),
            _ => Err(RpcError::Timeout),
        })
    }

    /// Die here (a processor crashing mid-transaction); restarted later.
    async fn crash(&self, point: ClientPoint) {
        let c = &self.process.cluster;
        c.event(
            PulsarEvent::ClientCrashAtPoint,
            json!({"client": self.process.index, "point": point}),
        );
        c.world.recorder().bump(&FaultKind::CrashAtStep.counter());
        let counter = crate::pulsar::ids::point_stopped_counter(point.name());
        c.world.recorder().bump(&counter);
        c.world.request(Control::Kill {
            node: kinds::CLIENT.nth(self.process.index).to_string(),
            restart_after_ms: Some(300),
        });
        sleep(Duration::from_millis(1)).await;
    }
}

impl PulsarTransport for Conn {
    fn config(&self) -> &PulsarClientConfig {
        &self.process.cluster.cfg.client
    }

    fn producer(&self) -> ProducerRef {
        self.producer
    }

    fn next_sequence_id(&self) -> u64 {
        self.sequence.fetch_add(1, Ordering::Relaxed)
    }

    /// The task's consumer: named by client and task, its session the
    /// process's incarnation (a restart reconnects on a new session).
    fn consumer(&self) -> ConsumerRef {
        ConsumerRef {
            name: format!("{}.{}", kinds::CLIENT.nth(self.process.index), self.task),
            session: self.session,
        }
    }

    async fn coordinator(&self, req: TcRequest) -> Result<TcReply, RpcError> {
        let resource = Resource::Coordinator(COORDINATOR);
        if let TcRequest::End { txn, .. } = &req
            && let Some(reply) = self.end_then_stop(*txn, &req).await
        {
            return reply;
        }
        let tag = Tag::of_tc(&req);
        self.routed(&resource, || TcCall(req.clone()), tag).await
    }

    async fn broker(
        &self,
        partition: &Partition,
        req: BrokerRequest,
    ) -> Result<BrokerReply, RpcError> {
        // The network duplicates every request, sends included: the
        // brokers' producer deduplication drops a send's copies.
        let resource = Resource::Partition(partition.clone());
        let make = || BrokerCall {
            partition: partition.clone(),
            req: req.clone(),
        };
        let tag = Tag::of_broker(partition, &req);
        self.routed(&resource, make, tag).await
    }

    async fn sleep_ms(&self, ms: u64) {
        sleep(Duration::from_millis(ms)).await;
    }
}

impl PulsarLedger for Conn {
    async fn reached(&self, txn: Option<TxnId>, point: ClientPoint) {
        let c = &self.process.cluster;
        let counter = crate::pulsar::ids::point_reached_counter(point.name());
        c.world.recorder().bump(&counter);
        let rate = self.process.program.crash_rate(point);
        if rate > 0.0 && !c.world.stopping() && madsim::rand::random::<f64>() < rate {
            self.crash(point).await;
        }
        if let (ClientPoint::BeforeCommit, Some(txn)) = (point, txn) {
            c.stream().commit_requested(txn, c.world.now_ns());
        }
    }

    fn event(&self, event: ClientEvent) {
        let c = &self.process.cluster;
        if let ClientEvent::Finished {
            outcome: TxnOutcome::Aborted { reason },
            ..
        } = &event
        {
            c.bump(PulsarCounter::abort(*reason));
        }
        let now = c.world.now_ns();
        c.stream().event(self.reporter(), event, now);
    }
}
