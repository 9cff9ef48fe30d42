//! End: the client asks to commit or abort. The coordinator logs COMMITTING
//! or ABORTING, and only once that is durable sends one marker to every
//! participant (reference text, "完成事務").

use super::state::{LogRecord, TcAction, TcError, TcOp, TcState, TxnState, markers};
use crate::pulsar::ablation::{PulsarAblation, PulsarAblations};
use crate::pulsar::types::{TxnAction, TxnId};

/// End `txn` with `action`. Returns what the coordinator must do, in order.
/// The reply to the client comes from [`super::finish`], after every
/// marker is acknowledged and COMMITTED/ABORTED is logged (Pulsar's
/// `TransactionMetadataStoreService.endTransaction` waits for every
/// partition and subscription, then writes the end state, then completes).
/// A retry of the same end while it is under way sends the markers again
/// (markers are idempotent); the other end is refused (Pulsar answers
/// `InvalidTxnStatusException` there).
///
/// With [`PulsarAblation::CommitBeforeLogDurable`] a commit answers the
/// client first and logs COMMITTING afterwards: a crash in between leaves
/// an OPEN transaction in the log that the timeout will abort, although the
/// client was told it committed.
pub fn end(
    state: &TcState,
    txn: TxnId,
    action: TxnAction,
    ablations: PulsarAblations,
) -> Result<Vec<TcAction>, TcError> {
    let meta = state.lookup(txn)?;
    let target = TxnState::ending(action);
    let send = TcAction::SendMarkers(markers(txn, meta, action));
    if meta.state == target {
        return Ok(vec![send]);
    }
    if !meta.state.can_become(target) {
        return Err(TcError::InvalidState {
            txn,
            state: meta.state,
            wanted: match action {
                TxnAction::Commit => TcOp::Commit,
                TxnAction::Abort => TcOp::Abort,
            },
        });
    }
    let log = TcAction::Log(LogRecord::State { txn, state: target });
    if action == TxnAction::Commit && ablations.has(PulsarAblation::CommitBeforeLogDurable) {
        return Ok(vec![TcAction::Reply(TxnAction::Commit), log, send]);
    }
    Ok(vec![log, send])
}

#[cfg(test)]
mod tests {
    use crate::pulsar::ablation::PulsarAblation;
    use crate::pulsar::coordinator::{LogRecord, TcAction, TcError, TcOp, TxnState};
    use crate::pulsar::test_util::*;
    use crate::pulsar::types::TxnAction;

    #[test]
    fn commit_logs_committing_then_sends_one_marker_per_participant() {
        let mut tc = Tc::new(1);
        let t = tc.must_open(0, 1_000);
        tc.add(t, &part(0)).unwrap();
        tc.add(t, &sub(1, "s")).unwrap();
        let actions = tc.must_end(t, TxnAction::Commit);
        assert_eq!(
            actions[0],
            TcAction::Log(LogRecord::State {
                txn: t,
                state: TxnState::Committing
            })
        );
        let TcAction::SendMarkers(ms) = &actions[1] else {
            panic!("expected markers, got {actions:?}")
        };
        assert_eq!(ms.len(), 2);
        assert!(
            ms.iter()
                .all(|m| m.txn == t && m.action == TxnAction::Commit)
        );
        assert_eq!(actions.len(), 2, "no reply before the markers are done");
        assert_eq!(tc.state_of(t), Some(TxnState::Committing));
        assert_eq!(tc.must_finish(t), vec![TxnAction::Commit]);
        assert_eq!(tc.state_of(t), None);
    }

    #[test]
    fn retry_resends_and_the_other_end_is_refused() {
        let mut tc = Tc::new(1);
        let t = tc.must_open(0, 1_000);
        tc.add(t, &part(0)).unwrap();
        tc.must_end(t, TxnAction::Commit);
        let again = tc.must_end(t, TxnAction::Commit);
        assert!(matches!(again.as_slice(), [TcAction::SendMarkers(m)] if m.len() == 1));
        assert_eq!(
            tc.end(t, TxnAction::Abort),
            Err(TcError::InvalidState {
                txn: t,
                state: TxnState::Committing,
                wanted: TcOp::Abort
            })
        );
        tc.must_finish(t);
        assert_eq!(tc.end(t, TxnAction::Commit), Err(TcError::NotFound(t)));
    }

    #[test]
    fn ablated_commit_answers_before_committing_is_durable() {
        let mut faithful = Tc::new(1);
        let t = faithful.must_open(0, 1_000);
        let plan = faithful.end_plan(t, TxnAction::Commit).unwrap();
        assert!(matches!(plan[0], TcAction::Log(_)));
        assert!(!plan.iter().any(|a| matches!(a, TcAction::Reply(_))));

        let mut ablated = Tc::ablated(1, PulsarAblation::CommitBeforeLogDurable);
        let t = ablated.must_open(0, 1_000);
        let plan = ablated.end_plan(t, TxnAction::Commit).unwrap();
        assert_eq!(plan[0], TcAction::Reply(TxnAction::Commit));
        // Crash right after the reply, before COMMITTING is durable: the
        // log says OPEN, so the timeout aborts what the client saw commit.
        ablated.crash_and_recover();
        assert_eq!(ablated.state_of(t), Some(TxnState::Open));
        let aborted = ablated.timeout(t, 2_000).unwrap();
        assert!(aborted.contains(&TcAction::Log(LogRecord::State {
            txn: t,
            state: TxnState::Aborting
        })));
    }
}
