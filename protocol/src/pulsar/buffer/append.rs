//! Append: a producer's message lands in the partition's log, carrying its
//! TxnId if it is transactional (reference text, "發送事務消息").

use super::state::{AppendError, Entry, TbState};
use crate::pulsar::types::Message;

/// Append `message`. Returns the entry to write at offset
/// [`TbState::len`]; a transactional message stays invisible until its
/// commit marker. A message of a transaction that already ended here is
/// refused.
pub fn append(tb: &TbState, message: &Message) -> Result<Entry, AppendError> {
    if let Some(txn) = message.txn
        && let Some(action) = tb.ended(txn)
    {
        return Err(AppendError::TxnEnded { txn, action });
    }
    Ok(Entry::Message(message.clone()))
}

#[cfg(test)]
mod tests {
    use crate::pulsar::buffer::AppendError;
    use crate::pulsar::test_util::*;
    use crate::pulsar::types::TxnAction;

    #[test]
    fn transactional_message_holds_back_the_max_read_position() {
        let mut b = Broker::default();
        b.must_send(None, "a");
        b.must_send(Some(txn(1)), "b");
        b.must_send(None, "c");
        assert_eq!(b.tb.max_read_position(), 1);
        assert!(b.tb.is_ongoing(txn(1)));
        b.must_mark(txn(1), TxnAction::Commit);
        assert_eq!(b.tb.max_read_position(), 4);
    }

    #[test]
    fn the_log_counts_its_entries_and_a_marker_ends_the_transaction_here() {
        let mut b = Broker::default();
        assert!(b.tb.is_empty());
        assert_eq!(b.must_send(None, "a"), 0);
        assert_eq!(b.must_send(Some(txn(1)), "b"), 1);
        assert_eq!((b.tb.len(), b.tb.is_empty()), (2, false));
        assert!(b.tb.is_ongoing(txn(1)));
        assert!(!b.tb.is_ongoing(txn(2)), "never sent here");
        b.must_mark(txn(1), TxnAction::Commit);
        assert!(!b.tb.is_ongoing(txn(1)), "ended by its marker");
        // The broker answers a send with the offset it got.
        let req = crate::pulsar::client::BrokerRequest::Send(crate::pulsar::types::Message {
            txn: None,
            producer: PRODUCER,
            sequence_id: 9,
            payload: "c".into(),
            batch: Vec::new(),
        });
        let reply = b.execute(&req);
        assert_eq!(reply, crate::pulsar::client::BrokerReply::Sent(3));
    }

    #[test]
    fn late_message_of_an_ended_transaction_is_refused() {
        let mut b = Broker::default();
        b.must_mark(txn(1), TxnAction::Abort);
        assert_eq!(
            b.send(Some(txn(1)), "late"),
            Err(AppendError::TxnEnded {
                txn: txn(1),
                action: TxnAction::Abort
            })
        );
        assert_eq!(b.tb.max_read_position(), 1);
    }
}
