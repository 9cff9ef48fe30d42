//! `aborted_read`: no consumer receives a message of a transaction that did
//! not commit ("aborted read" in Jepsen's Redpanda and Bufstream analyses).

use crate::Outcome;
use crate::stream::history::StreamOp;
use crate::stream::index::{Ix, receipt_desc};
use crate::stream::report::Collector;
use crate::stream::{StreamFindingClass, StreamRule};

pub(crate) const ID: StreamRule = StreamRule::AbortedRead;
pub(crate) const NAME: &str =
    "no consumer receives a message of a transaction that aborted or never committed in the log";

/// A receipt of a transactional message is an aborted read when the
/// transaction's client was told it aborted (`aborted_by_client`), or when the
/// final log of the message's partition holds no commit marker for it after
/// the message (`not_committed`).
pub(crate) fn check(ix: &Ix, c: &mut Collector) {
    for op in &ix.h.ops {
        let StreamOp::Receive(r) = op else { continue };
        if !r.isolation.is_read_committed() {
            continue;
        }
        let Some(t) = ix.txn_of(&r.message) else {
            continue;
        };
        let told_aborted = ix
            .txns
            .get(&t)
            .is_some_and(|x| x.outcome == Outcome::Aborted);
        let committed_here = ix
            .in_log
            .get(r.message.as_str())
            .is_some_and(|locs| locs.iter().any(|l| l.partition == r.partition && l.visible));
        let class = if told_aborted {
            StreamFindingClass::AbortedByClient
        } else if !committed_here {
            StreamFindingClass::NotCommitted
        } else {
            continue;
        };
        c.add(class, || {
            let why = if told_aborted {
                format!("T{t}'s client was told it aborted, so none of its messages may ever be delivered")
            } else {
                format!("T{t} never committed in {}: a consumer may only see it after its commit marker", r.partition)
            };
            (
                format!(
                    "consumer {} of {:?} received {:?} of T{t}, which did not commit",
                    r.consumer, r.subscription, r.message
                ),
                vec![t],
                vec![
                    ix.send_desc(&r.message),
                    ix.txn_desc(t),
                    receipt_desc(r),
                    ix.log_desc(&r.message),
                    why,
                ],
            )
        });
    }
}
