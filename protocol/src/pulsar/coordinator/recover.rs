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

    #[test]
    fn replay_finishes_aborting_too() {
        let mut tc = Tc::new(1);
        let aborting = tc.must_open(0, 1_000);
        tc.add(aborting, &part(0)).unwrap();
        tc.must_end(aborting, TxnAction::Abort);
        // Crash after ABORTING is logged, before any marker is sent.
        let follow_ups = tc.crash_and_recover();
        assert_eq!(tc.state_of(aborting), Some(TxnState::Aborting));
        let [actions] = follow_ups.as_slice() else {
            panic!("{follow_ups:?}")
        };
        let [TcAction::SendMarkers(ms)] = actions.as_slice() else {
            panic!("{actions:?}")
        };
        assert_eq!(ms.len(), 1);
        assert_eq!((ms[0].txn, ms[0].action), (aborting, TxnAction::Abort));
    }

    #[test]
    fn crash_after_the_first_marker_finishes_on_every_participant() {
        let mut tc = Tc::new(0);
        let t = tc.must_open(0, 1_000);
        tc.add(t, &part(0)).unwrap();
        tc.add(t, &part(1)).unwrap();
        let (mut p0, mut p1) = (Broker::default(), Broker::default());
        p0.must_send(Some(t), "x");
        p1.must_send(Some(t), "y");
        let plan = tc.must_end(t, TxnAction::Commit);
        let TcAction::SendMarkers(ms) = &plan[1] else {
            panic!("{plan:?}")
        };
        assert!(p0.deliver(&ms[0]));
        // The coordinator dies here: partition 0 shows the commit, 1 not.
        assert_eq!(p1.must_read("s", 0, 10), vec![]);
        let follow_ups = tc.crash_and_recover();
        let TcAction::SendMarkers(again) = &follow_ups[0][0] else {
            panic!("{follow_ups:?}")
        };
        assert!(!p0.deliver(&again[0]), "partition 0 has it already");
        assert!(p1.deliver(&again[1]));
        assert_eq!(tc.must_finish(t), vec![TxnAction::Commit]);
        assert_eq!(p0.must_read("s", 0, 10), vec![(0, "x".to_string())]);
        assert_eq!(p1.must_read("s", 0, 10), vec![(0, "y".to_string())]);
    }
}
