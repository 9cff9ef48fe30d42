//! What a script can expect beyond values and commit outcomes: the class
//! of a failure, conditions to wait for, the store's contents (locks,
//! write records, data versions, notify entries), how many protocol
//! events happened, and how an interrupted commit ended in the store.

use percsim_protocol::percolator::WriteKind;
use percsim_protocol::percolator::client::{AbortReason, RpcError, TxnError};
use percsim_sim::{CellView, Controller, Counter, EventKind, FaultKind, PercolatorEvent};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The class of failure a `begin`, `get`, `scan` or `commit` may be
/// expected to end with (`fails`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// No reply in time (a begin, get or scan; a commit reports `unknown`).
    TimedOut,
    /// The store or the oracle refused or could not be reached.
    Unavailable,
    /// The commit met a write committed after its start.
    WriteConflict,
    /// Another transaction's lock: a commit met it, or a read waited on it too long.
    Locked,
    /// A cleanup rolled the transaction back before its primary committed.
    RolledBack,
}

impl ErrorClass {
    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::TimedOut => "timed_out",
            ErrorClass::Unavailable => "unavailable",
            ErrorClass::WriteConflict => "write_conflict",
            ErrorClass::Locked => "locked",
            ErrorClass::RolledBack => "rolled_back",
        }
    }

    /// What it means.
    pub fn description(self) -> &'static str {
        match self {
            ErrorClass::TimedOut => "no reply in time (begin, get, scan)",
            ErrorClass::Unavailable => "the store or the oracle refused or was unreachable",
            ErrorClass::WriteConflict => "the commit met a write committed after its start",
            ErrorClass::Locked => "another transaction's lock stopped the commit or the read",
            ErrorClass::RolledBack => "a cleanup rolled the transaction back first",
        }
    }

    /// The class of a failed begin or read.
    pub(super) fn of_error(e: &TxnError) -> ErrorClass {
        match e {
            TxnError::LockWaitTimeout { .. } => ErrorClass::Locked,
            TxnError::Rpc(RpcError::Timeout) => ErrorClass::TimedOut,
            TxnError::Rpc(RpcError::Unavailable) => ErrorClass::Unavailable,
        }
    }

    /// The class of an aborted commit (`None` for a user abort).
    pub(super) fn of_abort(r: &AbortReason) -> Option<ErrorClass> {
        match r {
            AbortReason::WriteConflict => Some(ErrorClass::WriteConflict),
            AbortReason::LockConflict | AbortReason::LockWaitTimeout => Some(ErrorClass::Locked),
            AbortReason::RolledBack => Some(ErrorClass::RolledBack),
            AbortReason::Unavailable => Some(ErrorClass::Unavailable),
            AbortReason::User => None,
        }
    }
}

/// A cell named by row and column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellRef {
    /// Row key.
    pub row: String,
    /// Column.
    pub col: String,
}

impl CellRef {
    /// The cell `row`/`col`.
    pub fn new(row: &str, col: &str) -> Self {
        CellRef {
            row: row.into(),
            col: col.into(),
        }
    }
}

/// One of Percolator's conditions a `wait` step waits for (beside the
/// world's `node_up`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum WaitFor {
    /// The transaction's commit or abort step returned, or it failed earlier.
    TxnFinished(String),
    /// The cell holds no lock.
    LockGone(CellRef),
    /// The cell has no notify entry (its observer processed it).
    NotifyCleared(CellRef),
}

/// The kind of a write record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// A committed put.
    Put,
    /// A committed delete.
    Delete,
    /// A rollback record.
    Rollback,
}

/// An expected lock: whose it is and, optionally, where its primary is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockExpect {
    /// The transaction holding it (`initial` for the initial load).
    pub txn: String,
    /// Its primary cell (not checked when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary: Option<CellRef>,
}

/// An expected write record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteExpect {
    /// The transaction it belongs to (its start_ts).
    pub txn: String,
    /// Put, delete or rollback.
    pub kind: RecordKind,
    /// Its commit_ts must be the one this transaction's client was told
    /// (not checked when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_ts_of: Option<String>,
}

/// An assertion on one cell of the store; only the fields given are checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellAssert {
    /// Row key.
    pub row: String,
    /// Column.
    pub col: String,
    /// Exactly these locks, by start_ts order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locks: Option<Vec<LockExpect>>,
    /// Exactly these write records, by commit_ts order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<Vec<WriteExpect>>,
    /// Exactly the data versions of these transactions, by start_ts order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Vec<String>>,
    /// Whether the row's notify column has an entry for this column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<bool>,
    /// The cell's acknowledgment entry of an observer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack: Option<AckExpect>,
}

impl CellAssert {
    /// An assertion on cell `row`/`col` that checks nothing yet: set the
    /// fields to check (`CellAssert { locks: Some(vec![]), ..CellAssert::new("a", "v") }`).
    pub fn new(row: &str, col: &str) -> Self {
        CellAssert {
            row: row.into(),
            col: col.into(),
            locks: None,
            writes: None,
            data: None,
            notify: None,
            ack: None,
        }
    }
}

fn yes() -> bool {
    true
}

/// An expected acknowledgment entry: the observer's acknowledgment column
/// (`<col>:ack:<observer>`) of the cell, whose newest committed value is
/// the start_ts of the observer run that last processed the cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AckExpect {
    /// The observer (it must observe the cell's column).
    pub observer: String,
    /// Whether an observer run committed an acknowledgment.
    #[serde(default = "yes")]
    pub acked: bool,
    /// The acknowledging run started after this transaction committed
    /// (it saw that transaction's write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// What the run counts, for `assert_count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Counted {
    /// A cleanup rolled a committed primary's secondary forward.
    RollForward,
    /// A cleanup rolled a dead or stale transaction's lock back.
    RollBack,
    /// A cleanup wrote a rollback record where no lock was yet.
    RollBackBeforePrewrite,
    /// A tablet server refused a prewrite older than a rollback record.
    LatePrewriteRejected,
    /// A read waited on a lock.
    LockWait,
    /// A node was killed at a named protocol point.
    CrashAtStep,
    /// A node was frozen at a named protocol point.
    PauseAtStep,
    /// A node was killed.
    Kill,
    /// A node was restarted.
    Restart,
    /// A tablet moved to another server.
    TabletMoved,
    /// A request was delivered twice.
    Duplicated,
    /// A message fault rule (an `intercept` step) acted on a message.
    Intercepted,
}

impl crate::script::Countable for Counted {
    fn counter(self) -> String {
        Counted::counter(self)
    }
}

impl Counted {
    /// The run counter it reads.
    pub fn counter(self) -> String {
        use percsim_sim::PercolatorCounter as P;
        match self {
            Counted::RollForward => P::RollForward.name().into(),
            Counted::RollBack => P::RollBack.name().into(),
            Counted::RollBackBeforePrewrite => P::RollBackBeforePrewrite.name().into(),
            Counted::LatePrewriteRejected => P::StoreLatePrewriteRejected.name().into(),
            Counted::LockWait => P::ClientLockWaits.name().into(),
            Counted::CrashAtStep => FaultKind::CrashAtStep.counter(),
            Counted::PauseAtStep => FaultKind::PauseAtStep.counter(),
            Counted::Kill => EventKind::Kill.counter(),
            Counted::Restart => EventKind::Restart.counter(),
            Counted::TabletMoved => PercolatorEvent::TabletMoved.counter(),
            Counted::Duplicated => Counter::NetDuplicated.name().into(),
            Counted::Intercepted => Counter::NetIntercepted.name().into(),
        }
    }

    /// Every countable thing.
    pub const ALL: [Counted; 12] = [
        Counted::RollForward,
        Counted::RollBack,
        Counted::RollBackBeforePrewrite,
        Counted::LatePrewriteRejected,
        Counted::LockWait,
        Counted::CrashAtStep,
        Counted::PauseAtStep,
        Counted::Kill,
        Counted::Restart,
        Counted::TabletMoved,
        Counted::Duplicated,
        Counted::Intercepted,
    ];
}

/// How a transaction ended in the store (whatever its client was told).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stored {
    /// Every cell it wrote has its commit record, all with one commit_ts.
    Committed,
    /// No cell it wrote has its commit record or its lock.
    RolledBack,
}

/// A transaction's timestamps as the script learnt them.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct TxnTs {
    pub start_ts: u64,
    pub commit_ts: Option<u64>,
}

/// What the assertions read: the world and the script's names for timestamps.
pub(super) struct View<'a> {
    pub control: &'a Controller,
    pub names: &'a BTreeMap<String, TxnTs>,
}

/// The start_ts of the initial load (docs/scenario-format.md).
const INITIAL_START_TS: u64 = 1;

impl View<'_> {
    fn name_of(&self, start_ts: u64) -> String {
        if start_ts == INITIAL_START_TS {
            return "initial".into();
        }
        self.names
            .iter()
            .find(|(_, t)| t.start_ts == start_ts)
            .map(|(n, _)| n.clone())
            .unwrap_or_else(|| format!("ts {start_ts}"))
    }

    /// Check a cell; the mismatch as `(expected, happened)`.
    pub fn check_cell(&self, a: &CellAssert) -> Option<(String, String)> {
        let cell = self.control.cell(&a.row, &a.col);
        let mut exp = Vec::new();
        let mut got = Vec::new();
        if let Some(locks) = &a.locks {
            let actual = self.locks(&cell);
            let ok = locks.len() == actual.len()
                && locks.iter().zip(&actual).all(|(e, g)| {
                    e.txn == g.txn && (e.primary.is_none() || e.primary == g.primary)
                });
            if !ok {
                exp.push(format!("locks {}", json(locks)));
                got.push(format!("locks {}", json(&actual)));
            }
        }
        if let Some(writes) = &a.writes {
            let actual = self.writes(&cell);
            let ok = writes.len() == actual.len()
                && writes.iter().zip(&actual).all(|(e, (g, ts))| {
                    e.txn == g.txn
                        && e.kind == g.kind
                        && e.commit_ts_of.as_ref().is_none_or(|n| {
                            self.names.get(n).and_then(|t| t.commit_ts) == Some(*ts)
                        })
                });
            if !ok {
                let shown: Vec<String> = actual
                    .iter()
                    .map(|(w, ts)| format!("{} {} at commit_ts {ts}", w.txn, json(&w.kind)))
                    .collect();
                exp.push(format!("writes {}", json(writes)));
                got.push(format!("writes [{}]", shown.join(", ")));
            }
        }
        if let Some(data) = &a.data {
            let actual: Vec<String> = cell.column.data.keys().map(|t| self.name_of(t.0)).collect();
            if *data != actual {
                exp.push(format!("data versions of {}", json(data)));
                got.push(format!("data versions of {}", json(&actual)));
            }
        }
        if let Some(n) = a.notify
            && n != cell.notify.is_some()
        {
            exp.push(format!("notify entry {n}"));
            got.push(format!("notify entry {}", cell.notify.is_some()));
        }
        if let Some(ack) = &a.ack
            && let Some(happened) = self.check_ack(a, ack)
        {
            exp.push(format!("ack {}", json(ack)));
            got.push(happened);
        }
        (!exp.is_empty()).then(|| (exp.join(", "), got.join(", ")))
    }

    /// Check an acknowledgment entry; what happened, if it does not match.
    fn check_ack(&self, a: &CellAssert, ack: &AckExpect) -> Option<String> {
        let col = percsim_protocol::percolator::client::ObserverSpec {
            name: ack.observer.clone(),
            col: a.col.clone(),
            weak: false,
        }
        .ack_col();
        let cell = self.control.cell(&a.row, &col);
        let run = cell
            .column
            .write
            .values()
            .rev()
            .find(|w| w.kind == WriteKind::Put)
            .map(|w| w.start_ts.0);
        let after = ack
            .after
            .as_ref()
            .map(|t| self.names.get(t).and_then(|x| x.commit_ts));
        let ok = run.is_some() == ack.acked
            && after.is_none_or(|c| matches!((run, c), (Some(r), Some(c)) if r > c));
        let of = match after {
            Some(Some(c)) => format!(
                " ({} committed at ts {c})",
                ack.after.as_deref().unwrap_or("")
            ),
            Some(None) => format!(" ({} has no commit_ts)", ack.after.as_deref().unwrap_or("")),
            None => String::new(),
        };
        (!ok).then(|| match run {
            Some(r) => format!("ack by the observer run started at ts {r}{of}"),
            None => format!("no ack{of}"),
        })
    }

    fn locks(&self, cell: &CellView) -> Vec<LockExpect> {
        cell.column
            .lock
            .iter()
            .map(|(ts, l)| LockExpect {
                txn: self.name_of(ts.0),
                primary: Some(CellRef {
                    row: l.primary.row.clone(),
                    col: l.primary.col.clone(),
                }),
            })
            .collect()
    }

    fn writes(&self, cell: &CellView) -> Vec<(WriteExpect, u64)> {
        cell.column
            .write
            .iter()
            .map(|(ts, w)| {
                let kind = match w.kind {
                    WriteKind::Put => RecordKind::Put,
                    WriteKind::Delete => RecordKind::Delete,
                    WriteKind::Rollback => RecordKind::Rollback,
                };
                let e = WriteExpect {
                    txn: self.name_of(w.start_ts.0),
                    kind,
                    commit_ts_of: None,
                };
                (e, ts.0)
            })
            .collect()
    }

    /// Check how transaction `txn`, which wrote `cells`, ended in the store.
    pub fn check_stored(
        &self,
        txn: &str,
        cells: &[CellRef],
        want: Stored,
    ) -> Option<(String, String)> {
        let Some(start) = self.names.get(txn).map(|t| t.start_ts) else {
            return Some((json(&want), "the transaction never began".into()));
        };
        let mut committed = Vec::new();
        let mut open = Vec::new();
        for c in cells {
            let cell = self.control.cell(&c.row, &c.col);
            if let Some((ts, w)) = cell
                .column
                .write_of(percsim_protocol::percolator::Ts(start))
                && w.kind != WriteKind::Rollback
            {
                committed.push((format!("{}/{}", c.row, c.col), ts.0));
            }
            if cell
                .column
                .lock
                .contains_key(&percsim_protocol::percolator::Ts(start))
            {
                open.push(format!("{}/{}", c.row, c.col));
            }
        }
        let one_ts = committed.windows(2).all(|w| w[0].1 == w[1].1);
        let ok = match want {
            Stored::Committed => committed.len() == cells.len() && one_ts,
            Stored::RolledBack => committed.is_empty() && open.is_empty(),
        };
        let happened = format!(
            "commit records on {:?} of {} cells written, locks left on {open:?}",
            committed,
            cells.len()
        );
        (!ok).then(|| (json(&want), happened))
    }

    /// Whether a wait condition holds now.
    pub fn holds(&self, w: &WaitFor, finished: &std::collections::BTreeSet<String>) -> bool {
        match w {
            WaitFor::TxnFinished(t) => finished.contains(t),
            WaitFor::LockGone(c) => self.control.cell(&c.row, &c.col).column.lock.is_empty(),
            WaitFor::NotifyCleared(c) => self.control.cell(&c.row, &c.col).notify.is_none(),
        }
    }
}

fn json<T: Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}
