//! End on a partition: the coordinator's commit or abort marker is written
//! into the partition's log and the transaction leaves the buffer (Pulsar's
//! `END_TXN_ON_PARTITION`; an abort adds it to the aborted index).

use super::state::{Entry, TbState};
use crate::pulsar::ablation::{PulsarAblation, PulsarAblations};
use crate::pulsar::types::Marker;

/// Apply `marker` to the partition. Returns the entry to write, or `None`
/// if the transaction it names has already ended here (a retried or
/// duplicated marker; the first marker wins). A marker for a transaction
/// with no message here is written too, so a late message is refused.
///
/// With [`PulsarAblation::MarkerByProducerEpoch`] the marker ends the
/// producer's oldest transaction still open here, whichever TxnId the
/// marker names: a late marker of an ended transaction lands on the
/// producer's next one (the Kafka flaw of the Jepsen 2024 analysis;
/// KIP-890 "a delayed EndTxn marker ... can result in incorrectly
/// completing a transaction").
pub fn end(tb: &TbState, marker: &Marker, ablations: PulsarAblations) -> Option<Entry> {
    let txn = match ablations.has(PulsarAblation::MarkerByProducerEpoch) {
        true => tb.ongoing_of(marker.producer).unwrap_or(marker.txn),
        false => marker.txn,
    };
    if tb.ended(txn).is_some() {
        return None;
    }
    Some(Entry::Marker {
        txn,
        action: marker.action,
    })
}

#[cfg(test)]
mod tests {
    use crate::pulsar::ablation::PulsarAblation;
    use crate::pulsar::test_util::*;
    use crate::pulsar::types::TxnAction;

    #[test]
    fn first_marker_wins_and_duplicates_are_ignored() {
        let mut b = Broker::default();
        b.must_send(Some(txn(1)), "m");
        assert!(b.mark(txn(1), TxnAction::Commit));
        assert!(!b.mark(txn(1), TxnAction::Commit));
        assert!(
            !b.mark(txn(1), TxnAction::Abort),
            "a racing abort is ignored"
        );
        assert_eq!(b.tb.ended(txn(1)), Some(TxnAction::Commit));
        assert_eq!(b.must_read("s", 0, 10), vec![(0, "m".to_string())]);
    }

    /// A late abort marker of transaction 1 arrives after the same producer
    /// opened transaction 2 here.
    fn late_abort_marker(b: &mut Broker) {
        b.must_send(Some(txn(1)), "one");
        b.must_mark(txn(1), TxnAction::Commit);
        b.must_send(Some(txn(2)), "two");
        // The copy of txn 1's marker that the network delayed:
        b.mark(txn(1), TxnAction::Abort);
        // Transaction 2's own commit marker (ignored if it already ended).
        b.mark(txn(2), TxnAction::Commit);
    }

    #[test]
    fn late_marker_is_ignored_by_txn_id() {
        let mut b = Broker::default();
        late_abort_marker(&mut b);
        assert_eq!(b.tb.ended(txn(2)), Some(TxnAction::Commit));
        assert_eq!(b.must_read("s", 0, 10).len(), 2);
    }

    #[test]
    fn ablated_late_marker_aborts_the_next_transaction() {
        let mut b = Broker::ablated(PulsarAblation::MarkerByProducerEpoch);
        late_abort_marker(&mut b);
        // Transaction 2 committed at the coordinator but is aborted here:
        // a lost write and a torn transaction.
        assert_eq!(b.tb.ended(txn(2)), Some(TxnAction::Abort));
        assert_eq!(b.must_read("s", 0, 10), vec![(0, "one".to_string())]);
    }
}
