//! Dispatch: the broker hands each message of a Shared subscription to one
//! consumer at a time, and takes it back only when that consumer can no
//! longer process it.
//!
//! Pulsar's Shared subscription dispatcher
//! (`PersistentDispatcherMultipleConsumers`) sends each entry to one
//! consumer with permits and remembers it in that consumer's pending-acks
//! list; the entry goes to another consumer only when it is redelivered: a
//! negative ack or ack timeout of the holder, the holder's connection
//! closing, or the abort of a transaction that acked it
//! (`PendingAckHandleImpl` asks the dispatcher to redeliver). This state is
//! memory only: a broker restart forgets it, and every unacknowledged
//! message can be dispatched again (the consumers reconnect).

use super::state::{Dispatch, Subscription};
use crate::pulsar::types::{ConsumerRef, SubscriptionType};

/// The dispatch state change for `reader` having been handed `offsets` on
/// `sub`. Apply with [`Subscription::dispatch`]: a newer session of the
/// reader's name first takes back what its earlier sessions held.
pub fn dispatch(
    sub: &Subscription,
    reader: &ConsumerRef,
    offsets: Vec<u64>,
    kind: SubscriptionType,
) -> Dispatch {
    debug_assert!(offsets.iter().all(|o| sub.available_to(*o, reader)));
    Dispatch {
        consumer: reader.clone(),
        offsets,
        kind,
    }
}

#[cfg(test)]
mod tests {
    use crate::pulsar::subscription::SubscribeError;
    use crate::pulsar::test_util::*;
    use crate::pulsar::types::{SubscriptionType, TxnAction};

    #[test]
    fn each_message_goes_to_one_consumer() {
        let mut b = Broker::default();
        b.must_send(None, "a");
        b.must_send(None, "b");
        assert_eq!(b.must_read_as("s", &consumer("p1", 1), 0, 1), vec![0]);
        assert_eq!(b.must_read_as("s", &consumer("p2", 1), 0, 1), vec![1]);
        assert!(b.must_read_as("s", &consumer("p3", 1), 0, 9).is_empty());
        // The holder gets its own message again (a redelivery to itself).
        assert_eq!(b.must_read_as("s", &consumer("p1", 1), 0, 9), vec![0]);
    }

    #[test]
    fn a_held_message_goes_only_to_its_holder_or_a_newer_session_of_its_name() {
        let mut b = Broker::default();
        for payload in ["a", "b", "c"] {
            b.must_send(None, payload);
        }
        assert_eq!(b.must_read_as("s", &consumer("p1", 2), 0, 1), vec![0]);
        assert_eq!(b.must_read_as("s", &consumer("p2", 1), 1, 1), vec![1]);
        let sub = b.sub("s");
        assert!(!sub.available_to(0, &consumer("p2", 5)), "held by p1");
        assert!(
            sub.available_to(0, &consumer("p1", 3)),
            "p1's newer session"
        );
        // p1's new session reads: it takes back what its session 2 held,
        // and p2 keeps what it holds.
        assert_eq!(b.must_read_as("s", &consumer("p1", 3), 2, 1), vec![2]);
        let sub = b.sub("s");
        assert!(!sub.available_to(1, &consumer("p3", 1)), "still held by p2");
    }

    #[test]
    fn a_restarted_consumer_releases_what_its_earlier_session_held() {
        let mut b = Broker::default();
        b.must_send(None, "a");
        assert_eq!(b.must_read_as("s", &consumer("p1", 1), 0, 1), vec![0]);
        assert!(b.must_read_as("s", &consumer("p2", 1), 0, 1).is_empty());
        // p1's process restarted: its new session reads (nothing new here).
        b.must_read_as("s", &consumer("p1", 2), 5, 1);
        assert_eq!(b.must_read_as("s", &consumer("p2", 1), 0, 1), vec![0]);
        // A late read of the closed session is handed nothing.
        b.must_send(None, "b");
        assert!(b.must_read_as("s", &consumer("p1", 1), 0, 9).is_empty());
    }

    #[test]
    fn an_aborted_ack_releases_the_message_to_every_consumer() {
        let mut b = Broker::default();
        b.must_send(None, "a");
        assert_eq!(b.must_read_as("s", &consumer("p1", 1), 0, 1), vec![0]);
        b.ack("s", 0, Some(txn(1))).unwrap();
        assert!(b.must_read_as("s", &consumer("p1", 1), 0, 1).is_empty());
        b.end_sub("s", txn(1), TxnAction::Abort);
        assert_eq!(b.must_read_as("s", &consumer("p2", 1), 0, 1), vec![0]);
    }

    #[test]
    fn a_broker_restart_forgets_who_holds_what() {
        let mut b = Broker::default();
        b.must_send(None, "a");
        assert_eq!(b.must_read_as("s", &consumer("p1", 1), 0, 1), vec![0]);
        b.ack("s", 0, None).unwrap();
        b.must_send(None, "b");
        assert_eq!(b.must_read_as("s", &consumer("p1", 1), 0, 9), vec![1]);
        b.restart();
        assert_eq!(b.must_read_as("s", &consumer("p2", 1), 0, 9), vec![1]);
    }

    fn exclusive() -> SubscriptionType {
        SubscriptionType::Exclusive
    }

    #[test]
    fn an_exclusive_subscription_refuses_a_second_consumer_until_the_first_closes() {
        let mut b = Broker::default();
        b.must_send(None, "a");
        let (p1, p2) = (consumer("p1", 1), consumer("p2", 1));
        assert_eq!(b.read_as("s", &p1, 0, 9, exclusive()), Ok(vec![0]));
        assert_eq!(
            b.read_as("s", &p2, 0, 9, exclusive()),
            Err(SubscribeError::ConsumerBusy)
        );
        let shared = SubscriptionType::Shared;
        assert_eq!(
            b.read_as("s", &p2, 0, 9, shared),
            Err(SubscribeError::TypeMismatch {
                has: exclusive(),
                asked: shared
            })
        );
        // p1 closes: what it held goes to the next consumer.
        b.close("s", &p1);
        assert_eq!(b.read_as("s", &p2, 0, 9, exclusive()), Ok(vec![0]));
        // The closed session is handed nothing, and refused now p2 holds it.
        assert_eq!(
            b.read_as("s", &p1, 0, 9, exclusive()),
            Err(SubscribeError::ConsumerBusy)
        );
    }

    #[test]
    fn a_failover_subscription_feeds_its_first_consumer_and_fails_over_when_it_closes() {
        let mut b = Broker::default();
        b.must_send(None, "a");
        b.must_send(None, "b");
        let failover = SubscriptionType::Failover;
        let (p1, p2) = (consumer("p1", 1), consumer("p2", 1));
        assert_eq!(b.read_as("s", &p1, 0, 1, failover), Ok(vec![0]));
        assert_eq!(
            b.read_as("s", &p2, 0, 9, failover),
            Ok(vec![]),
            "a standby consumer gets nothing"
        );
        assert_eq!(b.sub("s").attached(), ["p1", "p2"]);
        b.close("s", &p1);
        assert_eq!(b.read_as("s", &p2, 0, 9, failover), Ok(vec![0, 1]));
        // p1 reopens on a new session: it attaches again, as the standby.
        assert_eq!(
            b.read_as("s", &consumer("p1", 2), 0, 9, failover),
            Ok(vec![])
        );
    }

    #[test]
    fn a_closed_shared_consumer_s_messages_go_to_the_others() {
        let mut b = Broker::default();
        b.must_send(None, "a");
        let p1 = consumer("p1", 1);
        assert_eq!(b.must_read_as("s", &p1, 0, 9), vec![0]);
        assert!(b.must_read_as("s", &consumer("p2", 1), 0, 9).is_empty());
        b.close("s", &p1);
        assert!(b.must_read_as("s", &p1, 0, 9).is_empty(), "closed");
        assert_eq!(b.must_read_as("s", &consumer("p2", 1), 0, 9), vec![0]);
    }
}
