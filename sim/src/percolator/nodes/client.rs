//! A client (worker) process: holds a liveness session, batches timestamp
//! requests into one pending oracle RPC, finds tablets through the master,
//! and runs the workload's transaction threads.

use crate::percolator::ids::{PercolatorCounter, PercolatorEvent, kinds};
use crate::percolator::points::PointAction;
use crate::percolator::rpc::{
    IsAlive, KeepAlive, Locate, NotServing, OpenSession, RawCall, RowCall, RowLockCall, ScanCall,
    ScanNotify, TsCall,
};
use crate::percolator::tags::Tagged;
use crate::percolator::{
    Cluster, SWEEPER_NODE, client_addr, invariants, liveness_addr, master_addr, oracle_addr,
    record, tablet_server_addr,
};
use crate::world::ids::EventKind;
use crate::world::node::NodeName;
use crate::world::port::Port;
use crate::world::{BoxFuture, Carried, ClockSkew, Control, deadline};
use futures::channel::oneshot;
use madsim::net::rpc::Request;
use madsim::time::{Duration, sleep};
use percsim_protocol::percolator::actions::{GetResult, RowReply, RowRequest};
use percsim_protocol::percolator::client::{
    CleanupEvent, ClientConfig, CommitOutcome, Ledger, Observed, ObserverBody, ObserverSpec,
    RpcError, StepPoint, Transaction, Transport, TxnEvent, run_observer,
};
use percsim_protocol::percolator::{CellKey, LockInfo, SessionId, Ts};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// What happens to a client when an armed transaction reaches its step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Armed {
    /// Kill the client; restart it after this long (else at the healed phase).
    Crash {
        /// Restart delay.
        restart_after_ms: Option<u64>,
    },
    /// Freeze the client's node until something resumes it.
    Pause,
}

#[derive(Default)]
struct TsBatch {
    in_flight: bool,
    waiting: Vec<oneshot::Sender<Result<Ts, RpcError>>>,
}

/// The workload's observers, each with the code it runs.
pub(crate) type Observers = Vec<(ObserverSpec, Arc<dyn ObserverBody<Client>>)>;

/// What a client runs of its workload: the loop of each transaction
/// thread and the observers its scanners run. The system builds it from
/// its [`crate::percolator::workload::Workload`].
pub(crate) struct Program {
    /// The loop of one transaction thread.
    pub worker: Box<dyn Fn(Worker) -> BoxFuture<()> + Send + Sync>,
    /// The workload's observers.
    pub observers: Observers,
}

/// One incarnation of a client process. It implements the protocol's
/// [`Transport`] and [`Ledger`], so workloads run
/// [`percsim_protocol::percolator::client::Transaction`]s on it.
pub struct Client {
    cluster: Arc<Cluster>,
    program: Arc<Program>,
    index: usize,
    ep: Port,
    session: AtomicU64,
    locations: Mutex<BTreeMap<usize, usize>>,
    ts: Mutex<TsBatch>,
    clock: ClockSkew,
    /// Transaction id -> its 1-based number for this client.
    numbers: Mutex<BTreeMap<u64, u64>>,
    /// Faults armed by a workload for one transaction, by step.
    armed: Mutex<BTreeMap<u64, (StepPoint, Armed)>>,
    /// Armed transactions that reached their step.
    fired: Arc<Mutex<BTreeSet<u64>>>,
    /// The primary cell of each transaction of this client that prewrote
    /// one, by start_ts (to tell a commit of the primary from a secondary's).
    primaries: Mutex<BTreeMap<u64, CellKey>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Client {
    /// This client's index in the cluster.
    pub fn index(&self) -> usize {
        self.index
    }

    /// A raw Bigtable operation outside any transaction (the baseline of the
    /// paper's Figure 8): write `value` to a cell (returns `None`), or read
    /// the cell's value when `value` is `None`.
    pub async fn raw(
        &self,
        row: &str,
        col: &str,
        value: Option<String>,
    ) -> Result<Option<String>, RpcError> {
        let tablet = self.cluster.tablets.of(row);
        let call = RawCall {
            tablet,
            row: row.to_string(),
            col: col.to_string(),
            write: value,
        };
        self.tablet_call(tablet, call).await.map(|r| r.0)
    }

    /// This client's node name, as faults name it.
    fn node_name(&self) -> NodeName {
        kinds::CLIENT.nth(self.index)
    }

    /// How many transaction threads the cluster runs (clients x workers).
    pub fn workers_total(&self) -> usize {
        self.cluster.cfg.clients * self.cluster.cfg.workers_per_client
    }

    /// Whether the workload phase is over (start no new transactions).
    pub fn stopping(&self) -> bool {
        self.cluster.stopping()
    }

    /// Kill or pause this client when transaction `txn` reaches `step` of its commit.
    pub fn arm(&self, txn: u64, step: StepPoint, what: Armed) {
        lock(&self.armed).insert(txn, (step, what));
    }

    /// Whether a fault is armed for transaction `txn`.
    pub fn armed(&self, txn: u64) -> bool {
        lock(&self.armed).contains_key(&txn)
    }

    /// Freeze this client's node here, for `duration_ms` or until resumed.
    async fn pause_here(&self, duration_ms: Option<u64>) {
        self.cluster.world.request(Control::Pause {
            node: self.node_name().to_string(),
            duration_ms,
        });
        // The pause takes effect when the harness runs; yield until it does.
        sleep(Duration::from_millis(1)).await;
    }

    /// Stop at `step`: record it, then die (never returning) or freeze.
    async fn stop_at_point(&self, step: StepPoint, action: PointAction, fields: serde_json::Value) {
        match action {
            PointAction::Crash { restart_after_ms } => {
                self.cluster.record_stop(step.point(), true, fields);
                self.cluster.world.request(Control::Kill {
                    node: self.node_name().to_string(),
                    restart_after_ms,
                });
                std::future::pending::<()>().await;
            }
            PointAction::Pause { duration_ms } => {
                self.cluster.record_stop(step.point(), false, fields);
                self.pause_here(Some(duration_ms)).await;
            }
        }
    }

    /// Whether armed transaction `txn` has reached its step (and the client
    /// was killed or paused there).
    pub fn armed_fired(&self, txn: u64) -> bool {
        lock(&self.fired).contains(&txn)
    }

    /// Record a violation of the workload's own invariant.
    pub fn violation(&self, what: String) {
        self.cluster.world.world_event(
            EventKind::WorkloadViolation,
            json!({"client": self.index, "what": what}),
        );
    }

    /// Transaction `txn` reached `step`: stop here if a fault says so. A
    /// request in `send` (a step whose point is a request on the wire) is
    /// sent just before the first stop, and `send` is emptied then.
    async fn reach(&self, txn: u64, step: StepPoint, send: &mut Option<(&str, &RowRequest)>) {
        if let Some((action, nth)) = self.cluster.point_reached(step.point(), self.index) {
            let fields = json!({"node": self.node_name(), "nth": nth, "txn": txn, "step": step});
            self.send_and_forget(send).await;
            self.stop_at_point(step, action, fields).await;
        }
        let Some(number) = lock(&self.numbers).get(&txn).copied() else {
            return;
        };
        let armed = lock(&self.armed)
            .get(&txn)
            .filter(|(at, _)| *at == step)
            .map(|(_, what)| *what);
        let scheduled = self
            .cluster
            .cfg
            .crashes
            .iter()
            .find(|c| c.client == self.index && c.txn == number && c.step == step)
            .map(|c| PointAction::Crash {
                restart_after_ms: c.restart_after_ms,
            });
        if armed.is_some() {
            lock(&self.fired).insert(txn);
        }
        let pause = self
            .cluster
            .cfg
            .pauses
            .iter()
            .find(|p| p.client == self.index && p.txn == number && p.step == step)
            .map(|p| p.duration_ms);
        if armed.is_none() && pause.is_none() && scheduled.is_none() {
            // Nothing stops here (the common case): no event fields to build.
            return;
        }
        let fields = json!({"client": self.index, "txn": txn, "txn_number": number, "step": step});
        if let (Some(duration_ms), None) = (pause, armed) {
            let action = PointAction::Pause { duration_ms };
            self.send_and_forget(send).await;
            self.stop_at_point(step, action, fields.clone()).await;
        }
        match armed {
            Some(Armed::Crash { restart_after_ms }) => {
                let action = PointAction::Crash { restart_after_ms };
                self.send_and_forget(send).await;
                self.stop_at_point(step, action, fields).await
            }
            Some(Armed::Pause) => {
                self.send_and_forget(send).await;
                self.cluster.record_stop(step.point(), false, fields);
                self.pause_here(None).await
            }
            None => {
                if let Some(action) = scheduled {
                    self.send_and_forget(send).await;
                    self.stop_at_point(step, action, fields).await
                }
            }
        }
    }

    /// Send the row step in `send` (taking it) without waiting for a reply:
    /// the request leaves this client as a call's first attempt would (the
    /// network may hold it back or copy it, see [`crate::world::World::carry`]),
    /// and whatever becomes of the client, it is the network's. Its reply,
    /// if any, is never awaited.
    async fn send_and_forget(&self, send: &mut Option<(&str, &RowRequest)>) {
        let Some((row, req)) = send.take() else {
            return;
        };
        // A stalled worker sends nothing until the stall ends, as in `tablet_call`.
        self.wait_if_stalled().await;
        let tablet = self.cluster.tablets.of(row);
        let Some(server) = self.locate(tablet, false).await else {
            return;
        };
        let _ = self.note_primary(row, req);
        let dst = tablet_server_addr(server);
        let call = RowCall {
            tablet,
            row: row.to_string(),
            req: req.clone(),
        };
        if self.cluster.world.carry(dst, &call) == Carried::Late {
            return;
        }
        self.ep.send(dst, call);
    }

    async fn call<R: Request + Clone + Tagged>(
        &self,
        dst: SocketAddr,
        req: R,
    ) -> Result<R::Response, RpcError> {
        self.cluster.world.watchdog_tick();
        let timeout = Duration::from_millis(self.cluster.world.config().rpc_timeout_ms);
        let world = &self.cluster.world;
        if world.intercepting() {
            let tag = req.tag(self.node_name().to_string());
            let call = world.call_tagged(&self.ep, dst, req, tag, timeout);
            return call.await.map_err(|()| RpcError::Timeout);
        }
        deadline::call(&self.ep, dst, req, timeout)
            .await
            .map_err(|_| RpcError::Timeout)
    }

    /// Retry `req` on the liveness service or the oracle with backoff.
    async fn call_retrying<R: Request + Clone + Tagged>(
        &self,
        dst: SocketAddr,
        req: R,
    ) -> Result<R::Response, RpcError> {
        let mut last = RpcError::Unavailable;
        for attempt in 0..self.cluster.cfg.rpc_attempts {
            if attempt > 0 {
                sleep(Duration::from_millis(10 << attempt.min(6))).await;
            }
            match self.call(dst, req.clone()).await {
                Ok(r) => return Ok(r),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    async fn locate(&self, tablet: usize, refresh: bool) -> Option<usize> {
        if !refresh && let Some(s) = lock(&self.locations).get(&tablet) {
            return Some(*s);
        }
        let server = self
            .call(master_addr(), Locate { tablet })
            .await
            .ok()
            .flatten()?;
        lock(&self.locations).insert(tablet, server);
        Some(server)
    }

    /// Block while a stall fault holds this client's transaction threads.
    async fn wait_if_stalled(&self) {
        loop {
            let until = self.cluster.world.stalled_until(&self.node_name());
            match until {
                Some(t) if t > madsim::time::Instant::now() => madsim::time::sleep_until(t).await,
                _ => return,
            }
        }
    }

    /// Send `make(tablet)` to the server of `tablet`, following moves and
    /// retrying; every step is idempotent, so a retry after a lost reply is safe.
    async fn tablet_call<R, T>(&self, tablet: usize, req: R) -> Result<T, RpcError>
    where
        R: Request<Response = Result<T, NotServing>> + Clone + Tagged,
    {
        self.wait_if_stalled().await;
        let mut timed_out = false;
        for attempt in 0..self.cluster.cfg.rpc_attempts {
            if attempt > 0 {
                sleep(Duration::from_millis(20 << attempt.min(5))).await;
            }
            let Some(server) = self.locate(tablet, attempt > 0).await else {
                continue;
            };
            let dst = tablet_server_addr(server);
            let answer = match self.cluster.world.carry(dst, &req) {
                Carried::Now => self.call(dst, req.clone()).await,
                Carried::Late => {
                    // The network holds the request: no reply comes in time.
                    self.cluster.world.watchdog_tick();
                    sleep(Duration::from_millis(
                        self.cluster.world.config().rpc_timeout_ms,
                    ))
                    .await;
                    Err(RpcError::Timeout)
                }
            };
            match answer {
                Ok(Ok(reply)) => return Ok(reply),
                Ok(Err(NotServing)) => {}
                Err(_) => timed_out = true,
            }
            lock(&self.locations).remove(&tablet);
        }
        Err(if timed_out {
            RpcError::Timeout
        } else {
            RpcError::Unavailable
        })
    }

    /// Remember the primary of a prewrite of it; for a commit, return its
    /// column and start_ts (to classify it if it times out).
    fn note_primary(&self, row: &str, req: &RowRequest) -> Option<(String, Ts)> {
        match req {
            RowRequest::Prewrite(p) if p.lock.primary.row == row && p.lock.primary.col == p.col => {
                lock(&self.primaries).insert(p.start_ts.0, p.lock.primary.clone());
                None
            }
            RowRequest::Commit { col, ts } => Some((col.clone(), ts.start_ts)),
            _ => None,
        }
    }

    /// A commit of (`row`, `col`) for `start_ts` timed out on every attempt:
    /// the store tells whether a request arrived and was applied (only its
    /// replies were lost) or none was (the requests were lost, or are late).
    fn count_lost_commit(&self, row: &str, col: &str, start_ts: Ts) {
        let primary = lock(&self.primaries)
            .get(&start_ts.0)
            .is_some_and(|p| p.row == row && p.col == col);
        let applied = self.commit_applied(row, col, start_ts);
        let name = match (primary, applied) {
            (true, true) => PercolatorCounter::CommitPrimaryReplyLost,
            (true, false) => PercolatorCounter::CommitPrimaryRequestLost,
            (false, true) => PercolatorCounter::CommitSecondaryReplyLost,
            (false, false) => PercolatorCounter::CommitSecondaryRequestLost,
        };
        self.cluster.bump(name);
    }

    /// Whether the store holds a commit record of `start_ts` at (`row`, `col`).
    fn commit_applied(&self, row: &str, col: &str, start_ts: Ts) -> bool {
        self.cluster
            .durable()
            .rows
            .get(row)
            .and_then(|r| r.col(col).write_of(start_ts))
            .is_some_and(|(_, w)| w.is_commit())
    }

    /// Serve queued timestamp requests with one RPC at a time until none wait.
    async fn run_ts_batches(&self) {
        loop {
            let batch = {
                let mut b = lock(&self.ts);
                if b.waiting.is_empty() {
                    b.in_flight = false;
                    return;
                }
                std::mem::take(&mut b.waiting)
            };
            let count = batch.len() as u64;
            let result = self.call_retrying(oracle_addr(), TsCall { count }).await;
            {
                let mut rec = self.cluster.recorder();
                rec.bump(PercolatorCounter::ClientTsRpcs.name());
                rec.add(PercolatorCounter::ClientTsRequests.name(), count);
            }
            for (i, tx) in batch.into_iter().enumerate() {
                let _ = tx.send(result.map(|first| Ts(first.0 + i as u64)));
            }
        }
    }
}

impl Transport for Client {
    fn config(&self) -> &ClientConfig {
        &self.cluster.cfg.client
    }

    fn ablations(&self) -> percsim_protocol::percolator::Ablations {
        self.cluster.cfg.ablations
    }

    fn session(&self) -> SessionId {
        SessionId(self.session.load(Ordering::Relaxed))
    }

    fn wall_ms(&self) -> u64 {
        self.clock.wall_ms(self.cluster.now_ns())
    }

    async fn row(&self, row: &str, req: RowRequest) -> Result<RowReply, RpcError> {
        let tablet = self.cluster.tablets.of(row);
        let commit = self.note_primary(row, &req);
        let call = RowCall {
            tablet,
            row: row.to_string(),
            req,
        };
        let reply = self.tablet_call(tablet, call).await;
        if let (Err(RpcError::Timeout), Some((col, start_ts))) = (&reply, commit) {
            self.count_lost_commit(row, &col, start_ts);
        }
        reply
    }

    async fn scan(
        &self,
        start_row: &str,
        end_row: &str,
        cols: &[String],
        start_ts: Ts,
    ) -> Result<Vec<(CellKey, GetResult)>, RpcError> {
        let mut out = Vec::new();
        for tablet in self.cluster.tablets.covering(start_row, end_row) {
            let call = ScanCall {
                tablet,
                start_row: start_row.to_string(),
                end_row: end_row.to_string(),
                cols: cols.to_vec(),
                start_ts,
            };
            out.extend(self.tablet_call(tablet, call).await?);
        }
        Ok(out)
    }

    async fn timestamp(&self) -> Result<Ts, RpcError> {
        self.wait_if_stalled().await;
        let (tx, rx) = oneshot::channel();
        let lead = {
            let mut b = lock(&self.ts);
            b.waiting.push(tx);
            !std::mem::replace(&mut b.in_flight, true)
        };
        if lead {
            self.run_ts_batches().await;
        }
        rx.await.unwrap_or(Err(RpcError::Unavailable))
    }

    async fn owner_alive(&self, owner: SessionId) -> Result<bool, RpcError> {
        self.call_retrying(liveness_addr(), IsAlive { session: owner })
            .await
    }

    async fn sleep_ms(&self, ms: u64) {
        sleep(Duration::from_millis(ms)).await
    }

    async fn row_at(
        &self,
        txn: u64,
        step: StepPoint,
        row: &str,
        req: RowRequest,
    ) -> Result<RowReply, RpcError> {
        let mut send = Some((row, &req));
        self.reach(txn, step, &mut send).await;
        // Not stopped (nothing sent yet), or resumed after a freeze: the
        // first call timed out while frozen, so this is its retry.
        self.row(row, req).await
    }
}

impl Ledger for Client {
    fn begin_txn(&self) -> u64 {
        let now = self.cluster.now_ns();
        let (id, number) = self.cluster.recorder().begin(self.index as u64, now);
        lock(&self.numbers).insert(id, number);
        id
    }

    fn txn_event(&self, txn: u64, event: TxnEvent) {
        let now = self.cluster.now_ns();
        let mut h = self.cluster.txn_history();
        let mut rec = self.cluster.recorder();
        if let TxnEvent::Finished(outcome) = &event {
            lock(&self.numbers).remove(&txn);
            let primary = h.start_ts(txn).and_then(|start_ts| {
                lock(&self.primaries)
                    .remove(&start_ts)
                    .map(|p| (p, start_ts))
            });
            if let (CommitOutcome::Unknown, Some((cell, start_ts))) = (outcome, primary) {
                // Whether the primary's commit landed although the client never heard.
                let name = if self.commit_applied(&cell.row, &cell.col, Ts(start_ts)) {
                    PercolatorCounter::TxnUnknownReplyLost
                } else {
                    PercolatorCounter::TxnUnknownRequestLost
                };
                rec.bump(name.name());
            }
        }
        if let TxnEvent::Finished(CommitOutcome::Committed {
            commit_ts: Some(commit_ts),
        }) = &event
            && let Some(start_ts) = h.start_ts(txn)
            && invariants::commit_after_start(self.cluster.cfg.ablations)
        {
            invariants::check_commit(txn, start_ts, commit_ts.0);
        }
        record::txn_event(&mut h, &mut rec, txn, event, now);
    }

    fn cleanup_event(&self, event: CleanupEvent) {
        let now = self.cluster.now_ns();
        record::cleanup(&mut self.cluster.recorder(), self.index as u64, &event, now);
    }

    fn lock_wait(&self, lock: &LockInfo) {
        self.cluster.bump(PercolatorCounter::ClientLockWaits);
        self.cluster.event(
            PercolatorEvent::LockWait,
            json!({
                "by_client": self.index, "row": lock.cell.row, "col": lock.cell.col,
                "start_ts": lock.start_ts.0,
            }),
        );
    }

    async fn reached(&self, txn: u64, step: StepPoint) {
        self.reach(txn, step, &mut None).await
    }

    fn observed(&self, col: &str) -> bool {
        self.program
            .observers
            .iter()
            .any(|(spec, _)| !spec.weak && spec.col == col)
    }

    fn observer_acks(&self, col: &str) -> Vec<String> {
        self.program
            .observers
            .iter()
            .filter(|(spec, _)| !spec.weak && spec.col == col)
            .map(|(spec, _)| spec.ack_col())
            .collect()
    }
}

/// One transaction thread of a client.
pub struct Worker {
    /// The client process it runs in (a [`percsim_protocol::percolator::client::Host`]).
    pub client: Arc<Client>,
    /// Its index within the client.
    pub index: usize,
    /// Which life of its client this is (1 for the first, +1 per restart).
    pub incarnation: u32,
    /// Its random source, seeded from the run's seed.
    pub rng: ChaCha8Rng,
}

impl Worker {
    /// A name unique to this worker in the run, for unique values.
    pub fn tag(&self) -> String {
        format!(
            "{}.{}.{}",
            self.client.index(),
            self.incarnation,
            self.index
        )
    }

    pub(crate) fn new(client: Arc<Client>, index: usize, incarnation: u32, seed: u64) -> Self {
        Worker {
            client,
            index,
            incarnation,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

/// Start one incarnation of client `index`: open a session, keep it alive,
/// and (unless `workers` is false) run the workload's threads.
pub(crate) async fn start(
    cluster: Arc<Cluster>,
    program: Arc<Program>,
    index: usize,
    workers: bool,
) -> Arc<Client> {
    let incarnation = {
        let mut inc = lock(&cluster.incarnations);
        if inc.len() <= index {
            inc.resize(index + 1, 0);
        }
        inc[index] += 1;
        inc[index]
    };
    let ep = Port::bind(&cluster.world, client_addr(index));
    let clock = cluster.world.clock(&kinds::CLIENT.nth(index));
    let client = Arc::new(Client {
        cluster: cluster.clone(),
        program: program.clone(),
        index,
        ep,
        session: AtomicU64::new(0),
        locations: Mutex::default(),
        ts: Mutex::default(),
        clock,
        numbers: Mutex::default(),
        armed: Mutex::default(),
        fired: Arc::default(),
        primaries: Mutex::default(),
    });
    let session = loop {
        match client
            .call(liveness_addr(), OpenSession { client: index })
            .await
        {
            Ok(s) => break s,
            Err(_) => sleep(Duration::from_millis(50)).await,
        }
    };
    client.session.store(session.0, Ordering::Relaxed);
    let keeper = client.clone();
    madsim::task::spawn(async move {
        let every = Duration::from_millis((keeper.cluster.cfg.session_ttl_ms / 4).max(1));
        loop {
            sleep(every).await;
            let session = keeper.session();
            if let Ok(false) = keeper.call(liveness_addr(), KeepAlive { session }).await {
                // Expired: open a new session for new locks; old locks now look dead.
                if let Ok(s) = keeper
                    .call(
                        liveness_addr(),
                        OpenSession {
                            client: keeper.index,
                        },
                    )
                    .await
                {
                    keeper.session.store(s.0, Ordering::Relaxed);
                    keeper.cluster.event(
                        PercolatorEvent::SessionReopened,
                        json!({"client": keeper.index}),
                    );
                }
            }
        }
    });
    if workers && !program.observers.is_empty() {
        // Scanners run in the healed phase too: notifications must drain.
        for s in 0..cluster.cfg.scanners_per_client {
            let seed = madsim::rand::random::<u64>();
            madsim::task::spawn(scan(client.clone(), s, seed));
        }
    }
    if workers && !cluster.stopping() {
        for w in 0..cluster.cfg.workers_per_client {
            let seed = madsim::rand::random::<u64>()
                ^ ((index as u64) << 32 | (incarnation as u64) << 16 | w as u64);
            let fut = (program.worker)(Worker::new(client.clone(), w, incarnation, seed));
            madsim::task::spawn(fut);
        }
    }
    client
}

/// Client `index`'s process: one life of it, running `program`.
pub(crate) async fn main(cluster: Arc<Cluster>, program: Arc<Program>, index: usize) {
    let _client = start(cluster, program, index, true).await;
    std::future::pending::<()>().await
}

/// Start a client without workload threads on a node of its own (the
/// harness's sweeper and final checker).
pub(crate) async fn start_on_new_node(
    cluster: Arc<Cluster>,
    program: Arc<Program>,
    index: usize,
) -> Arc<Client> {
    let node = madsim::runtime::Handle::current()
        .create_node()
        .name(SWEEPER_NODE)
        .ip(client_addr(index).ip())
        .build();
    node.spawn(start(cluster, program, index, false))
        .await
        .expect("sweeper: start")
}

/// Read every cell at a fresh snapshot: a read meeting a lock cleans it up
/// once its owner is dead or the lock is stale.
pub(crate) async fn sweep(sweeper: &Arc<Client>) {
    let Ok(mut txn) = Transaction::begin(sweeper.as_ref()).await else {
        sleep(Duration::from_millis(100)).await;
        return;
    };
    match txn.scan("", "\u{10ffff}", &[]).await {
        Ok(_) => {
            let _: CommitOutcome = txn.commit().await;
        }
        Err(e) => {
            txn.abort((&e).into());
            sweeper.sleep_ms(100).await;
        }
    }
}

/// A scanner that found no dirty cell waits at least this long (ms) before
/// it looks again.
const SCAN_IDLE_MIN_MS: u64 = 10;
/// ... and less than this long (ms): the longest interval between two
/// scans of an idle scanner.
pub(crate) const SCAN_INTERVAL_MS: u64 = 40;
/// The first backoff (ms) after a failed observer run; it doubles with
/// each consecutive failure, up to [`OBSERVER_BACKOFF_MAX_MS`].
const OBSERVER_BACKOFF_MS: u64 = 10;
/// Doublings of the backoff after consecutive failed observer runs.
const OBSERVER_BACKOFF_DOUBLINGS: u32 = 7;
/// The longest backoff (ms) after a failed observer run.
pub(crate) const OBSERVER_BACKOFF_MAX_MS: u64 = OBSERVER_BACKOFF_MS << OBSERVER_BACKOFF_DOUBLINGS;

/// One notify scanner (paper, "Notifications"): start at a random tablet
/// and a random row, take each dirty row's lock in the lightweight lock
/// service, run its observers, and jump to a new random position when the
/// row is already taken (if the jump rule is on).
async fn scan(client: Arc<Client>, scanner: usize, seed: u64) {
    use rand::RngExt;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let cluster = client.cluster.clone();
    let holder = ((client.index as u64) << 32) | scanner as u64;
    let tablets = cluster.tablets.count();
    // Consecutive failed observer runs: retry after a growing random backoff
    // (paper: a conflicted transaction "should be retried after a backoff").
    let mut failures = 0u32;
    loop {
        let tablet = rng.random_range(0..tablets);
        let call = ScanNotify {
            tablet,
            pick: rng.random::<u64>(),
            limit: 16,
        };
        let cells = client.tablet_call(tablet, call).await.unwrap_or_default();
        if cells.is_empty() {
            let idle_ms = rng.random_range(SCAN_IDLE_MIN_MS..SCAN_INTERVAL_MS);
            sleep(Duration::from_millis(idle_ms)).await;
            continue;
        }
        let mut i = 0;
        while i < cells.len() {
            let row = cells[i].0.clone();
            let mut j = i;
            while j < cells.len() && cells[j].0 == row {
                j += 1;
            }
            let mine = &cells[i..j];
            i = j;
            cluster.bump(PercolatorCounter::ScanRows);
            let lock = RowLockCall {
                row: row.clone(),
                holder,
                lock: true,
            };
            if !client.call(liveness_addr(), lock).await.unwrap_or(false) {
                cluster.bump(PercolatorCounter::ScanCollisions);
                if cluster.cfg.scanner_jump {
                    cluster.bump(PercolatorCounter::ScanJumps);
                    break;
                }
                continue;
            }
            for (_, col, seen) in mine {
                for (spec, body) in client
                    .program
                    .observers
                    .iter()
                    .filter(|(s, _)| s.col == *col)
                {
                    let outcome =
                        run_observer(client.as_ref(), spec, &row, *seen, body.as_ref()).await;
                    let name = match outcome {
                        Observed::Ran => PercolatorCounter::ObserverRan,
                        Observed::NothingNew => PercolatorCounter::ObserverNothingNew,
                        Observed::Failed(_) => PercolatorCounter::ObserverFailed,
                        Observed::Error(_) => PercolatorCounter::ObserverError,
                    };
                    cluster.bump(name);
                    if matches!(outcome, Observed::Failed(_) | Observed::Error(_)) {
                        failures += 1;
                        let cap = OBSERVER_BACKOFF_MS << failures.min(OBSERVER_BACKOFF_DOUBLINGS);
                        sleep(Duration::from_millis(rng.random_range(1..=cap))).await;
                    } else {
                        failures = 0;
                    }
                }
            }
            let unlock = RowLockCall {
                row,
                holder,
                lock: false,
            };
            let _ = client.call(liveness_addr(), unlock).await;
        }
    }
}
