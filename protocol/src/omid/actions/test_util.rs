//! Trace-test helpers in the style of `must_commit`: an in-memory model of
//! one TSO, one column of data cells with their shadow cells, and the
//! commit table, every step going through the module's functions.

use super::begin::{self, TsRange};
use super::commit_table::put_if_absent;
use super::conflict::{self, AbortReason, ConflictMap};
use super::read::{self, Resolution};
use crate::omid::ids::OmidAblations;
use crate::omid::types::{CtEntry, DataVersion};
use std::collections::BTreeMap;

/// The TSO, the store and the commit table of one trace.
pub struct Model {
    pub ts: TsRange,
    pub map: ConflictMap,
    pub cells: BTreeMap<String, Vec<DataVersion>>,
    pub ct: BTreeMap<u64, CtEntry>,
    pub ablations: OmidAblations,
    /// Commit-table lookups readers made.
    pub ct_lookups: u64,
}

impl Model {
    /// A fresh model whose conflict map holds `capacity` keys.
    pub fn new(capacity: usize) -> Self {
        Model {
            ts: begin::recover(0),
            map: ConflictMap::new(capacity, 0),
            cells: BTreeMap::new(),
            ct: BTreeMap::new(),
            ablations: OmidAblations::default(),
            ct_lookups: 0,
        }
    }

    pub fn must_begin(&mut self) -> u64 {
        begin::take(&mut self.ts, 100).ts
    }

    pub fn must_write(&mut self, start: u64, row: &str, value: &str) {
        self.cells.entry(row.into()).or_default().push(DataVersion {
            start_ts: start,
            value: Some(value.into()),
            shadow_ts: None,
        });
    }

    fn keys(rows: &[&str]) -> Vec<String> {
        rows.iter().map(|r| r.to_string()).collect()
    }

    /// The TSO's decision: check, take a commit timestamp, record.
    pub fn decide(&mut self, start: u64, rows: &[&str]) -> Result<u64, AbortReason> {
        let keys = Self::keys(rows);
        conflict::check(&self.map, start, &keys, &self.ablations)?;
        let commit_ts = self.must_begin();
        conflict::record(&mut self.map, &keys, commit_ts);
        Ok(commit_ts)
    }

    /// The TSO's commit: decide, then persist in the commit table.
    pub fn commit(&mut self, start: u64, rows: &[&str]) -> Result<u64, AbortReason> {
        let commit_ts = self.decide(start, rows)?;
        self.persist(start, commit_ts)
    }

    /// Write the decision `commit_ts` of `start` to the commit table.
    pub fn persist(&mut self, start: u64, commit_ts: u64) -> Result<u64, AbortReason> {
        let mut slot = self.ct.get(&start).copied();
        let entry = put_if_absent(&mut slot, CtEntry::Committed { commit_ts });
        self.ct.insert(start, entry);
        match entry {
            CtEntry::Committed { commit_ts } => Ok(commit_ts),
            CtEntry::Invalid => Err(AbortReason::Invalidated),
        }
    }

    pub fn must_commit(&mut self, start: u64, rows: &[&str]) -> u64 {
        self.commit(start, rows).expect("commit")
    }

    pub fn must_abort_conflict(&mut self, start: u64, rows: &[&str]) {
        let e = self.commit(start, rows).unwrap_err();
        assert!(matches!(e, AbortReason::Conflict { .. }), "{e:?}");
    }

    pub fn must_abort_below_watermark(&mut self, start: u64, rows: &[&str]) {
        let e = self.commit(start, rows).unwrap_err();
        assert!(matches!(e, AbortReason::BelowLowWatermark { .. }), "{e:?}");
    }

    pub fn must_fail_commit_table(&mut self, start: u64, rows: &[&str]) {
        assert_eq!(self.commit(start, rows), Err(AbortReason::Invalidated));
    }

    /// Write the shadow cells of `start`'s writes, then delete its entry.
    pub fn must_complete(&mut self, start: u64, rows: &[&str]) {
        let Some(CtEntry::Committed { commit_ts }) = self.ct.get(&start).copied() else {
            panic!("transaction {start} is not committed");
        };
        for row in rows {
            for v in self.cells.entry(row.to_string()).or_default() {
                if v.start_ts == start {
                    v.shadow_ts = Some(commit_ts);
                }
            }
        }
        self.ct.remove(&start);
    }

    /// The shadow cell of `row`'s version written at `start`, as stored now.
    fn shadow_of(&self, row: &str, start: u64) -> Option<u64> {
        self.cells
            .get(row)?
            .iter()
            .find(|v| v.start_ts == start)?
            .shadow_ts
    }

    /// Read `row` at snapshot `start` as a reader does.
    pub fn read(&mut self, start: u64, row: &str) -> Option<String> {
        let mut versions = self.cells.get(row).cloned().unwrap_or_default();
        versions.sort_by_key(|v| std::cmp::Reverse(v.start_ts));
        for v in versions {
            let mut r = read::from_shadow(&v, start, &self.ablations);
            if r == Resolution::AskCommitTable {
                self.ct_lookups += 1;
                let entry = self.ct.get(&v.start_ts).copied();
                r = read::from_commit_table(entry, start, &self.ablations);
            }
            if r == Resolution::Invalidate {
                let mut slot = self.ct.get(&v.start_ts).copied();
                let entry = put_if_absent(&mut slot, CtEntry::Invalid);
                self.ct.insert(v.start_ts, entry);
                r = read::after_invalidation(entry, self.shadow_of(row, v.start_ts), start);
            }
            if r == Resolution::RereadShadow {
                let shadow = self.shadow_of(row, v.start_ts);
                r = read::after_invalidation(CtEntry::Invalid, shadow, start);
            }
            if let Resolution::Visible { .. } = r {
                return v.value;
            }
        }
        None
    }

    pub fn must_read(&mut self, start: u64, row: &str, want: Option<&str>) {
        assert_eq!(self.read(start, row).as_deref(), want, "read {row}@{start}");
    }
}
