//! Percolator's history turned into [`RunFacts`]: transactions as the
//! clients saw them, the pipeline's documents followed through its three
//! observers, and each dead client's orphaned locks followed to their
//! cleanup (the `roll_forward`/`roll_back` events of readers).

use crate::compare::{DeathFact, DocFact, RunFacts, TxnFact, workload_end_ns};
use percsim_checker::{History, Op, Outcome, Transaction};
use percsim_sim::{EventKind, NodeName, Role, percolator_kinds};
use std::collections::BTreeMap;

/// The event kinds that resolve a lock (a reader's or the sweeper's cleanup).
const CLEANUPS: &[&str] = &["roll_forward", "roll_back", "roll_back_before_prewrite"];

/// The comparison's job on Percolator: the paper's pipeline, documents
/// loaded, parsed, clustered, exported.
pub fn job() -> crate::systems::percolator::workloads::Pipeline {
    crate::systems::percolator::workloads::Pipeline {
        documents: crate::compare::DOCUMENTS,
        contents: crate::compare::CONTENTS,
        load_interval_ms: 100,
        audit: false,
    }
}

/// Read a Percolator history.
pub fn facts(h: &History) -> RunFacts {
    let workload_end_ns = workload_end_ns(&h.events);
    let txns = h.transactions.iter().map(TxnFact::from).collect();
    RunFacts {
        workload_end_ns,
        txns,
        docs: documents(h),
        deaths: deaths(h),
    }
}

/// The committed runs of one observer on one row, by start_ts.
type Runs<'a> = BTreeMap<(&'a str, &'a str), Vec<&'a Transaction>>;

fn written<'a>(t: &'a Transaction, col: &str) -> Option<(&'a str, &'a str)> {
    t.ops.iter().rev().find_map(|op| match op {
        Op::Write { row, col: c, value } if c == col => Some((row.as_str(), value.as_str())),
        _ => None,
    })
}

fn read<'a>(t: &'a Transaction, row: &str, col: &str) -> Option<&'a str> {
    t.ops.iter().find_map(|op| match op {
        Op::Read {
            row: r,
            col: c,
            value,
        } if r == row && c == col => value.as_deref(),
        _ => None,
    })
}

/// The first committed run of `name` on `row` whose snapshot is after `ts`.
fn first_after<'a>(runs: &Runs<'a>, name: &str, row: &str, ts: u64) -> Option<&'a Transaction> {
    runs.get(&(name, row))?
        .iter()
        .filter(|t| t.start_ts > ts)
        .min_by_key(|t| t.start_ts)
        .copied()
}

/// Each committed load of a document (a non-observer transaction writing
/// `raw`), followed through the pipeline: the first `parse` after it that
/// read its very contents; if that changed the document's hash, the first
/// `cluster` of the document after the parse; if that refiled it, the first
/// `export` of the dups row it was filed under after the cluster. The
/// document is processed when the last stage that had work committed.
fn documents(h: &History) -> Vec<DocFact> {
    let mut runs: Runs = BTreeMap::new();
    for t in &h.transactions {
        if let (Some(o), Outcome::Committed) = (&t.observer, t.outcome) {
            runs.entry((o.name.as_str(), o.row.as_str()))
                .or_default()
                .push(t);
        }
    }
    let mut docs = Vec::new();
    for t in h.transactions.iter().filter(|t| t.observer.is_none()) {
        let (Outcome::Committed, Some(commit_ts), Some(loaded_ns)) =
            (t.outcome, t.commit_ts, t.complete_ns)
        else {
            continue;
        };
        let Some((row, raw)) = written(t, "raw") else {
            continue;
        };
        docs.push(DocFact {
            loaded_ns,
            processed_ns: processed(&runs, row, raw, commit_ts),
        });
    }
    docs
}

fn processed(runs: &Runs, row: &str, raw: &str, commit_ts: u64) -> Option<u64> {
    let parse = first_after(runs, "parse", row, commit_ts)?;
    if read(parse, row, "raw") != Some(raw) {
        return None; // superseded by a later load before it was parsed
    }
    let done = |t: &Transaction| t.complete_ns;
    if written(parse, "hash").is_none() {
        return done(parse);
    }
    let cluster = first_after(runs, "cluster", row, parse.commit_ts?)?;
    let Some((_, hash)) = written(cluster, "filed_under") else {
        return done(cluster);
    };
    let dups = format!("dups/{hash}");
    let export = first_after(runs, "export", &dups, cluster.commit_ts?)?;
    done(export)
}

/// Every client kill, with the locks its in-flight transactions left: each
/// cell of theirs that a cleanup event names after the death (resolved
/// then), and each of their locks still in the final state (never).
fn deaths(h: &History) -> Vec<DeathFact> {
    let kill = EventKind::Kill.name();
    let mut out = Vec::new();
    let mut previous: BTreeMap<u64, u64> = BTreeMap::new();
    for e in h.events.iter().filter(|e| e.kind == kill) {
        let Some(node) = e.fields.get("node").and_then(|n| n.as_str()) else {
            continue;
        };
        let mut death = DeathFact {
            t_ns: e.t_ns,
            node: node.to_string(),
            resolved_ns: Vec::new(),
        };
        let name = NodeName::parse(node, &percolator_kinds::ALL).ok();
        if let Some(client) = name.and_then(|n| n.client()).map(|c| c as u64) {
            let since = previous.insert(client, e.t_ns);
            death.resolved_ns = orphaned_locks(h, client, since, e.t_ns);
        } else if name.is_none_or(|n| n.role() != Role::Coordinator) {
            continue; // only clients and the coordinator-side oracle count
        }
        out.push(death);
    }
    out
}

/// The locks of the transactions `client` began after its previous death
/// (`since`) and had not finished at its death at `t_ns`.
fn orphaned_locks(h: &History, client: u64, since: Option<u64>, t_ns: u64) -> Vec<Option<u64>> {
    let in_flight: Vec<u64> = h
        .transactions
        .iter()
        .filter(|t| t.client == client && t.invoke_ns <= t_ns)
        .filter(|t| since.is_none_or(|s| t.invoke_ns > s))
        .filter(|t| t.complete_ns.is_none_or(|c| c > t_ns))
        .map(|t| t.start_ts)
        .collect();
    let mut cells: BTreeMap<(u64, String, String), Option<u64>> = BTreeMap::new();
    for e in h.events.iter().filter(|e| e.t_ns >= t_ns) {
        if !CLEANUPS.contains(&e.kind.as_str()) {
            continue;
        }
        let field = |k: &str| e.fields.get(k);
        let (Some(ts), Some(row), Some(col)) = (
            field("start_ts").and_then(|v| v.as_u64()),
            field("row").and_then(|v| v.as_str()),
            field("col").and_then(|v| v.as_str()),
        ) else {
            continue;
        };
        if in_flight.contains(&ts) {
            cells
                .entry((ts, row.to_string(), col.to_string()))
                .or_insert(Some(e.t_ns));
        }
    }
    for l in &h.final_state.locks {
        if in_flight.contains(&l.start_ts) {
            cells
                .entry((l.start_ts, l.row.clone(), l.col.clone()))
                .or_insert(None);
        }
    }
    cells.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const MS: u64 = 1_000_000;

    fn w(row: &str, col: &str, v: &str) -> Value {
        json!({"f": "write", "row": row, "col": col, "value": v})
    }

    fn r(row: &str, col: &str, v: &str) -> Value {
        json!({"f": "read", "row": row, "col": col, "value": v})
    }

    fn t(
        id: u64,
        client: u64,
        ts: (u64, Option<u64>),
        ms: (u64, Option<u64>),
        outcome: &str,
        observer: Option<(&str, &str)>,
        ops: Vec<Value>,
    ) -> Value {
        let mut v = json!({"id": id, "client": client, "start_ts": ts.0, "commit_ts": ts.1,
            "invoke_ns": ms.0 * MS, "complete_ns": ms.1.map(|c| c * MS), "outcome": outcome, "ops": ops});
        if let Some((name, row)) = observer {
            v["observer"] = json!({"name": name, "row": row, "col": "x"});
        }
        v
    }

    fn event(ms: u64, kind: &str, extra: Value) -> Value {
        let mut e = json!({"t_ns": ms * MS, "kind": kind});
        e.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        e
    }

    /// doc/u001 loaded and processed through all three stages (export done
    /// at 400 ms); doc/u002's load superseded before its parse; doc/u003's
    /// parse found its hash unchanged (done at 260 ms). Client 1 dies at
    /// 500 ms holding two locks of T7 (one cleaned at 900 ms, one never),
    /// and again at 2000 ms with nothing in flight; a tablet server and the
    /// oracle die too.
    fn history() -> History {
        let c = "committed";
        let txns = vec![
            t(
                1,
                0,
                (10, Some(11)),
                (50, Some(100)),
                c,
                None,
                vec![w("doc/u001", "raw", "A")],
            ),
            t(
                2,
                2,
                (12, Some(13)),
                (110, Some(200)),
                c,
                Some(("parse", "doc/u001")),
                vec![r("doc/u001", "raw", "A"), w("doc/u001", "hash", "h")],
            ),
            t(
                3,
                2,
                (14, Some(15)),
                (210, Some(300)),
                c,
                Some(("cluster", "doc/u001")),
                vec![
                    r("doc/u001", "hash", "h"),
                    w("dups/h", "members", "doc/u001"),
                    w("doc/u001", "filed_under", "h"),
                ],
            ),
            t(
                4,
                2,
                (16, Some(17)),
                (310, Some(400)),
                c,
                Some(("export", "dups/h")),
                vec![w("index/h", "doc", "x")],
            ),
            t(
                5,
                0,
                (20, Some(21)),
                (120, Some(150)),
                c,
                None,
                vec![w("doc/u002", "raw", "B")],
            ),
            t(
                6,
                2,
                (22, Some(23)),
                (160, Some(250)),
                c,
                Some(("parse", "doc/u002")),
                vec![r("doc/u002", "raw", "C")],
            ),
            t(
                7,
                1,
                (30, None),
                (450, None),
                "unknown",
                None,
                vec![w("x", "v", "1"), w("y", "v", "1")],
            ),
            t(
                8,
                0,
                (24, Some(25)),
                (170, Some(180)),
                c,
                None,
                vec![w("doc/u003", "raw", "D")],
            ),
            t(
                9,
                2,
                (26, Some(27)),
                (190, Some(260)),
                c,
                Some(("parse", "doc/u003")),
                vec![r("doc/u003", "raw", "D")],
            ),
        ];
        let events = vec![
            event(
                440,
                "roll_back",
                json!({"start_ts": 30, "row": "z", "col": "v", "by_client": 2}),
            ),
            event(500, "kill", json!({"node": "client-1"})),
            event(600, "kill", json!({"node": "tablet-0"})),
            event(700, "kill", json!({"node": "oracle"})),
            event(
                900,
                "roll_back",
                json!({"start_ts": 30, "row": "x", "col": "v", "by_client": 2}),
            ),
            event(
                950,
                "roll_back",
                json!({"start_ts": 30, "row": "x", "col": "v", "by_client": 0}),
            ),
            event(1_000, "phase_healed", json!({})),
            event(2_000, "kill", json!({"node": "client-1"})),
        ];
        let h = json!({"format": "percsim-history/1", "transactions": txns, "events": events,
            "final_state": {"cells": [], "locks": [{"row": "y", "col": "v", "start_ts": 30,
                "primary": {"row": "x", "col": "v"}}]}});
        serde_json::from_value(h).unwrap()
    }

    #[test]
    fn documents_are_followed_through_every_stage_that_had_work() {
        let f = facts(&history());
        assert_eq!(f.workload_end_ns, 1_000 * MS);
        let docs: Vec<(u64, Option<u64>)> = f
            .docs
            .iter()
            .map(|d| (d.loaded_ns / MS, d.processed_ns.map(|p| p / MS)))
            .collect();
        assert_eq!(docs, vec![(100, Some(400)), (150, None), (180, Some(260))]);
        assert_eq!(f.txns.len(), 9);
        assert_eq!(f.txns[6].ending, crate::compare::Ending::Unknown);
    }

    #[test]
    fn a_missing_stage_leaves_the_document_unprocessed() {
        let mut h = history();
        h.transactions.retain(|t| t.id != 4); // no export
        let f = facts(&h);
        assert_eq!(f.docs[0].processed_ns, None);
    }

    #[test]
    fn a_dead_clients_locks_are_followed_to_their_cleanup() {
        let f = facts(&history());
        let deaths: Vec<(&str, u64, Vec<Option<u64>>)> = f
            .deaths
            .iter()
            .map(|d| {
                (
                    d.node.as_str(),
                    d.t_ns / MS,
                    d.resolved_ns.iter().map(|r| r.map(|r| r / MS)).collect(),
                )
            })
            .collect();
        assert_eq!(
            deaths,
            vec![
                ("client-1", 500, vec![Some(900), None]),
                ("oracle", 700, vec![]),
                ("client-1", 2_000, vec![]),
            ]
        );
    }
}
