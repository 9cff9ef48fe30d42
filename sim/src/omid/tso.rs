//! The TSO: it hands out timestamps from a persisted range and decides
//! commits with its bounded conflict map; a commit decision is written to
//! the commit table before the client is told ("Omid, Reloaded", section
//! 4). Its memory (the range in use, the conflict map, its low watermark,
//! the decisions it made) dies with its incarnation; a new one starts its
//! timestamps and its low watermark at the persisted ceiling, so every
//! transaction begun under an earlier one is checked only through the
//! commit table.

use super::Shared;
use super::rpc::{
    self, BeginReq, CommitReply, CommitReq, OmidCounter, StoreOp, StoreReply, TSO_KIND,
};
use super::store::{Caller, tablet_of_txn};
use crate::world::port::Port;
use crate::world::{NodeName, lock};
use madsim::time::{Duration, sleep};
use percsim_protocol::omid::actions::begin::{self, TsRange};
use percsim_protocol::omid::actions::conflict::{self, AbortReason, ConflictMap};
use percsim_protocol::omid::{CtEntry, OmidAblation, OmidPoint};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One incarnation of the TSO.
struct Tso {
    shared: Arc<Shared>,
    name: NodeName,
    port: Port,
    /// The timestamps in use.
    range: Mutex<TsRange>,
    /// The conflict map and low watermark.
    map: Mutex<ConflictMap>,
    /// Commits this incarnation decided: start timestamp to commit
    /// timestamp (a retried request gets the same answer).
    decided: Mutex<BTreeMap<u64, u64>>,
    /// One timestamp or decision at a time.
    gate: futures::lock::Mutex<()>,
}

/// Run one incarnation of the TSO: recover the persisted ceiling, then
/// serve begins and commits.
pub(super) async fn run(shared: Arc<Shared>) {
    let port = Port::bind(&shared.world, rpc::tso_addr());
    let range = begin::recover(*lock(&shared.tso_ceiling));
    let map = ConflictMap::new(shared.cfg.conflict_map_size, range.next);
    let me = Arc::new(Tso {
        shared,
        name: TSO_KIND.single(),
        port,
        range: Mutex::new(range),
        map: Mutex::new(map),
        decided: Mutex::default(),
        gate: futures::lock::Mutex::new(()),
    });
    let m = me.clone();
    crate::world::serve::serve_counting(&me.port, move |_: BeginReq| {
        let m = m.clone();
        async move {
            let _turn = m.gate.lock().await;
            m.timestamp().await
        }
    });
    let m = me.clone();
    crate::world::serve::serve_counting(&me.port, move |req: CommitReq| {
        let m = m.clone();
        async move { m.commit(req).await }
    });
    std::future::pending::<()>().await
}

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

    /// The next timestamp, persisting a new ceiling first when the range
    /// ran out. The caller holds the gate.
    async fn timestamp(&self) -> u64 {
        let take = begin::take(&mut lock(&self.range), self.shared.cfg.timestamp_batch);
        if let Some(ceiling) = take.persist_ceiling {
            sleep(Duration::from_millis(self.shared.cfg.persist_ms)).await;
            let mut persisted = lock(&self.shared.tso_ceiling);
            *persisted = (*persisted).max(ceiling);
        }
        take.ts
    }

    /// Decide a commit: the decision already made for a retried request,
    /// else check the write set, take a commit timestamp and record it.
    async fn decide(&self, req: &CommitReq) -> Result<u64, AbortReason> {
        let _turn = self.gate.lock().await;
        if let Some(&commit_ts) = lock(&self.decided).get(&req.start_ts) {
            return Ok(commit_ts);
        }
        let g = self.shared.cfg.granularity;
        let keys: Vec<String> = req
            .cells
            .iter()
            .map(|(row, col)| conflict::key_of(row, col, g))
            .collect();
        conflict::check(
            &lock(&self.map),
            req.start_ts,
            &keys,
            &self.shared.ablations,
        )?;
        let commit_ts = self.timestamp().await;
        let evicted = conflict::record(&mut lock(&self.map), &keys, commit_ts);
        for _ in 0..evicted {
            self.shared.bump(OmidCounter::Evicted.name());
        }
        lock(&self.decided).insert(req.start_ts, commit_ts);
        Ok(commit_ts)
    }

    /// Put `entry` for the transaction of `start_ts` in the commit table;
    /// answer the entry in effect.
    async fn put(&self, start_ts: u64, entry: CtEntry) -> CtEntry {
        let tablet = tablet_of_txn(start_ts, self.shared.cfg.tablets);
        let op = StoreOp::CtPut { start_ts, entry };
        match self.caller().store(tablet, None, op).await {
            StoreReply::Entry(Some(e)) => e,
            other => {
                crate::invariant::violated(&format!("a commit-table put was answered {other:?}"))
            }
        }
    }

    /// Serve a commit request.
    async fn commit(self: Arc<Self>, req: CommitReq) -> CommitReply {
        let commit_ts = match self.decide(&req).await {
            Ok(c) => c,
            Err(AbortReason::BelowLowWatermark { .. }) => return self.fence(req.start_ts).await,
            Err(reason) => return aborted(&reason),
        };
        if self.ablated(OmidAblation::ReplyBeforeCommitTable) {
            // The planted bug: answer now, persist the decision afterwards.
            let me = self.clone();
            madsim::task::spawn(async move { me.persist(req.start_ts, commit_ts).await });
            return CommitReply::Committed {
                commit_ts,
                in_commit_table: true,
            };
        }
        if self.ablated(OmidAblation::ShadowCellsBeforeCommitTable) {
            // The planted bug: the client writes its shadow cells, then the
            // commit-table entry itself.
            self.shared
                .point(OmidPoint::TsoAfterDecision, &self.name)
                .await;
            return CommitReply::Committed {
                commit_ts,
                in_commit_table: false,
            };
        }
        match self.persist(req.start_ts, commit_ts).await {
            CtEntry::Committed { commit_ts } => CommitReply::Committed {
                commit_ts,
                in_commit_table: true,
            },
            CtEntry::Invalid => {
                self.shared.bump(OmidCounter::CommitInvalidated.name());
                aborted(&AbortReason::Invalidated)
            }
        }
    }

    /// Write the decision `commit_ts` of the transaction of `start_ts` to
    /// the commit table, passing the crash points on either side; answer
    /// the entry in effect.
    async fn persist(&self, start_ts: u64, commit_ts: u64) -> CtEntry {
        self.shared
            .point(OmidPoint::TsoAfterDecision, &self.name)
            .await;
        let entry = self.put(start_ts, CtEntry::Committed { commit_ts }).await;
        if let CtEntry::Committed { .. } = entry {
            self.shared
                .point(OmidPoint::TsoAfterCommitTable, &self.name)
                .await;
        }
        entry
    }

    /// Abort a transaction that started below the low watermark: it may
    /// have been decided by an earlier TSO, so the commit table settles it
    /// (an invalid entry fences a decision still on its way there).
    async fn fence(&self, start_ts: u64) -> CommitReply {
        self.shared.bump(OmidCounter::BelowLowWatermark.name());
        match self.put(start_ts, CtEntry::Invalid).await {
            CtEntry::Committed { commit_ts } => CommitReply::Committed {
                commit_ts,
                in_commit_table: true,
            },
            CtEntry::Invalid => {
                let low_watermark = lock(&self.map).low_watermark;
                aborted(&AbortReason::BelowLowWatermark { low_watermark })
            }
        }
    }
}

/// The reply of an abort for `reason`.
fn aborted(reason: &AbortReason) -> CommitReply {
    CommitReply::Aborted {
        reason: reason.name().to_string(),
    }
}
