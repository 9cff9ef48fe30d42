//! Turning findings into words: cycles step by step, aborted and
//! intermediate reads, lost updates.

use super::graph::{Order, RT, RW, WR, WW};
use super::search::Step;
use crate::FindingClass;
use crate::ctx::{Ctx, Val};
use crate::report::{CycleStep, Draft};
use crate::units::Ms;

/// How many steps of a cycle, and transactions, an explanation spells out.
pub(crate) const MAX_STEPS: usize = 200;
pub(crate) const MAX_DESCRIBED: usize = 20;

/// The cycle class in plain words.
pub(crate) fn plain(class: FindingClass) -> &'static str {
    match class {
        FindingClass::G0 => "write cycle: the transactions overwrote one another in a circle",
        FindingClass::G1c => {
            "circular information flow: each transaction saw or overwrote the next one's effects"
        }
        FindingClass::GSingle => "read skew: a cycle with exactly one anti-dependency (rw) edge",
        FindingClass::G2Item => {
            "write skew: a cycle with two adjacent anti-dependency (rw) edges, which snapshot isolation allows"
        }
        _ => "a cycle with several anti-dependency (rw) edges, no two of them adjacent",
    }
}

pub(crate) fn edge_name(kind: u8) -> &'static str {
    match kind {
        WW => "ww",
        WR => "wr",
        RW => "rw",
        _ => "rt",
    }
}

/// What every cycle explanation opens with: the chain `T1 -ww-> T2 ... ->
/// T1` (transactions named by `id`), the cycle's distinct transactions in
/// order, and a note when a real-time edge is part of it.
pub(crate) fn cycle_summary(
    steps: &[Step],
    id: impl Fn(u32) -> u64,
) -> (String, Vec<u32>, &'static str) {
    let mut chain = String::new();
    for s in steps.iter().take(MAX_STEPS) {
        chain.push_str(&format!("T{} -{}-> ", id(s.from), edge_name(s.kind)));
    }
    if steps.len() > MAX_STEPS {
        chain.push_str("... -> ");
    }
    if let Some(first) = steps.first() {
        chain.push_str(&format!("T{}", id(first.from)));
    }
    let rt = if steps.iter().any(|s| s.kind == RT) {
        " (real-time order included)"
    } else {
        ""
    };
    let mut seen = std::collections::BTreeSet::new();
    let txns: Vec<u32> = steps
        .iter()
        .map(|s| s.from)
        .filter(|&t| seen.insert(t))
        .collect();
    (chain, txns, rt)
}

pub(super) fn explain_cycle(
    ctx: &Ctx<'_>,
    order: &Order,
    class: FindingClass,
    steps: &[Step],
) -> Draft {
    let (chain, txns, rt) = cycle_summary(steps, |t| ctx.id(t));
    let mut details: Vec<String> = txns
        .iter()
        .take(MAX_DESCRIBED)
        .map(|&t| ctx.describe_txn(t))
        .collect();
    if txns.len() > MAX_DESCRIBED {
        details.push(format!(
            "... and {} more transactions",
            txns.len() - MAX_DESCRIBED
        ));
    }
    if steps.len() > MAX_STEPS {
        details.push(format!(
            "the cycle has {} steps; the first {MAX_STEPS} are explained",
            steps.len()
        ));
    }
    let mut d = Draft::new(
        format!(
            "{class} ({}) among {} committed transactions{rt}: {chain}",
            plain(class),
            txns.len()
        ),
        txns.iter().map(|&t| ctx.id(t)).collect(),
        details,
    );
    d.cycle = steps
        .iter()
        .take(MAX_STEPS)
        .map(|s| CycleStep {
            from: ctx.id(s.from),
            to: ctx.id(s.to),
            edge: edge_name(s.kind).to_string(),
            explanation: explain_step(ctx, order, s),
        })
        .collect();
    d
}

fn written(ctx: &Ctx<'_>, t: u32, c: u32) -> String {
    ctx.fmt(ctx.final_write(t, c).map_or(Val::NULL, |w| w.value))
}

/// "committed at 118" for a writer's version of a cell.
fn committed_at(order: &Order, c: u32, t: u32) -> String {
    match order.find(c, t) {
        Some(p) => format!("committed at {}", order.of(c)[p].commit_ts),
        None => "committed".to_string(),
    }
}

fn explain_step(ctx: &Ctx<'_>, order: &Order, s: &Step) -> String {
    let (a, b) = (ctx.id(s.from), ctx.id(s.to));
    let cell = ctx.cell_name(s.cell);
    match s.kind {
        WW => format!(
            "T{a} wrote {cell} = {} ({}); T{b} wrote the next version, {} ({})",
            written(ctx, s.from, s.cell),
            committed_at(order, s.cell, s.from),
            written(ctx, s.to, s.cell),
            committed_at(order, s.cell, s.to)
        ),
        WR => format!(
            "T{b} read {cell} = {}, the version T{a} wrote ({})",
            written(ctx, s.from, s.cell),
            committed_at(order, s.cell, s.from)
        ),
        RW => {
            let ord = order.of(s.cell);
            let p = order.find(s.cell, s.to).unwrap_or(0);
            let start = ctx.txn(s.from).start_ts;
            let commit = ord.get(p).map_or(0, |e| e.commit_ts);
            let (seen, overwrite) = match p.checked_sub(1).map(|k| ord[k].writer) {
                Some(w) => (
                    format!("{}, written by T{}", written(ctx, w, s.cell), ctx.id(w)),
                    "overwrote that version with",
                ),
                None => (
                    "null (no version yet)".to_string(),
                    "wrote the first version,",
                ),
            };
            let before = if commit < start {
                format!(", although it committed before T{a}'s start_ts {start}")
            } else {
                format!(" (T{a}'s start_ts is {start})")
            };
            format!(
                "T{a} read {cell} = {seen}; T{b} {overwrite} {}, committed at {commit}, \
                 and T{a} did not see it{before}",
                written(ctx, s.to, s.cell)
            )
        }
        _ => format!(
            "T{a} completed at {}, before T{b} was invoked at {} (real-time order)",
            Ms(ctx.txn(s.from).complete_ns().unwrap_or_default()),
            Ms(ctx.txn(s.to).invoke_ns)
        ),
    }
}

fn outcome_words(ctx: &Ctx<'_>, w: u32) -> &'static str {
    match ctx.txn(w).outcome {
        crate::history::Outcome::Aborted => "its client reported it aborted",
        crate::history::Outcome::Unknown => {
            "its outcome was unknown and the store has no commit of it"
        }
        crate::history::Outcome::Committed => "the store has no commit of it",
    }
}

pub(super) fn aborted_read(ctx: &Ctx<'_>, r: u32, w: u32, c: u32, v: Val) -> Draft {
    Draft::new(
        format!(
            "T{} committed after reading {} = {}, which T{} wrote, but T{} never committed ({})",
            ctx.id(r),
            ctx.cell_name(c),
            ctx.fmt(v),
            ctx.id(w),
            ctx.id(w),
            outcome_words(ctx, w)
        ),
        vec![ctx.id(r), ctx.id(w)],
        vec![ctx.describe_txn(r), ctx.describe_txn(w)],
    )
}

pub(super) fn intermediate_read(ctx: &Ctx<'_>, r: u32, w: u32, c: u32, v: Val) -> Draft {
    Draft::new(
        format!(
            "T{} read {} = {}, an intermediate value: T{} wrote it but then overwrote it with {} in the same transaction",
            ctx.id(r),
            ctx.cell_name(c),
            ctx.fmt(v),
            ctx.id(w),
            written(ctx, w, c)
        ),
        vec![ctx.id(r), ctx.id(w)],
        vec![ctx.describe_txn(r), ctx.describe_txn(w)],
    )
}

pub(super) fn lost_update(ctx: &Ctx<'_>, order: &Order, group: &[(u32, u32, u32)]) -> Draft {
    let c = group[0].0;
    let key = group[0].1;
    let version = match key.checked_sub(1).and_then(|p| order.of(c).get(p as usize)) {
        Some(v) => {
            let w = v.writer;
            format!("{} (the version T{} wrote)", written(ctx, w, c), ctx.id(w))
        }
        None => "null (before any version)".to_string(),
    };
    let mut names: Vec<String> = group
        .iter()
        .take(MAX_DESCRIBED)
        .map(|g| format!("T{}", ctx.id(g.2)))
        .collect();
    if group.len() > MAX_DESCRIBED {
        names.push(format!("{} more", group.len() - MAX_DESCRIBED));
    }
    let (who, each, lost) = match group.len() {
        2 => (
            names.join(" and "),
            "both",
            "one of the two updates is lost",
        ),
        _ => (
            names.join(", "),
            "all",
            "all but one of these updates are lost",
        ),
    };
    Draft::new(
        format!(
            "{who} {each} read {} = {version}, {each} wrote {} and {each} committed: {lost}",
            ctx.cell_name(c),
            ctx.cell_name(c)
        ),
        group.iter().map(|g| ctx.id(g.2)).collect(),
        group
            .iter()
            .take(8)
            .map(|g| ctx.describe_txn(g.2))
            .collect(),
    )
}
