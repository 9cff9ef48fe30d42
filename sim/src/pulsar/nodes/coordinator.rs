//! The transaction coordinator: runs the protocol's coordinator steps,
//! appends every state change to its durable transaction log before acting
//! on it (each append takes `log_write_ms`), sends markers to the brokers
//! until each is acknowledged, and aborts transactions past their timeout.
//! On restart it replays the log (`coordinator::recover`) and finishes
//! every COMMITTING or ABORTING transaction.

use crate::pulsar::rpc::{MarkerCall, TcCall};
use crate::pulsar::store::COORDINATOR;
use crate::pulsar::{COORDINATOR_NODE, Cluster, broker_addr, coordinator_addr};
use crate::world::serve::{Intake, serve};
use crate::world::{Carried, deadline};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use madsim::net::Endpoint;
use madsim::time::{Duration, sleep};
use percsim_protocol::pulsar::client::{TcReply, TcRequest};
use percsim_protocol::pulsar::coordinator::{
    self, LogRecord, TcAction, TcError, TcState, TxnState,
};
use percsim_protocol::pulsar::points::ServerPoint;
use percsim_protocol::pulsar::types::{Marker, Participant, TxnAction, TxnId};
use std::sync::{Arc, Mutex, MutexGuard};

/// One incarnation of the coordinator.
struct Tc {
    cluster: Arc<Cluster>,
    ep: Endpoint,
    state: Mutex<TcState>,
}

pub(crate) async fn main(cluster: Arc<Cluster>) {
    let ep = Endpoint::bind(coordinator_addr())
        .await
        .expect("coordinator: bind");
    let log = cluster.durable().tc_log.clone();
    let (state, _) = coordinator::recover(COORDINATOR, &log);
    let ending: Vec<(TxnId, TxnAction)> = state
        .txns()
        .filter_map(|(txn, m)| match m.state {
            TxnState::Committing => Some((txn, TxnAction::Commit)),
            TxnState::Aborting => Some((txn, TxnAction::Abort)),
            _ => None,
        })
        .collect();
    let tc = Arc::new(Tc {
        cluster,
        ep: ep.clone(),
        state: Mutex::new(state),
    });
    for (txn, action) in ending {
        let tc = tc.clone();
        madsim::task::spawn(async move { tc.complete(txn, action).await });
    }
    let t = tc.clone();
    madsim::task::spawn(async move { t.timeouts().await });
    let t = tc.clone();
    serve(&ep, Intake::Busy, move |call: TcCall| {
        let t = t.clone();
        async move { t.handle(call.0).await }
    });
    std::future::pending::<()>().await
}

impl Tc {
    fn state(&self) -> MutexGuard<'_, TcState> {
        crate::world::lock(&self.state)
    }

    /// Append `record` to the durable log, then apply it in memory (the
    /// caller holds the state, so nothing comes in between).
    fn log(&self, state: &mut TcState, record: LogRecord) {
        self.cluster.durable().tc_log.push(record.clone());
        state.apply(&record);
    }

    /// The time an append to the log takes.
    async fn append_latency(&self) {
        let ms = self.cluster.cfg.log_write_ms;
        if ms > 0 {
            sleep(Duration::from_millis(ms)).await;
        }
    }

    async fn reached(&self, point: ServerPoint) {
        self.cluster.reached(COORDINATOR_NODE, point).await;
    }

    async fn handle(self: Arc<Self>, req: TcRequest) -> TcReply {
        match req {
            TcRequest::Open {
                producer,
                timeout_ms,
            } => {
                self.append_latency().await;
                let txn = {
                    let mut s = self.state();
                    let deadline = self.cluster.now_ms() + timeout_ms;
                    let (txn, record) = coordinator::open(&s, producer, deadline);
                    self.log(&mut s, record);
                    txn
                };
                self.reached(ServerPoint::AfterOpenLogged).await;
                TcReply::Opened(txn)
            }
            TcRequest::AddParticipant { txn, participant } => {
                self.append_latency().await;
                let mut s = self.state();
                match coordinator::add_participant(&s, txn, &participant) {
                    Ok(Some(record)) => {
                        self.log(&mut s, record);
                        TcReply::Added
                    }
                    Ok(None) => TcReply::Added,
                    Err(e) => TcReply::Refused(e),
                }
            }
            TcRequest::End { txn, action } => self.end(txn, action).await,
        }
    }

    /// Commit or abort: log COMMITTING/ABORTING, send the markers, log the
    /// end, answer. A retry of an end under way resends the markers.
    async fn end(self: Arc<Self>, txn: TxnId, action: TxnAction) -> TcReply {
        let ablations = self.cluster.cfg.ablations;
        let early = {
            let s = self.state();
            match coordinator::end(&s, txn, action, ablations) {
                Ok(plan) => matches!(plan.first(), Some(TcAction::Reply(_))),
                Err(e) => return TcReply::Refused(e),
            }
        };
        if early {
            // The ablated coordinator answers before the record is durable.
            let tc = self.clone();
            madsim::task::spawn(async move {
                tc.append_latency().await;
                if tc.log_end(txn, action) {
                    tc.reached(ServerPoint::AfterEndingLogged).await;
                }
                tc.complete(txn, action).await;
            });
            return TcReply::Ended(action);
        }
        self.append_latency().await;
        let plan = {
            let mut s = self.state();
            match coordinator::end(&s, txn, action, ablations) {
                Ok(plan) => {
                    for a in &plan {
                        if let TcAction::Log(r) = a {
                            self.log(&mut s, r.clone());
                        }
                    }
                    plan
                }
                Err(e) => return TcReply::Refused(e),
            }
        };
        if plan.iter().any(|a| matches!(a, TcAction::Log(_))) {
            self.reached(ServerPoint::AfterEndingLogged).await;
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
                self.log(&mut s, LogRecord::State { txn, state });
                true
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
    async fn finish(&self, txn: TxnId) -> TcReply {
        self.append_latency().await;
        let reply = {
            let mut s = self.state();
            match coordinator::finish(&s, txn) {
                Ok(plan) => {
                    let mut reply = TcReply::Refused(TcError::NotFound(txn));
                    for a in plan {
                        match a {
                            TcAction::Log(r) => self.log(&mut s, r),
                            TcAction::Reply(action) => reply = TcReply::Ended(action),
                            TcAction::SendMarkers(_) => {}
                        }
                    }
                    reply
                }
                Err(e) => return TcReply::Refused(e),
            }
        };
        self.reached(ServerPoint::AfterEndLogged).await;
        reply
    }

    /// Send every marker until its broker acknowledges it.
    async fn send_markers(&self, markers: Vec<Marker>) {
        let total = markers.len();
        let mut pending: FuturesUnordered<_> =
            markers.into_iter().map(|m| self.send_marker(m)).collect();
        let mut done = 0;
        while pending.next().await.is_some() {
            done += 1;
            if done == 1 && total > 1 {
                self.reached(ServerPoint::AfterFirstMarker).await;
            }
        }
        if total > 0 {
            self.reached(ServerPoint::AfterAllMarkers).await;
        }
    }

    async fn send_marker(&self, marker: Marker) {
        let partition = match &marker.to {
            Participant::Partition(p) => p.clone(),
            Participant::Subscription(s) => s.partition.clone(),
        };
        let Some(&owner) = self.cluster.owner.get(&partition) else {
            return;
        };
        let dst = broker_addr(owner);
        let world = &self.cluster.world;
        let timeout = Duration::from_millis(world.config().rpc_timeout_ms);
        loop {
            world.watchdog_tick();
            let call = MarkerCall(marker.clone());
            if world.carry(dst, &call) == Carried::Late {
                // The network holds this marker back; it lands late, unanswered.
                sleep(timeout).await;
            } else if let Ok(Ok(())) = deadline::call(&self.ep, dst, call, timeout).await {
                return;
            }
            sleep(Duration::from_millis(50)).await;
        }
    }

    /// Abort transactions past their timeout, every `timeout_scan_ms`.
    async fn timeouts(self: Arc<Self>) {
        let every = Duration::from_millis(self.cluster.cfg.timeout_scan_ms);
        loop {
            sleep(every).await;
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
                        Ok(plan) if !plan.is_empty() => {
                            for a in &plan {
                                if let TcAction::Log(r) = a {
                                    self.log(&mut s, r.clone());
                                }
                            }
                            true
                        }
                        _ => false,
                    }
                };
                if started {
                    self.cluster.world.recorder().bump("pulsar.txn_timed_out");
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
