//! Pulsar's run turned into [`RunFacts`]: the stream history's
//! transactions, the pipeline's documents (sends to the exactly-once
//! subscription's topic) followed to the committed transaction that
//! produced their output, and the transactions open at a death followed
//! to the first recorded fact that shows them ended.

use crate::compare::{DeathFact, DocFact, RunFacts, TxnFact, workload_end_ns};
use percsim_checker::stream::{MarkerKind, OpResult, StreamHistory, StreamOp, StreamTxn};
use percsim_checker::{Event, Outcome};
use percsim_sim::{EventKind, NodeName, Role, pulsar_kinds};
use std::collections::{BTreeMap, BTreeSet};

/// The same job as Percolator's pipeline, as Pulsar's `stream-pipeline`:
/// one loader sending the documents to the input topic every 50 ms (about
/// the rate of Percolator's three loaders, each waiting 100 ms after a
/// ~80 ms commit), processors that die only by the fault mix.
pub fn job() -> super::workloads::StreamPipeline {
    super::workloads::StreamPipeline {
        documents: crate::compare::DOCUMENTS,
        contents: crate::compare::CONTENTS,
        load_interval_ms: 50,
        crash_rate: 0.0,
    }
}

/// Read a Pulsar run from its stream history `h`, whose events are the
/// world's (kills, the healed phase).
pub fn facts(h: &StreamHistory) -> RunFacts {
    let events = &h.events;
    let workload_end_ns = workload_end_ns(events);
    let txns = h.transactions.iter().map(TxnFact::from).collect();
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

/// Every kill of a client or of the coordinator (the broker that hosted
/// it: the kill event lists `coordinator` in its `hosts`), with the
/// transactions open at it (the dead client's own; every client's for the
/// coordinator).
fn deaths(events: &[Event], h: &StreamHistory) -> Vec<DeathFact> {
    let kill = EventKind::Kill.name();
    let ended = EndSeen::new(h);
    let mut previous: BTreeMap<String, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events.iter().filter(|e| e.kind == kill) {
        let Some(node) = e.fields.get("node").and_then(|n| n.as_str()) else {
            continue;
        };
        let name = NodeName::parse(node, &pulsar_kinds::ALL).ok();
        let client: Option<u64> = name.and_then(|n| n.client()).map(|c| c as u64);
        let hosts_coordinator = name.is_some_and(|n| n.role() == Role::Coordinator)
            || e.fields
                .get("hosts")
                .and_then(|h| h.as_array())
                .is_some_and(|h| {
                    h.iter()
                        .any(|r| r.as_str() == Some(Role::Coordinator.name()))
                });
        if client.is_none() && !hosts_coordinator {
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
    /// Transactions with a commit marker in some partition.
    committed: BTreeSet<u64>,
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
        let committed = h
            .final_state
            .partitions
            .iter()
            .flat_map(|p| &p.entries)
            .filter(|e| e.marker == Some(MarkerKind::Commit))
            .filter_map(|e| e.txn)
            .collect();
        EndSeen {
            messages,
            receives,
            committed,
        }
    }

    /// The first time after `death_ns` that the history shows `t` ended:
    /// its client learnt the outcome, the coordinator recorded aborting it
    /// (its timeout; taken only if no partition holds a commit marker of
    /// it), or a consumer received a message of it (committed) or one after
    /// its first message in a partition (no consumer reads past an open
    /// transaction's first message).
    fn at(&self, t: &StreamTxn, death_ns: u64) -> Option<u64> {
        let decided = t
            .coordinator
            .as_ref()
            .filter(|d| d.outcome == Outcome::Aborted && !self.committed.contains(&t.id))
            .map(|d| d.t_ns);
        let told = [t.complete_ns, decided]
            .into_iter()
            .flatten()
            .filter(|&c| c >= death_ns)
            .min();
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MS: u64 = 1_000_000;

    fn event(ms: u64, kind: &str, node: Option<&str>) -> Event {
        let mut fields = BTreeMap::new();
        if let Some(n) = node {
            fields.insert("node".to_string(), json!(n));
        }
        Event {
            t_ns: ms * MS,
            kind: kind.into(),
            fields,
        }
    }

    /// d1 and d2 loaded; T1 (client 1) processes d1 and commits at 300 ms;
    /// T2 (client 2) sends d2's output to out-0 at offset 1 and is open
    /// when the coordinator's broker dies at 400 ms (broker-0's death at
    /// 450 ms is no coordinator's) (its client never learns; an
    /// audit read of out-0 at offset 2 at 900 ms shows it ended); T3
    /// (client 2) has sent nothing and never ends as far as the history
    /// shows; T4 (client 3) is told of its abort at 700 ms. Client 1 dies
    /// at 1500 ms with nothing open.
    fn run() -> StreamHistory {
        let send = |t: u64, txn: Option<u64>, p: &str, m: &str, off: u64, src: Option<&str>| {
            let mut s = json!({"f": "send", "client": 0, "t_ns": t * MS, "txn": txn, "partition": p,
                "message": m, "result": "ok", "offset": off});
            if let Some(src) = src {
                s["source"] = json!({"subscription": "proc", "message": src});
            }
            s
        };
        let h = json!({
            "format": "percsim-stream-history/1",
            "subscriptions": [{"name": "proc", "topic": "in", "exactly_once": true},
                              {"name": "audit", "topic": "out"}],
            "transactions": [
                {"id": 1, "client": 1, "invoke_ns": 150 * MS, "complete_ns": 300 * MS, "outcome": "committed"},
                {"id": 2, "client": 2, "invoke_ns": 200 * MS, "outcome": "unknown"},
                {"id": 3, "client": 2, "invoke_ns": 350 * MS, "outcome": "unknown"},
                {"id": 4, "client": 3, "invoke_ns": 100 * MS, "complete_ns": 700 * MS, "outcome": "aborted"}
            ],
            "ops": [
                send(100, None, "in-0", "d1", 0, None),
                send(120, None, "in-0", "d2", 1, None),
                send(250, Some(1), "out-0", "o1", 0, Some("d1")),
                send(260, Some(2), "out-0", "o2", 1, Some("d2")),
                {"f": "receive", "client": 0, "consumer": "a", "subscription": "audit", "partition": "out-0",
                 "offset": 2, "message": "o3", "t_ns": 900 * MS}
            ],
            "final_state": {"partitions": [
                {"name": "in-0", "topic": "in", "entries": [
                    {"offset": 0, "message": "d1"}, {"offset": 1, "message": "d2"}]},
                {"name": "out-0", "topic": "out", "entries": [
                    {"offset": 0, "message": "o1", "txn": 1}, {"offset": 1, "message": "o2", "txn": 2},
                    {"offset": 2, "message": "o3"}]}]}
        });
        // The coordinator runs on broker-2: its kill lists what it hosted.
        let mut coordinator_dies = event(400, "kill", Some("broker-2"));
        coordinator_dies
            .fields
            .insert("hosts".into(), json!(["coordinator"]));
        let events = vec![
            coordinator_dies,
            event(450, "kill", Some("broker-0")),
            event(1_000, "phase_healed", None),
            event(1_500, "kill", Some("client-1")),
        ];
        let mut h: StreamHistory = serde_json::from_value(h).unwrap();
        h.events = events;
        h
    }

    #[test]
    fn documents_are_processed_when_their_output_commits() {
        let f = facts(&run());
        assert_eq!(f.workload_end_ns, 1_000 * MS);
        let docs: Vec<(u64, Option<u64>)> = f
            .docs
            .iter()
            .map(|d| (d.loaded_ns / MS, d.processed_ns.map(|p| p / MS)))
            .collect();
        assert_eq!(docs, vec![(100, Some(300)), (120, None)]);
        assert_eq!(f.txns.len(), 4);
    }

    #[test]
    fn open_transactions_at_the_coordinators_death_end_when_the_history_shows_it() {
        let f = facts(&run());
        let deaths: Vec<(&str, Vec<Option<u64>>)> = f
            .deaths
            .iter()
            .map(|d| {
                (
                    d.node.as_str(),
                    d.resolved_ns.iter().map(|r| r.map(|r| r / MS)).collect(),
                )
            })
            .collect();
        // T2 seen ended by the read past it; T3 never; T4 told at 700 ms.
        assert_eq!(
            deaths,
            vec![
                ("broker-2", vec![Some(900), None, Some(700)]),
                ("client-1", vec![])
            ]
        );
    }

    /// T3's timeout abort recorded at the coordinator at 1,400 ms ends it,
    /// unless a partition holds a commit marker of it (then the record is
    /// not believed, and the checker flags the contradiction).
    #[test]
    fn a_timeout_abort_recorded_at_the_coordinator_ends_a_transaction_the_store_agrees_with() {
        let resolved_t3 = |h: &StreamHistory| {
            let f = facts(h);
            f.deaths[0].resolved_ns[1].map(|r| r / MS)
        };
        let mut h = run();
        h.transactions[2].coordinator = Some(percsim_checker::stream::CoordinatorDecision {
            outcome: Outcome::Aborted,
            t_ns: 1_400 * MS,
            reason: Some("timeout".into()),
        });
        assert_eq!(resolved_t3(&h), Some(1_400));
        h.final_state.partitions[1]
            .entries
            .push(percsim_checker::stream::LogEntry {
                offset: 3,
                message: None,
                marker: Some(MarkerKind::Commit),
                txn: Some(3),
            });
        assert_eq!(resolved_t3(&h), None);
    }
}
