//! Percolator's durable store (our GFS/Chubby): table rows, the oracle's
//! persisted upper end, tablet ownership and session numbers, which
//! survive every crash; tablet boundaries; the healed phase's sweep; and
//! the dump of the store into the history.

use percsim_checker as history;
use percsim_protocol::percolator::row::{Row, RowMutation, RowOp};
use percsim_protocol::percolator::{CellKey, Ts, Write, WriteKind};
use std::collections::BTreeMap;
use std::ops::Range;

/// Tablet boundaries: tablet `t` serves rows in `[splits[t-1], splits[t])`.
pub(crate) struct Tablets {
    splits: Vec<String>,
}

impl Tablets {
    pub(crate) fn new(mut splits: Vec<String>) -> Self {
        splits.sort();
        splits.dedup();
        splits.retain(|s| !s.is_empty());
        Tablets { splits }
    }

    pub(crate) fn count(&self) -> usize {
        self.splits.len() + 1
    }

    pub(crate) fn of(&self, row: &str) -> usize {
        self.splits.partition_point(|s| s.as_str() <= row)
    }

    /// The tablets that hold rows of `[start, end)`.
    pub(crate) fn covering(&self, start: &str, end: &str) -> Range<usize> {
        let first = self.of(start);
        let last = self.splits.partition_point(|s| s.as_str() < end);
        first..(last + 1).max(first + 1)
    }

    /// The intersection of `[start, end)` with tablet `t`.
    pub(crate) fn clip(&self, t: usize, start: &str, end: &str) -> (String, String) {
        let lo = if t == 0 {
            ""
        } else {
            self.splits[t - 1].as_str()
        };
        let hi = self.splits.get(t).map(String::as_str).unwrap_or(end);
        (start.max(lo).to_string(), end.min(hi).to_string())
    }
}

/// What survives any crash: table rows (GFS), the oracle's persisted upper
/// end, and tablet ownership (Chubby).
pub(crate) struct Durable {
    pub rows: BTreeMap<String, Row>,
    pub oracle_max: u64,
    pub tablet_owner: Vec<Option<usize>>,
    pub next_session: u64,
    /// Raw Bigtable cells written outside any transaction (the Figure 8
    /// baseline): (row, column) -> value.
    pub raw: BTreeMap<(String, String), String>,
}

impl Durable {
    /// An empty store whose oracle resumes above `oracle_max`, with
    /// `tablets` tablets spread round-robin over `servers` servers.
    pub(crate) fn new(oracle_max: u64, tablets: usize, servers: usize) -> Self {
        Durable {
            rows: BTreeMap::new(),
            oracle_max,
            tablet_owner: (0..tablets).map(|t| Some(t % servers)).collect(),
            next_session: 0,
            raw: BTreeMap::new(),
        }
    }

    /// Write the initial data as one committed transaction.
    pub(crate) fn load(&mut self, initial: &[(CellKey, String)], start_ts: u64, commit_ts: u64) {
        for (cell, value) in initial {
            let mut m = RowMutation::default();
            m.ops.push(RowOp::PutData {
                col: cell.col.clone(),
                ts: Ts(start_ts),
                value: value.clone(),
            });
            m.ops.push(RowOp::PutWrite {
                col: cell.col.clone(),
                commit_ts: Ts(commit_ts),
                write: Write {
                    start_ts: Ts(start_ts),
                    kind: WriteKind::Put,
                },
            });
            self.rows.entry(cell.row.clone()).or_default().apply(&m);
        }
    }

    /// Locks left in the store.
    pub(crate) fn lock_count(&self) -> u64 {
        self.rows
            .values()
            .flat_map(|r| r.cols.values())
            .map(|c| c.lock.len() as u64)
            .sum()
    }

    /// Notify entries left in the store.
    pub(crate) fn notify_count(&self) -> u64 {
        self.rows.values().map(|r| r.notify.len() as u64).sum()
    }

    /// Every write record, lock and notify entry in the store.
    pub(crate) fn dump(&self) -> history::FinalState {
        let mut state = history::FinalState::default();
        for (key, row) in &self.rows {
            for col in row.notify.keys() {
                state.notify.push(history::CellRef {
                    row: key.clone(),
                    col: col.clone(),
                });
            }
            for (col, c) in &row.cols {
                let versions: Vec<history::Version> = c
                    .write
                    .iter()
                    .map(|(commit_ts, w)| version(c, *commit_ts, w))
                    .collect();
                if !versions.is_empty() {
                    state.cells.push(history::CellState {
                        row: key.clone(),
                        col: col.clone(),
                        versions,
                    });
                }
                for (ts, lock) in &c.lock {
                    state.locks.push(history::LockState {
                        row: key.clone(),
                        col: col.clone(),
                        start_ts: ts.0,
                        primary: history::CellRef {
                            row: lock.primary.row.clone(),
                            col: lock.primary.col.clone(),
                        },
                    });
                }
            }
        }
        state
    }
}

/// One write record of a cell as the history has it.
fn version(
    c: &percsim_protocol::percolator::row::Column,
    commit_ts: Ts,
    w: &Write,
) -> history::Version {
    let value = match w.kind {
        WriteKind::Put => c.data.get(&w.start_ts).cloned(),
        _ => None,
    };
    history::Version {
        start_ts: w.start_ts.0,
        commit_ts: commit_ts.0,
        kind: match w.kind {
            WriteKind::Put => history::VersionKind::Put,
            WriteKind::Delete => history::VersionKind::Delete,
            WriteKind::Rollback => history::VersionKind::Rollback,
        },
        // A put record whose data is gone (a store bug, under some
        // ablations) says so, so the file still parses.
        data_missing: w.kind == WriteKind::Put && value.is_none(),
        value,
    }
}

#[cfg(test)]
mod tests {
    use super::Tablets;

    #[test]
    fn tablets_partition_rows() {
        let t = Tablets::new(vec!["m".into(), "f".into()]);
        assert_eq!(t.count(), 3);
        assert_eq!((t.of("a"), t.of("f"), t.of("g"), t.of("z")), (0, 1, 1, 2));
        assert_eq!(t.covering("a", "g"), 0..2);
        assert_eq!(t.covering("g", "h"), 1..2);
        assert_eq!(t.covering("", "\u{10ffff}"), 0..3);
        assert_eq!(t.clip(1, "a", "z"), ("f".to_string(), "m".to_string()));
    }
}
