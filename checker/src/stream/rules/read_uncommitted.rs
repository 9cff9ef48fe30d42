//! `read_uncommitted`: consumers see a transaction's messages only once it
//! has committed, and never read past a transaction still open
//! (Pulsar's max-read-position; Kafka's last stable offset).

use crate::stream::history::{ReceiveOp, StreamOp};
use crate::stream::index::{Ix, receipt_desc};
use crate::stream::report::Collector;
use crate::stream::{StreamFindingClass, StreamRule};
use crate::units::Ms;
use std::collections::BTreeMap;

pub(crate) const ID: StreamRule = StreamRule::ReadUncommitted;
pub(crate) const NAME: &str = "no consumer receives a transaction's message before the transaction commits, \
     or a message behind a transaction still open";

/// Two classes, judged from the clients' clock only:
/// * `before_commit_request`: a message of a transaction that committed in
///   the log was received before its client asked to commit it (or its client
///   never asked), so the consumer saw it while it was still open;
/// * `past_open_transaction`: a message at offset o was received at time t
///   while an earlier offset of the same partition held a message of another
///   transaction that committed there but whose commit was requested only
///   after t (or, with no commit request recorded, that still sent or
///   acknowledged after t): the consumer read past a transaction still open.
pub(crate) fn check(ix: &Ix, c: &mut Collector) {
    let open = OpenSpans::build(ix);
    for op in &ix.h.ops {
        let StreamOp::Receive(r) = op else { continue };
        if !r.isolation.is_read_committed() {
            continue;
        }
        if let Some(t) = ix.txn_of(&r.message)
            && let Some(l) = ix
                .in_log
                .get(r.message.as_str())
                .and_then(|v| v.iter().find(|l| l.partition == r.partition && l.visible))
        {
            let asked = ix.txns.get(&t).and_then(|x| x.commit_request_ns);
            if asked.is_none_or(|a| r.t_ns < a) {
                c.add(StreamFindingClass::BeforeCommitRequest, || {
                    let when = match asked {
                        Some(a) => format!("its client asked to commit only at {}, after the receipt at {}", Ms(a), Ms(r.t_ns)),
                        None => "its client never asked to commit it".to_string(),
                    };
                    (
                        format!("{:?} of T{t} was received before T{t}'s commit was requested", r.message),
                        vec![t],
                        vec![
                            ix.send_desc(&r.message),
                            receipt_desc(r),
                            ix.txn_desc(t),
                            format!("T{t} committed in {} ({}), but {when}: the consumer read an uncommitted message",
                                r.partition, ix.marker_desc(l.partition, t, l.offset)),
                        ],
                    )
                });
            }
        }
        open.check(ix, r, c);
    }
}

/// When each transaction made its last send or acknowledgment: it was
/// open then, whether or not a commit request was recorded.
fn last_op_ns(ix: &Ix) -> BTreeMap<u64, u64> {
    let mut last = BTreeMap::new();
    for op in &ix.h.ops {
        let (txn, t_ns) = match op {
            StreamOp::Send(s) => (s.txn, s.t_ns),
            StreamOp::Ack(a) => (a.txn, a.t_ns),
            StreamOp::Receive(_) => continue,
        };
        if let Some(t) = txn {
            let e = last.entry(t).or_insert(t_ns);
            *e = (*e).max(t_ns);
        }
    }
    last
}

/// A committed transaction's first message in one partition, and until
/// when it was certainly open: its commit request, or, when none was
/// recorded, its last send or acknowledgment.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Span {
    first_offset: u64,
    txn: u64,
    commit_request_ns: u64,
}

/// One partition's spans, sorted by first offset, and the latest commit
/// request among the spans up to each.
#[derive(Default)]
struct PartSpans {
    spans: Vec<Span>,
    latest_request_ns: Vec<u64>,
}

/// Per partition, the committed transactions by the offset of their first
/// message there.
struct OpenSpans<'a> {
    by_part: BTreeMap<&'a str, PartSpans>,
}

impl<'a> OpenSpans<'a> {
    fn build(ix: &Ix<'a>) -> OpenSpans<'a> {
        let mut first: BTreeMap<(&str, u64), u64> = BTreeMap::new();
        for locs in ix.in_log.values() {
            for l in locs.iter().filter(|l| l.visible) {
                if let Some(t) = l.txn {
                    let f = first.entry((l.partition, t)).or_insert(l.offset);
                    *f = (*f).min(l.offset);
                }
            }
        }
        let last_op = last_op_ns(ix);
        let mut by_part: BTreeMap<&str, PartSpans> = BTreeMap::new();
        for ((p, txn), first_offset) in first {
            let open_until = ix
                .txns
                .get(&txn)
                .and_then(|x| x.commit_request_ns)
                .or_else(|| last_op.get(&txn).copied());
            if let Some(commit_request_ns) = open_until {
                by_part.entry(p).or_default().spans.push(Span {
                    first_offset,
                    txn,
                    commit_request_ns,
                });
            }
        }
        for ps in by_part.values_mut() {
            ps.spans.sort_unstable();
            let mut m = 0;
            ps.latest_request_ns = ps
                .spans
                .iter()
                .map(|s| {
                    m = m.max(s.commit_request_ns);
                    m
                })
                .collect();
        }
        OpenSpans { by_part }
    }

    fn check(&self, ix: &Ix, r: &ReceiveOp, c: &mut Collector) {
        let Some(ps) = self.by_part.get(r.partition.as_str()) else {
            return;
        };
        let n = ps.spans.partition_point(|s| s.first_offset < r.offset);
        if n == 0 || ps.latest_request_ns[n - 1] <= r.t_ns {
            return;
        }
        let own = ix.txn_of(&r.message);
        let Some(&Span {
            first_offset: off,
            txn: t,
            commit_request_ns: asked,
        }) = ps.spans[..n]
            .iter()
            .find(|s| s.commit_request_ns > r.t_ns && Some(s.txn) != own)
        else {
            return;
        };
        c.add(StreamFindingClass::PastOpenTransaction, || {
            (
                format!("{:?} at {}@{} was received while T{t}, whose message sits before it at offset {off}, was still open",
                    r.message, r.partition, r.offset),
                vec![t],
                vec![
                    receipt_desc(r),
                    format!("{}@{off} holds a message of {}", r.partition, ix.txn_desc(t)),
                    format!("T{t} committed in {} later, but {}, after the receipt: \
                        at {} T{t} was open, and no consumer may read past the first message of an open transaction",
                        r.partition, open_until_desc(ix, t, asked), Ms(r.t_ns)),
                ],
            )
        });
    }
}

/// Why transaction `t` was open until `ns`: its commit request, or its last
/// send or acknowledgment when no commit request was recorded.
fn open_until_desc(ix: &Ix, t: u64, ns: u64) -> String {
    if ix
        .txns
        .get(&t)
        .is_some_and(|x| x.commit_request_ns.is_some())
    {
        format!("its commit was requested only at {}", Ms(ns))
    } else {
        format!(
            "no commit request was recorded and it still sent or acknowledged at {}",
            Ms(ns)
        )
    }
}
