//! Rule `no_write_conflicts`: no two committed transactions that wrote the
//! same cell overlap between start_ts and commit_ts.

use crate::ctx::Ctx;
use crate::report::{Draft, Sink};
use crate::{FindingClass, Rule};

pub(crate) const ID: Rule = Rule::NoWriteConflicts;
pub(crate) const NAME: &str = "no two committed transactions that wrote the same cell overlap between their start_ts and commit_ts";

pub(crate) fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    // (cell, start_ts, commit_ts, txn) for every committed writer of a cell,
    // from its ops and from the store's commit records.
    let mut writes: Vec<(u32, u64, u64, u32)> = Vec::with_capacity(ctx.fw.len());
    for t in 0..ctx.n() as u32 {
        if !ctx.committed[t as usize] {
            continue;
        }
        let Some(commit) = ctx.eff_commit[t as usize] else {
            continue;
        };
        let start = ctx.txn(t).start_ts;
        for w in ctx.final_writes(t) {
            writes.push((w.cell, start, commit, t));
        }
        for r in ctx.recs_of(t) {
            if r.is_commit() && ctx.final_write_idx(t, r.cell).is_none() {
                writes.push((r.cell, start, commit, t));
            }
        }
    }
    writes.sort_unstable();
    writes.dedup_by_key(|w| (w.0, w.3));

    let mut i = 0;
    while i < writes.len() {
        let cell = writes[i].0;
        let mut j = i;
        // The writer so far whose commit_ts reaches furthest.
        let mut holder = writes[i];
        j += 1;
        while j < writes.len() && writes[j].0 == cell {
            let cur = writes[j];
            if cur.1 <= holder.2 {
                sink.add(FindingClass::OverlappingWrites, || {
                    let (a, b) = (holder.3, cur.3);
                    Draft::new(
                        format!(
                            "T{} and T{} both wrote {} and both committed, but their intervals overlap: \
                             T{} ran from start_ts {} to commit_ts {}, T{} from start_ts {} to commit_ts {}; \
                             T{} began before T{} committed, so one of them had to abort",
                            ctx.id(a),
                            ctx.id(b),
                            ctx.cell_name(cell),
                            ctx.id(a),
                            holder.1,
                            holder.2,
                            ctx.id(b),
                            cur.1,
                            cur.2,
                            ctx.id(b),
                            ctx.id(a)
                        ),
                        vec![ctx.id(a), ctx.id(b)],
                        vec![ctx.describe_txn(a), ctx.describe_txn(b)],
                    )
                });
            }
            if cur.2 > holder.2 {
                holder = cur;
            }
            j += 1;
        }
        i = j;
    }
}
