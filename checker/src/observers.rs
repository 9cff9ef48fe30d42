//! The index the two observer rules share: the declared observers by name,
//! and every marked observer run resolved to its observer and cell, sorted
//! so that one (observer, cell) pair's runs are one slice in start_ts order.

use crate::ctx::{Ctx, NONE};
use crate::fx::FxMap;
use crate::history::ObserverDecl;

/// The note both rules carry when the history declares no observer.
pub(crate) const NO_OBSERVERS: &str = "no observers declared: nothing to check";

/// One transaction marked as an observer run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Run {
    /// Index into `history.observers`.
    pub decl: u32,
    pub cell: u32,
    pub start_ts: u64,
    pub txn: u32,
}

pub(crate) struct Observers<'a> {
    pub decls: &'a [ObserverDecl],
    /// Committed runs, by (observer, cell, start_ts, txn).
    pub committed: Vec<Run>,
    /// Runs that did not commit (aborted, or unknown and not in the store),
    /// by (observer, cell, start_ts, txn).
    pub uncommitted: Vec<Run>,
    /// Committed runs of any observer, by (cell, start_ts, txn).
    by_cell: Vec<Run>,
    /// Observed column -> the observers of it, in declaration order.
    by_col: FxMap<&'a str, Vec<u32>>,
}

impl<'a> Observers<'a> {
    /// Indexes the runs. A run naming an undeclared observer, or a column
    /// other than its observer's, is left out (`parse` rejects both).
    pub(crate) fn build(ctx: &Ctx<'a>) -> Observers<'a> {
        let decls = ctx.h.observers.as_slice();
        let mut by_name: FxMap<&str, u32> = FxMap::default();
        let mut by_col: FxMap<&'a str, Vec<u32>> = FxMap::default();
        for (i, d) in decls.iter().enumerate() {
            if by_name.contains_key(d.name.as_str()) {
                continue; // a duplicate name: the first declaration counts
            }
            by_name.insert(d.name.as_str(), i as u32);
            by_col.entry(d.col.as_str()).or_default().push(i as u32);
        }
        let mut committed = Vec::new();
        let mut uncommitted = Vec::new();
        for &(t, cell) in &ctx.runs {
            let Some(mark) = ctx.h.runs.get(ctx.txn(t).observer as usize) else {
                continue;
            };
            let Some(&decl) = by_name.get(ctx.h.strs.get(mark.name)) else {
                continue;
            };
            if decls[decl as usize].col != ctx.h.cell_name(mark.cell).1 {
                continue;
            }
            let run = Run {
                decl,
                cell,
                start_ts: ctx.txn(t).start_ts,
                txn: t,
            };
            if ctx.committed[t as usize] {
                committed.push(run);
            } else {
                uncommitted.push(run);
            }
        }
        committed.sort_unstable();
        uncommitted.sort_unstable();
        let mut by_cell = committed.clone();
        by_cell.sort_unstable_by_key(|r| (r.cell, r.start_ts, r.txn));
        Observers {
            decls,
            committed,
            uncommitted,
            by_cell,
            by_col,
        }
    }

    pub(crate) fn name(&self, decl: u32) -> &'a str {
        self.decls
            .get(decl as usize)
            .map_or("?", |d| d.name.as_str())
    }

    /// The observers of a column, in declaration order.
    pub(crate) fn of_col(&self, col: &str) -> &[u32] {
        self.by_col.get(col).map_or(&[], Vec::as_slice)
    }

    /// The last run (by start_ts) of `decl` on `cell` in `runs`.
    pub(crate) fn last_run(runs: &[Run], decl: u32, cell: u32) -> Option<Run> {
        let p = runs.partition_point(|r| (r.decl, r.cell) <= (decl, cell));
        p.checked_sub(1)
            .map(|k| runs[k])
            .filter(|r| (r.decl, r.cell) == (decl, cell))
    }

    /// The last committed run of any observer on `cell`.
    pub(crate) fn last_run_on(&self, cell: u32) -> Option<Run> {
        let p = self.by_cell.partition_point(|r| r.cell <= cell);
        p.checked_sub(1)
            .map(|k| self.by_cell[k])
            .filter(|r| r.cell == cell)
    }
}

/// "committed at 12 by T3" for a committed version.
pub(crate) fn change(ctx: &Ctx<'_>, commit_ts: u64, writer: u32) -> String {
    if writer == NONE {
        format!("committed at {commit_ts} by no transaction in the history")
    } else {
        format!("committed at {commit_ts} by {}", ctx.tname(writer))
    }
}

/// One line listing the committed versions of `cell` with commit_ts below
/// `below` (the last few of them); `u64::MAX` means all of them.
pub(crate) fn versions_line(ctx: &Ctx<'_>, cell: u32, below: u64) -> String {
    const SHOWN: usize = 6;
    let vs = ctx.versions(cell);
    let end = vs.partition_point(|v| v.commit_ts < below);
    let name = ctx.cell_name(cell);
    let bound = if below == u64::MAX {
        String::new()
    } else {
        format!(" before {below}")
    };
    if end == 0 {
        return format!("{name} has no committed version{bound}");
    }
    let from = end.saturating_sub(SHOWN);
    let parts: Vec<String> = vs[from..end]
        .iter()
        .map(|v| {
            let what = if v.value.is_some() {
                format!("put {}", ctx.fmt(v.value))
            } else {
                "delete".to_string()
            };
            format!("{what} {}", change(ctx, v.commit_ts, v.writer))
        })
        .collect();
    let earlier = if from > 0 {
        format!(" ({from} earlier not shown)")
    } else {
        String::new()
    };
    format!(
        "committed versions of {name}{bound}{earlier}: {}",
        parts.join(", ")
    )
}
