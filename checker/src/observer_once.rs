//! Rule `observer_at_most_once`: at most one observer transaction commits
//! per change of an observed cell (paper, "Notifications": concurrent runs
//! for one change conflict on the acknowledgment column).
//!
//! For each observer that is not weak and each cell of its column, the
//! committed runs of that observer on that cell, in start_ts order, must each
//! have processed something new: a committed version (put or delete) of the
//! cell after the previous run's start_ts and before its own, or for the
//! first run, before its start_ts. Weak observers may run several times for
//! one notification and are not judged here.

use crate::ctx::Ctx;
use crate::observers::{NO_OBSERVERS, Observers, Run, change, versions_line};
use crate::report::{Draft, Sink};
use crate::{FindingClass, Rule};

pub(crate) const ID: Rule = Rule::ObserverAtMostOnce;
pub(crate) const NAME: &str =
    "at most one observer transaction commits per change of an observed cell";

pub(crate) fn check(ctx: &Ctx<'_>, obs: &Observers<'_>, sink: &mut Sink) {
    if obs.decls.is_empty() {
        sink.note(NO_OBSERVERS.to_string());
        return;
    }
    let runs = &obs.committed;
    let mut i = 0;
    while i < runs.len() {
        let (decl, cell) = (runs[i].decl, runs[i].cell);
        let mut j = i + 1;
        while j < runs.len() && (runs[j].decl, runs[j].cell) == (decl, cell) {
            j += 1;
        }
        if !obs.decls[decl as usize].weak {
            judge(ctx, obs, &runs[i..j], sink);
        }
        i = j;
    }
}

/// One observer's committed runs on one cell, by start_ts.
fn judge(ctx: &Ctx<'_>, obs: &Observers<'_>, runs: &[Run], sink: &mut Sink) {
    let vs = ctx.versions(runs[0].cell);
    let first = runs[0];
    if vs.first().is_none_or(|v| v.commit_ts >= first.start_ts) {
        sink.add(FindingClass::RunWithoutChange, || {
            let cell = ctx.cell_name(first.cell);
            Draft::new(
                format!(
                    "{} ran observer {:?} on {cell} and committed, but {cell} had no committed version \
                     before its start_ts {}: there was no change for it to process",
                    ctx.tname(first.txn),
                    obs.name(first.decl),
                    first.start_ts
                ),
                vec![ctx.id(first.txn)],
                vec![
                    ctx.describe_txn(first.txn),
                    versions_line(ctx, first.cell, u64::MAX),
                ],
            )
        });
    }
    for pair in runs.windows(2) {
        let (r1, r2) = (pair[0], pair[1]);
        // The first version committed after r1 started.
        let p = vs.partition_point(|v| v.commit_ts <= r1.start_ts);
        if vs.get(p).is_some_and(|v| v.commit_ts < r2.start_ts) {
            continue;
        }
        sink.add(FindingClass::DuplicateRun, || {
            let cell = ctx.cell_name(r1.cell);
            let seen = match p.checked_sub(1).map(|k| vs[k]) {
                Some(v) => format!(
                    "the last change both could see was {}",
                    change(ctx, v.commit_ts, v.writer)
                ),
                None => format!("{cell} had no committed version before either"),
            };
            let next = match vs.get(p) {
                Some(v) => format!(
                    "; the next change was {}, after {} started",
                    change(ctx, v.commit_ts, v.writer),
                    ctx.tname(r2.txn)
                ),
                None => String::new(),
            };
            Draft::new(
                format!(
                    "observer {:?} committed twice for one change of {cell}: {} (start_ts {}) and {} \
                     (start_ts {}) both ran it, but no committed version of {cell} has a commit_ts \
                     between {} and {} ({seen}{next}), so {} processed nothing new: it should have \
                     found {}'s acknowledgment and not run the observer, or, had the two run \
                     concurrently, they should have conflicted on the acknowledgment",
                    obs.name(r1.decl),
                    ctx.tname(r1.txn),
                    r1.start_ts,
                    ctx.tname(r2.txn),
                    r2.start_ts,
                    r1.start_ts,
                    r2.start_ts,
                    ctx.tname(r2.txn),
                    ctx.tname(r1.txn)
                ),
                vec![ctx.id(r1.txn), ctx.id(r2.txn)],
                vec![
                    ctx.describe_txn(r1.txn),
                    ctx.describe_txn(r2.txn),
                    versions_line(ctx, r1.cell, r2.start_ts),
                ],
            )
        });
    }
}
