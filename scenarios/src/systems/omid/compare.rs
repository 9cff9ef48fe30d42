//! Omid on `percsim compare`'s job: the document pipeline as Omid
//! transactions (loaders, each followed by a processor of its own), and its history turned into
//! [`RunFacts`]: transactions as the clients saw them with their abort
//! reasons, documents from load to index record, each dead client's
//! pending writes followed to their invalidation by a reader, and each
//! dead TSO's open transactions followed through the failover.

use crate::compare::{DeathFact, DocFact, RunFacts, TxnFact, workload_end_ns};
use percsim_checker::{History, Op, Outcome, Transaction};
use percsim_sim::omid::{OmidClient, OmidControl, OmidEvent, OmidProgram};
use percsim_sim::{BoxFuture, EventKind, NodeName, Role};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// A loader's counter column (row `loader/<k>`): its next document's number.
const NEXT_LOAD: &str = "next";

/// A processor's progress column (row `proc/<k>`): the next document of
/// its loader it takes.
const NEXT: &str = "next";

/// The document pipeline on Omid (`omid-pipeline`): `loaders` loaders
/// (clients 0 to `loaders` - 1), each loading its own documents
/// `doc/<k>.<i>` (one of `contents` contents) every `load_interval_ms`, in
/// a transaction that also advances its counter, until the job's
/// `documents` (shared evenly) are loaded or the workload phase ends; and
/// as many processors (the next clients), processor k following loader
/// k's documents: in one transaction it reads the next one, writes its
/// hash and its index record (`out/<k>.<i>`, column `source`) and
/// advances its progress cell. A processor whose next document is not
/// there waits `poll_ms`; in the healed phase it stops there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Pipeline {
    /// Documents loaded at most, over all loaders.
    pub documents: usize,
    /// Distinct contents of those documents.
    pub contents: usize,
    /// Simulated ms a loader waits between two loads.
    pub load_interval_ms: u64,
    /// Loaders, and as many processors.
    pub loaders: usize,
    /// Simulated ms a processor waits for a document not loaded yet.
    pub poll_ms: u64,
}

impl Default for Pipeline {
    fn default() -> Self {
        Pipeline {
            documents: crate::compare::DOCUMENTS,
            contents: crate::compare::CONTENTS,
            load_interval_ms: 50,
            loaders: 3,
            poll_ms: 20,
        }
    }
}

impl Pipeline {
    /// Check for impossible values; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("documents", self.documents as u64),
            ("contents", self.contents as u64),
            ("load_interval_ms", self.load_interval_ms),
            ("loaders", self.loaders as u64),
            ("poll_ms", self.poll_ms),
        ];
        for (field, v) in positive {
            if v == 0 {
                return Err(format!("workload.{field}: must be at least 1, found 0"));
            }
        }
        if self.documents > 100_000 {
            return Err(format!(
                "workload.documents: must be at most 100000, found {}",
                self.documents
            ));
        }
        if self.loaders > 50 {
            return Err(format!(
                "workload.loaders: must be at most 50, found {}",
                self.loaders
            ));
        }
        Ok(())
    }

    /// The clients the job needs: the loaders and the processors.
    pub fn clients(&self) -> usize {
        2 * self.loaders
    }

    /// Documents each loader loads at most.
    fn per_loader(&self) -> u64 {
        self.documents.div_ceil(self.loaders) as u64
    }
}

/// Loader `k`'s document `i`'s row.
fn doc(k: u64, i: u64) -> String {
    format!("doc/{k}.{i:05}")
}

/// A number read from a cell (`None`: no value yet, 0).
fn number(v: Option<String>) -> u64 {
    v.and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// A content's hash (FNV-1a), as the processors file it.
fn hash(content: &str) -> String {
    let h = content.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("h{h:016x}")
}

/// The pipeline as the program an Omid cluster runs.
pub struct PipelineProgram(pub Pipeline);

impl OmidProgram for PipelineProgram {
    fn client(&self, client: OmidClient) -> BoxFuture<()> {
        let job = self.0.clone();
        Box::pin(async move {
            let i = client.index();
            match i.checked_sub(job.loaders) {
                None => load(&job, &client, i as u64).await,
                Some(k) => process(&job, &client, k as u64).await,
            }
        })
    }

    fn driver(&self, _control: OmidControl) -> Option<BoxFuture<()>> {
        None
    }

    fn final_check(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Loader `k`: one document per transaction, numbered by the counter it
/// advances in the same transaction (a restarted loader goes on from it).
/// A loader started in the healed phase only reads its counter (which
/// settles what its previous incarnation left pending) and stops.
async fn load(job: &Pipeline, c: &OmidClient, k: u64) {
    let counter = format!("loader/{k}");
    loop {
        let mut txn = c.begin().await;
        let i = number(c.get(&txn, &counter, NEXT_LOAD).await);
        if i >= job.per_loader() || c.stopping() {
            c.commit(txn).await;
            return;
        }
        let content = format!(
            "content-{}",
            madsim::rand::random::<u64>() % job.contents as u64
        );
        c.put(&mut txn, &doc(k, i), "raw", content).await;
        c.put(&mut txn, &counter, NEXT_LOAD, (i + 1).to_string())
            .await;
        c.commit(txn).await;
        madsim::time::sleep(Duration::from_millis(job.load_interval_ms)).await;
    }
}

/// Processor `k`: loader k's documents in turn, each read, hashed and
/// indexed in one transaction that advances its progress cell.
async fn process(job: &Pipeline, c: &OmidClient, k: u64) {
    let row = format!("proc/{k}");
    loop {
        let mut txn = c.begin().await;
        let i = number(c.get(&txn, &row, NEXT).await);
        let raw = match i < job.per_loader() {
            true => c.get(&txn, &doc(k, i), "raw").await,
            false => None,
        };
        let Some(raw) = raw else {
            c.commit(txn).await;
            if c.stopping() || i >= job.per_loader() {
                return;
            }
            madsim::time::sleep(Duration::from_millis(job.poll_ms)).await;
            continue;
        };
        c.put(&mut txn, &doc(k, i), "hash", hash(&raw)).await;
        let out = format!("out/{k}.{i:05}");
        c.put(&mut txn, &out, "source", doc(k, i)).await;
        c.put(&mut txn, &row, NEXT, (i + 1).to_string()).await;
        c.commit(txn).await;
    }
}

/// The cells `t` wrote (data cells a reader may meet).
fn cells_written(t: &Transaction) -> BTreeSet<(&str, &str)> {
    t.ops
        .iter()
        .filter_map(|op| match op {
            Op::Write { row, col, .. } | Op::Delete { row, col } => {
                Some((row.as_str(), col.as_str()))
            }
            _ => None,
        })
        .collect()
}

/// Whether a transaction whose snapshot is above `t`'s start read one of
/// the cells `t` wrote: a reader met its data cells.
fn met(h: &History, t: &Transaction) -> bool {
    let cells = cells_written(t);
    h.transactions
        .iter()
        .filter(|r| r.start_ts > t.start_ts)
        .flat_map(|r| r.ops.iter())
        .any(|op| match op {
            Op::Read { row, col, .. } => cells.contains(&(row.as_str(), col.as_str())),
            _ => false,
        })
}

/// The value `t` wrote last to column `col`, with its row.
fn written<'a>(t: &'a Transaction, col: &str) -> Option<(&'a str, &'a str)> {
    t.ops.iter().rev().find_map(|op| match op {
        Op::Write { row, col: c, value } if c == col => Some((row.as_str(), value.as_str())),
        _ => None,
    })
}

/// Read an Omid history of the pipeline.
pub fn facts(h: &History) -> RunFacts {
    let txns = h.transactions.iter().map(TxnFact::from).collect();
    RunFacts {
        workload_end_ns: workload_end_ns(&h.events),
        txns,
        docs: documents(h),
        deaths: deaths(h),
    }
}

/// Each committed load (a transaction writing `raw`, confirmed when its
/// client learnt the commit), processed when the first committed
/// transaction writing its index record (`source` naming it) was learnt.
fn documents(h: &History) -> Vec<DocFact> {
    let committed = |t: &&Transaction| t.outcome == Outcome::Committed;
    let mut indexed: BTreeMap<&str, u64> = BTreeMap::new();
    for t in h.transactions.iter().filter(committed) {
        if let (Some((_, source)), Some(done)) = (written(t, "source"), t.complete_ns) {
            let e = indexed.entry(source).or_insert(done);
            *e = (*e).min(done);
        }
    }
    h.transactions
        .iter()
        .filter(committed)
        .filter_map(|t| {
            let (row, _) = written(t, "raw")?;
            Some(DocFact {
                loaded_ns: t.complete_ns?,
                processed_ns: indexed.get(row).copied(),
            })
        })
        .collect()
}

/// Every kill of a client or of a TSO in the run, with its dead work: a
/// client's pending writes (see [`pending`]); a TSO's transactions open
/// at its death (but those of clients that died meanwhile), resolved when
/// their clients learnt the outcome.
fn deaths(h: &History) -> Vec<DeathFact> {
    let kill = EventKind::Kill.name();
    let invalidated = invalidations(h);
    let decided = decided(h);
    let client_kills = client_kills(h);
    let mut previous: BTreeMap<u64, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for e in h.events.iter().filter(|e| e.kind == kill) {
        let Some(node) = e.fields.get("node").and_then(|n| n.as_str()) else {
            continue;
        };
        let Ok(name) = NodeName::parse(node, &percsim_sim::omid::NODE_KINDS) else {
            continue;
        };
        let resolved_ns = match (name.client(), name.role()) {
            (Some(c), _) => {
                let since = previous.insert(c as u64, e.t_ns);
                let dead = Death {
                    client: c as u64,
                    since,
                    t_ns: e.t_ns,
                };
                pending(h, &dead, &decided, &invalidated)
            }
            (None, Role::Coordinator) => h
                .transactions
                .iter()
                .filter(|t| open_at(t, e.t_ns) && !orphaned(t, &client_kills, e.t_ns))
                .map(|t| t.complete_ns)
                .collect(),
            _ => continue,
        };
        out.push(DeathFact {
            t_ns: e.t_ns,
            node: node.to_string(),
            resolved_ns,
        });
    }
    out
}

/// Each client's kills, by client index.
fn client_kills(h: &History) -> BTreeMap<u64, Vec<u64>> {
    let kill = EventKind::Kill.name();
    let mut kills: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for e in h.events.iter().filter(|e| e.kind == kill) {
        let node = e.fields.get("node").and_then(|n| n.as_str()).unwrap_or("");
        let name = NodeName::parse(node, &percsim_sim::omid::NODE_KINDS).ok();
        if let Some(c) = name.and_then(|n| n.client()) {
            kills.entry(c as u64).or_default().push(e.t_ns);
        }
    }
    kills
}

/// Whether `t`'s client died between its begin and `t_ns` (then `t` waits
/// for no TSO: it is the dead client's work).
fn orphaned(t: &Transaction, kills: &BTreeMap<u64, Vec<u64>>, t_ns: u64) -> bool {
    kills
        .get(&t.client)
        .is_some_and(|ks| ks.iter().any(|&k| t.invoke_ns <= k && k <= t_ns))
}

/// Whether `t` was begun by `t_ns` and not finished then.
fn open_at(t: &Transaction, t_ns: u64) -> bool {
    t.invoke_ns <= t_ns && t.complete_ns.is_none_or(|c| c > t_ns)
}

/// A client's death: which client, when, and its previous death.
struct Death {
    client: u64,
    since: Option<u64>,
    t_ns: u64,
}

/// The start timestamps the TSO committed (the final state holds Omid's
/// committed versions only): readers resolve those through the commit
/// table, nothing is left pending.
fn decided(h: &History) -> BTreeSet<u64> {
    h.final_state
        .cells
        .iter()
        .flat_map(|c| c.versions.iter())
        .map(|v| v.start_ts)
        .collect()
}

/// When a reader first invalidated each transaction, by start timestamp.
fn invalidations(h: &History) -> BTreeMap<u64, u64> {
    let kind = OmidEvent::Invalidated.name();
    let mut first = BTreeMap::new();
    for e in h.events.iter().filter(|e| e.kind == kind) {
        if let Some(ts) = e.fields.get("start_ts").and_then(|v| v.as_u64()) {
            first.entry(ts).or_insert(e.t_ns);
        }
    }
    first
}

/// A dead client's pending writes that stood in a reader's way: each
/// transaction it began after its previous death and had not finished at
/// this one, that the TSO never committed, and one of whose data cells a
/// later snapshot read. Resolved when a reader invalidated it (at the
/// death, if a reader had done so before); never, if none did. Pending
/// writes no reader reached within the run blocked no one (a reader that
/// reaches them later invalidates them at once) and are not counted.
fn pending(
    h: &History,
    d: &Death,
    decided: &BTreeSet<u64>,
    invalidated: &BTreeMap<u64, u64>,
) -> Vec<Option<u64>> {
    h.transactions
        .iter()
        .filter(|t| t.client == d.client && open_at(t, d.t_ns))
        .filter(|t| d.since.is_none_or(|s| t.invoke_ns > s))
        .filter(|t| !decided.contains(&t.start_ts) && met(h, t))
        .map(|t| invalidated.get(&t.start_ts).map(|&i| i.max(d.t_ns)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const MS: u64 = 1_000_000;

    fn w(row: &str, col: &str, v: &str) -> Value {
        json!({"f": "write", "row": row, "col": col, "value": v})
    }

    fn t(id: u64, client: u64, start_ts: u64, ms: (u64, Option<u64>), outcome: &str) -> Value {
        json!({"id": id, "client": client, "start_ts": start_ts, "commit_ts": null,
            "invoke_ns": ms.0 * MS, "complete_ns": ms.1.map(|c| c * MS),
            "outcome": outcome, "ops": []})
    }

    fn event(ms: u64, kind: &str, extra: Value) -> Value {
        let mut e = json!({"t_ns": ms * MS, "kind": kind});
        e.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        e
    }

    /// doc/00000 loaded (learnt at 100 ms) and indexed twice (the first at
    /// 200 ms); doc/00001 loaded, never indexed. client-0 dies at 500 ms
    /// with four transactions open: T5 wrote and was invalidated at 800
    /// ms, T6 wrote and was committed by the TSO, T7 wrote a cell T8 read
    /// and nobody invalidated it, T10 wrote a cell nobody read. The TSO dies at 1,000 ms with T8 open (learnt at
    /// 1,400 ms) and T9 open (never learnt); a tablet server dies too.
    fn history() -> History {
        let mut txns = vec![
            t(1, 0, 10, (50, Some(100)), "committed"),
            t(2, 1, 12, (150, Some(200)), "committed"),
            t(3, 2, 14, (160, Some(260)), "committed"),
            t(4, 0, 16, (170, Some(180)), "committed"),
            t(5, 0, 20, (400, None), "unknown"),
            t(6, 0, 22, (410, None), "unknown"),
            t(7, 0, 24, (420, None), "unknown"),
            t(8, 1, 30, (900, Some(1_400)), "aborted"),
            t(9, 2, 32, (950, None), "unknown"),
            t(10, 0, 26, (430, None), "unknown"),
        ];
        txns[0]["ops"] = json!([w("doc/00000", "raw", "content-1")]);
        txns[1]["ops"] = json!([w("out/00000", "source", "doc/00000")]);
        txns[2]["ops"] = json!([w("out/00000", "source", "doc/00000")]);
        txns[3]["ops"] = json!([w("doc/00001", "raw", "content-2")]);
        for t in &mut txns[4..7] {
            t["ops"] = json!([w("loader", "next", "9")]);
        }
        // T8 read the cell T5, T6 and T7 wrote (T10's, nobody read).
        txns[7]["ops"] = json!([{"f": "read", "row": "loader", "col": "next", "value": null}]);
        txns[9]["ops"] = json!([w("elsewhere", "v", "1")]);
        txns[7]["abort_reason"] = json!("conflict");
        let events = vec![
            event(500, "kill", json!({"node": "client-0"})),
            event(600, "kill", json!({"node": "tablet-0"})),
            event(
                800,
                "omid_invalidated",
                json!({"start_ts": 20, "by": "client-1"}),
            ),
            event(1_000, "kill", json!({"node": "tso"})),
            event(2_000, "phase_healed", json!({})),
        ];
        let cells = json!([{"row": "loader", "col": "next", "versions": [
            {"start_ts": 22, "commit_ts": 23, "kind": "put", "value": "9"}]}]);
        let h = json!({"format": "percsim-history/1", "transactions": txns, "events": events,
            "final_state": {"cells": cells}});
        serde_json::from_value(h).unwrap()
    }

    #[test]
    fn documents_are_processed_at_their_first_index_record() {
        let f = facts(&history());
        assert_eq!(f.workload_end_ns, 2_000 * MS);
        let docs: Vec<(u64, Option<u64>)> = f
            .docs
            .iter()
            .map(|d| (d.loaded_ns / MS, d.processed_ns.map(|p| p / MS)))
            .collect();
        assert_eq!(docs, vec![(100, Some(200)), (180, None)]);
        assert_eq!(f.txns[7].abort_reason.as_deref(), Some("conflict"));
    }

    #[test]
    fn a_dead_clients_undecided_writes_wait_for_a_readers_invalidation() {
        let f = facts(&history());
        let deaths: Vec<(&str, Vec<Option<u64>>)> = f
            .deaths
            .iter()
            .map(|d| {
                let r = d.resolved_ns.iter().map(|r| r.map(|r| r / MS)).collect();
                (d.node.as_str(), r)
            })
            .collect();
        assert_eq!(
            deaths,
            vec![
                ("client-0", vec![Some(800), None]),
                ("tso", vec![Some(1_400), None]),
            ]
        );
    }

    #[test]
    fn bad_pipeline_settings_name_their_field() {
        Pipeline::default().validate().expect("the default job");
        let bad = Pipeline {
            loaders: 0,
            ..Pipeline::default()
        };
        assert_eq!(
            bad.validate().unwrap_err(),
            "workload.loaders: must be at least 1, found 0"
        );
        assert_eq!(hash("a"), hash("a"));
        assert_ne!(hash("a"), hash("b"));
    }
}
