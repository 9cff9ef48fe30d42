//! Meeting a lock: back off while its owner looks alive, clean it up when
//! the owner looks dead or stuck (paper, "BackoffAndMaybeCleanupLock").
//!
//! Cleanup synchronises on the primary: one row transaction there settles
//! the transaction's fate (roll back if still locked), then the lock met is
//! rolled forward with the primary's commit_ts or rolled back.

use super::error::TxnError;
use super::ledger::{CleanupEvent, CleanupKind, Host, Suspicion};
use super::transport::{StepPoint, Transport};
use crate::common::RpcError;
use crate::percolator::ablation::Ablation;
use crate::percolator::actions::{
    CleanupAction, Resolution, ResolveAction, RowReply, RowRequest, Staleness, TxnStatus,
};
use crate::percolator::types::{CellKey, LockInfo, Ts};

/// Waiting state of one read.
pub(crate) struct Backoff {
    waited_ms: u64,
    next_ms: u64,
}

impl Backoff {
    pub(crate) fn new<T: Transport>(t: &T) -> Self {
        Backoff {
            waited_ms: 0,
            next_ms: t.config().backoff_min_ms.max(1),
        }
    }
}

/// A read met `info`: clean it up if its owner is suspect, else back off.
/// Errors when the read has waited too long.
pub(crate) async fn wait_or_clean<T: Host>(
    t: &T,
    info: &LockInfo,
    (reader, reader_ts): (u64, Ts),
    backoff: &mut Backoff,
) -> Result<(), TxnError> {
    if let Some(suspicion) = suspect(t, info).await?
        && (clean_up(t, info, (reader, reader_ts), suspicion).await?
            || (suspicion == Suspicion::Stale
                && token_gone(t, info).await?
                && clean_up(t, info, (reader, reader_ts), Suspicion::TokenGone).await?))
    {
        return Ok(());
    }
    t.lock_wait(info);
    let cfg = t.config();
    if backoff.waited_ms >= cfg.lock_wait_max_ms {
        return Err(TxnError::LockWaitTimeout {
            cell: info.cell.clone(),
            start_ts: info.start_ts,
        });
    }
    t.sleep_ms(backoff.next_ms).await;
    backoff.waited_ms += backoff.next_ms;
    backoff.next_ms = (backoff.next_ms * 2).min(cfg.backoff_max_ms.max(1));
    Ok(())
}

/// Whether the owner of `info` looks dead (token gone) or stuck (stale wall time).
async fn suspect<T: Transport>(t: &T, info: &LockInfo) -> Result<Option<Suspicion>, RpcError> {
    let age_ms = t.wall_ms().saturating_sub(info.lock.wall_ms);
    if age_ms > t.config().lock_ttl_ms {
        return Ok(Some(Suspicion::Stale));
    }
    if t.ablations().has(Ablation::StaleByWallTimeOnly) {
        return Ok(None);
    }
    if !t.owner_alive(info.lock.owner).await? {
        return Ok(Some(Suspicion::TokenGone));
    }
    Ok(None)
}

/// Whether the owner of `info` no longer holds its liveness token (asked
/// when a lock looked stale but its primary was fresh: a dead owner's
/// fresh primary must not block the reader until it too goes stale).
async fn token_gone<T: Transport>(t: &T, info: &LockInfo) -> Result<bool, RpcError> {
    if t.ablations().has(Ablation::StaleByWallTimeOnly) {
        return Ok(false);
    }
    Ok(!t.owner_alive(info.lock.owner).await?)
}

/// Settle the transaction at `start_ts` whose primary is `primary`, rolling
/// it back if its primary is still locked. Returns its fate.
/// A suspicion of staleness is checked against the primary lock's own wall
/// time, which the owner refreshes while it commits: a fresh primary comes
/// back [`TxnStatus::Live`] and nothing is done.
pub(crate) async fn settle_primary<T: Host>(
    t: &T,
    primary: &CellKey,
    start_ts: Ts,
    suspicion: Suspicion,
) -> Result<TxnStatus, RpcError> {
    let stale = (suspicion == Suspicion::Stale).then(|| Staleness {
        now_wall_ms: t.wall_ms(),
        ttl_ms: t.config().lock_ttl_ms,
    });
    let req = RowRequest::Cleanup {
        col: primary.col.clone(),
        start_ts,
        stale,
    };
    let RowReply::Cleanup(status, action) = t.row(&primary.row, req).await? else {
        panic!("tablet server answered Cleanup with another reply");
    };
    let kind = match action {
        CleanupAction::None => None,
        CleanupAction::RolledBack => Some(CleanupKind::RollBack),
        CleanupAction::RolledBackBeforePrewrite => Some(CleanupKind::RollBackBeforePrewrite),
    };
    if let Some(kind) = kind {
        t.cleanup_event(CleanupEvent {
            kind,
            cell: primary.clone(),
            start_ts,
            commit_ts: None,
            suspicion,
        });
    }
    Ok(status)
}

/// Roll one secondary forward or back according to its primary's fate.
pub(crate) async fn resolve_secondary<T: Host>(
    t: &T,
    cell: &CellKey,
    start_ts: Ts,
    status: TxnStatus,
    suspicion: Suspicion,
) -> Result<(), RpcError> {
    let resolution = match status {
        TxnStatus::Committed { commit_ts } => Resolution::Commit { commit_ts },
        TxnStatus::RolledBack => Resolution::Rollback,
        // The owner lives: its secondaries are its own to settle.
        TxnStatus::Live => return Ok(()),
    };
    let req = RowRequest::Resolve {
        col: cell.col.clone(),
        start_ts,
        resolution,
    };
    let RowReply::Resolve(result) = t.row(&cell.row, req).await? else {
        panic!("tablet server answered Resolve with another reply");
    };
    let kind = match result {
        Ok(ResolveAction::RolledForward) => Some(CleanupKind::RollForward),
        Ok(ResolveAction::RolledBack) => Some(CleanupKind::RollBack),
        // Already settled, or settled the other way by someone else's
        // mistake: the history checker judges the store, not us.
        Ok(ResolveAction::AlreadyDone) | Err(_) => None,
    };
    if let Some(kind) = kind {
        t.cleanup_event(CleanupEvent {
            kind,
            cell: cell.clone(),
            start_ts,
            commit_ts: match resolution {
                Resolution::Commit { commit_ts } => Some(commit_ts),
                Resolution::Rollback => None,
            },
            suspicion,
        });
    }
    Ok(())
}

/// Clean up the lock `info` of a suspect owner, met by transaction `reader`
/// reading at `reader_ts`. Returns whether the lock was settled: `false`
/// when the primary showed its owner alive after all (the reader waits).
async fn clean_up<T: Host>(
    t: &T,
    info: &LockInfo,
    (reader, reader_ts): (u64, Ts),
    suspicion: Suspicion,
) -> Result<bool, RpcError> {
    let ablations = t.ablations();
    if ablations.has(Ablation::RollbackWithoutPrimaryCheck) && info.cell != info.lock.primary {
        resolve_secondary(
            t,
            &info.cell,
            info.start_ts,
            TxnStatus::RolledBack,
            suspicion,
        )
        .await?;
        return Ok(true);
    }
    let mut status = settle_primary(t, &info.lock.primary, info.start_ts, suspicion).await?;
    if status == TxnStatus::Live {
        return Ok(false);
    }
    if let (true, TxnStatus::Committed { .. }) =
        (ablations.has(Ablation::RollForwardReaderTs), status)
    {
        status = TxnStatus::Committed {
            commit_ts: reader_ts,
        };
    }
    if info.cell != info.lock.primary {
        let between = match status {
            TxnStatus::Committed { .. } => StepPoint::RollForwardBetweenCells,
            TxnStatus::RolledBack | TxnStatus::Live => StepPoint::RollBackBetweenCells,
        };
        t.reached(reader, between).await;
        resolve_secondary(t, &info.cell, info.start_ts, status, suspicion).await?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::{Backoff, wait_or_clean};
    use crate::percolator::ablation::{Ablation, Ablations};
    use crate::percolator::actions::{Prewrite, RowReply, RowRequest};
    use crate::percolator::client::CleanupKind;
    use crate::percolator::client::test_util::{FakeWorld, run};
    use crate::percolator::client::{ClientConfig, Suspicion, TxnError};
    use crate::percolator::types::{
        CellKey, Lock, LockInfo, MutationKind, SessionId, Ts, TxnTs, WriteKind,
    };

    const OWNER: SessionId = SessionId(1);

    fn world() -> FakeWorld {
        FakeWorld {
            cfg: ClientConfig {
                lock_ttl_ms: 3_000,
                backoff_min_ms: 10,
                backoff_max_ms: 40,
                lock_wait_max_ms: 100,
                ..ClientConfig::default()
            },
            ..FakeWorld::default()
        }
    }

    /// Prewrite `k`/`c` (its own primary) for the transaction at 10 of
    /// `OWNER`, with wall time 0; the lock as a reader meets it.
    fn locked(w: &FakeWorld) -> LockInfo {
        let cell = CellKey::new("k", "c");
        let lock = Lock {
            primary: cell.clone(),
            kind: MutationKind::Put,
            wall_ms: 0,
            owner: OWNER,
        };
        let req = RowRequest::Prewrite(Prewrite {
            col: "c".into(),
            start_ts: Ts(10),
            value: Some("v".into()),
            lock: lock.clone(),
            notify: false,
        });
        assert_eq!(w.step("k", req), RowReply::Prewrite(Ok(())));
        LockInfo {
            cell,
            start_ts: Ts(10),
            lock,
        }
    }

    fn meet(w: &FakeWorld, info: &LockInfo, backoff: &mut Backoff) -> Result<(), TxnError> {
        run(wait_or_clean(w, info, (2, Ts(20)), backoff))
    }

    #[test]
    fn a_reader_backs_off_doubling_until_it_gives_up() {
        let w = world();
        let info = locked(&w);
        let mut backoff = Backoff::new(&w);
        for _ in 0..4 {
            assert_eq!(meet(&w, &info, &mut backoff), Ok(()));
        }
        // 10, doubled up to the 40 ms cap: 110 ms waited, past the 100 allowed.
        assert_eq!(w.sleeps(), vec![10, 20, 40, 40]);
        assert_eq!(
            meet(&w, &info, &mut backoff),
            Err(TxnError::LockWaitTimeout {
                cell: CellKey::new("k", "c"),
                start_ts: Ts(10),
            })
        );
        assert_eq!(w.sleeps().len(), 4, "no sleep after giving up");
        assert!(w.cleanups.lock().unwrap().is_empty(), "a live owner's lock");
    }

    #[test]
    fn a_lock_is_stale_only_past_its_ttl() {
        let w = world();
        let info = locked(&w);
        let mut backoff = Backoff::new(&w);
        // Exactly 3000 ms old: not stale yet, and the owner is alive: wait.
        *w.now_ms.lock().unwrap() = 3_000;
        assert_eq!(meet(&w, &info, &mut backoff), Ok(()));
        assert_eq!(w.sleeps(), vec![10]);
        assert!(w.cleanups.lock().unwrap().is_empty());
        // 3010 ms old: stale; the reader rolls the transaction back.
        assert_eq!(meet(&w, &info, &mut backoff), Ok(()));
        assert_eq!(w.sleeps(), vec![10], "cleaned up without waiting");
        let cleanups = w.cleanups.lock().unwrap();
        assert_eq!(cleanups.len(), 1);
        assert_eq!(cleanups[0].suspicion, Suspicion::Stale);
    }

    /// A dead owner's transaction at 10 with primary `p`/c and secondary
    /// `s`/c, its primary committed at 15; the lock a reader meets on `s`.
    fn committed_primary_locked_secondary(w: &FakeWorld) -> LockInfo {
        committed_primary_locked_secondary_with(w, true)
    }

    /// The transaction of [`committed_primary_locked_secondary`], its
    /// primary committed only if `commit`.
    fn committed_primary_locked_secondary_with(w: &FakeWorld, commit: bool) -> LockInfo {
        let primary = CellKey::new("p", "c");
        let lock = Lock {
            primary: primary.clone(),
            kind: MutationKind::Put,
            wall_ms: 0,
            owner: OWNER,
        };
        for row in ["p", "s"] {
            let req = RowRequest::Prewrite(Prewrite {
                col: "c".into(),
                start_ts: Ts(10),
                value: Some(row.into()),
                lock: lock.clone(),
                notify: false,
            });
            assert_eq!(w.step(row, req), RowReply::Prewrite(Ok(())));
        }
        let ts = TxnTs {
            start_ts: Ts(10),
            commit_ts: Ts(15),
        };
        let req = RowRequest::Commit {
            col: "c".into(),
            ts,
        };
        if commit {
            assert_eq!(w.step("p", req), RowReply::Commit(Ok(Ts(15))));
        }
        LockInfo {
            cell: CellKey::new("s", "c"),
            start_ts: Ts(10),
            lock,
        }
    }

    /// A live owner's transaction at 10 with primary `p`/c and secondary
    /// `s`/c, both prewritten at wall time 0, the primary refreshed at 2500;
    /// the lock a reader meets on `s`.
    fn refreshed_primary_locked_secondary(w: &FakeWorld) -> LockInfo {
        let info = committed_primary_locked_secondary_with(w, false);
        let req = RowRequest::Touch {
            col: "c".into(),
            start_ts: Ts(10),
            wall_ms: 2_500,
        };
        assert_eq!(w.step("p", req), RowReply::Touch(true));
        info
    }

    #[test]
    fn a_stale_secondary_waits_while_its_primary_is_refreshed() {
        let w = world();
        let info = refreshed_primary_locked_secondary(&w);
        let mut backoff = Backoff::new(&w);
        // The secondary's wall time is 3010 ms old, the primary's only 510.
        *w.now_ms.lock().unwrap() = 3_010;
        assert_eq!(meet(&w, &info, &mut backoff), Ok(()));
        assert!(w.cleanups.lock().unwrap().is_empty(), "a live owner's lock");
        assert_eq!(w.sleeps(), vec![10], "the reader backs off instead");
        let rows = w.rows.lock().unwrap().clone();
        assert!(!rows["p"].col("c").lock.is_empty() && !rows["s"].col("c").lock.is_empty());
        drop(rows);
        // Once the primary itself is past its TTL the owner counts as stuck.
        *w.now_ms.lock().unwrap() = 5_510;
        assert_eq!(meet(&w, &info, &mut backoff), Ok(()));
        let cleanups = w.cleanups.lock().unwrap();
        let kinds: Vec<_> = cleanups.iter().map(|c| (c.kind, c.suspicion)).collect();
        assert_eq!(
            kinds,
            vec![
                (CleanupKind::RollBack, Suspicion::Stale),
                (CleanupKind::RollBack, Suspicion::Stale)
            ]
        );
    }

    #[test]
    fn a_dead_owners_stale_secondary_with_a_fresh_primary_is_cleaned_at_once() {
        let w = FakeWorld {
            dead: vec![OWNER],
            ..world()
        };
        let info = refreshed_primary_locked_secondary(&w);
        // The secondary looks stale, the primary fresh, but its owner's
        // token is gone: the reader does not wait for the primary to age.
        *w.now_ms.lock().unwrap() = 3_010;
        assert_eq!(meet(&w, &info, &mut Backoff::new(&w)), Ok(()));
        assert!(w.sleeps().is_empty());
        let cleanups = w.cleanups.lock().unwrap();
        let kinds: Vec<_> = cleanups.iter().map(|c| (c.kind, c.suspicion)).collect();
        assert_eq!(
            kinds,
            vec![
                (CleanupKind::RollBack, Suspicion::TokenGone),
                (CleanupKind::RollBack, Suspicion::TokenGone)
            ]
        );
        drop(cleanups);
        // Judged by wall time alone, the reader waits for the primary instead.
        let w = FakeWorld {
            dead: vec![OWNER],
            ablations: Ablations::only(Ablation::StaleByWallTimeOnly),
            ..world()
        };
        let info = refreshed_primary_locked_secondary(&w);
        *w.now_ms.lock().unwrap() = 3_010;
        assert_eq!(meet(&w, &info, &mut Backoff::new(&w)), Ok(()));
        assert_eq!(w.sleeps(), vec![10]);
        assert!(w.cleanups.lock().unwrap().is_empty());
    }

    #[test]
    fn a_secondary_of_a_committed_primary_is_rolled_forward() {
        let w = FakeWorld {
            dead: vec![OWNER],
            ..world()
        };
        let info = committed_primary_locked_secondary(&w);
        assert_eq!(meet(&w, &info, &mut Backoff::new(&w)), Ok(()));
        let cleanups = w.cleanups.lock().unwrap();
        let kinds: Vec<_> = cleanups.iter().map(|c| (c.kind, c.commit_ts)).collect();
        assert_eq!(kinds, vec![(CleanupKind::RollForward, Some(Ts(15)))]);
        assert_eq!(cleanups[0].cell, CellKey::new("s", "c"));
        let row = w.rows.lock().unwrap()["s"].clone();
        assert!(row.col("c").lock.is_empty());
        assert_eq!(row.col("c").write[&Ts(15)].kind, WriteKind::Put);
    }

    #[test]
    fn the_ablated_cleanup_rolls_a_committed_secondary_back() {
        let w = FakeWorld {
            dead: vec![OWNER],
            ablations: Ablations::only(Ablation::RollbackWithoutPrimaryCheck),
            ..world()
        };
        let info = committed_primary_locked_secondary(&w);
        assert_eq!(meet(&w, &info, &mut Backoff::new(&w)), Ok(()));
        let cleanups = w.cleanups.lock().unwrap();
        let kinds: Vec<_> = cleanups.iter().map(|c| (c.kind, c.commit_ts)).collect();
        assert_eq!(kinds, vec![(CleanupKind::RollBack, None)]);
        // The primary was never asked: still committed, nothing more.
        assert_eq!(w.request_names(), ["s Resolve"]);
    }

    #[test]
    fn a_dead_owners_fresh_lock_is_cleaned_at_once() {
        let w = FakeWorld {
            dead: vec![OWNER],
            ..world()
        };
        let info = locked(&w);
        let mut backoff = Backoff::new(&w);
        assert_eq!(meet(&w, &info, &mut backoff), Ok(()));
        assert!(w.sleeps().is_empty());
        let cleanups = w.cleanups.lock().unwrap();
        assert_eq!(cleanups.len(), 1);
        assert_eq!(cleanups[0].suspicion, Suspicion::TokenGone);
    }
}
