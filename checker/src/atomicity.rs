//! Rule `atomic_commits`: each transaction's writes are committed all with one
//! commit_ts or not at all, as its client was told; the store holds only data
//! transactions wrote, and the data of every put record it holds; no lock is
//! left after quiescence.

use crate::ctx::{Ctx, NONE, StoreRec, Val};
use crate::history::{Outcome, VersionKind};
use crate::report::{Draft, Sink};
use crate::{FindingClass, Rule};

pub(crate) const ID: Rule = Rule::AtomicCommits;
pub(crate) const NAME: &str = "each transaction's writes are all committed with one commit_ts or none are, as its client was told, the store holds only what transactions wrote, and no lock is left";

fn details(ctx: &Ctx<'_>, t: u32) -> Vec<String> {
    let mut d = vec![ctx.describe_txn(t)];
    d.extend(ctx.describe_store(t));
    d
}

fn cells_list(ctx: &Ctx<'_>, cells: &[u32]) -> String {
    const SHOWN: usize = 8;
    let mut names: Vec<String> = cells
        .iter()
        .take(SHOWN)
        .map(|&c| ctx.cell_name(c))
        .collect();
    if cells.len() > SHOWN {
        names.push(format!("... and {} more", cells.len() - SHOWN));
    }
    names.join(", ")
}

/// Lists one transaction's judgement fills, kept from one to the next
/// (a million transactions would otherwise be millions of allocations).
#[derive(Default)]
struct Scratch {
    committed_cells: Vec<u32>,
    stamps: Vec<u64>,
    missing: Vec<u32>,
}

pub(crate) fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    let mut scratch = Scratch::default();
    for t in 0..ctx.n() as u32 {
        judge_txn(ctx, sink, t, &mut scratch);
    }
    judge_orphans(ctx, sink);
    judge_locks(ctx, sink);
}

/// The store's records of T`t`, cell by cell, then its timestamps and outcome.
fn judge_txn(ctx: &Ctx<'_>, sink: &mut Sink, t: u32, scratch: &mut Scratch) {
    let txn = ctx.txn(t);
    let recs = ctx.recs_of(t);
    let Scratch {
        committed_cells,
        stamps,
        missing,
    } = scratch;
    committed_cells.clear();
    stamps.clear();
    // Per cell of the store: what was committed, against what was written.
    let mut i = 0;
    while i < recs.len() {
        let cell = recs[i].cell;
        let mut j = i;
        while j < recs.len() && recs[j].cell == cell {
            j += 1;
        }
        let group = &recs[i..j];
        let commits = || group.iter().filter(|r| r.is_commit());
        let rollback = group.iter().any(|r| r.kind == VersionKind::Rollback);
        if commits().next().is_some() {
            committed_cells.push(cell);
            if rollback {
                sink.add(FindingClass::CommitAndRollback, || {
                    Draft::new(
                        format!(
                            "{} has both a commit record and a rollback record for T{} (start_ts {}): \
                             the transaction was both committed and rolled back there",
                            ctx.cell_name(cell),
                            txn.id,
                            txn.start_ts
                        ),
                        vec![txn.id],
                        details(ctx, t),
                    )
                });
            }
        }
        for r in commits() {
            stamps.push(r.commit_ts);
            judge_commit_rec(ctx, sink, t, cell, r);
        }
        i = j;
    }

    judge_stamps(ctx, sink, t, stamps);
    judge_outcome(ctx, sink, t, committed_cells, missing);
}

/// One commit record `r` of T`t` on `cell`, against what T`t` wrote there.
fn judge_commit_rec(ctx: &Ctx<'_>, sink: &mut Sink, t: u32, cell: u32, r: &StoreRec) {
    let txn = ctx.txn(t);
    let written = ctx.final_write(t, cell);
    let stored = if r.kind == VersionKind::Put {
        r.value
    } else {
        Val::NULL
    };
    match written {
        None => sink.add(FindingClass::UnwrittenData, || {
            Draft::new(
                format!(
                    "the store holds {} with T{}'s start_ts {}, but T{} never wrote {}: nobody wrote this data",
                    ctx.describe_rec(r),
                    txn.id,
                    txn.start_ts,
                    txn.id,
                    ctx.cell_name(cell)
                ),
                vec![txn.id],
                details(ctx, t),
            )
        }),
        Some(w) if r.kind == VersionKind::Put && r.value.is_none() => {
            sink.add(FindingClass::MissingData, || {
                Draft::new(
                    format!(
                        "the store holds a put record of T{} (start_ts {}) for {} at commit_ts {}, \
                         but no data at start_ts {}: T{}'s committed write of {} is lost",
                        txn.id,
                        txn.start_ts,
                        ctx.cell_name(cell),
                        r.commit_ts,
                        txn.start_ts,
                        txn.id,
                        if w.value.is_some() {
                            ctx.fmt(w.value)
                        } else {
                            "a delete".to_string()
                        }
                    ),
                    vec![txn.id],
                    details(ctx, t),
                )
            })
        }
        Some(w) if w.value != stored => sink.add(FindingClass::ValueMismatch, || {
            let what = |v: Val| {
                if v.is_some() {
                    ctx.fmt(v)
                } else {
                    "a delete".to_string()
                }
            };
            Draft::new(
                format!(
                    "the store holds {} for T{} at commit_ts {}, but T{}'s last write to it was {}",
                    ctx.cell_name(cell),
                    txn.id,
                    r.commit_ts,
                    txn.id,
                    what(w.value)
                ) + &format!(", not {}", what(stored)),
                vec![txn.id],
                details(ctx, t),
            )
        }),
        Some(_) => {}
    }
}

/// T`t`'s writes committed with one commit_ts, the one its client has.
fn judge_stamps(ctx: &Ctx<'_>, sink: &mut Sink, t: u32, stamps: &mut Vec<u64>) {
    let txn = ctx.txn(t);
    stamps.sort_unstable();
    stamps.dedup();
    if stamps.len() > 1 {
        sink.add(FindingClass::MultipleCommitTs, || {
            Draft::new(
                format!(
                    "T{}'s writes were committed with {} different commit timestamps ({}): \
                     a transaction commits everything with one commit_ts",
                    txn.id,
                    stamps.len(),
                    stamps
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                vec![txn.id],
                details(ctx, t),
            )
        });
    }
    if txn.outcome != Outcome::Aborted
        && let Some(c) = txn.commit_ts()
        && let Some(&other) = stamps.iter().find(|&&s| s != c)
    {
        sink.add(FindingClass::CommitTsMismatch, || {
            Draft::new(
                format!(
                    "T{}'s client has commit_ts {c}, but the store committed its writes at {other}",
                    txn.id
                ),
                vec![txn.id],
                details(ctx, t),
            )
        });
    }
}

/// T`t`'s cells committed in the store, against its outcome.
fn judge_outcome(
    ctx: &Ctx<'_>,
    sink: &mut Sink,
    t: u32,
    committed_cells: &[u32],
    missing: &mut Vec<u32>,
) {
    let txn = ctx.txn(t);
    missing.clear();
    missing.extend(
        ctx.final_writes(t)
            .iter()
            .map(|w| w.cell)
            .filter(|c| committed_cells.binary_search(c).is_err()),
    );
    let missing = &*missing;
    let n_written = ctx.final_writes(t).len();
    match txn.outcome {
        Outcome::Committed if !missing.is_empty() => {
            let class = if committed_cells.is_empty() {
                FindingClass::CommittedNotInStore
            } else {
                FindingClass::PartialCommit
            };
            sink.add(class, || {
                Draft::new(
                    format!(
                        "T{}'s client was told it committed (commit_ts {}), but the store has no commit record \
                         for {} of its {} written cells: {}",
                        txn.id,
                        txn.commit_ts().map_or("null".to_string(), |c| c.to_string()),
                        missing.len(),
                        n_written,
                        cells_list(ctx, missing)
                    ),
                    vec![txn.id],
                    details(ctx, t),
                )
            });
        }
        Outcome::Aborted if !committed_cells.is_empty() => {
            sink.add(FindingClass::AbortedButCommitted, || {
                Draft::new(
                    format!(
                        "T{}'s client was told it aborted, but the store committed its writes to {}",
                        txn.id,
                        cells_list(ctx, committed_cells)
                    ),
                    vec![txn.id],
                    details(ctx, t),
                )
            });
        }
        Outcome::Unknown if !committed_cells.is_empty() && !missing.is_empty() => {
            sink.add(FindingClass::PartialCommit, || {
                Draft::new(
                    format!(
                        "T{} (outcome unknown to its client) is only partly committed: the store committed {} \
                         but has no commit record for {}",
                        txn.id,
                        cells_list(ctx, committed_cells),
                        cells_list(ctx, missing)
                    ),
                    vec![txn.id],
                    details(ctx, t),
                )
            });
        }
        _ => {}
    }
}

/// Commit records of no transaction in the history.
fn judge_orphans(ctx: &Ctx<'_>, sink: &mut Sink) {
    for (start_ts, r) in ctx.orphan_recs() {
        if r.is_commit() {
            sink.add(FindingClass::UnwrittenData, || {
                Draft::new(
                    format!(
                        "the store holds {} with start_ts {}, but no transaction in the history has that start_ts: \
                         nobody wrote this data",
                        ctx.describe_rec(r),
                        start_ts
                    ),
                    vec![],
                    vec![],
                )
            });
        }
    }
}

/// Locks left in the final state.
fn judge_locks(ctx: &Ctx<'_>, sink: &mut Sink) {
    for (lock, &(cell, primary)) in ctx.h.locks.iter().zip(&ctx.lock_cells) {
        let t = ctx.by_start(lock.start_ts);
        sink.add(FindingClass::LockLeft, || {
            let (txns, details, whose) = if t == NONE {
                (
                    vec![],
                    vec![],
                    "no transaction in the history has that start_ts".to_string(),
                )
            } else {
                let x = ctx.txn(t);
                let outcome = match x.outcome {
                    Outcome::Committed => "committed",
                    Outcome::Aborted => "aborted",
                    Outcome::Unknown => "unknown",
                };
                (
                    vec![x.id],
                    details(ctx, t),
                    format!("it is T{}'s, whose client reported {outcome}", x.id),
                )
            };
            Draft::new(
                format!(
                    "a lock on {} with start_ts {} (primary {}) is still in the store after quiescence; {whose}: \
                     the transaction was never resolved",
                    ctx.cell_name(cell),
                    lock.start_ts,
                    ctx.cell_name(primary)
                ),
                txns,
                details,
            )
        });
    }
}

#[cfg(test)]
mod tests {
    /// A commit record whose start_ts is no transaction's is unwritten
    /// data, named with that start_ts (which the record does not keep: the
    /// index does, beside it); a rollback record there is not.
    #[test]
    fn orphan_commit_records_are_named_with_their_start_ts() {
        let json = r#"{"format": "percsim-history/1",
            "transactions": [{"id": 1, "client": 1, "start_ts": 5, "commit_ts": 6,
                "invoke_ns": 0, "complete_ns": 1, "outcome": "committed",
                "ops": [{"f": "write", "row": "a", "col": "c", "value": "v1"}]}],
            "final_state": {"cells": [{"row": "a", "col": "c", "versions": [
                {"start_ts": 5, "commit_ts": 6, "kind": "put", "value": "v1"},
                {"start_ts": 99, "commit_ts": 100, "kind": "put", "value": "x"},
                {"start_ts": 97, "commit_ts": 97, "kind": "rollback", "value": null}]}]}}"#;
        let report = crate::check(&crate::parse(json).expect("valid"));
        let rule = report
            .rules
            .iter()
            .find(|r| r.id == "atomic_commits")
            .expect("rule");
        assert_eq!(rule.total, 1, "{:?}", rule.violations);
        assert_eq!(rule.violations[0].class, "unwritten_data");
        assert!(
            rule.violations[0]
                .summary
                .contains("with start_ts 99, but no transaction"),
            "{}",
            rule.violations[0].summary
        );
    }
}
