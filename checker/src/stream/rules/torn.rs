//! `torn_transaction`: a transaction's effects, its messages and its
//! acknowledgments, take effect all together or not at all ("torn
//! transactions" in Jepsen's Bufstream analysis).

use crate::Outcome;
use crate::stream::history::{MarkerKind, OpResult, StreamOp};
use crate::stream::index::{Ix, ack_desc};
use crate::stream::report::Collector;
use crate::stream::{StreamFindingClass, StreamRule};
use crate::units::Ms;
use std::collections::BTreeMap;

pub(crate) const ID: StreamRule = StreamRule::TornTransaction;
pub(crate) const NAME: &str = "each transaction's messages and acknowledgments take effect all together or \
     not at all, and its markers agree";

/// One effect of a transaction and whether it took effect.
struct Part {
    applied: bool,
    is_ack: bool,
    what: String,
}

/// A transaction's effects: each message in the logs (visible or not), each
/// send (not refused) whose message is in no log (not applied), and each
/// acknowledgment (not refused) that the subscription's final state holds
/// (applied) or lacks (not applied). An acknowledged offset that another
/// acknowledgment, not known to have failed, could explain proves nothing
/// and is left out. Classes: `acks_without_messages`,
/// `messages_without_acks`, `partly_visible` (a mix among messages, or among
/// acknowledgments), and `conflicting_markers` (a commit and an abort marker
/// for one transaction), `coordinator_contradicted` (a marker of the
/// other outcome than the one the history recorded at the coordinator), and
/// `logged_commit_reversed` (a transaction whose decision to commit was
/// durable in the coordinator's log, then aborted).
pub(crate) fn check(ix: &Ix, c: &mut Collector) {
    let parts = collect_parts(ix);
    for (t, ps) in &parts {
        let applied = |ack: bool| ps.iter().any(|p| p.applied && p.is_ack == ack);
        let missing = |ack: bool| ps.iter().any(|p| !p.applied && p.is_ack == ack);
        let class = if applied(true) && missing(false) {
            StreamFindingClass::AcksWithoutMessages
        } else if applied(false) && missing(true) {
            StreamFindingClass::MessagesWithoutAcks
        } else if (applied(false) && missing(false)) || (applied(true) && missing(true)) {
            StreamFindingClass::PartlyVisible
        } else {
            continue;
        };
        c.add(class, || {
            let mut details = vec![ix.txn_desc(*t)];
            details.extend(ps.iter().map(|p| {
                let state = if p.applied {
                    "took effect"
                } else {
                    "did not take effect"
                };
                format!("{}: {state}", p.what)
            }));
            details.push(match class {
                StreamFindingClass::AcksWithoutMessages => format!(
                    "T{t} is torn: its acknowledgments took effect without its messages, so its inputs count as \
                     processed while the output made from them is lost"
                ),
                StreamFindingClass::MessagesWithoutAcks => format!(
                    "T{t} is torn: its messages took effect without its acknowledgments, so its inputs will be \
                     delivered and processed again"
                ),
                _ => format!("T{t} is torn: only part of its messages or acknowledgments took effect"),
            });
            (format!("T{t} is torn ({class})"), vec![*t], details)
        });
    }
    let mut verdicts: BTreeMap<u64, (Vec<String>, Vec<String>)> = BTreeMap::new();
    for p in &ix.h.final_state.partitions {
        for e in &p.entries {
            if let (Some(kind), Some(t)) = (e.marker, e.txn) {
                let v = verdicts.entry(t).or_default();
                let at = format!("{}@{}", p.name, e.offset);
                match kind {
                    MarkerKind::Commit => v.0.push(at),
                    MarkerKind::Abort => v.1.push(at),
                }
            }
        }
    }
    contradicted_coordinator(ix, &verdicts, c);
    reversed_commits(ix, &verdicts, c);
    for (t, (commits, aborts)) in verdicts {
        if commits.is_empty() || aborts.is_empty() {
            continue;
        }
        c.add(StreamFindingClass::ConflictingMarkers, || {
            (
                format!("T{t} has commit and abort markers"),
                vec![t],
                vec![
                    ix.txn_desc(t),
                    format!("commit markers at {}", commits.join(", ")),
                    format!("abort markers at {}", aborts.join(", ")),
                    "a transaction has one outcome: its markers must all commit or all abort"
                        .to_string(),
                ],
            )
        });
    }
}

/// `coordinator_contradicted`: the history records an outcome the
/// coordinator decided on its own (a timeout abort), and a partition holds
/// a marker of the other outcome. The record is a claim of the system under
/// test; only the logs' markers can confirm it.
fn contradicted_coordinator(
    ix: &Ix,
    verdicts: &BTreeMap<u64, (Vec<String>, Vec<String>)>,
    c: &mut Collector,
) {
    for t in &ix.h.transactions {
        let Some(d) = &t.coordinator else { continue };
        let Some((commits, aborts)) = verdicts.get(&t.id) else {
            continue;
        };
        let (against, kind) = match d.outcome {
            Outcome::Aborted => (commits, "commit"),
            Outcome::Committed => (aborts, "abort"),
            Outcome::Unknown => continue,
        };
        if against.is_empty() {
            continue;
        }
        let id = t.id;
        let why = d.reason.as_deref().unwrap_or("no reason given");
        c.add(StreamFindingClass::CoordinatorContradicted, || {
            (
                format!(
                    "T{id}: the coordinator's recorded decision is contradicted by {kind} markers"
                ),
                vec![id],
                vec![
                    ix.txn_desc(id),
                    format!(
                        "the coordinator recorded it {} at {} ({why})",
                        crate::stream::index::outcome_word(d.outcome),
                        Ms(d.t_ns)
                    ),
                    format!("{kind} markers at {}", against.join(", ")),
                    "the partitions' markers must carry the coordinator's decision".to_string(),
                ],
            )
        });
    }
}

/// `logged_commit_reversed`: the history records that the coordinator's
/// log durably held the decision to commit a transaction (Pulsar's
/// COMMITTING), and the transaction was aborted all the same: by an abort
/// marker, by an abort decision recorded at the coordinator, or by what its
/// client was told. A durable decision to commit is final: a coordinator
/// that recovers the log must finish the commit (Pulsar's transaction log,
/// `pulsar-transactions.zh-hant.txt`), never abort it.
fn reversed_commits(
    ix: &Ix,
    verdicts: &BTreeMap<u64, (Vec<String>, Vec<String>)>,
    c: &mut Collector,
) {
    for t in &ix.h.transactions {
        let Some(logged) = t.commit_logged_ns else {
            continue;
        };
        let mut evidence = Vec::new();
        if let Some((_, aborts)) = verdicts.get(&t.id)
            && !aborts.is_empty()
        {
            evidence.push(format!("abort markers at {}", aborts.join(", ")));
        }
        if let Some(d) = t
            .coordinator
            .as_ref()
            .filter(|d| d.outcome == Outcome::Aborted)
        {
            let why = d.reason.as_deref().unwrap_or("no reason given");
            evidence.push(format!(
                "the coordinator recorded an abort at {} ({why})",
                Ms(d.t_ns)
            ));
        }
        if t.outcome == Outcome::Aborted {
            evidence.push("its client was told it aborted".to_string());
        }
        if evidence.is_empty() {
            continue;
        }
        let id = t.id;
        c.add(StreamFindingClass::LoggedCommitReversed, || {
            let mut details = vec![
                ix.txn_desc(id),
                format!(
                    "the coordinator's log durably held the decision to commit at {}",
                    Ms(logged)
                ),
            ];
            details.extend(evidence);
            details.push(
                "a durable decision to commit is final: recovery must finish the commit"
                    .to_string(),
            );
            (
                format!("T{id} was aborted after its decision to commit was durable"),
                vec![id],
                details,
            )
        });
    }
}

fn collect_parts(ix: &Ix) -> BTreeMap<u64, Vec<Part>> {
    let mut parts: BTreeMap<u64, Vec<Part>> = BTreeMap::new();
    for (m, locs) in &ix.in_log {
        for l in locs {
            if let Some(t) = l.txn {
                parts.entry(t).or_default().push(Part {
                    applied: l.visible,
                    is_ack: false,
                    what: format!(
                        "message {m:?} at {}@{} ({})",
                        l.partition,
                        l.offset,
                        ix.marker_desc(l.partition, t, l.offset)
                    ),
                });
            }
        }
    }
    for op in &ix.h.ops {
        match op {
            StreamOp::Send(s) => {
                if let Some(t) = s.txn
                    && s.result != OpResult::Failed
                    && !ix.in_log.contains_key(s.message.as_str())
                {
                    parts.entry(t).or_default().push(Part {
                        applied: false,
                        is_ack: false,
                        what: format!(
                            "message {:?} sent to {} at {}: in no log",
                            s.message,
                            s.partition,
                            Ms(s.t_ns)
                        ),
                    });
                }
            }
            StreamOp::Ack(a) => {
                let Some(t) = a.txn else { continue };
                if a.result == OpResult::Failed {
                    continue;
                }
                let acked = ix.is_acked(&a.subscription, &a.partition, a.offset);
                let explained = ix.acks[&(a.subscription.as_str(), a.partition.as_str(), a.offset)]
                    .iter()
                    .any(|o| o.txn != Some(t) && ix.ack_may_apply(o));
                if acked && explained {
                    continue;
                }
                let state = if acked {
                    "held by the subscription"
                } else {
                    "not held by the subscription"
                };
                parts.entry(t).or_default().push(Part {
                    applied: acked,
                    is_ack: true,
                    what: format!("{} ({state})", ack_desc(a)),
                });
            }
            StreamOp::Receive(_) => {}
        }
    }
    parts
}
