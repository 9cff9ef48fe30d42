//! Finish: every participant has acknowledged its marker; log the end state
//! and answer the client (reference text, "完成事務": COMMITTED or ABORTED
//! is logged when every transactional message is done).

use super::state::{LogRecord, TcAction, TcError, TcOp, TcState, TxnState};
use crate::pulsar::types::{TxnAction, TxnId};

/// Finish `txn`, whose markers are all acknowledged: log COMMITTED or
/// ABORTED, then reply (a reply nobody waits for, as after a timeout abort
/// or a recovery, is dropped by the caller).
pub fn finish(state: &TcState, txn: TxnId) -> Result<Vec<TcAction>, TcError> {
    let meta = state.lookup(txn)?;
    let (end, action) = match meta.state {
        TxnState::Committing => (TxnState::Committed, TxnAction::Commit),
        TxnState::Aborting => (TxnState::Aborted, TxnAction::Abort),
        other => {
            return Err(TcError::InvalidState {
                txn,
                state: other,
                wanted: TcOp::Finish,
            });
        }
    };
    Ok(vec![
        TcAction::Log(LogRecord::State { txn, state: end }),
        TcAction::Reply(action),
    ])
}

#[cfg(test)]
mod tests {
    use crate::pulsar::coordinator::{TcError, TcOp, TxnState};
    use crate::pulsar::test_util::*;
    use crate::pulsar::types::TxnAction;

    #[test]
    fn open_transaction_cannot_finish() {
        let mut tc = Tc::new(1);
        let t = tc.must_open(0, 1_000);
        assert_eq!(
            tc.finish(t),
            Err(TcError::InvalidState {
                txn: t,
                state: TxnState::Open,
                wanted: TcOp::Finish
            })
        );
        tc.must_end(t, TxnAction::Abort);
        assert_eq!(tc.must_finish(t), vec![TxnAction::Abort]);
        assert_eq!(tc.finish(t), Err(TcError::NotFound(t)));
    }
}
