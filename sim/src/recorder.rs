//! Records what clients observed, and protocol and fault events, into a
//! `percsim-history/1` history. The recorder belongs to the harness, so a
//! client's crash loses nothing it already recorded.

use percsim_checker as history;
use percsim_protocol::CellKey;
use percsim_protocol::client::{CleanupEvent, CleanupKind, CommitOutcome, Suspicion, TxnEvent};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The client id the initial load is recorded under.
pub const LOADER_CLIENT: u64 = 1_000_000;

struct TxnRecord {
    client: u64,
    start_ts: Option<u64>,
    commit_ts: Option<u64>,
    invoke_ns: u64,
    complete_ns: Option<u64>,
    outcome: Option<history::Outcome>,
    abort_reason: Option<String>,
    ops: Vec<history::Op>,
    scans: Vec<history::Scan>,
    observer: Option<history::ObserverRun>,
    /// Its client died while it ran: it will never finish.
    orphaned: bool,
}

/// The history being recorded, plus counters for summaries.
#[derive(Default)]
pub(crate) struct Recorder {
    txns: Vec<TxnRecord>,
    events: Vec<history::Event>,
    /// How many transactions each client has begun (over all incarnations).
    per_client: BTreeMap<u64, u64>,
    /// Named counters (event kinds, abort reasons, ...).
    pub(crate) counters: BTreeMap<String, u64>,
}

impl Recorder {
    pub(crate) fn bump(&mut self, name: &str) {
        *self.counters.entry(name.to_string()).or_default() += 1;
    }

    /// Register a transaction; returns its id and its 1-based number for its client.
    pub(crate) fn begin(&mut self, client: u64, now_ns: u64) -> (u64, u64) {
        let id = self.txns.len() as u64;
        self.txns.push(TxnRecord {
            client,
            start_ts: None,
            commit_ts: None,
            invoke_ns: now_ns,
            complete_ns: None,
            outcome: None,
            abort_reason: None,
            ops: Vec::new(),
            scans: Vec::new(),
            observer: None,
            orphaned: false,
        });
        let n = self.per_client.entry(client).or_default();
        *n += 1;
        (id, *n)
    }

    /// A transaction committed outside any client (the initial load).
    pub(crate) fn bootstrap(
        &mut self,
        start_ts: u64,
        commit_ts: u64,
        writes: &[(CellKey, String)],
    ) {
        self.txns.push(TxnRecord {
            client: LOADER_CLIENT,
            start_ts: Some(start_ts),
            commit_ts: Some(commit_ts),
            invoke_ns: 0,
            complete_ns: Some(0),
            outcome: Some(history::Outcome::Committed),
            abort_reason: None,
            ops: writes
                .iter()
                .map(|(c, v)| history::Op::Write {
                    row: c.row.clone(),
                    col: c.col.clone(),
                    value: v.clone(),
                })
                .collect(),
            scans: Vec::new(),
            observer: None,
            orphaned: false,
        });
    }

    /// Mark the unfinished transactions of a killed client.
    pub(crate) fn orphan(&mut self, client: u64) {
        for t in self
            .txns
            .iter_mut()
            .filter(|t| t.client == client && t.outcome.is_none())
        {
            t.orphaned = true;
        }
    }

    /// Transactions still running (a killed client's are orphaned, not running).
    pub(crate) fn in_progress(&self) -> usize {
        self.txns
            .iter()
            .filter(|t| t.outcome.is_none() && !t.orphaned)
            .count()
    }

    pub(crate) fn txn_event(&mut self, id: u64, event: TxnEvent, now_ns: u64) {
        let Some(t) = self.txns.get_mut(id as usize) else {
            return;
        };
        match event {
            TxnEvent::Started { start_ts } => t.start_ts = Some(start_ts.0),
            TxnEvent::Observer { name, cell } => {
                t.observer = Some(history::ObserverRun {
                    name,
                    row: cell.row,
                    col: cell.col,
                })
            }
            TxnEvent::Read { cell, value } => t.ops.push(history::Op::Read {
                row: cell.row,
                col: cell.col,
                value,
            }),
            TxnEvent::Buffered { cell, value } => t.ops.push(match value {
                Some(value) => history::Op::Write {
                    row: cell.row,
                    col: cell.col,
                    value,
                },
                None => history::Op::Delete {
                    row: cell.row,
                    col: cell.col,
                },
            }),
            TxnEvent::Scanned {
                start_row,
                end_row,
                cols,
                start_ts,
                cells,
            } => t.scans.push(history::Scan {
                start_row,
                end_row,
                cols,
                start_ts: start_ts.0,
                returned: cells
                    .into_iter()
                    .map(|(c, value)| history::ScanCell {
                        row: c.row,
                        col: c.col,
                        value,
                    })
                    .collect(),
            }),
            // Kept if the outcome stays unknown: the store must then hold
            // the transaction at exactly this timestamp, or not at all.
            TxnEvent::CommitTs { commit_ts } => t.commit_ts = Some(commit_ts.0),
            TxnEvent::Finished(outcome) => {
                t.complete_ns = Some(now_ns);
                let name = match &outcome {
                    CommitOutcome::Committed { commit_ts } => {
                        t.commit_ts = commit_ts.map(|ts| ts.0);
                        t.outcome = Some(history::Outcome::Committed);
                        "txn.committed".to_string()
                    }
                    CommitOutcome::Aborted { reason } => {
                        t.outcome = Some(history::Outcome::Aborted);
                        t.commit_ts = None;
                        t.abort_reason = Some(reason.name().to_string());
                        format!("abort.{}", reason.name())
                    }
                    CommitOutcome::Unknown => {
                        t.outcome = Some(history::Outcome::Unknown);
                        t.complete_ns = None;
                        "txn.unknown".to_string()
                    }
                };
                self.bump(&name);
            }
        }
    }

    pub(crate) fn cleanup(&mut self, by_client: u64, e: &CleanupEvent, now_ns: u64) {
        let kind = match e.kind {
            CleanupKind::RollForward => "roll_forward",
            CleanupKind::RollBack => "roll_back",
            CleanupKind::RollBackBeforePrewrite => "roll_back_before_prewrite",
        };
        let suspicion = serde_json::to_value(e.suspicion).unwrap_or(Value::Null);
        self.bump(&format!("cleanup.{kind}"));
        if let Value::String(s) = &suspicion {
            self.bump(&format!("cleanup.{kind}.{s}"));
        }
        if e.suspicion != Suspicion::OwnAbort {
            self.bump(&format!("cleanup.{kind}.by_reader"));
        }
        let mut fields = BTreeMap::new();
        fields.insert("start_ts".into(), json!(e.start_ts.0));
        fields.insert("row".into(), json!(e.cell.row));
        fields.insert("col".into(), json!(e.cell.col));
        fields.insert("by_client".into(), json!(by_client));
        fields.insert("suspicion".into(), suspicion);
        if let Some(c) = e.commit_ts {
            fields.insert("commit_ts".into(), json!(c.0));
        }
        self.events.push(history::Event {
            t_ns: now_ns,
            kind: kind.to_string(),
            fields,
        });
    }

    /// Record a fault or cluster event.
    pub(crate) fn event(&mut self, now_ns: u64, kind: &str, fields: Value) {
        self.bump(&format!("event.{kind}"));
        let fields = match fields {
            Value::Object(m) => m.into_iter().collect(),
            _ => BTreeMap::new(),
        };
        self.events.push(history::Event {
            t_ns: now_ns,
            kind: kind.to_string(),
            fields,
        });
    }

    /// The transactions as the history format has them. Transactions that
    /// never got a start timestamp did nothing and are left out; ones that
    /// never learnt an outcome are unknown.
    pub(crate) fn transactions(&self) -> Vec<history::Transaction> {
        self.txns
            .iter()
            .enumerate()
            .filter_map(|(id, t)| {
                Some(history::Transaction {
                    id: id as u64,
                    client: t.client,
                    start_ts: t.start_ts?,
                    commit_ts: t.commit_ts,
                    invoke_ns: t.invoke_ns,
                    complete_ns: t.complete_ns,
                    outcome: t.outcome.unwrap_or(history::Outcome::Unknown),
                    abort_reason: t.abort_reason.clone(),
                    ops: t.ops.clone(),
                    scans: t.scans.clone(),
                    observer: t.observer.clone(),
                })
            })
            .collect()
    }

    pub(crate) fn events(&self) -> &[history::Event] {
        &self.events
    }
}
