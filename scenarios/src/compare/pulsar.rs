//! Pulsar's run turned into [`RunFacts`]: the stream history's
//! transactions, the pipeline's documents (sends to the exactly-once
//! subscription's topic) followed to the committed transaction that
//! produced their output, and the transactions open at a death followed
//! to the first recorded fact that shows them ended.

use super::facts::{DeathFact, DocFact, Ending, RunFacts, TxnFact};
use percsim_checker::stream::{OpResult, StreamHistory, StreamOp, StreamTxn};
use percsim_checker::{Event, Outcome};
use percsim_sim::EventKind;
use std::collections::{BTreeMap, BTreeSet};

/// Read a Pulsar run: `events` are the world's (kills, the healed phase),
/// `h` the tenant's stream history.
pub fn facts(events: &[Event], h: &StreamHistory) -> RunFacts {
    let healed = EventKind::PhaseHealed.name();
    let workload_end_ns = events
        .iter()
        .find(|e| e.kind == healed)
        .map_or_else(|| events.last().map_or(0, |e| e.t_ns), |e| e.t_ns);
    let txns = h
        .transactions
        .iter()
        .map(|t| TxnFact {
            invoke_ns: t.invoke_ns,
            complete_ns: t.complete_ns,
            ending: match t.outcome {
                Outcome::Committed => Ending::Committed,
                Outcome::Aborted => Ending::Aborted,
                Outcome::Unknown => Ending::Unknown,
            },
        })
        .collect();
    RunFacts {
        workload_end_ns,
        txns,
        docs: documents(h),
        deaths: deaths(events, h),
    }
}

/// Each document sent (confirmed) to the input topic (the topic of an
/// exactly-once subscription), processed when the first transaction that
/// sent an output made from it committed (as its client learnt).
fn documents(h: &StreamHistory) -> Vec<DocFact> {
    let inputs: BTreeSet<&str> = h
        .subscriptions
        .iter()
        .filter(|s| s.exactly_once)
        .map(|s| s.topic.as_str())
        .collect();
    let topic_of: BTreeMap<&str, &str> = h
        .final_state
        .partitions
        .iter()
        .map(|p| (p.name.as_str(), p.topic.as_str()))
        .collect();
    let committed: BTreeMap<u64, u64> = h
        .transactions
        .iter()
        .filter(|t| t.outcome == Outcome::Committed)
        .filter_map(|t| Some((t.id, t.complete_ns?)))
        .collect();
    let mut done: BTreeMap<&str, u64> = BTreeMap::new();
    for op in &h.ops {
        let StreamOp::Send(s) = op else { continue };
        let (Some(src), Some(at)) = (&s.source, s.txn.and_then(|t| committed.get(&t))) else {
            continue;
        };
        let d = done.entry(src.message.as_str()).or_insert(*at);
        *d = (*d).min(*at);
    }
    h.ops
        .iter()
        .filter_map(|op| match op {
            StreamOp::Send(s) if s.result == OpResult::Ok && s.txn.is_none() => Some(s),
            _ => None,
        })
        .filter(|s| {
            topic_of
                .get(s.partition.as_str())
                .is_some_and(|t| inputs.contains(t))
        })
        .map(|s| DocFact {
            loaded_ns: s.t_ns,
            processed_ns: done.get(s.message.as_str()).copied(),
        })
        .collect()
}

/// Every kill of a client or of the coordinator, with the transactions
/// open at it (the dead client's own; every client's for the coordinator).
fn deaths(events: &[Event], h: &StreamHistory) -> Vec<DeathFact> {
    let kill = EventKind::Kill.name();
    let ended = EndSeen::new(h);
    let mut previous: BTreeMap<String, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events.iter().filter(|e| e.kind == kill) {
        let Some(node) = e.fields.get("node").and_then(|n| n.as_str()) else {
            continue;
        };
        let client: Option<u64> = node.strip_prefix("client-").and_then(|c| c.parse().ok());
        if client.is_none() && node != "coordinator" {
            continue;
        }
        let since = previous.insert(node.to_string(), e.t_ns);
        let open = h
            .transactions
            .iter()
            .filter(|t| client.is_none_or(|c| t.client == c))
            .filter(|t| t.invoke_ns <= e.t_ns && since.is_none_or(|s| t.invoke_ns > s))
            .filter(|t| t.complete_ns.is_none_or(|c| c > e.t_ns));
        out.push(DeathFact {
            t_ns: e.t_ns,
            node: node.to_string(),
            resolved_ns: open.map(|t| ended.at(t, e.t_ns)).collect(),
        });
    }
    out
}

/// Where each transaction's messages are, and what consumers received.
struct EndSeen<'a> {
    /// Transaction to its messages' (partition, offset).
    messages: BTreeMap<u64, Vec<(&'a str, u64)>>,
    /// Receives as (partition, offset, time).
    receives: Vec<(&'a str, u64, u64)>,
}

impl<'a> EndSeen<'a> {
    fn new(h: &'a StreamHistory) -> Self {
        let mut messages: BTreeMap<u64, Vec<(&str, u64)>> = BTreeMap::new();
        for p in &h.final_state.partitions {
            for e in p.entries.iter().filter(|e| e.message.is_some()) {
                if let Some(t) = e.txn {
                    messages
                        .entry(t)
                        .or_default()
                        .push((p.name.as_str(), e.offset));
                }
            }
        }
        let receives = h
            .ops
            .iter()
            .filter_map(|op| match op {
                StreamOp::Receive(r) => Some((r.partition.as_str(), r.offset, r.t_ns)),
                _ => None,
            })
            .collect();
        EndSeen { messages, receives }
    }

    /// The first time after `death_ns` that the history shows `t` ended:
    /// its client learnt the outcome, or a consumer received a message of
    /// it (committed) or one after its first message in a partition (no
    /// consumer reads past an open transaction's first message).
    fn at(&self, t: &StreamTxn, death_ns: u64) -> Option<u64> {
        let told = t.complete_ns.filter(|&c| c >= death_ns);
        let firsts: BTreeMap<&str, u64> = self.messages.get(&t.id).into_iter().flatten().fold(
            BTreeMap::new(),
            |mut m, (p, o)| {
                let e = m.entry(*p).or_insert(*o);
                *e = (*e).min(*o);
                m
            },
        );
        let seen = self
            .receives
            .iter()
            .filter(|(p, o, at)| *at >= death_ns && firsts.get(p).is_some_and(|f| o >= f))
            .map(|r| r.2)
            .min();
        match (told, seen) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
