//! Meeting a lock: back off while its owner looks alive, clean it up when
//! the owner looks dead or stuck (paper, "BackoffAndMaybeCleanupLock").
//!
//! Cleanup synchronises on the primary: one row transaction there settles
//! the transaction's fate (roll back if still locked), then the lock met is
//! rolled forward with the primary's commit_ts or rolled back.

use super::transport::{CleanupEvent, CleanupKind, RpcError, StepPoint, Suspicion, Transport};
use super::txn::TxnError;
use crate::ablation::Ablation;
use crate::actions::{CleanupAction, Resolution, ResolveAction, RowReply, RowRequest, TxnStatus};
use crate::types::{CellKey, LockInfo, Ts};

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
pub(crate) async fn wait_or_clean<T: Transport>(
    t: &T,
    info: &LockInfo,
    (reader, reader_ts): (u64, Ts),
    backoff: &mut Backoff,
) -> Result<(), TxnError> {
    if let Some(suspicion) = suspect(t, info).await? {
        clean_up(t, info, (reader, reader_ts), suspicion).await?;
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

/// Settle the transaction at `start_ts` whose primary is `primary`, rolling
/// it back if its primary is still locked. Returns its fate.
pub(crate) async fn settle_primary<T: Transport>(
    t: &T,
    primary: &CellKey,
    start_ts: Ts,
    suspicion: Suspicion,
) -> Result<TxnStatus, RpcError> {
    let req = RowRequest::Cleanup {
        col: primary.col.clone(),
        start_ts,
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
pub(crate) async fn resolve_secondary<T: Transport>(
    t: &T,
    cell: &CellKey,
    start_ts: Ts,
    status: TxnStatus,
    suspicion: Suspicion,
) -> Result<(), RpcError> {
    let resolution = match status {
        TxnStatus::Committed { commit_ts } => Resolution::Commit { commit_ts },
        TxnStatus::RolledBack => Resolution::Rollback,
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
/// reading at `reader_ts`.
async fn clean_up<T: Transport>(
    t: &T,
    info: &LockInfo,
    (reader, reader_ts): (u64, Ts),
    suspicion: Suspicion,
) -> Result<(), RpcError> {
    let ablations = t.ablations();
    if ablations.has(Ablation::RollbackWithoutPrimaryCheck) && info.cell != info.lock.primary {
        return resolve_secondary(
            t,
            &info.cell,
            info.start_ts,
            TxnStatus::RolledBack,
            suspicion,
        )
        .await;
    }
    let mut status = settle_primary(t, &info.lock.primary, info.start_ts, suspicion).await?;
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
            TxnStatus::RolledBack => StepPoint::RollBackBetweenCells,
        };
        t.reached(reader, between).await;
        resolve_secondary(t, &info.cell, info.start_ts, status, suspicion).await?;
    }
    Ok(())
}
