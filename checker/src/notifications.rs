//! Rule `no_lost_notification`: every change to an observed cell is followed
//! by a committed observer run that saw it, and no notify entry is left
//! after quiescence (paper, "Notifications": the notify entry is removed
//! only after the observer's transaction commits).
//!
//! For each observer that is not weak and each cell of its column with a
//! committed version (put or delete), some committed run of that observer on
//! the cell must have started after the newest such version was committed.
//! For every observer, weak or not, any entry still in `final_state.notify`
//! is a violation.

use crate::ctx::{Ctx, NONE};
use crate::observers::{NO_OBSERVERS, Observers, change, versions_line};
use crate::report::{Draft, Sink};
use crate::{FindingClass, Rule};

pub(crate) const ID: Rule = Rule::NoLostNotification;
pub(crate) const NAME: &str = "every change to an observed cell is followed by a committed observer run that saw it, and no notify entry is left";

pub(crate) fn check(ctx: &Ctx<'_>, obs: &Observers<'_>, sink: &mut Sink) {
    if obs.decls.is_empty() {
        let left = ctx.h.notify.len();
        let note = match left {
            0 => NO_OBSERVERS.to_string(),
            1 => format!("{NO_OBSERVERS} (1 notify entry ignored)"),
            n => format!("{NO_OBSERVERS} ({n} notify entries ignored)"),
        };
        sink.note(note);
        return;
    }
    unprocessed(ctx, obs, sink);
    left_over(ctx, obs, sink);
}

/// Changes no committed run of a (non-weak) observer saw.
fn unprocessed(ctx: &Ctx<'_>, obs: &Observers<'_>, sink: &mut Sink) {
    if obs.decls.iter().all(|d| d.weak) {
        return;
    }
    for cell in 0..ctx.n_cells() as u32 {
        let col = ctx.cell(cell).1;
        let Some(&last) = ctx.versions(cell).last() else {
            continue;
        };
        for &decl in obs.of_col(col) {
            if obs.decls[decl as usize].weak {
                continue;
            }
            let run = Observers::last_run(&obs.committed, decl, cell);
            if run.is_some_and(|r| r.start_ts > last.commit_ts) {
                continue;
            }
            sink.add(FindingClass::UnprocessedChange, || {
                let name = ctx.cell_name(cell);
                let observer = obs.name(decl);
                let what = if last.value.is_some() {
                    "change"
                } else {
                    "change (a delete)"
                };
                let runs = match run {
                    Some(r) => format!(
                        "the last committed run, {}, started at {}, before the change",
                        ctx.tname(r.txn),
                        r.start_ts
                    ),
                    None => format!("observer {observer:?} never committed a run on {name}"),
                };
                let mut txns = Vec::new();
                let mut details = Vec::new();
                if last.writer != NONE {
                    txns.push(ctx.id(last.writer));
                    details.push(ctx.describe_txn(last.writer));
                }
                if let Some(r) = run {
                    txns.push(ctx.id(r.txn));
                    details.push(ctx.describe_txn(r.txn));
                }
                if let Some(u) = Observers::last_run(&obs.uncommitted, decl, cell)
                    .filter(|u| u.start_ts > last.commit_ts)
                {
                    details.push(format!(
                        "a run after the change that did not commit (it does not count): {}",
                        ctx.describe_txn(u.txn)
                    ));
                }
                details.push(versions_line(ctx, cell, u64::MAX));
                Draft::new(
                    format!(
                        "the last {what} of {name} was {}, but no committed run of observer {observer:?} \
                         on {name} started after it: {runs}; the change was never processed \
                         (its notification was lost)",
                        change(ctx, last.commit_ts, last.writer)
                    ),
                    txns,
                    details,
                )
            });
        }
    }
}

/// Notify entries left in the store.
fn left_over(ctx: &Ctx<'_>, obs: &Observers<'_>, sink: &mut Sink) {
    for &cell in &ctx.notify_cells {
        sink.add(FindingClass::NotifyLeft, || {
            let name = ctx.cell_name(cell);
            let col = ctx.cell(cell).1;
            let observers: Vec<String> = obs
                .of_col(col)
                .iter()
                .map(|&d| {
                    let weak = if obs.decls[d as usize].weak {
                        " (weak)"
                    } else {
                        ""
                    };
                    format!("{:?}{weak}", obs.name(d))
                })
                .collect();
            let who = if observers.is_empty() {
                format!(
                    "no declared observer observes column {col:?}, so nothing would ever clear it"
                )
            } else {
                format!(
                    "observed by {}; the entry is removed only once an observer transaction \
                     for it has committed, and nothing removed it",
                    observers.join(", ")
                )
            };
            let mut txns = Vec::new();
            let mut details = Vec::new();
            let mut context = Vec::new();
            if let Some(&last) = ctx.versions(cell).last() {
                context.push(format!(
                    "its last change was {}",
                    change(ctx, last.commit_ts, last.writer)
                ));
                if last.writer != NONE {
                    txns.push(ctx.id(last.writer));
                    details.push(ctx.describe_txn(last.writer));
                }
            } else {
                context.push(format!("{name} has no committed version"));
            }
            match obs.last_run_on(cell) {
                Some(r) => {
                    context.push(format!(
                        "the last committed observer run on it was {} (observer {:?}, start_ts {})",
                        ctx.tname(r.txn),
                        obs.name(r.decl),
                        r.start_ts
                    ));
                    txns.push(ctx.id(r.txn));
                    details.push(ctx.describe_txn(r.txn));
                }
                None => context.push("no observer run on it committed".to_string()),
            }
            Draft::new(
                format!(
                    "a notify entry for {name} is still in the store after quiescence ({who}); {}",
                    context.join(", ")
                ),
                txns,
                details,
            )
        });
    }
}
