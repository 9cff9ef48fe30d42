//! The transaction coordinator, hosted by the broker that owns it: runs
//! the protocol's coordinator steps, appends every state change to its
//! durable transaction log before acting on it (each append takes
//! `log_write_ms`), sends markers to the brokers that own the participants
//! (found by lookup) until each is acknowledged, and aborts transactions
//! past their timeout. A broker that takes the coordinator over opens the
//! log at its epoch (fencing the previous owner), replays it
//! (`coordinator::recover`) and finishes every COMMITTING or ABORTING
//! transaction. An append refused by the fence stops this instance: it
//! answers [`NotOwner`] and acts no further.

use crate::pulsar::control::{At, calls};
use crate::pulsar::ids::PulsarCounter;
use crate::pulsar::invariants::Writer;
use crate::pulsar::nodes::route::Router;
use crate::pulsar::rpc::{MarkerCall, NotOwner, Refusal};
use crate::pulsar::store::COORDINATOR;
use crate::pulsar::{Cluster, broker_addr};
use crate::world::intercept::MsgTag;
use crate::world::port::Port;
use crate::world::{Carried, deadline};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use madsim::time::{Duration, sleep};
use percsim_protocol::pulsar::client::{TcReply, TcRequest};
use percsim_protocol::pulsar::coordinator::{
    self, LogRecord, TcAction, TcError, TcState, TxnState,
};
use percsim_protocol::pulsar::ownership::{Epochs, Resource, check_append};
use percsim_protocol::pulsar::points::ServerPoint;
use percsim_protocol::pulsar::types::{Marker, Participant, Partition, TxnAction, TxnId};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// One instance of the coordinator, on the broker that owns it at `epoch`.
pub(crate) struct Tc {
    cluster: Arc<Cluster>,
    /// The hosting broker's node name.
    node: String,
    ep: Port,
    epoch: u64,
    /// Cleared when the broker stops serving the coordinator or the log's
    /// fence refuses an append: the instance then acts no further.
    active: AtomicBool,
    /// Set once the log is replayed: until then requests are refused as
    /// not ready.
    ready: AtomicBool,
    state: Mutex<TcState>,
    router: Router,
}

impl Tc {
    /// Start the coordinator on broker `node` at `epoch` from the log
    /// (already opened at that epoch): recover it ([`Tc::recover`]) while
    /// refusing requests as not ready.
    pub(crate) fn start(
        cluster: Arc<Cluster>,
        node: String,
        ep: Port,
        epoch: u64,
        log: Vec<LogRecord>,
    ) -> Arc<Tc> {
        let tc = Arc::new(Tc {
            cluster,
            node,
            ep,
            epoch,
            active: AtomicBool::new(true),
            ready: AtomicBool::new(false),
            state: Mutex::new(TcState::new(COORDINATOR)),
            router: Router::default(),
        });
        let t = tc.clone();
        madsim::task::spawn(async move { t.recover(log).await });
        tc
    }

    /// Replay `log`, which takes `recovery_us_per_entry` per record
    /// (Pulsar's `MLTransactionMetadataStore` replays its managed ledger
    /// while Initializing and answers requests that it is not Ready); then
    /// serve requests, finish every COMMITTING or ABORTING transaction and
    /// start the timeout scan.
    async fn recover(self: Arc<Self>, log: Vec<LogRecord>) {
        let at = At::default();
        let point = ServerPoint::DuringRecovery;
        self.cluster.reached(&self.node, point, at).await;
        sleep(self.cluster.recovery_time(log.len() as u64)).await;
        if !self.active() {
            return;
        }
        let (state, _) = coordinator::recover(COORDINATOR, &log);
        let ending: Vec<(TxnId, TxnAction)> = state
            .txns()
            .filter_map(|(txn, m)| match m.state {
                TxnState::Committing => Some((txn, TxnAction::Commit)),
                TxnState::Aborting => Some((txn, TxnAction::Abort)),
                _ => None,
            })
            .collect();
        *self.state() = state;
        self.ready.store(true, Ordering::Relaxed);
        for (txn, action) in ending {
            let tc = self.clone();
            madsim::task::spawn(async move { tc.complete(txn, action).await });
        }
        let t = self.clone();
        madsim::task::spawn(async move { t.timeouts().await });
    }

    /// Whether this instance still serves the coordinator.
    pub(crate) fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// The epoch this instance owns the coordinator at.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// This instance as a writer of the log.
    fn writer(&self) -> Writer {
        Writer {
            node: self.node.clone(),
            epoch: self.epoch,
        }
    }

    /// Stop acting (the broker no longer owns the coordinator).
    pub(crate) fn stop(&self) {
        self.active.store(false, Ordering::Relaxed);
    }

    fn state(&self) -> MutexGuard<'_, TcState> {
        crate::world::lock(&self.state)
    }

    /// Append `record` to the durable log, then apply it in memory (the
    /// caller holds the state, so nothing comes in between). Refused once
    /// this instance stopped, or if a later owner fenced the log (this
    /// instance then stops).
    fn log(&self, state: &mut TcState, record: LogRecord) -> Result<(), NotOwner> {
        if !self.active() {
            return Err(NotOwner);
        }
        let mut d = self.cluster.durable();
        let epochs = Epochs {
            log: d.tc_epoch,
            writer: self.epoch,
        };
        if let Err(f) = check_append(epochs) {
            drop(d);
            self.stop();
            let resource = Resource::Coordinator(COORDINATOR);
            self.cluster.fenced(&self.node, &resource, f);
            return Err(NotOwner);
        }
        {
            let mut watch = self.cluster.watch();
            let resource = Resource::Coordinator(COORDINATOR);
            watch.append(&resource, &self.writer());
            watch.tc_record(&record);
        }
        d.tc_log.push(record.clone());
        drop(d);
        let c = &self.cluster;
        match &record {
            LogRecord::State {
                txn,
                state: TxnState::Committing,
            } => c.stream().commit_logged(*txn, c.world.now_ns()),
            LogRecord::State {
                txn,
                state: TxnState::Aborting,
            } => c.stream().abort_logged(*txn, c.world.now_ns()),
            _ => {}
        }
        state.apply(&record);
        Ok(())
    }

    /// The time an append to the log takes, for the transaction `txn`
    /// (none: an OPEN not yet numbered) and the participant on `partition`
    /// if any. The append is issued first: a driver's stop at
    /// [`ServerPoint::AppendInFlight`] kills the broker with the record
    /// not stored, or holds it in flight.
    async fn append_latency(&self, txn: Option<TxnId>, partition: Option<Partition>) {
        let at = At { txn, partition };
        let point = ServerPoint::AppendInFlight;
        self.cluster.reached(&self.node, point, at).await;
        let ms = self.cluster.cfg.log_write_ms;
        if ms > 0 {
            sleep(Duration::from_millis(ms)).await;
        }
    }

    async fn reached(&self, point: ServerPoint, txn: TxnId, partition: Option<Partition>) {
        let at = At {
            txn: Some(txn),
            partition,
        };
        self.cluster.reached(&self.node, point, at).await;
    }

    /// Serve one client request, once recovered (before: not ready).
    pub(crate) async fn handle(self: Arc<Self>, req: TcRequest) -> Result<TcReply, Refusal> {
        if !self.ready.load(Ordering::Relaxed) {
            self.cluster.bump(PulsarCounter::NotReady);
            return Err(Refusal::Recovering);
        }
        Ok(self.serve(req).await?)
    }

    /// Serve one client request on the recovered state.
    async fn serve(self: Arc<Self>, req: TcRequest) -> Result<TcReply, NotOwner> {
        match req {
            TcRequest::Open {
                producer,
                timeout_ms,
            } => {
                self.append_latency(None, None).await;
                let txn = {
                    let mut s = self.state();
                    let deadline = self.cluster.now_ms() + timeout_ms;
                    let (txn, record) = coordinator::open(&s, producer, deadline);
                    self.log(&mut s, record)?;
                    let now_ns = self.cluster.world.now_ns();
                    self.cluster.stream().opened(txn, timeout_ms, now_ns);
                    txn
                };
                self.reached(ServerPoint::AfterOpenLogged, txn, None).await;
                Ok(TcReply::Opened(txn))
            }
            TcRequest::AddParticipant { txn, participant } => {
                let partition = match &participant {
                    Participant::Partition(p) => p.clone(),
                    Participant::Subscription(s) => s.partition.clone(),
                };
                self.append_latency(Some(txn), Some(partition)).await;
                let mut s = self.state();
                match coordinator::add_participant(&s, txn, &participant) {
                    Ok(Some(record)) => {
                        self.log(&mut s, record)?;
                        Ok(TcReply::Added)
                    }
                    Ok(None) => Ok(TcReply::Added),
                    Err(e) => Ok(TcReply::Refused(e)),
                }
            }
            TcRequest::End { txn, action } => self.end(txn, action).await,
        }
    }

    /// Commit or abort: log COMMITTING/ABORTING, send the markers, log the
    /// end, answer. A retry of an end under way resends the markers.
    async fn end(self: Arc<Self>, txn: TxnId, action: TxnAction) -> Result<TcReply, NotOwner> {
        let ablations = self.cluster.cfg.ablations;
        let (early, logs) = {
            let s = self.state();
            match coordinator::end(&s, txn, action, ablations) {
                Ok(plan) => (
                    matches!(plan.first(), Some(TcAction::Reply(_))),
                    plan.iter().any(|a| matches!(a, TcAction::Log(_))),
                ),
                Err(e) => return Ok(TcReply::Refused(e)),
            }
        };
        self.reached(ServerPoint::BeforeEndingLogged, txn, None)
            .await;
        if early {
            // The ablated coordinator answers before the record is durable.
            let tc = self.clone();
            madsim::task::spawn(async move {
                tc.reached(ServerPoint::EndingInFlight, txn, None).await;
                tc.append_latency(Some(txn), None).await;
                if tc.log_end(txn, action) {
                    tc.reached(ServerPoint::AfterEndingLogged, txn, None).await;
                }
                tc.complete(txn, action).await;
            });
            return Ok(TcReply::Ended(action));
        }
        if logs {
            self.reached(ServerPoint::EndingInFlight, txn, None).await;
        }
        self.append_latency(Some(txn), None).await;
        let plan = {
            let mut s = self.state();
            match coordinator::end(&s, txn, action, ablations) {
                Ok(plan) => {
                    for a in &plan {
                        if let TcAction::Log(r) = a {
                            self.log(&mut s, r.clone())?;
                        }
                    }
                    plan
                }
                Err(e) => return Ok(TcReply::Refused(e)),
            }
        };
        if plan.iter().any(|a| matches!(a, TcAction::Log(_))) {
            self.reached(ServerPoint::AfterEndingLogged, txn, None)
                .await;
        }
        self.send_markers(markers_of(&plan)).await;
        self.finish(txn).await
    }

    /// Log the ending state of `txn` as the (ablated) plan has it; whether
    /// anything was logged.
    fn log_end(&self, txn: TxnId, action: TxnAction) -> bool {
        let mut s = self.state();
        let state = TxnState::ending(action);
        match s.txn(txn) {
            Some(m) if m.state.can_become(state) => {
                self.log(&mut s, LogRecord::State { txn, state }).is_ok()
            }
            _ => false,
        }
    }

    /// Finish a transaction already COMMITTING or ABORTING (after a
    /// restart, a timeout, or an early answer): markers, then the end.
    async fn complete(&self, txn: TxnId, action: TxnAction) {
        let markers = {
            let s = self.state();
            match coordinator::end(&s, txn, action, self.cluster.cfg.ablations) {
                Ok(plan) => markers_of(&plan),
                Err(_) => return,
            }
        };
        self.send_markers(markers).await;
        let _ = self.finish(txn).await;
    }

    /// Log COMMITTED/ABORTED and answer with the outcome.
    async fn finish(&self, txn: TxnId) -> Result<TcReply, NotOwner> {
        self.append_latency(Some(txn), None).await;
        let reply = {
            let mut s = self.state();
            match coordinator::finish(&s, txn) {
                Ok(plan) => {
                    let mut reply = TcReply::Refused(TcError::NotFound(txn));
                    for a in plan {
                        match a {
                            TcAction::Log(r) => self.log(&mut s, r)?,
                            TcAction::Reply(action) => reply = TcReply::Ended(action),
                            TcAction::SendMarkers(_) => {}
                        }
                    }
                    reply
                }
                Err(e) => return Ok(TcReply::Refused(e)),
            }
        };
        self.reached(ServerPoint::AfterEndLogged, txn, None).await;
        Ok(reply)
    }

    /// Send every marker until its broker acknowledges it.
    async fn send_markers(&self, markers: Vec<Marker>) {
        let total = markers.len();
        let Some(txn) = markers.first().map(|m| m.txn) else {
            return;
        };
        let mut pending: FuturesUnordered<_> =
            markers.into_iter().map(|m| self.send_marker(m)).collect();
        let mut done = 0;
        while let Some(partition) = pending.next().await {
            done += 1;
            if done == 1 && total > 1 {
                let first = Some(partition);
                self.reached(ServerPoint::AfterFirstMarker, txn, first)
                    .await;
            }
        }
        self.reached(ServerPoint::AfterAllMarkers, txn, None).await;
    }

    /// Send `marker` to the broker that owns its partition (looked up,
    /// and looked up again after "not owner" or no answer) until it is
    /// acknowledged, or this instance stops.
    async fn send_marker(&self, marker: Marker) -> Partition {
        let partition = match &marker.to {
            Participant::Partition(p) => p.clone(),
            Participant::Subscription(s) => s.partition.clone(),
        };
        let resource = Resource::Partition(partition.clone());
        let world = &self.cluster.world;
        let timeout = Duration::from_millis(world.config().rpc_timeout_ms);
        while self.active() {
            if let Ok(owner) = self.router.owner(&self.cluster, &self.ep, &resource).await {
                let dst = broker_addr(owner);
                world.watchdog_tick();
                let call = MarkerCall(marker.clone());
                let answer = if world.intercepting() {
                    let tag = MsgTag {
                        call: calls::MARKER,
                        txn: Some(marker.txn.seq),
                        item: Some(partition.to_string()),
                        from: self.node.clone(),
                    };
                    world
                        .call_tagged(&self.ep, dst, call, tag, timeout)
                        .await
                        .ok()
                } else if world.carry(dst, &call) == Carried::Late {
                    // The network holds this marker back; it lands late, unanswered.
                    sleep(timeout).await;
                    None
                } else {
                    deadline::call(&self.ep, dst, call, timeout).await.ok()
                };
                match answer {
                    Some(Ok(())) => return partition,
                    // A recovering owner stays the owner: try it again.
                    Some(Err(Refusal::Recovering)) => {}
                    Some(Err(Refusal::NotOwner)) => {
                        self.cluster.bump(PulsarCounter::NotOwner);
                        self.router.forget(&resource);
                    }
                    None => self.router.forget(&resource),
                }
            }
            sleep(Duration::from_millis(50)).await;
        }
        partition
    }

    /// Abort transactions past their timeout, every `timeout_scan_ms`.
    async fn timeouts(self: Arc<Self>) {
        let every = Duration::from_millis(self.cluster.cfg.timeout_scan_ms);
        loop {
            sleep(every).await;
            if !self.active() {
                return;
            }
            let now = self.cluster.now_ms();
            let due: Vec<TxnId> = {
                let s = self.state();
                coordinator::due(&s, now)
                    .into_iter()
                    // Already aborting: its markers are under way.
                    .filter(|t| s.txn(*t).is_some_and(|m| m.state != TxnState::Aborting))
                    .collect()
            };
            for txn in due {
                let started = {
                    let mut s = self.state();
                    match coordinator::timeout(&s, txn, now, self.cluster.cfg.ablations) {
                        Ok(plan) if !plan.is_empty() => plan.iter().all(|a| match a {
                            TcAction::Log(r) => self.log(&mut s, r.clone()).is_ok(),
                            _ => true,
                        }),
                        _ => false,
                    }
                };
                if started {
                    self.cluster.bump(PulsarCounter::TxnTimedOut);
                    let c = &self.cluster;
                    c.stream().timed_out(txn, c.world.now_ns());
                    let tc = self.clone();
                    madsim::task::spawn(async move { tc.complete(txn, TxnAction::Abort).await });
                }
            }
        }
    }
}

fn markers_of(plan: &[TcAction]) -> Vec<Marker> {
    plan.iter()
        .flat_map(|a| match a {
            TcAction::SendMarkers(m) => m.clone(),
            _ => Vec::new(),
        })
        .collect()
}
