//! Register a participant: before a client produces to a partition or
//! acknowledges on a subscription inside a transaction it tells the
//! coordinator, which logs it (reference text, "發送事務消息" and "確認事務消息":
//! the coordinator persists the operation before the client goes ahead).

use super::state::{LogRecord, TcError, TcOp, TcState, TxnState};
use crate::pulsar::types::{Participant, TxnId};

/// Add `participant` to `txn`. Returns the record to log, or `None` if it
/// is already registered (a retry). Only an OPEN transaction takes new
/// participants.
pub fn add_participant(
    state: &TcState,
    txn: TxnId,
    participant: &Participant,
) -> Result<Option<LogRecord>, TcError> {
    let meta = state.lookup(txn)?;
    if meta.state != TxnState::Open {
        return Err(TcError::InvalidState {
            txn,
            state: meta.state,
            wanted: TcOp::AddParticipant,
        });
    }
    if meta.participants.contains(participant) {
        return Ok(None);
    }
    Ok(Some(LogRecord::AddParticipant {
        txn,
        participant: participant.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use crate::pulsar::coordinator::{TcError, TcOp, TxnState};
    use crate::pulsar::test_util::*;
    use crate::pulsar::types::{TxnAction, TxnId};

    #[test]
    fn registers_once() {
        let mut tc = Tc::new(1);
        let t = tc.must_open(0, 1_000);
        assert!(tc.add(t, &part(0)).unwrap());
        assert!(!tc.add(t, &part(0)).unwrap(), "a retry logs nothing");
        assert_eq!(tc.log.len(), 2);
    }

    #[test]
    fn refused_once_ending() {
        let mut tc = Tc::new(1);
        let t = tc.must_open(0, 1_000);
        tc.must_end(t, TxnAction::Abort);
        assert_eq!(
            tc.add(t, &part(0)),
            Err(TcError::InvalidState {
                txn: t,
                state: TxnState::Aborting,
                wanted: TcOp::AddParticipant
            })
        );
        let other = TxnId {
            coordinator: 2,
            seq: 0,
        };
        assert_eq!(
            tc.add(other, &part(0)),
            Err(TcError::WrongCoordinator(other))
        );
        let unknown = TxnId {
            coordinator: 1,
            seq: 9,
        };
        assert_eq!(tc.add(unknown, &part(0)), Err(TcError::NotFound(unknown)));
    }
}
