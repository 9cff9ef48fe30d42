//! A Percolator transaction (paper, Figure 6): snapshot reads at start_ts,
//! writes buffered until a two-phase commit coordinated by the client.
//! Unlike Figure 6, which locks the primary before the secondaries, every
//! lock is requested at once, as the paper's batching section describes
//! ("locks are acquired in parallel"); the primary stays the commit point.
//! A reader may then meet a secondary's lock before the primary's has
//! landed: its cleanup leaves a rollback record at the bare primary
//! (`actions::cleanup`, TiKV's protected rollback; the paper does not
//! discuss the case), which refuses the late prewrite.

use super::error::TxnError;
use super::ledger::{Host, Suspicion, TxnEvent};
use super::outcome::{AbortReason, CommitOutcome};
use super::resolve::{Backoff, resolve_secondary, settle_primary, wait_or_clean};
use super::transport::StepPoint;
use crate::common::RpcError;
use crate::percolator::ablation::Ablation;
use crate::percolator::actions::{
    GetResult, Prewrite, PrewriteError, RowReply, RowRequest, TxnStatus,
};
use crate::percolator::types::{CellKey, Lock, MutationKind, Ts, TxnTs};
use futures::future::Either;
use std::convert::Infallible;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};

/// A transaction in progress. Reads see the snapshot at start_ts (not the
/// transaction's own buffered writes, as in the paper's pseudocode).
pub struct Transaction<'t, T: Host> {
    t: &'t T,
    id: u64,
    start_ts: Ts,
    /// Buffered writes in first-write order; the first is the primary.
    writes: Vec<(CellKey, Option<String>)>,
}

impl<'t, T: Host> Transaction<'t, T> {
    /// Begin: register the transaction and take a start_ts from the oracle.
    pub async fn begin(t: &'t T) -> Result<Self, TxnError> {
        let id = t.begin_txn();
        let from_oracle = match t.ablations().has(Ablation::WallClockStartTs) {
            // Microseconds of the client's own clock, like the oracle's floor.
            true => Ok(Ts(t.wall_ms() * 1_000 + id % 1_000)),
            false => t.timestamp().await,
        };
        let start_ts = match from_oracle {
            Ok(ts) => ts,
            Err(e) => {
                let reason = AbortReason::Unavailable;
                t.txn_event(id, TxnEvent::Finished(CommitOutcome::Aborted { reason }));
                return Err(e.into());
            }
        };
        t.txn_event(id, TxnEvent::Started { start_ts });
        Ok(Transaction {
            t,
            id,
            start_ts,
            writes: Vec::new(),
        })
    }

    /// The transaction's id in the history.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The snapshot timestamp.
    pub fn start_ts(&self) -> Ts {
        self.start_ts
    }

    /// The transport the transaction runs on.
    pub fn transport(&self) -> &'t T {
        self.t
    }

    /// Read a cell at the snapshot.
    pub async fn get(&mut self, row: &str, col: &str) -> Result<Option<String>, TxnError> {
        let value = self.get_cell(&CellKey::new(row, col)).await?;
        self.t.txn_event(
            self.id,
            TxnEvent::Read {
                cell: CellKey::new(row, col),
                value: value.clone(),
            },
        );
        Ok(value)
    }

    /// Read a cell at the snapshot, with the commit_ts of the version read
    /// (`None` when no version is visible).
    pub async fn get_version(
        &mut self,
        row: &str,
        col: &str,
    ) -> Result<(Option<String>, Option<Ts>), TxnError> {
        let cell = CellKey::new(row, col);
        let mut backoff = Backoff::new(self.t);
        loop {
            let req = RowRequest::GetVersion {
                col: cell.col.clone(),
                start_ts: self.start_ts,
            };
            let RowReply::Version(result, version) = self.t.row(&cell.row, req).await? else {
                panic!("tablet server answered GetVersion with another reply");
            };
            match result {
                GetResult::Value(value) => {
                    self.t.txn_event(
                        self.id,
                        TxnEvent::Read {
                            cell,
                            value: value.clone(),
                        },
                    );
                    return Ok((value, version));
                }
                GetResult::Locked(info) => {
                    wait_or_clean(self.t, &info, (self.id, self.start_ts), &mut backoff).await?
                }
            }
        }
    }

    /// Mark this transaction as running observer `name` for a notification
    /// of `row`/`col`.
    pub fn mark_observer_run(&self, name: &str, row: &str, col: &str) {
        self.t.txn_event(
            self.id,
            TxnEvent::Observer {
                name: name.to_string(),
                cell: CellKey::new(row, col),
            },
        );
    }

    async fn get_cell(&self, cell: &CellKey) -> Result<Option<String>, TxnError> {
        let mut backoff = Backoff::new(self.t);
        loop {
            let req = RowRequest::Get {
                col: cell.col.clone(),
                start_ts: self.start_ts,
            };
            let RowReply::Get(result) = self.t.row(&cell.row, req).await? else {
                panic!("tablet server answered Get with another reply");
            };
            match result {
                GetResult::Value(v) => return Ok(v),
                GetResult::Locked(info) => {
                    wait_or_clean(self.t, &info, (self.id, self.start_ts), &mut backoff).await?
                }
            }
        }
    }

    /// Read columns `cols` of every row in `[start_row, end_row)` at the
    /// snapshot, under the same lock rules as `get`. Returns the cells that
    /// have a value, in row then column order.
    pub async fn scan(
        &mut self,
        start_row: &str,
        end_row: &str,
        cols: &[String],
    ) -> Result<Vec<(CellKey, String)>, TxnError> {
        let found = self.t.scan(start_row, end_row, cols, self.start_ts).await?;
        let mut out = Vec::with_capacity(found.len());
        for (cell, result) in found {
            let value = match result {
                GetResult::Value(v) => v,
                // The ablated scan drops the locked cell without a word.
                GetResult::Locked(_) if self.t.ablations().has(Ablation::ScanSkipsLocks) => None,
                // Settle the lock exactly as a get would, then read the cell.
                GetResult::Locked(_) => self.get_cell(&cell).await?,
            };
            if let Some(v) = value {
                self.t.txn_event(
                    self.id,
                    TxnEvent::Read {
                        cell: cell.clone(),
                        value: Some(v.clone()),
                    },
                );
                out.push((cell, v));
            }
        }
        self.t.txn_event(
            self.id,
            TxnEvent::Scanned {
                start_row: start_row.to_string(),
                end_row: end_row.to_string(),
                cols: cols.to_vec(),
                start_ts: self.start_ts,
                cells: out.clone(),
            },
        );
        Ok(out)
    }

    /// Buffer a write.
    pub fn set(&mut self, row: &str, col: &str, value: impl Into<String>) {
        self.buffer(CellKey::new(row, col), Some(value.into()));
    }

    /// Buffer a delete.
    pub fn delete(&mut self, row: &str, col: &str) {
        self.buffer(CellKey::new(row, col), None);
    }

    fn buffer(&mut self, cell: CellKey, value: Option<String>) {
        self.t.txn_event(
            self.id,
            TxnEvent::Buffered {
                cell: cell.clone(),
                value: value.clone(),
            },
        );
        match self.writes.iter_mut().find(|(c, _)| *c == cell) {
            Some(slot) => slot.1 = value,
            None => self.writes.push((cell, value)),
        }
    }

    /// Give up without committing (nothing has been written).
    pub fn abort(self, reason: AbortReason) -> CommitOutcome {
        self.finish(CommitOutcome::Aborted { reason })
    }

    fn finish(&self, outcome: CommitOutcome) -> CommitOutcome {
        self.t
            .txn_event(self.id, TxnEvent::Finished(outcome.clone()));
        outcome
    }

    /// Two-phase commit: prewrite every cell at once (the primary's request
    /// issued first); take a commit_ts; commit the primary (the commit
    /// point); then the secondaries. While it runs, the primary lock's wall
    /// time is refreshed every [`ClientConfig::refresh_interval_ms`] until
    /// the commit of the primary is answered.
    ///
    /// [`ClientConfig::refresh_interval_ms`]: super::ClientConfig::refresh_interval_ms
    pub async fn commit(self) -> CommitOutcome {
        if self.writes.is_empty() {
            return self.finish(CommitOutcome::Committed { commit_ts: None });
        }
        let primary = self.writes[0].0.clone();
        let gone = AtomicBool::new(false);
        let body = pin!(self.commit_writes(&primary, &gone));
        let refresher = pin!(self.refresh_while_locked(&primary, &gone));
        match futures::future::select(body, refresher).await {
            Either::Left((outcome, _)) => outcome,
            Either::Right((never, _)) => match never {},
        }
    }

    /// [`Transaction::commit`] of a transaction with writes, whose primary
    /// lock is on `primary`; `gone` is set once a refresh found the primary
    /// lock gone (someone rolled the transaction back).
    async fn commit_writes(&self, primary: &CellKey, gone: &AtomicBool) -> CommitOutcome {
        let t = self.t;
        let primary = primary.clone();
        t.reached(self.id, StepPoint::BeforePrewrite).await;
        let sent_ms = t.wall_ms();
        // Every lock is requested at once (paper, "locks are acquired in
        // parallel"): the primary's may land after a secondary's.
        let sends = (0..self.writes.len()).map(|i| self.prewrite(i, &primary));
        let failures = futures::future::join_all(sends).await;
        if let Some(reason) = failures.into_iter().flatten().next() {
            // Any cell may hold our lock (a timed-out prewrite may have landed).
            let outcome = self.finish(CommitOutcome::Aborted { reason });
            self.roll_back_own().await;
            return outcome;
        }
        if gone.load(Ordering::Relaxed) || !self.keep_alive(&primary, sent_ms).await {
            let outcome = self.finish(CommitOutcome::Aborted {
                reason: AbortReason::RolledBack,
            });
            self.roll_back_own().await;
            return outcome;
        }
        let commit_ts = match t.timestamp().await {
            Ok(ts) => ts,
            Err(_) => {
                let outcome = self.finish(CommitOutcome::Aborted {
                    reason: AbortReason::Unavailable,
                });
                self.roll_back_own().await;
                return outcome;
            }
        };
        t.txn_event(self.id, TxnEvent::CommitTs { commit_ts });
        t.reached(self.id, StepPoint::BeforeCommitPrimary).await;
        let ts = TxnTs {
            start_ts: self.start_ts,
            commit_ts,
        };
        let secondaries_first = t.ablations().has(Ablation::SecondariesFirst);
        if secondaries_first {
            self.commit_secondaries(ts).await;
        }
        let answered = self.commit_primary(&primary, ts).await;
        // The primary lock is gone either way: nothing left to refresh.
        gone.store(true, Ordering::Relaxed);
        match answered {
            Some(Ok(())) => {}
            Some(Err(reason)) => return self.finish(CommitOutcome::Aborted { reason }),
            None => return self.finish(CommitOutcome::Unknown),
        }
        t.reached(self.id, StepPoint::AfterCommitPrimary).await;
        if !secondaries_first {
            self.commit_secondaries(ts).await;
        }
        self.finish(CommitOutcome::Committed {
            commit_ts: Some(commit_ts),
        })
    }

    /// Prewrite the `i`-th buffered write; on success the client reaches
    /// the cell's point (the others' answers may still be outstanding).
    /// Returns why its answer aborts the transaction, if it does.
    async fn prewrite(&self, i: usize, primary: &CellKey) -> Option<AbortReason> {
        let t = self.t;
        let (cell, value) = &self.writes[i];
        let lock = Lock {
            primary: primary.clone(),
            kind: if value.is_some() {
                MutationKind::Put
            } else {
                MutationKind::Delete
            },
            wall_ms: t.wall_ms(),
            owner: t.session(),
        };
        let req = RowRequest::Prewrite(Prewrite {
            col: cell.col.clone(),
            start_ts: self.start_ts,
            value: value.clone(),
            lock,
            notify: t.observed(&cell.col),
        });
        let (sent, granted) = match i {
            0 => {
                let at = StepPoint::PrewritePrimarySent;
                let sent = t.row_at(self.id, at, &cell.row, req).await;
                (sent, StepPoint::AfterPrewritePrimary)
            }
            _ => (
                t.row(&cell.row, req).await,
                StepPoint::AfterPrewriteSecondary(i),
            ),
        };
        let failure = prewrite_failure(sent);
        if failure.is_none() {
            t.reached(self.id, granted).await;
        }
        failure
    }

    /// The second phase: write the secondaries' commit records.
    async fn commit_secondaries(&self, ts: TxnTs) {
        for (i, (cell, _)) in self.writes.iter().enumerate().skip(1) {
            let req = RowRequest::Commit {
                col: cell.col.clone(),
                ts,
            };
            // A secondary left locked is rolled forward by whoever meets it.
            let _ = self.t.row(&cell.row, req).await;
            self.t
                .reached(self.id, StepPoint::AfterCommitSecondary(i))
                .await;
        }
    }

    /// Commit the primary, retrying lost replies. `None` when the outcome
    /// stays unknown.
    async fn commit_primary(
        &self,
        primary: &CellKey,
        ts: TxnTs,
    ) -> Option<Result<(), AbortReason>> {
        for attempt in 0..=self.t.config().commit_retries {
            if attempt > 0 {
                self.t
                    .sleep_ms(self.t.config().backoff_min_ms.max(1) << attempt.min(6))
                    .await;
            }
            let req = RowRequest::Commit {
                col: primary.col.clone(),
                ts,
            };
            let sent = match attempt {
                0 => {
                    let at = StepPoint::CommitPrimarySent;
                    self.t.row_at(self.id, at, &primary.row, req).await
                }
                _ => self.t.row(&primary.row, req).await,
            };
            match sent {
                Ok(RowReply::Commit(Ok(_))) => return Some(Ok(())),
                Ok(RowReply::Commit(Err(_))) => return Some(Err(AbortReason::RolledBack)),
                Ok(_) => panic!("tablet server answered Commit with another reply"),
                // Refused outright: nothing was applied, so trying again is safe.
                Err(RpcError::Unavailable) | Err(RpcError::Timeout) => continue,
            }
        }
        None
    }

    /// Refresh the primary lock's wall time if a refresh is due once every
    /// lock is answered (the locks were sent at `sent_ms`). Returns false
    /// when the primary lock is gone (someone rolled us back).
    async fn keep_alive(&self, primary: &CellKey, sent_ms: u64) -> bool {
        let now = self.t.wall_ms();
        if self.t.ablations().has(Ablation::NoLockRefresh)
            || now.saturating_sub(sent_ms) < self.t.config().refresh_interval_ms()
        {
            return true;
        }
        self.touch(primary).await
    }

    /// Refresh the primary lock's wall time to the client's clock. Returns
    /// false when the lock is gone; an unanswered refresh counts as done
    /// (the next one tries again).
    async fn touch(&self, primary: &CellKey) -> bool {
        let req = RowRequest::Touch {
            col: primary.col.clone(),
            start_ts: self.start_ts,
            wall_ms: self.t.wall_ms(),
        };
        !matches!(
            self.t.row(&primary.row, req).await,
            Ok(RowReply::Touch(false))
        )
    }

    /// Refresh the primary lock every [`ClientConfig::refresh_interval_ms`]
    /// until a refresh finds it gone or the commit of the primary was
    /// answered (`gone`); then set `gone` and wait forever (the commit's
    /// own future ends the pair). The `no-lock-refresh` ablation removes
    /// exactly this and the refresh once every lock is answered.
    ///
    /// [`ClientConfig::refresh_interval_ms`]: super::ClientConfig::refresh_interval_ms
    async fn refresh_while_locked(&self, primary: &CellKey, gone: &AtomicBool) -> Infallible {
        if !self.t.ablations().has(Ablation::NoLockRefresh) {
            self.refresh_until_gone(primary, gone).await;
            gone.store(true, Ordering::Relaxed);
        }
        std::future::pending().await
    }

    /// The refresh loop of [`Transaction::refresh_while_locked`]: returns
    /// when a refresh found the primary lock gone or `gone` was set.
    async fn refresh_until_gone(&self, primary: &CellKey, gone: &AtomicBool) {
        let every_ms = self.t.config().refresh_interval_ms();
        loop {
            self.t.sleep_ms(every_ms).await;
            if gone.load(Ordering::Relaxed) || !self.touch(primary).await {
                return;
            }
        }
    }

    /// Best-effort rollback of every cell after an abort (each prewrite had
    /// been sent, so any may have landed): the primary first (which settles
    /// the transaction), then the secondaries.
    async fn roll_back_own(&self) {
        let primary = &self.writes[0].0;
        let Ok(status) = settle_primary(self.t, primary, self.start_ts, Suspicion::OwnAbort).await
        else {
            return;
        };
        debug_assert_eq!(
            status,
            TxnStatus::RolledBack,
            "an aborting transaction cannot be committed"
        );
        for (cell, _) in self.writes.iter().skip(1) {
            if resolve_secondary(self.t, cell, self.start_ts, status, Suspicion::OwnAbort)
                .await
                .is_err()
            {
                return;
            }
        }
    }
}

/// Why a prewrite's answer aborts the transaction, if it does.
fn prewrite_failure(sent: Result<RowReply, RpcError>) -> Option<AbortReason> {
    match sent {
        Ok(RowReply::Prewrite(Ok(()))) => None,
        Ok(RowReply::Prewrite(Err(PrewriteError::WriteConflict { .. }))) => {
            Some(AbortReason::WriteConflict)
        }
        Ok(RowReply::Prewrite(Err(PrewriteError::Locked(_)))) => Some(AbortReason::LockConflict),
        Ok(RowReply::Prewrite(Err(PrewriteError::RolledBack))) => Some(AbortReason::RolledBack),
        Ok(_) => panic!("tablet server answered Prewrite with another reply"),
        Err(_) => Some(AbortReason::Unavailable),
    }
}

#[cfg(test)]
mod tests {
    use super::{AbortReason, CommitOutcome, StepPoint, Transaction};
    use crate::percolator::ablation::{Ablation, Ablations};
    use crate::percolator::actions::RowRequest;
    use crate::percolator::client::test_util::{FakeWorld, run};
    use crate::percolator::client::{ClientConfig, TxnEvent};
    use crate::percolator::types::{CellKey, SessionId, Ts, WriteKind};
    use std::future::Future;
    use std::pin::pin;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::task::{Context, Waker};

    /// Begin a transaction on `w`, buffer `writes` (row, value; `None`
    /// deletes) in column `c` and commit it.
    fn must_commit(w: &FakeWorld, writes: &[(&str, Option<&str>)]) -> CommitOutcome {
        let mut txn = run(Transaction::begin(w)).unwrap();
        for (row, value) in writes {
            match value {
                Some(v) => txn.set(row, "c", *v),
                None => txn.delete(row, "c"),
            }
        }
        run(txn.commit())
    }

    /// Whether `row`/c holds a lock, and its record at `commit_ts` (start_ts, kind).
    fn must_show(w: &FakeWorld, row: &str, commit_ts: u64) -> (bool, Option<(Ts, WriteKind)>) {
        let r = w.row_now(row);
        let col = r.col("c");
        let record = col.write.get(&Ts(commit_ts)).map(|x| (x.start_ts, x.kind));
        (!col.lock.is_empty(), record)
    }

    /// Roll back the transaction at start_ts 1 (primary `a`/c) behind its back.
    fn must_roll_back_primary(w: &FakeWorld) {
        let req = RowRequest::Cleanup {
            col: "c".into(),
            start_ts: Ts(1),
            stale: None,
        };
        w.step("a", req);
    }

    #[test]
    fn a_transaction_commits_every_cell_and_a_later_one_reads_them() {
        let w = FakeWorld::default();
        let mut txn = run(Transaction::begin(&w)).unwrap();
        assert_eq!((txn.id(), txn.start_ts()), (1, Ts(1)));
        txn.set("a", "c", "first");
        txn.set("b", "c", "x");
        txn.delete("d", "c");
        txn.set("b", "c", "two");
        txn.mark_observer_run("obs", "a", "c");
        let outcome = run(txn.commit());
        let committed = CommitOutcome::Committed {
            commit_ts: Some(Ts(2)),
        };
        assert_eq!(outcome, committed);
        assert_eq!(
            must_show(&w, "a", 2),
            (false, Some((Ts(1), WriteKind::Put)))
        );
        assert_eq!(
            must_show(&w, "b", 2),
            (false, Some((Ts(1), WriteKind::Put)))
        );
        assert_eq!(
            must_show(&w, "d", 2),
            (false, Some((Ts(1), WriteKind::Delete)))
        );
        // Nothing observes column c: no notify entry.
        assert!(w.row_now("a").notify.is_empty());
        let points: Vec<StepPoint> = w.points.lock().unwrap().iter().map(|p| p.1).collect();
        assert_eq!(
            points,
            vec![
                StepPoint::BeforePrewrite,
                StepPoint::AfterPrewritePrimary,
                StepPoint::AfterPrewriteSecondary(1),
                StepPoint::AfterPrewriteSecondary(2),
                StepPoint::BeforeCommitPrimary,
                StepPoint::AfterCommitPrimary,
                StepPoint::AfterCommitSecondary(1),
                StepPoint::AfterCommitSecondary(2),
            ]
        );
        let observer = TxnEvent::Observer {
            name: "obs".into(),
            cell: CellKey::new("a", "c"),
        };
        assert!(w.events_of(1).contains(&observer));
        assert_eq!(w.events_of(1).last(), Some(&TxnEvent::Finished(committed)));

        let mut reader = run(Transaction::begin(&w)).unwrap();
        assert_eq!((reader.id(), reader.start_ts()), (2, Ts(3)));
        assert_eq!(run(reader.get("b", "c")).unwrap(), Some("two".into()));
        let version = run(reader.get_version("a", "c")).unwrap();
        assert_eq!(version, (Some("first".into()), Some(Ts(2))));
        assert_eq!(run(reader.get("d", "c")).unwrap(), None);
        let read = TxnEvent::Read {
            cell: CellKey::new("b", "c"),
            value: Some("two".into()),
        };
        assert!(w.events_of(2).contains(&read));
        assert!(w.sleeps().is_empty());
        // No lock refresh is due while the clock stands still.
        assert_eq!(
            w.request_names(),
            [
                "a Prewrite",
                "b Prewrite",
                "d Prewrite",
                "a Commit",
                "b Commit",
                "d Commit",
                "b Get",
                "a GetVersion",
                "d Get"
            ]
        );
    }

    #[test]
    fn abort_reasons_have_their_history_names() {
        let names = [
            AbortReason::WriteConflict,
            AbortReason::LockConflict,
            AbortReason::RolledBack,
            AbortReason::LockWaitTimeout,
            AbortReason::Unavailable,
            AbortReason::User,
        ]
        .map(|r| r.name());
        assert_eq!(
            names,
            [
                "write_conflict",
                "lock_conflict",
                "rolled_back",
                "lock_wait_timeout",
                "unavailable",
                "user"
            ]
        );
    }

    #[test]
    fn a_read_only_transaction_commits_without_a_commit_ts() {
        let w = FakeWorld::default();
        let txn = run(Transaction::begin(&w)).unwrap();
        let outcome = run(txn.commit());
        assert_eq!(outcome, CommitOutcome::Committed { commit_ts: None });
        assert!(w.request_names().is_empty());
    }

    #[test]
    fn a_due_refresh_touches_the_primary_and_finds_it_rolled_back() {
        let mut w = FakeWorld::default();
        // Someone rolls the primary back once the first secondary is
        // locked, and a refresh interval passes.
        w.on_point = Some(Box::new(|w, p| {
            if p == StepPoint::AfterPrewriteSecondary(1) {
                must_roll_back_primary(w);
                *w.now_ms.lock().unwrap() += w.cfg.refresh_interval_ms();
            }
        }));
        let outcome = must_commit(&w, &[("a", Some("1")), ("b", Some("2")), ("d", None)]);
        let reason = AbortReason::RolledBack;
        assert_eq!(outcome, CommitOutcome::Aborted { reason });
        // Every lock was requested at once; the one refresh, due once all
        // are answered, finds the primary gone, and every cell is rolled back.
        assert_eq!(
            w.request_names(),
            [
                "a Prewrite",
                "b Prewrite",
                "d Prewrite",
                "a Touch",
                "a Cleanup",
                "b Resolve",
                "d Resolve"
            ]
        );
        assert_eq!(
            must_show(&w, "b", 1),
            (false, Some((Ts(1), WriteKind::Rollback)))
        );
    }

    /// A transaction of `w` that buffered `a`/c and `b`/c, with its locks
    /// prewritten at wall time 0 (the primary on `a`).
    fn locked_txn(w: &FakeWorld) -> Transaction<'_, FakeWorld> {
        let mut txn = run(Transaction::begin(w)).unwrap();
        txn.set("a", "c", "1");
        txn.set("b", "c", "2");
        let primary = CellKey::new("a", "c");
        for i in 0..2 {
            assert_eq!(run(txn.prewrite(i, &primary)), None);
        }
        txn
    }

    /// The wall times of the refreshes sent so far.
    fn touches(w: &FakeWorld) -> Vec<u64> {
        let requests = w.requests.lock().unwrap();
        requests
            .iter()
            .filter_map(|(_, r)| match r {
                RowRequest::Touch { wall_ms, .. } => Some(*wall_ms),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_primary_is_refreshed_every_ttl_over_k_until_it_is_gone() {
        let mut w = FakeWorld {
            cfg: ClientConfig {
                lock_ttl_ms: 3_000,
                refreshes_per_ttl: 4,
                ..ClientConfig::default()
            },
            ..FakeWorld::default()
        };
        // Someone rolls the transaction back during the fourth interval.
        w.on_sleep = Some(Box::new(|w, n| {
            if n == 4 {
                must_roll_back_primary(w);
            }
        }));
        let txn = locked_txn(&w);
        let gone = AtomicBool::new(false);
        run(txn.refresh_until_gone(&CellKey::new("a", "c"), &gone));
        assert_eq!(w.sleeps(), [750, 750, 750, 750]);
        // Three refreshes moved the primary's wall time; the fourth found
        // the lock gone and ended the loop.
        assert_eq!(touches(&w), [750, 1_500, 2_250, 3_000]);
        assert!(!gone.load(Ordering::Relaxed));
    }

    #[test]
    fn a_refresh_raises_the_primary_lock_and_the_loop_stops_once_the_commit_is_answered() {
        let w = FakeWorld::default();
        let txn = locked_txn(&w);
        let primary = CellKey::new("a", "c");
        let lock_wall = |w: &FakeWorld| w.row_now("a").col("c").lock.get(&Ts(1)).map(|l| l.wall_ms);
        assert_eq!(lock_wall(&w), Some(0));
        *w.now_ms.lock().unwrap() = 1_000;
        assert!(run(txn.touch(&primary)));
        assert_eq!(lock_wall(&w), Some(1_000));
        // The commit of the primary was answered: one more wait, no refresh.
        let gone = AtomicBool::new(true);
        run(txn.refresh_until_gone(&primary, &gone));
        assert_eq!(touches(&w), [1_000]);
        assert_eq!(w.sleeps(), [1_000]);
    }

    #[test]
    fn without_lock_refresh_the_refresher_never_touches() {
        let w = FakeWorld {
            ablations: Ablations::only(Ablation::NoLockRefresh),
            ..FakeWorld::default()
        };
        let txn = locked_txn(&w);
        let gone = AtomicBool::new(false);
        let primary = CellKey::new("a", "c");
        let mut refresher = pin!(txn.refresh_while_locked(&primary, &gone));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(refresher.as_mut().poll(&mut cx).is_pending());
        assert!(touches(&w).is_empty());
        assert!(w.sleeps().is_empty());
    }

    #[test]
    fn the_refresh_setting_is_validated() {
        let cfg = |lock_ttl_ms, refreshes_per_ttl| ClientConfig {
            lock_ttl_ms,
            refreshes_per_ttl,
            ..ClientConfig::default()
        };
        assert_eq!(cfg(3_000, 3).problem(), None);
        assert_eq!(cfg(3_000, 3).refresh_interval_ms(), 1_000);
        assert_eq!(cfg(3_000, 0).problem().unwrap().0, "refreshes_per_ttl");
        let (field, why) = cfg(2, 3).problem().unwrap();
        assert_eq!(field, "refreshes_per_ttl");
        assert!(why.contains("less than 1 ms apart"), "{why}");
        assert_eq!(cfg(0, 1).problem().unwrap().0, "lock_ttl_ms");
    }

    #[test]
    fn a_primary_rolled_back_before_its_prewrite_landed_aborts_the_granted_secondaries() {
        let w = FakeWorld::default();
        // A reader met a secondary's lock first and rolled the transaction
        // back at its bare primary: a rollback record ahead of the prewrite.
        must_roll_back_primary(&w);
        let outcome = must_commit(&w, &[("a", Some("1")), ("b", Some("2")), ("d", None)]);
        let reason = AbortReason::RolledBack;
        assert_eq!(outcome, CommitOutcome::Aborted { reason });
        // Each granted secondary reached its point; the primary did not.
        let points: Vec<StepPoint> = w.points.lock().unwrap().iter().map(|p| p.1).collect();
        assert_eq!(
            points,
            [
                StepPoint::BeforePrewrite,
                StepPoint::AfterPrewriteSecondary(1),
                StepPoint::AfterPrewriteSecondary(2)
            ]
        );
        assert_eq!(
            w.request_names(),
            [
                "a Prewrite",
                "b Prewrite",
                "d Prewrite",
                "a Cleanup",
                "b Resolve",
                "d Resolve"
            ]
        );
        for row in ["a", "b", "d"] {
            let rolled_back = (false, Some((Ts(1), WriteKind::Rollback)));
            assert_eq!(must_show(&w, row, 1), rolled_back, "{row}");
        }
    }

    #[test]
    fn a_write_conflict_rolls_back_every_cell_sent() {
        let w = FakeWorld::default();
        let mut txn = run(Transaction::begin(&w)).unwrap();
        // Another transaction commits d after our start_ts.
        let other = must_commit(&w, &[("d", Some("theirs"))]);
        let commit_ts = Some(Ts(3));
        assert_eq!(other, CommitOutcome::Committed { commit_ts });
        txn.set("a", "c", "1");
        txn.set("b", "c", "2");
        txn.set("d", "c", "3");
        txn.set("e", "c", "4");
        let reason = AbortReason::WriteConflict;
        assert_eq!(run(txn.commit()), CommitOutcome::Aborted { reason });
        let names = w.request_names();
        assert_eq!(
            names[2..],
            [
                "a Prewrite",
                "b Prewrite",
                "d Prewrite",
                "e Prewrite",
                "a Cleanup",
                "b Resolve",
                "d Resolve",
                "e Resolve"
            ]
        );
        assert_eq!(
            must_show(&w, "a", 1),
            (false, Some((Ts(1), WriteKind::Rollback)))
        );
        assert_eq!(
            must_show(&w, "b", 1),
            (false, Some((Ts(1), WriteKind::Rollback)))
        );
        // e was locked alongside d's refusal, and is rolled back too.
        assert_eq!(
            must_show(&w, "e", 1),
            (false, Some((Ts(1), WriteKind::Rollback)))
        );
    }

    #[test]
    fn a_refused_primary_commit_is_retried_after_a_doubled_backoff() {
        let cfg = ClientConfig {
            commit_retries: 2,
            backoff_min_ms: 10,
            ..ClientConfig::default()
        };
        let w = FakeWorld {
            cfg: cfg.clone(),
            refuse_commits: 1.into(),
            ..FakeWorld::default()
        };
        let outcome = must_commit(&w, &[("a", Some("1"))]);
        let commit_ts = Some(Ts(2));
        assert_eq!(outcome, CommitOutcome::Committed { commit_ts });
        assert_eq!(w.sleeps(), [20]);
        // Refused every time: the outcome stays unknown.
        let w = FakeWorld {
            cfg,
            refuse_commits: 3.into(),
            ..FakeWorld::default()
        };
        assert_eq!(must_commit(&w, &[("a", Some("1"))]), CommitOutcome::Unknown);
        assert_eq!(w.sleeps(), [20, 40]);
    }

    #[test]
    fn a_wall_clock_start_ts_is_microseconds_plus_the_txn_id() {
        let w = FakeWorld {
            ablations: Ablations::only(Ablation::WallClockStartTs),
            now_ms: 7.into(),
            ..FakeWorld::default()
        };
        let txn = run(Transaction::begin(&w)).unwrap();
        assert_eq!(txn.start_ts(), Ts(7_001));
    }

    #[test]
    fn a_scan_settles_a_dead_owners_lock_unless_ablated() {
        for (ablations, expected) in [
            (Ablations::NONE, vec!["a", "b"]),
            (Ablations::only(Ablation::ScanSkipsLocks), vec!["a"]),
        ] {
            let mut w = FakeWorld {
                ablations,
                ..FakeWorld::default()
            };
            w.dead = vec![SessionId(99)];
            must_commit(&w, &[("a", Some("1")), ("b", Some("2"))]);
            // A dead client's primary lock on b: the scan meets it.
            w.on_point = Some(Box::new(|_, p| {
                if p == StepPoint::AfterPrewritePrimary {
                    panic!("stop the owner here");
                }
            }));
            let stopped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                must_commit(&w, &[("b", Some("3"))])
            }));
            assert!(stopped.is_err());
            w.on_point = None;
            let mut reader = run(Transaction::begin(&w)).unwrap();
            let cols = ["c".to_string()];
            let found = run(reader.scan("a", "z", &cols)).unwrap();
            let rows: Vec<&str> = found.iter().map(|(c, _)| c.row.as_str()).collect();
            assert_eq!(rows, expected, "{ablations:?}");
            if expected.len() == 2 {
                assert_eq!(found[1].1, "2");
            }
        }
    }
}
