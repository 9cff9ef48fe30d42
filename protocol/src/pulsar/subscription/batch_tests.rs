//! Batches, batch-index acks, cumulative acks and the two logs of a
//! subscription, step by step.

use crate::pulsar::broker::{self, BrokerWrite};
use crate::pulsar::subscription::{AckError, AckTarget, SubLog, recover};
use crate::pulsar::test_util::*;
use crate::pulsar::types::{Marker, SubscriptionType, TxnAction};

fn index(offset: u64, i: u32) -> AckTarget {
    AckTarget {
        index: Some(i),
        ..AckTarget::entry(offset)
    }
}

fn cumulative(offset: u64, i: Option<u32>) -> AckTarget {
    AckTarget {
        offset,
        index: i,
        cumulative: true,
        kind: SubscriptionType::Exclusive,
    }
}

fn payloads(b: &Broker) -> Vec<String> {
    b.must_read("s", 0, 99)
        .into_iter()
        .map(|(_, p)| p)
        .collect()
}

#[test]
fn a_batch_entry_is_read_as_its_messages_and_deleted_when_every_index_is_acked() {
    let mut b = Broker::default();
    assert_eq!(b.must_send_batch(None, &["a", "b", "c"]), 0);
    b.must_send(None, "d");
    assert_eq!(
        b.must_read("s", 0, 99),
        [(0, "a"), (0, "b"), (0, "c"), (1, "d")].map(|(o, p)| (o, p.to_string()))
    );
    b.ack_at("s", index(0, 0), None).unwrap();
    b.ack_at("s", index(0, 2), None).unwrap();
    assert!(!b.sub("s").is_acked(0), "index 1 is not acknowledged");
    assert_eq!(payloads(&b), ["b", "d"]);
    b.ack_at("s", index(0, 1), None).unwrap();
    assert!(b.sub("s").is_acked(0));
    assert_eq!(
        b.ack_at("s", index(0, 3), None),
        Err(AckError::NoSuchMessage(0))
    );
}

#[test]
fn a_transactional_batch_index_ack_conflicts_only_with_the_same_index() {
    let mut b = Broker::default();
    b.must_send_batch(None, &["a", "b"]);
    b.ack_at("s", index(0, 1), Some(txn(1))).unwrap();
    assert_eq!(
        b.ack_at("s", index(0, 1), Some(txn(2))),
        Err(AckError::Conflict {
            offset: 0,
            holder: txn(1)
        })
    );
    // The whole entry covers index 1 too.
    assert_eq!(
        b.ack("s", 0, Some(txn(2))),
        Err(AckError::Conflict {
            offset: 0,
            holder: txn(1)
        })
    );
    b.ack_at("s", index(0, 0), Some(txn(2))).unwrap();
    assert_eq!(payloads(&b), Vec::<String>::new(), "both indices pending");
    b.end_sub("s", txn(1), TxnAction::Commit);
    b.end_sub("s", txn(2), TxnAction::Abort);
    let s = b.sub("s");
    assert!(!s.is_acked(0), "half of the batch is acknowledged");
    assert_eq!(payloads(&b), ["a"], "the aborted index comes again");
    assert_eq!(
        b.ack_at("s", index(0, 1), Some(txn(3))),
        Err(AckError::AlreadyAcked(0))
    );
}

#[test]
fn cumulative_acks_need_an_exclusive_or_failover_subscription() {
    let mut b = Broker::default();
    b.must_send(None, "a");
    let shared = AckTarget {
        kind: SubscriptionType::Shared,
        ..cumulative(0, None)
    };
    assert_eq!(
        b.ack_at("s", shared, None),
        Err(AckError::CumulativeOnShared)
    );
    assert_eq!(
        b.ack_at("s", shared, Some(txn(1))),
        Err(AckError::CumulativeOnShared)
    );
    b.ack_at("s", cumulative(0, None), None).unwrap();
    assert!(b.sub("s").is_acked(0));
}

#[test]
fn a_cumulative_ack_covers_every_message_up_to_its_own_batch_index() {
    let mut b = Broker::default();
    b.must_send(None, "a");
    b.must_send_batch(None, &["b", "c", "d"]);
    b.ack_at("s", cumulative(1, Some(1)), Some(txn(1))).unwrap();
    assert_eq!(payloads(&b), ["d"]);
    b.end_sub("s", txn(1), TxnAction::Commit);
    let s = b.sub("s");
    assert!(s.is_acked(0) && !s.is_acked(1));
    assert_eq!(payloads(&b), ["d"]);
    // Its own position already acknowledged: refused, as Pulsar refuses a
    // cumulative ack within the mark-delete position.
    assert_eq!(
        b.ack_at("s", cumulative(1, Some(0)), Some(txn(2))),
        Err(AckError::AlreadyAcked(1))
    );
    b.ack_at("s", cumulative(1, None), Some(txn(2))).unwrap();
    b.end_sub("s", txn(2), TxnAction::Commit);
    assert!(b.sub("s").is_acked(1));
}

#[test]
fn a_cumulative_ack_may_not_cross_another_transaction_s_pending_ack() {
    let mut b = Broker::default();
    for p in ["a", "b", "c"] {
        b.must_send(None, p);
    }
    b.ack("s", 1, Some(txn(1))).unwrap();
    let crossing = Err(AckError::Conflict {
        offset: 1,
        holder: txn(1),
    });
    assert_eq!(b.ack_at("s", cumulative(2, None), Some(txn(2))), crossing);
    assert_eq!(b.ack_at("s", cumulative(2, None), None), crossing);
    // Below the pending ack it may go.
    b.ack_at("s", cumulative(0, None), Some(txn(2))).unwrap();
    assert_eq!(
        b.ack_at("s", index(1, 0), Some(txn(2))),
        Err(AckError::Conflict {
            offset: 1,
            holder: txn(1)
        })
    );
    assert_eq!(
        b.ack_at("s", cumulative(2, None), Some(txn(1))),
        Err(AckError::Conflict {
            offset: 0,
            holder: txn(2)
        })
    );
    // Once transaction 2 committed, transaction 1's cumulative ack crosses
    // only its own pending ack.
    b.end_sub("s", txn(2), TxnAction::Commit);
    b.ack_at("s", cumulative(2, None), Some(txn(1))).unwrap();
    b.end_sub("s", txn(1), TxnAction::Commit);
    assert!((0..3).all(|o| b.sub("s").is_acked(o)));
}

#[test]
fn a_commit_appends_its_mark_to_the_pending_ack_log_then_the_cursor_acks() {
    let mut b = Broker::default();
    b.must_send_batch(None, &["a", "b"]);
    b.ack_at("s", index(0, 1), Some(txn(1))).unwrap();
    let marker = Marker {
        txn: txn(1),
        producer: PRODUCER,
        action: TxnAction::Commit,
        to: sub(0, "s"),
    };
    let BrokerWrite::Subscription { mutation, .. } =
        broker::deliver_marker(view(&b), &marker, b.ablations)
    else {
        panic!("a subscription write");
    };
    let logs: Vec<SubLog> = mutation.durable.iter().map(|r| r.log()).collect();
    assert_eq!(logs, [SubLog::PendingAck, SubLog::Cursor]);
    // The broker dies between the two appends: only the commit mark is
    // durable. Recovery acknowledges the message from the mark.
    let mut logs = b.sub_logs["s"].clone();
    logs.append(mutation.durable[0].clone());
    assert!(logs.cursor.is_empty());
    let s = recover(&logs);
    assert_eq!(s.pending_txn(0), None);
    assert!(s.is_acked_at(crate::pulsar::types::MsgPos {
        offset: 0,
        index: 1
    }));
    assert!(!s.is_acked(0));
}

fn view(b: &Broker) -> broker::PartitionView<'_> {
    broker::PartitionView {
        log: &b.log,
        tb: &b.tb,
        subs: &b.subs,
        dedup: Some(&b.dedup),
    }
}
