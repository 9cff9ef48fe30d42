//! Open: hand out a TxnId and log OPEN (reference text, "打開一個事務": the
//! coordinator logs OPEN and answers with the TxnID only once it is durable).

use super::state::{LogRecord, TcState};
use crate::pulsar::types::{ProducerRef, TxnId};

/// Open a transaction for `producer` that times out at `deadline_ms`
/// (coordinator clock: its time now plus the client's timeout). Returns
/// the TxnId to answer with once the record is durable. The sequence number comes from the state, which replay
/// rebuilds from the log, so it is never repeated across restarts.
pub fn open(state: &TcState, producer: ProducerRef, deadline_ms: u64) -> (TxnId, LogRecord) {
    let txn = TxnId {
        coordinator: state.coordinator(),
        seq: state.next_seq(),
    };
    let record = LogRecord::Open {
        txn,
        producer,
        deadline_ms,
    };
    (txn, record)
}

#[cfg(test)]
mod tests {
    use crate::pulsar::coordinator::TxnState;
    use crate::pulsar::test_util::*;

    #[test]
    fn ids_are_sequential_and_open() {
        let mut tc = Tc::new(7);
        let a = tc.must_open(0, 1_000);
        let b = tc.must_open(5, 1_000);
        assert_eq!((a.coordinator, a.seq, b.seq), (7, 0, 1));
        assert_eq!(tc.state_of(a), Some(TxnState::Open));
        assert_eq!(tc.state.txn(b).unwrap().deadline_ms, 1_005);
    }

    #[test]
    fn ids_stay_unique_across_a_restart() {
        let mut tc = Tc::new(7);
        let a = tc.must_open(0, 1_000);
        tc.must_end(a, crate::pulsar::types::TxnAction::Commit);
        tc.must_finish(a);
        // The ended transaction is forgotten in memory but not in the log.
        assert_eq!(tc.state_of(a), None);
        tc.crash_and_recover();
        let b = tc.must_open(10, 1_000);
        assert_eq!(b.seq, 1, "a restarted coordinator must not reuse seq 0");
    }
}
