//! Rule `no_dependency_cycles`: a black-box dependency graph over committed
//! transactions (ww by version order, wr, rw anti-dependencies, real-time
//! order), built from what clients read on cells whose written values are
//! unique, with Adya's anomaly classes.
//!
//! Cycles are found per strongly connected component (Tarjan), trying the most
//! severe class first; each explanation is a shortest cycle (0-1 BFS) inside
//! the component. Snapshot isolation allows exactly the cycles with two
//! adjacent rw edges (write skew): those go to the "allowed" section.

mod explain;
mod graph;
mod search;

pub(crate) use explain::{MAX_DESCRIBED, MAX_STEPS, cycle_summary, edge_name, plain};
use graph::{Edge, build_graph_with};
pub(crate) use graph::{RW, WR, WW, build_graph};
pub(crate) use search::{Step, each_cycle};

use crate::FindingClass;
use crate::Rule;
use crate::compact::OpKind;
use crate::ctx::{Ctx, NONE, Val};
use crate::report::Sink;
use explain::{aborted_read, explain_cycle, intermediate_read, lost_update};
use graph::Order;

pub(crate) const ID: Rule = Rule::NoDependencyCycles;
pub(crate) const NAME: &str = "the dependency graph of committed transactions (on cells with unique written values) has no cycle that snapshot isolation forbids, no aborted or intermediate read and no lost update";

/// What the rule found besides findings, for the report's statistics.
pub(crate) struct GraphStats {
    pub unique_cells: u64,
    pub edges: u64,
}

pub(crate) fn check(ctx: &Ctx<'_>, sink: &mut Sink, allowed: &mut Sink) -> GraphStats {
    let n = ctx.n();
    let versions = Versions::of(ctx);
    let order = &versions.order;

    let completions = (0..n as u32)
        .filter(|&t| ctx.committed[t as usize])
        .filter_map(|t| ctx.txn(t).complete_ns.map(|d| (d, t)))
        .collect();
    let invocations = (0..n as u32)
        .filter(|&t| ctx.committed[t as usize])
        .map(|t| (t, ctx.txn(t).invoke_ns));
    // The edges are made twice (counted, then placed): the findings and the
    // lost-update candidates of the first time are kept.
    let mut lost = None;
    let mut again = Sink::new(ID);
    let each = |emit: &mut dyn FnMut(Edge)| {
        for c in 0..ctx.cells.len() as u32 {
            for pair in order.of(c).windows(2) {
                emit((pair[0].0, pair[1].0, c, WW));
            }
        }
        let target = if lost.is_none() {
            &mut *sink
        } else {
            &mut again
        };
        let found = read_edges(ctx, &versions, emit, target);
        lost.get_or_insert(found);
    };
    let g = build_graph_with(n, each, completions, invocations);
    report_lost_updates(ctx, order, lost.unwrap_or_default(), sink);

    each_cycle(&g, |class, steps| {
        let target = if class.is_allowed() {
            &mut *allowed
        } else {
            &mut *sink
        };
        target.add(class, || explain_cycle(ctx, order, class, steps));
    });

    GraphStats {
        unique_cells: ctx.cell_unique.iter().filter(|&&u| u).count() as u64,
        edges: g.to.len() as u64,
    }
}

/// The version order of the unique-value cells, and each final write's
/// position in its cell's order (`NONE` when it is not there).
struct Versions {
    order: Order,
    pos_of_fw: Vec<u32>,
}

impl Versions {
    /// The store's record wins over the client's word when a writer appears
    /// twice in one cell.
    fn of(ctx: &Ctx<'_>) -> Versions {
        let n_cells = ctx.cells.len();
        let mut off = Vec::with_capacity(n_cells + 1);
        // Each (cell, writer) once, with a final write: never more than those.
        let mut list: Vec<(u32, u64, Val)> = Vec::with_capacity(ctx.fw.len());
        let mut pos_of_fw = vec![NONE; ctx.fw.len()];
        // One cell's candidates: (writer, from the client, commit_ts, final write).
        let mut cand: Vec<(u32, bool, u64, u32)> = Vec::new();
        off.push(0);
        for c in 0..n_cells as u32 {
            cand.clear();
            if ctx.cell_unique[c as usize] {
                for v in ctx.versions(c) {
                    let w = v.writer;
                    if w == NONE || !ctx.committed[w as usize] {
                        continue;
                    }
                    let Some(f) = ctx.final_write_idx(w, c) else {
                        continue;
                    };
                    cand.push((w, !v.from_store, v.commit_ts, f as u32));
                }
            }
            // One version per writer: the store's first, then the earliest.
            cand.sort_unstable();
            cand.dedup_by_key(|x| x.0);
            cand.sort_unstable_by_key(|x| (x.2, x.0));
            for (k, x) in cand.iter().enumerate() {
                pos_of_fw[x.3 as usize] = k as u32;
                list.push((x.0, x.2, ctx.fw[x.3 as usize].value));
            }
            off.push(list.len());
        }
        Versions {
            order: Order { off, list },
            pos_of_fw,
        }
    }
}

/// Reads of committed transactions: wr and rw edges, aborted and
/// intermediate reads (filed in `sink`), and the candidates for lost updates
/// as (cell, position after the version read, reader).
fn read_edges(
    ctx: &Ctx<'_>,
    versions: &Versions,
    emit: &mut dyn FnMut(Edge),
    sink: &mut Sink,
) -> Vec<(u32, u32, u32)> {
    let mut lost: Vec<(u32, u32, u32)> = Vec::new();
    for r in 0..ctx.n() as u32 {
        if !ctx.committed[r as usize] {
            continue;
        }
        for op in ctx.ops(r) {
            let c = op.cell;
            if op.kind != OpKind::Read || !ctx.cell_unique[c as usize] {
                continue;
            }
            let read = Read {
                reader: r,
                cell: c,
                value: ctx.value(op),
            };
            let Some(key) = read_edge(ctx, versions, read, emit, sink) else {
                continue;
            };
            if ctx.final_write_idx(r, c).is_some() {
                lost.push((c, key, r));
            }
        }
    }
    lost
}

/// One committed read of a unique-value cell.
#[derive(Clone, Copy)]
struct Read {
    reader: u32,
    cell: u32,
    value: Val,
}

/// The edges of one read; the position after the version it read (0 for
/// null), or `None` when it adds nothing to the graph.
fn read_edge(
    ctx: &Ctx<'_>,
    versions: &Versions,
    read: Read,
    emit: &mut dyn FnMut(Edge),
    sink: &mut Sink,
) -> Option<u32> {
    let Read {
        reader: r,
        cell: c,
        value,
    } = read;
    let ord = versions.order.of(c);
    let v = value;
    if v.is_none() {
        if let Some(first) = ord.first()
            && first.0 != r
        {
            emit((r, first.0, c, RW));
        }
        return Some(0);
    }
    // Fast path: the version a correct snapshot read returns.
    let p = ord.partition_point(|e| e.1 < ctx.txn(r).start_ts);
    let (w, pos) = match p.checked_sub(1) {
        Some(q) if ord[q].2 == v => (ord[q].0, q as u32),
        _ => {
            // Nobody wrote it: judged by snapshot_reads.
            let info = ctx.writer_of(c, v)?;
            let w = info.txn;
            if w == r {
                return None;
            }
            if !ctx.committed[w as usize] {
                sink.add(FindingClass::G1a, || aborted_read(ctx, r, w, c, v));
                return None;
            }
            if info.fw == NONE {
                sink.add(FindingClass::G1b, || intermediate_read(ctx, r, w, c, v));
                return None;
            }
            (w, versions.pos_of_fw[info.fw as usize])
        }
    };
    if w == r {
        return None;
    }
    emit((w, r, c, WR));
    if pos == NONE {
        return None;
    }
    if let Some(next) = ord.get(pos as usize + 1)
        && next.0 != r
    {
        emit((r, next.0, c, RW));
    }
    Some(pos + 1)
}

/// Files a lost update for each group of two or more committed readers of
/// one version of a cell that all wrote it.
fn report_lost_updates(
    ctx: &Ctx<'_>,
    order: &Order,
    mut lost: Vec<(u32, u32, u32)>,
    sink: &mut Sink,
) {
    lost.sort_unstable();
    lost.dedup();
    let mut i = 0;
    while i < lost.len() {
        let mut j = i + 1;
        while j < lost.len() && lost[j].0 == lost[i].0 && lost[j].1 == lost[i].1 {
            j += 1;
        }
        if j - i >= 2 {
            let group = &lost[i..j];
            sink.add(FindingClass::LostUpdate, || lost_update(ctx, order, group));
        }
        i = j;
    }
}
