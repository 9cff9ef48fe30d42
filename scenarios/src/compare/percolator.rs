//! Percolator's history turned into [`RunFacts`]: transactions as the
//! clients saw them, the pipeline's documents followed through its three
//! observers, and each dead client's orphaned locks followed to their
//! cleanup (the `roll_forward`/`roll_back` events of readers).

use super::facts::{DeathFact, DocFact, Ending, RunFacts, TxnFact};
use percsim_checker::{History, Op, Outcome, Transaction};
use percsim_sim::EventKind;
use std::collections::BTreeMap;

/// The event kinds that resolve a lock (a reader's or the sweeper's cleanup).
const CLEANUPS: &[&str] = &["roll_forward", "roll_back", "roll_back_before_prewrite"];

/// Read a Percolator history.
pub fn facts(h: &History) -> RunFacts {
    let healed = EventKind::PhaseHealed.name();
    let workload_end_ns = h
        .events
        .iter()
        .find(|e| e.kind == healed)
        .map(|e| e.t_ns)
        .unwrap_or_else(|| h.events.last().map_or(0, |e| e.t_ns));
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
        Op::Read { row: r, col: c, value } if r == row && c == col => value.as_deref(),
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
        if let Some(client) = node.strip_prefix("client-").and_then(|c| c.parse().ok()) {
            let since = previous.insert(client, e.t_ns);
            death.resolved_ns = orphaned_locks(h, client, since, e.t_ns);
        } else if node != "oracle" {
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
