//! A Bigtable row as Percolator uses it, and the mutations a row step returns.
//!
//! A tablet server applies a [`RowMutation`] atomically: that is the only
//! atomic unit the store offers (a single-row transaction).

use crate::percolator::types::{Lock, Ts, Write, WriteKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The Percolator columns kept beside one data column.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Column {
    /// `c:data`, versioned by start_ts.
    pub data: BTreeMap<Ts, String>,
    /// `c:lock`, versioned by start_ts.
    pub lock: BTreeMap<Ts, Lock>,
    /// `c:write`, versioned by commit_ts.
    pub write: BTreeMap<Ts, Write>,
}

impl Column {
    /// Whether the column holds nothing at all.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty() && self.lock.is_empty() && self.write.is_empty()
    }

    /// The write record of the transaction that started at `start_ts`, if
    /// any, with its commit_ts. Commit records sit at or above their start_ts.
    pub fn write_of(&self, start_ts: Ts) -> Option<(Ts, Write)> {
        self.write
            .range(start_ts..)
            .find(|(_, w)| w.start_ts == start_ts)
            .map(|(ts, w)| (*ts, *w))
    }
}

static EMPTY_COLUMN: Column = Column {
    data: BTreeMap::new(),
    lock: BTreeMap::new(),
    write: BTreeMap::new(),
};

impl Column {
    /// An empty column, for rows that lack one.
    pub fn empty() -> &'static Column {
        &EMPTY_COLUMN
    }
}

/// One row: its data columns, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Row {
    /// Columns by data column name.
    pub cols: BTreeMap<String, Column>,
    /// The `notify` column: dirty cells of this row, by data column, each
    /// with the value that last set it (a writer's start_ts, or a weak
    /// notification's timestamp). Not a Percolator column: no versions, no
    /// transactions, only a hint for the observers' scanners.
    #[serde(default)]
    pub notify: BTreeMap<String, u64>,
}

impl Row {
    /// The column named `col`, or an empty one.
    pub fn col(&self, col: &str) -> &Column {
        self.cols.get(col).unwrap_or(&EMPTY_COLUMN)
    }

    /// Apply a mutation. Callers apply it as one atomic step.
    ///
    /// Its preconditions are asserted in every build (a tripped one panics
    /// with `invariant violated: ...`, a crash verdict for the simulator):
    /// a rollback record sits at its own start_ts and never replaces
    /// another record. No protocol step, faithful or ablated, asks for
    /// either. (That a committed put's data is never erased is the
    /// checker's `data_missing` finding instead: some ablations do it.)
    pub fn apply(&mut self, mutation: &RowMutation) {
        for op in &mutation.ops {
            if let Some(problem) = self.precondition(op) {
                panic!("invariant violated: row mutation {op:?}: {problem}");
            }
            match op {
                RowOp::PutData { col, ts, value } => {
                    self.entry(col).data.insert(*ts, value.clone());
                }
                RowOp::EraseData { col, ts } => {
                    self.entry(col).data.remove(ts);
                }
                RowOp::PutLock { col, ts, lock } => {
                    self.entry(col).lock.insert(*ts, lock.clone());
                }
                RowOp::EraseLock { col, ts } => {
                    self.entry(col).lock.remove(ts);
                }
                RowOp::SetNotify { col, value } => {
                    let v = self.notify.entry(col.clone()).or_default();
                    *v = (*v).max(*value);
                }
                RowOp::ClearNotify { col } => {
                    self.notify.remove(col);
                }
                RowOp::PutWrite {
                    col,
                    commit_ts,
                    write,
                } => {
                    self.entry(col).write.insert(*commit_ts, *write);
                }
            }
        }
        self.cols.retain(|_, c| !c.is_empty());
    }

    /// What is wrong with applying `op` to this row now, if anything.
    pub fn precondition(&self, op: &RowOp) -> Option<String> {
        match op {
            RowOp::PutWrite {
                col,
                commit_ts,
                write,
            } if write.kind == WriteKind::Rollback => {
                if *commit_ts != write.start_ts {
                    return Some(format!(
                        "a rollback record of start_ts {} placed at {commit_ts}",
                        write.start_ts
                    ));
                }
                let existing = self.col(col).write.get(commit_ts)?;
                Some(format!("a rollback record replaces {existing:?} in {col}"))
            }
            _ => None,
        }
    }

    fn entry(&mut self, col: &str) -> &mut Column {
        self.cols.entry(col.to_string()).or_default()
    }

    /// A table of the row's columns as in the paper's Figure 4: one line per
    /// timestamp, newest first, with `col:data`, `col:lock`, `col:write`.
    pub fn render(&self, row_key: &str) -> String {
        let mut out = String::new();
        for (name, c) in &self.cols {
            let mut stamps: Vec<Ts> = c
                .data
                .keys()
                .chain(c.lock.keys())
                .chain(c.write.keys())
                .copied()
                .collect();
            stamps.sort_unstable_by(|a, b| b.cmp(a));
            stamps.dedup();
            for ts in stamps {
                let data = c.data.get(&ts).map(String::as_str).unwrap_or("");
                let lock = match c.lock.get(&ts) {
                    Some(l) if l.primary.row == row_key && l.primary.col == *name => {
                        "primary".to_string()
                    }
                    Some(l) => format!("primary@{}", l.primary),
                    None => String::new(),
                };
                let write = match c.write.get(&ts) {
                    Some(w) => format!("{:?}@{}", w.kind, w.start_ts),
                    None => String::new(),
                };
                let _ = writeln!(
                    out,
                    "{row_key} {:>3}: {name}:data={data:<6} {name}:lock={lock:<14} {name}:write={write}",
                    ts.0
                );
            }
        }
        out
    }
}

/// One primitive change to a row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RowOp {
    /// Write `c:data` at a start_ts.
    PutData {
        /// Data column.
        col: String,
        /// The writer's start_ts.
        ts: Ts,
        /// The value.
        value: String,
    },
    /// Erase `c:data` at a start_ts.
    EraseData {
        /// Data column.
        col: String,
        /// The writer's start_ts.
        ts: Ts,
    },
    /// Write `c:lock` at a start_ts.
    PutLock {
        /// Data column.
        col: String,
        /// The writer's start_ts.
        ts: Ts,
        /// The lock.
        lock: Lock,
    },
    /// Erase `c:lock` at a start_ts.
    EraseLock {
        /// Data column.
        col: String,
        /// The writer's start_ts.
        ts: Ts,
    },
    /// Mark the cell dirty in the `notify` column (keeping the larger value).
    SetNotify {
        /// Data column.
        col: String,
        /// The notification's value.
        value: u64,
    },
    /// Remove the cell's `notify` entry.
    ClearNotify {
        /// Data column.
        col: String,
    },
    /// Write a `c:write` record.
    PutWrite {
        /// Data column.
        col: String,
        /// Where the record sits (commit_ts, or start_ts for a rollback).
        commit_ts: Ts,
        /// The record.
        write: Write,
    },
}

/// The changes one row step makes, applied atomically by the tablet server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowMutation {
    /// The primitive changes, in order.
    pub ops: Vec<RowOp>,
}

impl RowMutation {
    /// No change.
    pub fn none() -> Self {
        RowMutation::default()
    }

    /// Whether the mutation changes nothing.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    pub(crate) fn push(&mut self, op: RowOp) -> &mut Self {
        self.ops.push(op);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(start: u64, commit: u64, kind: WriteKind) -> RowOp {
        RowOp::PutWrite {
            col: "c".into(),
            commit_ts: Ts(commit),
            write: Write {
                start_ts: Ts(start),
                kind,
            },
        }
    }

    fn committed_row() -> Row {
        let mut r = Row::default();
        let data = RowOp::PutData {
            col: "c".into(),
            ts: Ts(5),
            value: "v".into(),
        };
        r.apply(&RowMutation {
            ops: vec![data, put(5, 7, WriteKind::Put)],
        });
        r
    }

    #[test]
    fn faithful_mutations_meet_their_preconditions() {
        let mut r = committed_row();
        assert_eq!(r.precondition(&put(9, 9, WriteKind::Rollback)), None);
        let erase = RowOp::EraseData {
            col: "c".into(),
            ts: Ts(9),
        };
        assert_eq!(r.precondition(&erase), None);
        r.apply(&RowMutation {
            ops: vec![put(9, 9, WriteKind::Rollback), erase],
        });
        assert_eq!(r.col("c").write.len(), 2);
    }

    #[test]
    fn a_misplaced_or_overwriting_rollback_is_refused() {
        let r = committed_row();
        let p = r.precondition(&put(5, 6, WriteKind::Rollback)).unwrap();
        assert!(p.contains("placed at 6"), "{p}");
        let p = r.precondition(&put(7, 7, WriteKind::Rollback)).unwrap();
        assert!(p.contains("replaces"), "{p}");
    }

    #[test]
    fn a_mutation_is_empty_only_without_ops() {
        // The tablet server skips the durable write (and its crash point)
        // for an empty mutation, and only for one.
        let mut m = RowMutation::none();
        assert!(m.is_empty());
        m.push(put(9, 9, WriteKind::Rollback));
        assert!(!m.is_empty());
    }

    #[test]
    #[should_panic(expected = "invariant violated: row mutation")]
    fn a_rollback_over_a_commit_record_trips_the_assertion() {
        let mut r = committed_row();
        r.apply(&RowMutation {
            ops: vec![put(7, 7, WriteKind::Rollback)],
        });
    }
}
