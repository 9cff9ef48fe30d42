//! `duplicate`: no message is written twice, and where exactly-once is
//! promised no message is processed twice ("duplicate writes" in Jepsen's
//! Redpanda analysis).

use crate::stream::index::{Ix, ack_desc};
use crate::stream::report::Collector;
use crate::stream::{StreamFindingClass, StreamRule};
use std::collections::BTreeSet;

pub(crate) const ID: StreamRule = StreamRule::Duplicate;
pub(crate) const NAME: &str = "each message is in the logs at most once, and on an exactly-once subscription \
     each message is acknowledged by at most one committed transaction";

/// Two classes:
/// * `duplicate_in_log`: one message (messages are unique per send) at two
///   or more offsets of the logs;
/// * `acked_twice`: on a subscription declared `exactly_once`, one message
///   acknowledged by two committed transactions (or by a committed
///   transaction and a confirmed plain acknowledgment): it was processed twice.
pub(crate) fn check(ix: &Ix, c: &mut Collector) {
    if !ix.subs.values().any(|s| s.exactly_once) {
        c.note(
            "no exactly-once subscription declared: only duplicates in the logs are judged"
                .to_string(),
        );
    }
    for (m, locs) in &ix.in_log {
        if locs.len() < 2 {
            continue;
        }
        c.add(StreamFindingClass::DuplicateInLog, || {
            (
                format!("{m:?} is in the logs {} times", locs.len()),
                locs.iter().filter_map(|l| l.txn).collect(),
                vec![
                    ix.send_desc(m),
                    ix.log_desc(m),
                    "a message sent once must be appended once: the broker (or a retried send) wrote it again".to_string(),
                ],
            )
        });
    }
    for ((sub, part, off), acks) in &ix.acks {
        if !ix.subs.get(sub).is_some_and(|s| s.exactly_once) {
            continue;
        }
        let committed: Vec<_> = acks.iter().filter(|a| ix.ack_committed(a)).collect();
        let units: BTreeSet<Option<u64>> = committed.iter().map(|a| a.txn).collect();
        if units.len() < 2 {
            continue;
        }
        c.add(StreamFindingClass::AckedTwice, || {
            let mut details: Vec<String> = committed.iter().map(|a| ack_desc(a)).collect();
            details.extend(units.iter().flatten().map(|t| ix.txn_desc(*t)));
            details.push(format!(
                "subscription {sub:?} promises exactly-once processing, yet {} committed acknowledgments of {part}@{off} took effect: \
                 the message was processed {} times",
                units.len(),
                units.len()
            ));
            (
                format!("{part}@{off} ({:?}) was acknowledged on {sub:?} by {} committed transactions",
                    committed[0].message, units.len()),
                units.iter().flatten().copied().collect(),
                details,
            )
        });
    }
}
