//! Rule `no_write_conflicts`: no two committed transactions that wrote the
//! same cell overlap between start_ts and commit_ts.

use crate::ctx::{Ctx, NONE};
use crate::report::{Draft, Sink};
use crate::sort::group_by;
use crate::{FindingClass, Rule};

pub(crate) const ID: Rule = Rule::NoWriteConflicts;
pub(crate) const NAME: &str = "no two committed transactions that wrote the same cell overlap between their start_ts and commit_ts";

pub(crate) fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    // Every committed writer of a cell, from its ops and from the store's
    // commit records, grouped by cell: transaction indices alone (4 bytes
    // each; their timestamps are looked up one cell at a time).
    let each = |emit: &mut dyn FnMut(u32, u32)| {
        for t in 0..ctx.n() as u32 {
            if !ctx.committed[t as usize] || ctx.eff_commit(t).is_none() {
                continue;
            }
            for w in ctx.final_writes(t) {
                emit(w.cell, t);
            }
            for r in ctx.recs_of(t) {
                if r.is_commit() && ctx.final_write_idx(t, r.cell).is_none() {
                    emit(r.cell, t);
                }
            }
        }
    };
    let (off, writers) = group_by(ctx.n_cells(), NONE, each);
    // One cell's writers: (start_ts, commit_ts, txn).
    let mut group: Vec<(u64, u64, u32)> = Vec::new();
    for cell in 0..ctx.n_cells() as u32 {
        let (lo, hi) = (off[cell as usize], off[cell as usize + 1]);
        group.clear();
        group.extend(writers[lo..hi].iter().map(|&t| {
            let commit = ctx.eff_commit(t).unwrap_or(0);
            (ctx.txn(t).start_ts, commit, t)
        }));
        // A transaction's entries for one cell are equal: sorted together.
        group.sort_unstable();
        let mut holder = match group.first() {
            Some(&w) => w,
            None => continue,
        };
        for k in 1..group.len() {
            let cur = group[k];
            if cur.2 == group[k - 1].2 {
                continue;
            }
            // `holder`: the writer so far whose commit_ts reaches furthest.
            if cur.0 <= holder.1 {
                sink.add(FindingClass::OverlappingWrites, || {
                    let (a, b) = (holder.2, cur.2);
                    Draft::new(
                        format!(
                            "T{} and T{} both wrote {} and both committed, but their intervals overlap: \
                             T{} ran from start_ts {} to commit_ts {}, T{} from start_ts {} to commit_ts {}; \
                             T{} began before T{} committed, so one of them had to abort",
                            ctx.id(a),
                            ctx.id(b),
                            ctx.cell_name(cell),
                            ctx.id(a),
                            holder.0,
                            holder.1,
                            ctx.id(b),
                            cur.0,
                            cur.1,
                            ctx.id(b),
                            ctx.id(a)
                        ),
                        vec![ctx.id(a), ctx.id(b)],
                        vec![ctx.describe_txn(a), ctx.describe_txn(b)],
                    )
                });
            }
            if cur.1 > holder.1 {
                holder = cur;
            }
        }
    }
}
