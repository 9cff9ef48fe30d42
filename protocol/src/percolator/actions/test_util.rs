//! Trace-test helpers in the style of TiKV's `must_prewrite`/`must_commit`:
//! an in-memory store of rows, every cell in column `c`.

#![allow(clippy::result_large_err)]

use super::*;
use crate::percolator::row::Column;
use crate::percolator::types::{CellKey, Lock, MutationKind, SessionId};
use std::collections::BTreeMap;

pub const COL: &str = "c";

pub fn ts(n: u64) -> Ts {
    Ts(n)
}

pub fn cell(row: &str) -> CellKey {
    CellKey::new(row, COL)
}

/// Rows by key; every step goes through [`execute`] like a tablet server's.
#[derive(Default)]
pub struct MemStore {
    pub rows: BTreeMap<String, Row>,
    /// Mechanisms switched off for every step.
    pub ablations: crate::percolator::ablation::Ablations,
}

impl MemStore {
    /// A store whose steps run with `a` switched off.
    pub fn ablated(a: crate::percolator::ablation::Ablation) -> Self {
        MemStore {
            ablations: crate::percolator::ablation::Ablations::only(a),
            ..MemStore::default()
        }
    }

    pub fn step(&mut self, row: &str, req: RowRequest) -> RowReply {
        let r = self.rows.entry(row.to_string()).or_default();
        let (reply, m) = execute(r, row, &req, self.ablations);
        r.apply(&m);
        reply
    }

    pub fn column(&self, row: &str) -> &Column {
        self.rows
            .get(row)
            .map(|r| r.col(COL))
            .unwrap_or(Column::empty())
    }

    pub fn get(&mut self, row: &str, start: u64) -> GetResult {
        match self.step(
            row,
            RowRequest::Get {
                col: COL.into(),
                start_ts: ts(start),
            },
        ) {
            RowReply::Get(g) => g,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    pub fn must_get(&mut self, row: &str, start: u64, value: &str) {
        assert_eq!(
            self.get(row, start),
            GetResult::Value(Some(value.to_string())),
            "get {row}@{start}"
        );
    }

    pub fn must_get_none(&self, row: &str, start: u64) {
        let r = self.rows.get(row).cloned().unwrap_or_default();
        assert_eq!(
            get::get(&r, row, COL, ts(start), self.ablations),
            GetResult::Value(None),
            "get {row}@{start}"
        );
    }

    fn prewrite(
        &mut self,
        row: &str,
        value: Option<&str>,
        primary: &str,
        start: u64,
    ) -> Result<(), PrewriteError> {
        let req = RowRequest::Prewrite(Prewrite {
            col: COL.into(),
            start_ts: ts(start),
            value: value.map(str::to_string),
            lock: Lock {
                primary: cell(primary),
                kind: MutationKind::Put,
                wall_ms: 0,
                owner: SessionId(1),
            },
            notify: false,
        });
        match self.step(row, req) {
            RowReply::Prewrite(r) => r,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    pub fn prewrite_put(
        &mut self,
        row: &str,
        value: &str,
        primary: &str,
        start: u64,
    ) -> Result<(), PrewriteError> {
        self.prewrite(row, Some(value), primary, start)
    }

    pub fn must_prewrite_put(&mut self, row: &str, value: &str, primary: &str, start: u64) {
        self.prewrite_put(row, value, primary, start)
            .expect("prewrite");
    }

    pub fn must_prewrite_observed(&mut self, row: &str, value: &str, start: u64) {
        let req = RowRequest::Prewrite(Prewrite {
            col: COL.into(),
            start_ts: ts(start),
            value: Some(value.to_string()),
            lock: Lock {
                primary: cell(row),
                kind: MutationKind::Put,
                wall_ms: 0,
                owner: SessionId(1),
            },
            notify: true,
        });
        assert_eq!(self.step(row, req), RowReply::Prewrite(Ok(())));
    }

    pub fn must_prewrite_delete(&mut self, row: &str, primary: &str, start: u64) {
        self.prewrite(row, None, primary, start)
            .expect("prewrite delete");
    }

    pub fn commit(&mut self, row: &str, start: u64, commit: u64) -> Result<Ts, CommitError> {
        let t = TxnTs {
            start_ts: ts(start),
            commit_ts: ts(commit),
        };
        match self.step(
            row,
            RowRequest::Commit {
                col: COL.into(),
                ts: t,
            },
        ) {
            RowReply::Commit(r) => r,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    pub fn must_commit(&mut self, row: &str, start: u64, commit: u64) -> (u64,) {
        (self.commit(row, start, commit).expect("commit").0,)
    }

    /// Prewrite and commit a single-cell transaction.
    pub fn must_put(&mut self, row: &str, value: &str, start: u64, commit: u64) {
        self.must_prewrite_put(row, value, row, start);
        self.must_commit(row, start, commit);
    }

    pub fn cleanup(&mut self, row: &str, start: u64) -> (TxnStatus, CleanupAction) {
        self.cleanup_if(row, start, None)
    }

    /// Cleanup conditioned on the primary lock's staleness (a reader that
    /// suspects the owner only by wall time).
    pub fn cleanup_if(
        &mut self,
        row: &str,
        start: u64,
        stale: Option<Staleness>,
    ) -> (TxnStatus, CleanupAction) {
        match self.step(
            row,
            RowRequest::Cleanup {
                col: COL.into(),
                start_ts: ts(start),
                stale,
            },
        ) {
            RowReply::Cleanup(s, a) => (s, a),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    pub fn must_cleanup_rolled_back(&mut self, row: &str, start: u64) {
        assert_eq!(self.cleanup(row, start).0, TxnStatus::RolledBack);
    }

    pub fn resolve(
        &mut self,
        row: &str,
        start: u64,
        resolution: Resolution,
    ) -> Result<ResolveAction, ResolveError> {
        match self.step(
            row,
            RowRequest::Resolve {
                col: COL.into(),
                start_ts: ts(start),
                resolution,
            },
        ) {
            RowReply::Resolve(r) => r,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    pub fn touch(&mut self, row: &str, start: u64, wall_ms: u64) -> bool {
        match self.step(
            row,
            RowRequest::Touch {
                col: COL.into(),
                start_ts: ts(start),
                wall_ms,
            },
        ) {
            RowReply::Touch(b) => b,
            other => panic!("unexpected reply {other:?}"),
        }
    }
}
