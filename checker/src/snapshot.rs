//! Rule `snapshot_reads`: every read returns the newest version committed
//! before its start_ts.

use crate::compact::OpKind;
use crate::ctx::{Ctx, Cv, NONE, Val, fmt_value};
use crate::fx::FxMap;
use crate::report::{Draft, Sink};
use crate::{FindingClass, Rule};

/// (cell, value) -> (earliest commit_ts holding it, its writer).
type ValueIndex = FxMap<(u32, Val), (u64, u32)>;

pub(crate) const ID: Rule = Rule::SnapshotReads;
pub(crate) const NAME: &str = "every read returns the newest version committed before its start_ts (null if none, or if it is a delete)";

pub(crate) fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    // The transaction's own writes, by (cell, op index), for read-your-writes.
    let mut own: Vec<(u32, u32, Val)> = Vec::new();
    // (cell, value) -> earliest committed version holding it; built on the first violation.
    let mut by_value: Option<ValueIndex> = None;
    let mut touched = 0u64;
    for t in 0..ctx.n() as u32 {
        // On a large history each read's versions are a cache miss: those
        // of a transaction a few ahead are loaded now, so that the
        // processor overlaps the loads instead of waiting for each in turn.
        touched ^= touch_reads(ctx, t + AHEAD);
        let txn = ctx.txn(t);
        own.clear();
        let ops = ctx.ops(t);
        for (j, op) in ops.iter().enumerate() {
            match op.kind {
                OpKind::Write => own.push((op.cell, j as u32, ctx.value(op))),
                OpKind::Delete => own.push((op.cell, j as u32, Val::NULL)),
                OpKind::Read => {}
            }
        }
        own.sort_unstable_by_key(|w| (w.0, w.1));
        for (j, op) in ops.iter().enumerate() {
            if op.kind != OpKind::Read {
                continue;
            }
            let c = op.cell;
            let observed = ctx.value(op);
            let versions = ctx.versions(c);
            let p = versions.partition_point(|v| v.commit_ts < txn.start_ts);
            let expected = p.checked_sub(1).map(|k| versions[k]);
            if observed == expected.map_or(Val::NULL, |v| v.value) {
                continue;
            }
            // A read after the transaction's own write may return that write.
            let k = own.partition_point(|w| (w.0, w.1) < (c, j as u32));
            if k > 0 && own[k - 1].0 == c && own[k - 1].2 == observed {
                continue;
            }
            let index = by_value.get_or_insert_with(|| value_index(ctx));
            let seen = index.get(&(c, observed)).copied();
            let class = match (ctx.text(observed), seen) {
                (None, _) => FindingClass::StaleRead,
                (Some(_), Some((ts, _))) if ts < txn.start_ts => FindingClass::StaleRead,
                (Some(_), Some(_)) => FindingClass::FutureRead,
                (Some(_), None) => FindingClass::UncommittedRead,
            };
            let bad = BadRead {
                t,
                c,
                observed,
                expected,
                seen,
            };
            sink.add(class, || explain(ctx, &bad));
        }
    }
    std::hint::black_box(touched);
}

/// How many transactions ahead [`check`] loads the versions reads need.
const AHEAD: u32 = 8;

/// Loads (and folds into a number nobody reads) the versions that
/// transaction `t`'s reads need, if there is such a transaction.
fn touch_reads(ctx: &Ctx<'_>, t: u32) -> u64 {
    if t as usize >= ctx.n() {
        return 0;
    }
    let mut touched = 0;
    for op in ctx.ops(t).iter().filter(|op| op.kind == OpKind::Read) {
        let versions = ctx.versions(op.cell);
        if let Some(v) = versions.get(versions.len() / 2) {
            touched ^= v.commit_ts;
        }
    }
    touched
}

/// A read that returned something other than its snapshot's version.
struct BadRead {
    /// The reader.
    t: u32,
    /// The cell read.
    c: u32,
    /// What it returned.
    observed: Val,
    /// The version its snapshot holds, if any.
    expected: Option<Cv>,
    /// The earliest committed version holding what it returned: (commit_ts, writer).
    seen: Option<(u64, u32)>,
}

fn explain(ctx: &Ctx<'_>, bad: &BadRead) -> Draft {
    let txn = ctx.txn(bad.t);
    let mut inv = Involved {
        ctx,
        txns: vec![txn.id],
        details: vec![ctx.describe_txn(bad.t)],
    };
    let should = should_have_read(ctx, bad, &mut inv);
    let why = why_not(ctx, bad, &mut inv);
    let (cell, observed) = (ctx.cell_name(bad.c), bad.observed);
    let Involved { txns, details, .. } = inv;
    Draft::new(
        format!(
            "T{} (client {}) read {cell} = {} with start_ts {}, but {should}; {why}",
            txn.id,
            txn.client,
            ctx.fmt(observed),
            txn.start_ts
        ),
        txns,
        details,
    )
}

/// The transactions a finding involves, each described once.
struct Involved<'c, 'a> {
    ctx: &'c Ctx<'a>,
    txns: Vec<u64>,
    details: Vec<String>,
}

impl Involved<'_, '_> {
    fn add(&mut self, w: u32) {
        if !self.txns.contains(&self.ctx.id(w)) {
            self.txns.push(self.ctx.id(w));
            self.details.push(self.ctx.describe_txn(w));
        }
    }
}

/// What the read should have returned.
fn should_have_read(ctx: &Ctx<'_>, bad: &BadRead, inv: &mut Involved<'_, '_>) -> String {
    let BadRead { t, c, expected, .. } = *bad;
    let txn = ctx.txn(t);
    let cell = ctx.cell_name(c);
    match expected {
        None => format!(
            "no version of {cell} was committed before {}, so it should have read null",
            txn.start_ts
        ),
        Some(v) => {
            if v.writer != NONE {
                inv.add(v.writer);
            }
            let what = if v.value.is_some() {
                format!("is {}", ctx.fmt(v.value))
            } else if ctx.data_missing(c, &v) {
                let wrote = ctx.final_write(v.writer, c).map(|w| w.value);
                format!(
                    "is a put whose data the store lost (its writer wrote {}; the store serves null)",
                    wrote.map_or("a value not in the history".to_string(), |w| ctx.fmt(w))
                )
            } else {
                "is a delete".to_string()
            };
            format!(
                "the newest version of {cell} committed before {} {what} (written by {}, committed at {})",
                txn.start_ts,
                ctx.tname(v.writer),
                v.commit_ts
            )
        }
    }
}

/// Why what it returned is wrong.
fn why_not(ctx: &Ctx<'_>, bad: &BadRead, inv: &mut Involved<'_, '_>) -> String {
    let BadRead {
        t,
        c,
        observed,
        seen,
        ..
    } = *bad;
    let txn = ctx.txn(t);
    let cell = ctx.cell_name(c);
    match (ctx.text(observed), seen) {
        (None, _) => "null is what the cell held before that version".to_string(),
        (Some(val), Some((ts, w))) => {
            if w != NONE {
                inv.add(w);
            }
            if ts < txn.start_ts {
                format!(
                    "{} is an older version, committed at {ts} by {}",
                    fmt_value(Some(val)),
                    ctx.tname(w)
                )
            } else {
                format!(
                    "{} was committed at {ts} by {}, not before the snapshot",
                    fmt_value(Some(val)),
                    ctx.tname(w)
                )
            }
        }
        (Some(val), None) => match ctx.writer_of(c, observed) {
            Some(info) if ctx.lost_version_of(c, info.txn).is_some() => {
                inv.add(info.txn);
                let lost = ctx.lost_version_of(c, info.txn).map_or(0, |v| v.commit_ts);
                format!(
                    "{} is {}'s write, committed at {lost}, whose data the store lost: the store serves null for it",
                    fmt_value(Some(val)),
                    ctx.tname(info.txn)
                )
            }
            Some(info) => {
                inv.add(info.txn);
                format!(
                    "no committed version of {cell} holds {}: {} wrote it but it was never committed",
                    fmt_value(Some(val)),
                    ctx.tname(info.txn)
                )
            }
            None => format!(
                "no transaction ever wrote {} to {cell}",
                fmt_value(Some(val))
            ),
        },
    }
}

fn value_index(ctx: &Ctx<'_>) -> ValueIndex {
    let mut index: ValueIndex = FxMap::default();
    for c in 0..ctx.n_cells() as u32 {
        for v in ctx.versions(c) {
            // Versions are by commit_ts, so the first one seen is the earliest.
            index.entry((c, v.value)).or_insert((v.commit_ts, v.writer));
        }
    }
    index
}
