//! Recover: a coordinator that restarts (or moves to another broker)
//! rebuilds its state by replaying its transaction log and finishes every
//! transaction that was COMMITTING or ABORTING (reference text, "Transaction
//! Log": replay restores the metadata; Pulsar docs: the TC restores the
//! transaction metadata from the log after a crash).

use super::state::{LogRecord, TcAction, TcState, TxnState, markers};
use crate::pulsar::types::TxnAction;

/// Replay `log` into a fresh state for coordinator `coordinator`. Returns
/// the state and, for each COMMITTING or ABORTING transaction, the actions
/// that finish it (send its markers again; [`super::finish`] follows).
/// OPEN transactions stay open with their logged deadlines, so the timeout
/// aborts those whose client is gone.
pub fn recover(coordinator: u16, log: &[LogRecord]) -> (TcState, Vec<Vec<TcAction>>) {
    let mut state = TcState::new(coordinator);
    for record in log {
        state.apply(record);
    }
    let follow_ups = state
        .txns()
        .filter_map(|(txn, meta)| {
            let action = match meta.state {
                TxnState::Committing => TxnAction::Commit,
                TxnState::Aborting => TxnAction::Abort,
                _ => return None,
            };
            Some(vec![TcAction::SendMarkers(markers(txn, meta, action))])
        })
        .collect();
    (state, follow_ups)
}

#[cfg(test)]
mod tests {
    use crate::pulsar::coordinator::{TcAction, TxnState};
    use crate::pulsar::test_util::*;
    use crate::pulsar::types::TxnAction;

    #[test]
    fn replay_finishes_committing_and_keeps_open() {
        let mut tc = Tc::new(3);
        let open = tc.must_open(0, 1_000);
        let committing = tc.must_open(0, 1_000);
        tc.add(committing, &part(0)).unwrap();
        tc.add(committing, &sub(0, "s")).unwrap();
        tc.must_end(committing, TxnAction::Commit);
        let done = tc.must_open(0, 1_000);
        tc.must_end(done, TxnAction::Abort);
        tc.must_finish(done);
        // Crash after COMMITTING is logged, before any marker is sent.
        let follow_ups = tc.crash_and_recover();
        assert_eq!(tc.state_of(open), Some(TxnState::Open));
        assert_eq!(tc.state_of(committing), Some(TxnState::Committing));
        assert_eq!(tc.state_of(done), None);
        assert_eq!(tc.state.next_seq(), 3);
        assert_eq!(follow_ups.len(), 1);
        let TcAction::SendMarkers(ms) = &follow_ups[0][0] else {
            panic!("{follow_ups:?}")
        };
        assert_eq!(ms.len(), 2);
        assert!(
            ms.iter()
                .all(|m| m.txn == committing && m.action == TxnAction::Commit)
        );
        assert_eq!(tc.must_finish(committing), vec![TxnAction::Commit]);
    }
}
