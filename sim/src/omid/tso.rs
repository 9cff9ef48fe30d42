//! The TSO: it hands out timestamps from a persisted range and decides
//! commits with its bounded conflict map; a commit decision is written to
//! the commit table before the client is told ("Omid, Reloaded", section
//! 4). It serves only while it holds the lease in the liveness service
//! (section 5): a TSO that takes the lease in a new epoch first fences the
//! commit table on every tablet server and the persisted ceiling with its
//! epoch, then starts its timestamps and its low watermark at the persisted
//! ceiling, so every transaction begun under an earlier term is settled
//! only through the commit table. A TSO whose lease ran out, or whose
//! epoch was fenced, stops serving and answers "not primary". Its memory
//! (the term: range, conflict map, decisions) dies with its incarnation.

use super::rpc::{
    self, BeginReply, BeginReq, CommitReply, CommitReq, LeaseReply, LeaseReq, OmidCounter, StoreOp,
    StoreReply,
};
use super::store::{Caller, tablet_of_txn};
use super::types::Shared;
use crate::world::port::Port;
use crate::world::serve::{Cpu, spend};
use crate::world::{NodeName, lock};
use madsim::time::{Duration, Instant, sleep};
use percsim_protocol::omid::actions::begin::{self, TsRange};
use percsim_protocol::omid::actions::conflict::{self, AbortReason, ConflictMap};
use percsim_protocol::omid::actions::lease::LeaseGrant;
use percsim_protocol::omid::{CtEntry, OmidAblation, OmidPoint};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One term of a TSO as primary: what it keeps in memory.
struct Term {
    /// The lease's epoch.
    epoch: u64,
    /// The TSO's own bound on its lease: no later than the liveness
    /// service's (it is counted from before the request was sent).
    valid_until: Instant,
    /// The timestamps in use.
    range: TsRange,
    /// The conflict map and low watermark.
    map: ConflictMap,
    /// Commits this term decided: start timestamp to commit timestamp (a
    /// retried request gets the same answer).
    decided: BTreeMap<u64, u64>,
}

/// Why a TSO cannot serve.
#[derive(Debug)]
struct NotPrimary;

/// One incarnation of a TSO (the first one or the backup).
struct Tso {
    shared: Arc<Shared>,
    name: NodeName,
    port: Port,
    /// Its term, while it is the primary.
    term: Mutex<Option<Term>>,
    /// One timestamp or decision at a time.
    gate: futures::lock::Mutex<()>,
    /// Its processor, when the cost model is on.
    cpu: Arc<Mutex<Cpu>>,
}

/// Run one incarnation of TSO `name`: serve begins and commits, and hold
/// (or wait for) the lease.
pub(super) async fn run(shared: Arc<Shared>, name: NodeName) {
    let port = Port::bind(&shared.world, rpc::tso_addr_of(&name.to_string()));
    let cpu = Cpu::new(TSO_CPU, shared.cfg.costs.tso_cores);
    let me = Arc::new(Tso {
        shared,
        name,
        port,
        term: Mutex::default(),
        gate: futures::lock::Mutex::new(()),
        cpu,
    });
    let m = me.clone();
    crate::world::serve::serve_counting(&me.port, move |_: BeginReq| {
        let m = m.clone();
        async move {
            m.spend_request().await;
            let _turn = m.gate.lock().await;
            match m.timestamp().await {
                Ok(ts) => BeginReply::Started(ts),
                Err(NotPrimary) => BeginReply::NotPrimary,
            }
        }
    });
    let m = me.clone();
    crate::world::serve::serve_counting(&me.port, move |req: CommitReq| {
        let m = m.clone();
        async move {
            m.spend_request().await;
            m.commit(req).await
        }
    });
    me.hold_lease().await
}

/// The counter of the TSOs' busy CPU microseconds (cost model on).
pub(super) const TSO_CPU: &str = "cpu.busy_us.tso";

impl Tso {
    fn ablated(&self, a: OmidAblation) -> bool {
        self.shared.ablations.has(a)
    }

    fn caller(&self) -> Caller<'_> {
        Caller {
            shared: &self.shared,
            port: &self.port,
            name: &self.name,
        }
    }

    /// Spend one request's CPU time (cost model on): a begin, or a
    /// commit's conflict check and decision. Requests queue for the core.
    async fn spend_request(&self) {
        let costs = &self.shared.cfg.costs;
        if costs.enabled {
            spend(&self.shared.world, &self.cpu, costs.tso_request_us).await;
        }
    }

    fn lease_ms(&self) -> u64 {
        self.shared.cfg.lease_ms
    }

    /// Ask for the lease four times a lease: take it over when it is free,
    /// renew it while held, step down when another TSO holds it.
    async fn hold_lease(self: Arc<Self>) {
        let who = self.name.to_string();
        // Connect first: the liveness service starts at the same instant,
        // and an Acquire sent before it listens would be lost and wait out
        // a whole call time-out, every client waiting for a primary.
        self.port.wait_listening(rpc::liveness_addr()).await;
        if self.name == rpc::BACKUP_KIND.single() {
            // The backup starts as the standby: the first TSO, started
            // beside it, asks first and is the primary; the backup takes
            // the lease over only when the primary's lapses.
            sleep(Duration::from_millis(self.lease_ms() / 4)).await;
        }
        loop {
            let sent = Instant::now();
            let req = LeaseReq::Acquire { who: who.clone() };
            let reply = self
                .caller()
                .call(rpc::liveness_addr(), "lease", None, None, req)
                .await;
            let valid_until = sent + Duration::from_millis(self.lease_ms());
            match reply {
                LeaseReply::Grant(LeaseGrant::Granted { epoch }) => {
                    if self.granted(epoch, valid_until).await {
                        // Fencing took time: renew at once.
                        continue;
                    }
                }
                LeaseReply::Grant(LeaseGrant::Held { .. }) => self.step_down(None),
                LeaseReply::Holder(_) => crate::invariant::violated(
                    "the liveness service answered a grant with a holder",
                ),
            }
            sleep(Duration::from_millis(self.lease_ms() / 4)).await;
        }
    }

    /// The lease is ours in `epoch` until `valid_until`: renew the term
    /// (false), or take over in a new one (true).
    async fn granted(&self, epoch: u64, valid_until: Instant) -> bool {
        {
            let mut term = lock(&self.term);
            if let Some(t) = term.as_mut().filter(|t| t.epoch == epoch) {
                t.valid_until = valid_until;
                return false;
            }
        }
        let _turn = self.gate.lock().await;
        *lock(&self.term) = None;
        let fences = (0..self.shared.cfg.tablets).map(|tablet| async move {
            let op = StoreOp::CtFence { epoch };
            self.caller().store(tablet, None, op).await
        });
        futures::future::join_all(fences).await;
        let ceiling = {
            let mut disk = lock(&self.shared.tso_disk);
            disk.epoch = disk.epoch.max(epoch);
            disk.ceiling
        };
        let range = begin::recover(ceiling);
        *lock(&self.term) = Some(Term {
            epoch,
            valid_until,
            range,
            map: ConflictMap::new(self.shared.cfg.conflict_map_size, range.next),
            decided: BTreeMap::new(),
        });
        self.shared.bump(OmidCounter::Takeover.name());
        true
    }

    /// Leave the term (of `epoch`, or any): another TSO holds the lease or
    /// fenced this one. With the planted bug `no-tso-fencing` the TSO never
    /// notices and goes on serving.
    fn step_down(&self, epoch: Option<u64>) {
        if self.ablated(OmidAblation::NoTsoFencing) {
            return;
        }
        let mut term = lock(&self.term);
        if term
            .as_ref()
            .is_some_and(|t| epoch.is_none_or(|e| e == t.epoch))
        {
            *term = None;
            self.shared.bump(OmidCounter::SteppedDown.name());
        }
    }

    /// The epoch of the term in force now; a lease run out ends the term.
    /// With `no-tso-fencing` a term never runs out.
    fn serving(&self) -> Result<u64, NotPrimary> {
        let expired = {
            let term = lock(&self.term);
            let t = term.as_ref().ok_or(NotPrimary)?;
            if t.valid_until > Instant::now() || self.ablated(OmidAblation::NoTsoFencing) {
                return Ok(t.epoch);
            }
            t.epoch
        };
        self.step_down(Some(expired));
        Err(NotPrimary)
    }

    /// The epoch a decision carries to the commit table: none with
    /// `no-tso-fencing` (the fence cannot refuse it).
    fn fencing_epoch(&self, epoch: u64) -> Option<u64> {
        (!self.ablated(OmidAblation::NoTsoFencing)).then_some(epoch)
    }

    /// The next timestamp, persisting a new ceiling first when the range
    /// ran out. The caller holds the gate.
    async fn timestamp(&self) -> Result<u64, NotPrimary> {
        let epoch = self.serving()?;
        let take = {
            let mut term = lock(&self.term);
            let t = term.as_mut().ok_or(NotPrimary)?;
            begin::take(&mut t.range, self.shared.cfg.timestamp_batch)
        };
        if let Some(ceiling) = take.persist_ceiling {
            sleep(Duration::from_millis(self.shared.cfg.persist_ms)).await;
            let mut disk = lock(&self.shared.tso_disk);
            if self.fencing_epoch(epoch).is_some_and(|e| e < disk.epoch) {
                drop(disk);
                self.step_down(Some(epoch));
                return Err(NotPrimary);
            }
            disk.ceiling = disk.ceiling.max(ceiling);
        }
        Ok(take.ts)
    }

    /// Decide a commit: the decision already made for a retried request,
    /// else check the write set, take a commit timestamp and record it.
    /// The epoch of the term that decided.
    async fn decide(&self, req: &CommitReq) -> Result<(u64, u64), Decision> {
        let _turn = self.gate.lock().await;
        let epoch = self.serving().map_err(|_| Decision::NotPrimary)?;
        let g = self.shared.cfg.granularity;
        let keys: Vec<String> = req
            .cells
            .iter()
            .map(|(row, col)| conflict::key_of(row, col, g))
            .collect();
        {
            let term = lock(&self.term);
            let t = term.as_ref().ok_or(Decision::NotPrimary)?;
            if let Some(&commit_ts) = t.decided.get(&req.start_ts) {
                return Ok((commit_ts, epoch));
            }
            conflict::check(&t.map, req.start_ts, &keys, &self.shared.ablations)
                .map_err(Decision::Abort)?;
        }
        let commit_ts = self.timestamp().await.map_err(|_| Decision::NotPrimary)?;
        let mut term = lock(&self.term);
        let t = term.as_mut().ok_or(Decision::NotPrimary)?;
        let evicted = conflict::record(&mut t.map, &keys, commit_ts);
        for _ in 0..evicted {
            self.shared.bump(OmidCounter::Evicted.name());
        }
        t.decided.insert(req.start_ts, commit_ts);
        Ok((commit_ts, epoch))
    }

    /// Put `entry` for the transaction of `start_ts` in the commit table
    /// (a decision of `epoch`); the entry in effect, or `None` if the
    /// tablet's fence refused it.
    async fn put(&self, start_ts: u64, entry: CtEntry, epoch: Option<u64>) -> Option<CtEntry> {
        let tablet = tablet_of_txn(start_ts, self.shared.cfg.tablets);
        let op = StoreOp::CtPut {
            start_ts,
            entry,
            epoch,
        };
        match self.caller().store(tablet, None, op).await {
            StoreReply::Entry(Some(e)) => Some(e),
            StoreReply::Fenced => None,
            other => {
                crate::invariant::violated(&format!("a commit-table put was answered {other:?}"))
            }
        }
    }

    /// Serve a commit request.
    async fn commit(self: Arc<Self>, req: CommitReq) -> CommitReply {
        let (commit_ts, epoch) = match self.decide(&req).await {
            Ok(d) => d,
            Err(Decision::NotPrimary) => return CommitReply::NotPrimary,
            Err(Decision::Abort(AbortReason::BelowLowWatermark { low_watermark })) => {
                return self.fence(req.start_ts, low_watermark).await;
            }
            Err(Decision::Abort(reason)) => return aborted(&reason),
        };
        if self.ablated(OmidAblation::ReplyBeforeCommitTable) {
            // The planted bug: answer now, persist the decision afterwards.
            let me = self.clone();
            madsim::task::spawn(async move { me.persist(req.start_ts, commit_ts, epoch).await });
            return CommitReply::Committed {
                commit_ts,
                in_commit_table: true,
            };
        }
        if self.ablated(OmidAblation::ShadowCellsBeforeCommitTable) {
            // The planted bug: the client writes its shadow cells, then the
            // commit-table entry itself.
            self.shared
                .point(OmidPoint::TsoAfterDecision, &self.name, Some(req.start_ts))
                .await;
            return CommitReply::Committed {
                commit_ts,
                in_commit_table: false,
            };
        }
        match self.persist(req.start_ts, commit_ts, epoch).await {
            Some(CtEntry::Committed { commit_ts }) => CommitReply::Committed {
                commit_ts,
                in_commit_table: true,
            },
            Some(CtEntry::Invalid) => {
                self.shared.bump(OmidCounter::CommitInvalidated.name());
                aborted(&AbortReason::Invalidated)
            }
            None => {
                self.shared.bump(OmidCounter::FencedDecision.name());
                self.step_down(Some(epoch));
                CommitReply::NotPrimary
            }
        }
    }

    /// Write the decision `commit_ts` (of `epoch`) of the transaction of
    /// `start_ts` to the commit table, passing the named points on either
    /// side; the entry in effect, or `None` if the fence refused it.
    async fn persist(&self, start_ts: u64, commit_ts: u64, epoch: u64) -> Option<CtEntry> {
        self.batch_flush().await;
        self.shared
            .point(OmidPoint::TsoAfterDecision, &self.name, Some(start_ts))
            .await;
        let committed = CtEntry::Committed { commit_ts };
        let entry = self
            .put(start_ts, committed, self.fencing_epoch(epoch))
            .await;
        if let Some(CtEntry::Committed { .. }) = entry {
            self.shared
                .point(OmidPoint::TsoAfterCommitTable, &self.name, Some(start_ts))
                .await;
        }
        entry
    }

    /// Wait for the commit-table writer's next flush: with
    /// `ct_flush_ms` set, decisions are batched and written at every
    /// multiple of it on the simulated clock (none: each is written at once).
    async fn batch_flush(&self) {
        let flush_ms = self.shared.cfg.ct_flush_ms;
        if flush_ms == 0 {
            return;
        }
        let flush_ns = flush_ms * 1_000_000;
        let now_ns = self.shared.world.now_ns();
        let wait_ns = flush_ns - now_ns % flush_ns;
        sleep(Duration::from_nanos(wait_ns)).await;
    }

    /// Abort a transaction that started below the low watermark: it may
    /// have been decided by an earlier term, so the commit table settles it
    /// (an invalid entry fences a decision still on its way there).
    async fn fence(&self, start_ts: u64, low_watermark: u64) -> CommitReply {
        self.shared.bump(OmidCounter::BelowLowWatermark.name());
        match self.put(start_ts, CtEntry::Invalid, None).await {
            Some(CtEntry::Committed { commit_ts }) => CommitReply::Committed {
                commit_ts,
                in_commit_table: true,
            },
            _ => aborted(&AbortReason::BelowLowWatermark { low_watermark }),
        }
    }
}

/// What keeps a commit from being decided.
enum Decision {
    /// This TSO is not the primary.
    NotPrimary,
    /// The conflict check aborted it.
    Abort(AbortReason),
}

/// The reply of an abort for `reason`.
fn aborted(reason: &AbortReason) -> CommitReply {
    CommitReply::Aborted {
        reason: reason.name().to_string(),
    }
}
