//! Percolator's events in the history: a client's transaction events
//! (written into the `percsim-history/1` builder, outcomes into the
//! world's recorder) and lock cleanups (the world's events).

use crate::percolator::ids::{PercolatorCounter, PercolatorEvent};
use crate::world::recorder::Recorder;
use crate::world::txn_history::{TxnFinish, TxnHistory};
use percsim_checker as history;
use percsim_protocol::percolator::CellKey;
use percsim_protocol::percolator::client::{CleanupEvent, CommitOutcome, TxnEvent};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Record the initial load as one committed transaction.
pub(crate) fn bootstrap(
    h: &mut TxnHistory,
    rec: &mut Recorder,
    initial: &[(CellKey, String)],
    start_ts: u64,
    commit_ts: u64,
) {
    let ops = initial
        .iter()
        .map(|(c, v)| history::Op::Write {
            row: c.row.clone(),
            col: c.col.clone(),
            value: v.clone(),
        })
        .collect();
    h.bootstrap(rec, start_ts, commit_ts, ops);
}

/// Record one event of transaction `id`.
pub(crate) fn txn_event(
    h: &mut TxnHistory,
    rec: &mut Recorder,
    id: u64,
    event: TxnEvent,
    now_ns: u64,
) {
    match event {
        TxnEvent::Started { start_ts } => h.started(id, start_ts.0),
        TxnEvent::Observer { name, cell } => h.observer(
            id,
            history::ObserverRun {
                name,
                row: cell.row,
                col: cell.col,
            },
        ),
        TxnEvent::Read { cell, value } => h.op(
            id,
            history::Op::Read {
                row: cell.row,
                col: cell.col,
                value,
            },
        ),
        TxnEvent::Buffered { cell, value } => h.op(
            id,
            match value {
                Some(value) => history::Op::Write {
                    row: cell.row,
                    col: cell.col,
                    value,
                },
                None => history::Op::Delete {
                    row: cell.row,
                    col: cell.col,
                },
            },
        ),
        TxnEvent::Scanned {
            start_row,
            end_row,
            cols,
            start_ts,
            cells,
        } => h.scan(
            id,
            history::Scan {
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
            },
        ),
        TxnEvent::CommitTs { commit_ts } => h.commit_ts(id, commit_ts.0),
        TxnEvent::Finished(outcome) => {
            let finish = match &outcome {
                CommitOutcome::Committed { commit_ts } => TxnFinish::Committed {
                    commit_ts: commit_ts.map(|ts| ts.0),
                },
                CommitOutcome::Aborted { reason } => TxnFinish::Aborted {
                    reason: reason.name(),
                },
                CommitOutcome::Unknown => TxnFinish::Unknown,
            };
            h.finish(rec, id, finish, now_ns);
        }
    }
}

/// Record a lock cleanup by client `by_client`.
pub(crate) fn cleanup(rec: &mut Recorder, by_client: u64, e: &CleanupEvent, now_ns: u64) {
    let kind = PercolatorEvent::of_cleanup(e.kind);
    let suspicion = serde_json::to_value(e.suspicion).unwrap_or(Value::Null);
    for counter in PercolatorCounter::of_cleanup(e.kind, e.suspicion) {
        rec.bump(counter.name());
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
    rec.push_event(history::Event {
        t_ns: now_ns,
        kind: kind.name().to_string(),
        fields,
    });
}
