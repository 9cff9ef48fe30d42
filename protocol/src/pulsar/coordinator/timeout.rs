//! Timeout: the coordinator aborts a transaction whose client took too long
//! (reference text, "Transaction Coordinator": the TC handles what follows
//! once the client's transaction timeout has passed; Pulsar docs, "How
//! transactions work?": the TC aborts the transaction after its timeout).

use super::state::{LogRecord, TcAction, TcError, TcOp, TcState, TxnState, markers};
use crate::pulsar::ablation::{PulsarAblation, PulsarAblations};
use crate::pulsar::types::{TxnAction, TxnId};

/// Transactions whose deadline has passed at `now_ms` and that are not
/// ended yet (each is a candidate for [`timeout`], which decides).
pub fn due(state: &TcState, now_ms: u64) -> Vec<TxnId> {
    state
        .txns()
        .filter(|(_, m)| m.deadline_ms <= now_ms)
        .map(|(id, _)| id)
        .collect()
}

/// Time out `txn` at `now_ms`: log ABORTING and send abort markers, but
/// only if the transaction is still OPEN (a transaction already committing
/// or aborting is left to finish; Pulsar's
/// `TransactionMetadataStoreService.endTransactionForTimeout` ends only an
/// OPEN transaction). Returns no action when the deadline has not passed.
///
/// With [`PulsarAblation::TimeoutRacesCommit`] the state is not checked: a
/// COMMITTING transaction is switched to ABORTING and its participants get
/// abort markers while its commit markers are still on the way.
pub fn timeout(
    state: &TcState,
    txn: TxnId,
    now_ms: u64,
    ablations: PulsarAblations,
) -> Result<Vec<TcAction>, TcError> {
    let meta = state.lookup(txn)?;
    if now_ms < meta.deadline_ms {
        return Ok(Vec::new());
    }
    let checked = !ablations.has(PulsarAblation::TimeoutRacesCommit);
    if checked && !meta.state.can_become(TxnState::Aborting) {
        return Err(TcError::InvalidState {
            txn,
            state: meta.state,
            wanted: TcOp::TimeOut,
        });
    }
    Ok(vec![
        TcAction::Log(LogRecord::State {
            txn,
            state: TxnState::Aborting,
        }),
        TcAction::SendMarkers(markers(txn, meta, TxnAction::Abort)),
    ])
}

#[cfg(test)]
mod tests {
    use crate::pulsar::ablation::PulsarAblation;
    use crate::pulsar::coordinator::{TcAction, TcError, TcOp, TxnState};
    use crate::pulsar::test_util::*;
    use crate::pulsar::types::TxnAction;

    #[test]
    fn open_transaction_times_out_at_its_deadline() {
        let mut tc = Tc::new(1);
        let t = tc.must_open(100, 1_000);
        tc.add(t, &part(0)).unwrap();
        assert!(super::due(&tc.state, 1_099).is_empty());
        assert_eq!(tc.timeout(t, 1_099).unwrap(), vec![]);
        assert_eq!(super::due(&tc.state, 1_100), vec![t]);
        let actions = tc.timeout(t, 1_100).unwrap();
        assert!(matches!(&actions[1], TcAction::SendMarkers(m) if m[0].action == TxnAction::Abort));
        assert_eq!(tc.state_of(t), Some(TxnState::Aborting));
    }

    #[test]
    fn timeout_leaves_a_committing_transaction_alone() {
        let mut tc = Tc::new(1);
        let t = tc.must_open(0, 1_000);
        tc.add(t, &part(0)).unwrap();
        tc.must_end(t, TxnAction::Commit);
        assert_eq!(
            tc.timeout(t, 5_000),
            Err(TcError::InvalidState {
                txn: t,
                state: TxnState::Committing,
                wanted: TcOp::TimeOut
            })
        );
        assert_eq!(tc.state_of(t), Some(TxnState::Committing));
    }

    #[test]
    fn ablated_timeout_aborts_a_committing_transaction() {
        let mut tc = Tc::ablated(1, PulsarAblation::TimeoutRacesCommit);
        let t = tc.must_open(0, 1_000);
        tc.add(t, &part(0)).unwrap();
        tc.add(t, &part(1)).unwrap();
        let commit = tc.must_end(t, TxnAction::Commit);
        let abort = tc.timeout(t, 5_000).unwrap();
        // Both decisions are now in flight to the same partitions.
        let kinds = |a: &[TcAction]| match &a[1] {
            TcAction::SendMarkers(m) => m.iter().map(|m| m.action).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        assert_eq!(kinds(&commit), vec![TxnAction::Commit; 2]);
        assert_eq!(kinds(&abort), vec![TxnAction::Abort; 2]);
        assert_eq!(tc.state_of(t), Some(TxnState::Aborting));
        // The network delivers the commit marker first to partition 0 and
        // the abort marker first to partition 1: the first marker wins at
        // each, and the transaction is torn.
        let markers = |a: &[TcAction]| match &a[1] {
            TcAction::SendMarkers(m) => m.clone(),
            other => panic!("{other:?}"),
        };
        let (c, a) = (markers(&commit), markers(&abort));
        let (mut p0, mut p1) = (Broker::default(), Broker::default());
        p0.must_send(Some(t), "x");
        p1.must_send(Some(t), "y");
        for (b, first, second) in [(&mut p0, &c[0], &a[0]), (&mut p1, &a[1], &c[1])] {
            b.deliver(first);
            b.deliver(second);
        }
        assert_eq!(p0.tb.ended(t), Some(TxnAction::Commit));
        assert_eq!(p1.tb.ended(t), Some(TxnAction::Abort));
    }
}
