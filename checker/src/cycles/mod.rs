//! Rule `no_dependency_cycles`: a black-box dependency graph over committed
//! transactions (ww by version order, wr, rw anti-dependencies, real-time
//! order), built from what clients read on cells whose written values are
//! unique, with Adya's anomaly classes.
//!
//! Cycles are found per strongly connected component (Tarjan, in Pearce's
//! variant), trying the most severe class first; each explanation is a
//! shortest cycle (0-1 BFS) inside the component. Snapshot isolation allows
//! exactly the cycles with two adjacent rw edges (write skew): those go to
//! the "allowed" section.

mod explain;
mod graph;
mod search;

pub(crate) use explain::{MAX_DESCRIBED, MAX_STEPS, cycle_summary, edge_name, plain};
use graph::{Edge, build_graph_with};
pub(crate) use graph::{RW, WR, WW, build_graph};
pub(crate) use search::{Step, each_cycle};

use crate::FindingClass;
use crate::Rule;
use crate::both::both;
use crate::compact::OpKind;
use crate::ctx::{Ctx, Cv, NONE, Val};
use crate::report::Sink;
use explain::{aborted_read, explain_cycle, intermediate_read, lost_update};
use graph::Order;

pub(crate) const ID: Rule = Rule::NoDependencyCycles;
pub(crate) const NAME: &str = "the dependency graph of committed transactions (on cells with unique written values) has no cycle, aborted or intermediate read or lost update that the model judged against forbids";

/// What the rule found besides findings, for the report's statistics.
#[derive(Default)]
pub(crate) struct GraphStats {
    pub unique_cells: u64,
    pub edges: u64,
}

/// What the rule works out before its graph: the cells' version orders and
/// the committed reads judged (their edges recorded, their findings filed
/// in a sink of their own, the lost-update candidates kept).
pub(crate) struct Prepared<'c> {
    versions: Versions<'c>,
    judged: ReadsJudged,
    found: Sink,
}

/// Works out the version orders and judges the reads, on this thread, or,
/// with `halves`, each in two halves, one on a second thread: the halves
/// are joined in order, so what comes out is the same either way. On a
/// large history `rules.rs` does this with both cores before the other
/// rules start beside the rest of the graph, which would otherwise finish
/// long after them.
pub(crate) fn prepare<'c>(ctx: &'c Ctx<'c>, halves: bool) -> Prepared<'c> {
    let versions = if halves {
        Versions::of_in_halves(ctx)
    } else {
        Versions::of(ctx)
    };
    let n = ctx.n() as u32;
    let (judged, found) = if halves {
        let ((mut judged, mut found), second) = both(
            true,
            || judge_reads(ctx, &versions, 0..n / 2),
            || judge_reads(ctx, &versions, n / 2..n),
        );
        judged.append(second.0);
        found.absorb(second.1);
        (judged, found)
    } else {
        judge_reads(ctx, &versions, 0..n)
    };
    Prepared {
        versions,
        judged,
        found,
    }
}

/// Judges the rule on `ctx`, from what [`prepare`] worked out (worked out
/// here, on this thread, when not given).
pub(crate) fn check<'c>(
    ctx: &'c Ctx<'c>,
    prepared: Option<Prepared<'c>>,
    sink: &mut Sink,
    allowed: &mut Sink,
) -> GraphStats {
    let n = ctx.n();
    let Prepared {
        versions,
        judged,
        found,
    } = prepared.unwrap_or_else(|| prepare(ctx, false));
    // The reads' findings come first, as when they were judged here.
    sink.absorb(found);
    let order = &versions.order;

    let (completions, invocations) = real_time(ctx);
    // The edges are handed over twice (counted, then placed): the reads'
    // as they were recorded when judged.
    let each = |emit: &mut dyn FnMut(Edge)| {
        ww_edges(ctx, order, emit);
        replay_read_edges(ctx, &judged.recorded, emit);
    };
    let g = build_graph_with(n, each, completions, invocations);
    report_lost_updates(ctx, order, judged.lost, sink);

    each_cycle(&g, |class, steps| {
        let target = if class.is_allowed() {
            &mut *allowed
        } else {
            &mut *sink
        };
        target.add(class, || {
            let steps: Vec<Step> = steps
                .iter()
                .map(|s| Step {
                    cell: edge_cell(ctx, &versions, s),
                    ..*s
                })
                .collect();
            explain_cycle(ctx, order, class, &steps)
        });
    });

    GraphStats {
        unique_cells: ctx.cell_unique.iter().filter(|&&u| u).count() as u64,
        edges: g.n_edges() as u64,
    }
}

/// (complete_ns, txn) of the committed transactions that completed, and
/// (txn, invoke_ns) of every committed transaction: real-time order.
fn real_time<'c>(ctx: &'c Ctx<'_>) -> (Vec<(u64, u32)>, impl Iterator<Item = (u32, u64)> + 'c) {
    let n = ctx.n();
    let completions = (0..n as u32)
        .filter(|&t| ctx.committed[t as usize])
        .filter_map(|t| ctx.txn(t).complete_ns().map(|d| (d, t)))
        .collect();
    let invocations = (0..n as u32)
        .filter(|&t| ctx.committed[t as usize])
        .map(|t| (t, ctx.txn(t).invoke_ns));
    (completions, invocations)
}

/// The ww edges: each cell's consecutive versions, cell by cell.
fn ww_edges(ctx: &Ctx<'_>, order: &Order, emit: &mut dyn FnMut(Edge)) {
    for c in 0..ctx.n_cells() as u32 {
        for pair in order.of(c).windows(2) {
            emit((pair[0].writer, pair[1].writer, c, WW));
        }
    }
}

/// The version order of the unique-value cells, and each final write's
/// position in its cell's order (`NONE` when it is not there), worked out
/// on the first need (a read that is not its snapshot's, an explained
/// cycle): a valid history never needs it.
struct Versions<'c> {
    order: Order<'c>,
    pos_of_fw: std::sync::OnceLock<Vec<u32>>,
}

impl<'c> Versions<'c> {
    /// The version orders of every cell.
    fn of(ctx: &'c Ctx<'c>) -> Versions<'c> {
        let all = order_part(ctx, 0..ctx.n_cells() as u32);
        Versions::joined(ctx, [all])
    }

    /// [`Versions::of`], the cells in two halves, one on a second thread.
    fn of_in_halves(ctx: &'c Ctx<'c>) -> Versions<'c> {
        let n = ctx.n_cells() as u32;
        // A multiple of 64: each half's bits are whole words.
        let mid = n / 2 / 64 * 64;
        let (first, second) = both(true, || order_part(ctx, 0..mid), || order_part(ctx, mid..n));
        Versions::joined(ctx, [first, second])
    }

    /// The orders of consecutive runs of cells, each run starting at a
    /// multiple of 64, joined (the first part's arrays are kept and grown:
    /// one part is taken as it is).
    fn joined<const N: usize>(ctx: &'c Ctx<'c>, parts: [OrderPart; N]) -> Versions<'c> {
        let mut parts = parts.into_iter();
        let (mut same, mut own_off, mut own) = match parts.next() {
            Some(p) => (p.same, p.ends, p.own),
            None => (Vec::new(), Vec::new(), Vec::new()),
        };
        // `order_part` left room for the leading 0.
        own_off.insert(0, 0);
        for part in parts {
            let base = u32::try_from(own.len()).expect("fewer than 2^32 versions");
            same.extend_from_slice(&part.same);
            own_off.extend(
                part.ends
                    .iter()
                    .map(|&e| e.checked_add(base).expect("fewer than 2^32 versions")),
            );
            own.extend_from_slice(&part.own);
        }
        own.shrink_to_fit();
        Versions {
            order: Order {
                ctx,
                same,
                own_off,
                own,
            },
            pos_of_fw: std::sync::OnceLock::new(),
        }
    }

    /// The position of final write `f` in its cell's order, or `NONE`.
    fn pos_of_fw(&self, f: usize) -> u32 {
        let pos = self.pos_of_fw.get_or_init(|| {
            let ctx = self.order.ctx;
            let mut pos = vec![NONE; ctx.fw.len()];
            for c in 0..ctx.n_cells() as u32 {
                for (k, v) in self.order.of(c).iter().enumerate() {
                    if let Some(f) = ctx.final_write_idx(v.writer, c) {
                        pos[f] = k as u32;
                    }
                }
            }
            pos
        });
        pos[f]
    }
}

/// The version orders of the cells in `cells` (starting at a multiple of
/// 64). The store's record wins over the client's word when a writer
/// appears twice in one cell.
fn order_part(ctx: &Ctx<'_>, cells: std::ops::Range<u32>) -> OrderPart {
    debug_assert!(cells.start.is_multiple_of(64), "a part starts at a word");
    let len = cells.len();
    let mut same = vec![0u64; len.div_ceil(64)];
    // Room for the 0 the first part's ends are given in front.
    let mut ends = Vec::with_capacity(len + 1);
    let mut own: Vec<Cv> = Vec::new();
    // One cell's candidates: (writer, from the client, commit_ts, final write).
    let mut cand: Vec<(u32, bool, u64, u32)> = Vec::new();
    for c in cells.clone() {
        cand.clear();
        if ctx.cell_unique[c as usize] {
            for (v, from_store) in ctx.versions_sourced(c) {
                let w = v.writer;
                if w == NONE || !ctx.committed[w as usize] {
                    continue;
                }
                let Some(f) = ctx.final_write_idx(w, c) else {
                    continue;
                };
                cand.push((w, !from_store, v.commit_ts, f as u32));
            }
        }
        let all = ctx.versions(c);
        // The usual case: every version is there, as it stands.
        let as_is = cand.len() == all.len()
            && cand
                .iter()
                .zip(all)
                .all(|(x, v)| x.2 == v.commit_ts && ctx.fw[x.3 as usize].value == v.value)
            && !cand.is_empty()
            && distinct_writers(&cand);
        let i = (c - cells.start) as usize;
        if as_is {
            same[i / 64] |= 1 << (i % 64);
        } else {
            // One version per writer: the store's first, then the earliest.
            cand.sort_unstable();
            cand.dedup_by_key(|x| x.0);
            cand.sort_unstable_by_key(|x| (x.2, x.0));
            own.extend(cand.iter().map(|x| Cv {
                commit_ts: x.2,
                value: ctx.fw[x.3 as usize].value,
                writer: x.0,
            }));
        }
        ends.push(u32::try_from(own.len()).expect("fewer than 2^32 versions"));
    }
    OrderPart { same, ends, own }
}

/// The version orders of a run of cells (see [`order_part`]): the bits of
/// the cells whose order is the index's as it stands, and the others'
/// orders, one after another, with where each cell's ends.
struct OrderPart {
    same: Vec<u64>,
    ends: Vec<u32>,
    own: Vec<Cv>,
}

/// Whether no writer appears twice among a cell's candidates (few: a
/// quadratic look beats a sort below a handful).
fn distinct_writers(cand: &[(u32, bool, u64, u32)]) -> bool {
    if cand.len() <= 8 {
        return cand
            .iter()
            .enumerate()
            .all(|(i, x)| cand[..i].iter().all(|y| y.0 != x.0));
    }
    let mut w: Vec<u32> = cand.iter().map(|x| x.0).collect();
    w.sort_unstable();
    w.windows(2).all(|p| p[0] != p[1])
}

/// The cell of a step's edge, found again as the graph's builder made it
/// (the graph keeps no cells): among parallel edges of one kind, the first
/// made, which is the one a search through the graph takes. `NONE` for real
/// time.
fn edge_cell(ctx: &Ctx<'_>, versions: &Versions, s: &Step) -> u32 {
    let read_edge_cell = |reader: u32| {
        let mut found = NONE;
        let mut ignored = Sink::new(ID);
        for op in ctx.ops(reader) {
            let c = op.cell;
            if found != NONE || op.kind != OpKind::Read || !ctx.cell_unique[c as usize] {
                continue;
            }
            let read = Read {
                reader,
                cell: c,
                value: ctx.value(op),
            };
            let mut emit = |e: Edge| {
                if found == NONE && (e.0, e.1, e.3) == (s.from, s.to, s.kind) {
                    found = e.2;
                }
            };
            read_edge(ctx, versions, read, &mut ignored)
                .0
                .emit(read, &mut emit);
        }
        found
    };
    match s.kind {
        // Cells in order, as the ww edges were made.
        WW => ctx
            .final_writes(s.from)
            .iter()
            .map(|w| w.cell)
            .find(|&c| {
                let pos = ctx
                    .final_write_idx(s.from, c)
                    .map_or(NONE, |f| versions.pos_of_fw(f));
                let next = versions.order.of(c).get(pos as usize + 1);
                pos != NONE && next.is_some_and(|e| e.writer == s.to)
            })
            .unwrap_or(NONE),
        WR => read_edge_cell(s.to),
        RW => read_edge_cell(s.from),
        _ => NONE,
    }
}

/// Judges the reads of the committed transactions among `readers`: their
/// wr and rw edges (recorded), aborted and intermediate reads (filed in a
/// sink of the rule's), the candidates for lost updates.
fn judge_reads(
    ctx: &Ctx<'_>,
    versions: &Versions,
    readers: std::ops::Range<u32>,
) -> (ReadsJudged, Sink) {
    let mut sink = Sink::new(ID);
    let mut lost: Vec<(u32, u32, u32)> = Vec::new();
    let mut recorded: Vec<ReadEdges> = Vec::new();
    let mut batch: Vec<Read> = Vec::with_capacity(BATCH);
    let mut out = ReadsOut {
        sink: &mut sink,
        lost: &mut lost,
        recorded: &mut recorded,
    };
    each_read(ctx, readers.clone(), |read| {
        batch.push(read);
        if batch.len() == BATCH {
            read_batch(ctx, versions, &mut batch, &mut out);
        }
    });
    read_batch(ctx, versions, &mut batch, &mut out);
    recorded.shrink_to_fit();
    (ReadsJudged { lost, recorded }, sink)
}

/// What [`judge_reads`] found besides the findings.
struct ReadsJudged {
    /// The candidates for lost updates: (cell, position after the version
    /// read, reader).
    lost: Vec<(u32, u32, u32)>,
    /// Each read's edges, in the order [`each_read`] visits the reads.
    recorded: Vec<ReadEdges>,
}

impl ReadsJudged {
    /// Appends what was found on the readers after these, growing the
    /// lists to the size they need and no more (they are kept through the
    /// whole rule).
    fn append(&mut self, mut later: ReadsJudged) {
        self.lost.reserve_exact(later.lost.len());
        self.lost.append(&mut later.lost);
        self.recorded.reserve_exact(later.recorded.len());
        self.recorded.append(&mut later.recorded);
    }
}

/// Calls `f` with each read of a committed transaction among `readers` on
/// a unique-value cell, in transaction order, then op order.
fn each_read(ctx: &Ctx<'_>, readers: std::ops::Range<u32>, mut f: impl FnMut(Read)) {
    for r in readers {
        if !ctx.committed[r as usize] {
            continue;
        }
        for op in ctx.ops(r) {
            let c = op.cell;
            if op.kind != OpKind::Read || !ctx.cell_unique[c as usize] {
                continue;
            }
            f(Read {
                reader: r,
                cell: c,
                value: ctx.value(op),
            });
        }
    }
}

/// Hands over the edges [`judge_reads`] recorded, read by read, without
/// judging the reads again.
fn replay_read_edges(ctx: &Ctx<'_>, recorded: &[ReadEdges], emit: &mut dyn FnMut(Edge)) {
    let mut each = recorded.iter();
    each_read(ctx, 0..ctx.n() as u32, |read| {
        if let Some(&edges) = each.next() {
            edges.emit(read, emit);
        }
    });
}

/// Reads judged together (see [`read_batch`]).
const BATCH: usize = 32;

/// Where [`judge_reads`] puts what it finds.
struct ReadsOut<'o> {
    sink: &'o mut Sink,
    lost: &'o mut Vec<(u32, u32, u32)>,
    recorded: &'o mut Vec<ReadEdges>,
}

/// Judges a batch of reads, in order, and empties it. On a large history
/// each read's version order is a cache miss: the orders of the whole
/// batch are loaded first, loads the processor overlaps instead of waiting
/// for each in turn.
fn read_batch(ctx: &Ctx<'_>, versions: &Versions, batch: &mut Vec<Read>, out: &mut ReadsOut<'_>) {
    let mut touched = 0u64;
    for x in batch.iter() {
        let ord = versions.order.of(x.cell);
        if let Some(e) = ord.get(ord.len() / 2) {
            touched ^= e.commit_ts;
        }
    }
    std::hint::black_box(touched);
    for read in batch.drain(..) {
        let (edges, key) = read_edge(ctx, versions, read, out.sink);
        out.recorded.push(edges);
        let Some(key) = key else {
            continue;
        };
        if ctx.final_write_idx(read.reader, read.cell).is_some() {
            out.lost.push((read.cell, key, read.reader));
        }
    }
}

/// One committed read of a unique-value cell.
#[derive(Clone, Copy)]
struct Read {
    reader: u32,
    cell: u32,
    value: Val,
}

/// The graph edges of one read: from the writer of the version read (a
/// wr edge) and to the writer of the version after it (an rw edge), each
/// `NONE` when the read has no such edge.
#[derive(Clone, Copy)]
struct ReadEdges {
    wr_from: u32,
    rw_to: u32,
}

impl ReadEdges {
    /// No edge.
    const NO_EDGE: ReadEdges = ReadEdges {
        wr_from: NONE,
        rw_to: NONE,
    };

    /// Hands over the edges of `read`: the wr edge first.
    fn emit(self, read: Read, emit: &mut dyn FnMut(Edge)) {
        if self.wr_from != NONE {
            emit((self.wr_from, read.reader, read.cell, WR));
        }
        if self.rw_to != NONE {
            emit((read.reader, self.rw_to, read.cell, RW));
        }
    }
}

/// The edges of one read, with the position after the version it read (0
/// for null), or `None` when it adds nothing to the lost updates.
fn read_edge(
    ctx: &Ctx<'_>,
    versions: &Versions,
    read: Read,
    sink: &mut Sink,
) -> (ReadEdges, Option<u32>) {
    let Read {
        reader: r,
        cell: c,
        value,
    } = read;
    let mut edges = ReadEdges::NO_EDGE;
    let ord = versions.order.of(c);
    let v = value;
    if v.is_none() {
        if let Some(first) = ord.first()
            && first.writer != r
        {
            edges.rw_to = first.writer;
        }
        return (edges, Some(0));
    }
    // Fast path: the version a correct snapshot read returns.
    let p = ord.partition_point(|e| e.commit_ts < ctx.txn(r).start_ts);
    let (w, pos) = match p.checked_sub(1) {
        Some(q) if ord[q].value == v => (ord[q].writer, q as u32),
        _ => {
            // Nobody wrote it: judged by snapshot_reads.
            let Some(info) = ctx.writer_of(c, v) else {
                return (edges, None);
            };
            let w = info.txn;
            if w == r {
                return (edges, None);
            }
            if !ctx.committed[w as usize] {
                sink.add(FindingClass::G1a, || aborted_read(ctx, r, w, c, v));
                return (edges, None);
            }
            if info.fw == NONE {
                sink.add(FindingClass::G1b, || intermediate_read(ctx, r, w, c, v));
                return (edges, None);
            }
            (w, versions.pos_of_fw(info.fw as usize))
        }
    };
    if w == r {
        return (edges, None);
    }
    edges.wr_from = w;
    if pos == NONE {
        return (edges, None);
    }
    if let Some(next) = ord.get(pos as usize + 1)
        && next.writer != r
    {
        edges.rw_to = next.writer;
    }
    (edges, Some(pos + 1))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::Compact;
    use crate::history::{CellState, FinalState, History, Op, Transaction, Version, VersionKind};
    use std::collections::BTreeMap;

    /// Every step of every cycle found in `h`: its cell as a graph that
    /// keeps cells has it, and as [`edge_cell`] finds it again.
    fn cells_both_ways(h: &History) -> Vec<(u32, u32)> {
        let mut c = Compact::from_history(h);
        c.renumber_cells();
        let store = c.take_store();
        let ctx = Ctx::build(&c, store);
        let versions = Versions::of(&ctx);
        let mut edges = Vec::new();
        ww_edges(&ctx, &versions.order, &mut |e| edges.push(e));
        let (judged, _) = judge_reads(&ctx, &versions, 0..ctx.n() as u32);
        replay_read_edges(&ctx, &judged.recorded, &mut |e| edges.push(e));
        let (completions, invocations) = real_time(&ctx);
        let kept = build_graph(ctx.n(), edges, completions, invocations);
        let mut pairs = Vec::new();
        each_cycle(&kept, |_, steps| {
            for s in steps {
                let lost = Step { cell: NONE, ..*s };
                pairs.push((s.cell, edge_cell(&ctx, &versions, &lost)));
            }
        });
        pairs
    }

    fn put(v: &str, commit_ts: u64, start_ts: u64) -> Version {
        Version {
            start_ts,
            commit_ts,
            kind: VersionKind::Put,
            value: Some(v.into()),
            data_missing: false,
        }
    }

    fn read(row: &str, v: &str) -> Op {
        Op::Read {
            row: row.into(),
            col: "c".into(),
            value: Some(v.into()),
        }
    }

    fn write(row: &str, v: &str) -> Op {
        Op::Write {
            row: row.into(),
            col: "c".into(),
            value: v.into(),
        }
    }

    /// Two transactions that each read both of the other's writes (read in
    /// an order other than the cells'): every edge of the cycle has a
    /// parallel twin on another cell, and the one found again is the one
    /// the graph took.
    fn parallel_edges() -> History {
        let txn = |id: u64, ts: (u64, u64), ops: Vec<Op>| Transaction {
            id,
            client: id,
            start_ts: ts.0,
            commit_ts: Some(ts.1),
            invoke_ns: 0,
            complete_ns: Some(100),
            outcome: crate::history::Outcome::Committed,
            abort_reason: None,
            ops,
            scans: Vec::new(),
            observer: None,
        };
        let t1 = vec![
            write("a", "1"),
            write("b", "1"),
            read("d", "2"),
            read("c", "2"),
        ];
        let t2 = vec![
            write("c", "2"),
            write("d", "2"),
            read("b", "1"),
            read("a", "1"),
        ];
        let cell = |row: &str, v: Version| CellState {
            row: row.into(),
            col: "c".into(),
            versions: vec![v],
        };
        let cells = vec![
            cell("a", put("1", 10, 1)),
            cell("b", put("1", 10, 1)),
            cell("c", put("2", 11, 2)),
            cell("d", put("2", 11, 2)),
        ];
        history(vec![txn(1, (1, 10), t1), txn(2, (2, 11), t2)], cells)
    }

    /// A history of `transactions` whose store holds `cells`.
    fn history(transactions: Vec<Transaction>, cells: Vec<CellState>) -> History {
        History {
            transactions,
            final_state: FinalState {
                cells,
                ..FinalState::default()
            },
            format: crate::history::FORMAT.into(),
            model: None,
            seed: 0,
            scenario: serde_json::Value::Null,
            events: Vec::new(),
            observers: Vec::new(),
        }
    }

    /// `n` transactions, four kinds in turn: a committed writer of its own
    /// cell, which the store also shows written before by a transaction
    /// the history lacks (so the cell's version order is not the index's
    /// as it stands); an aborted writer of its own cell; a committed
    /// reader of that aborted write (an aborted read), which also reads and
    /// writes the first kind's cell; and a committed reader and writer of
    /// that same cell, which read the same version (a lost update).
    fn spread(n: u64) -> History {
        let mut txns = Vec::new();
        let mut cells: BTreeMap<String, Vec<Version>> = BTreeMap::new();
        for i in 0..n {
            let (row, mine) = (format!("r{i}"), format!("w{i}"));
            let (start, commit) = (10 * i + 1, 10 * i + 5);
            let mut t = Transaction {
                id: i + 1,
                client: i % 7,
                start_ts: start,
                commit_ts: Some(commit),
                invoke_ns: start,
                complete_ns: Some(commit),
                outcome: crate::history::Outcome::Committed,
                abort_reason: None,
                ops: vec![write(&row, &mine)],
                scans: Vec::new(),
                observer: None,
            };
            let (cell, read_value) = (format!("r{}", i / 4 * 4), format!("w{}", i / 4 * 4));
            let mut put_in = |row: &str, v: Version| cells.entry(row.into()).or_default().push(v);
            match i % 4 {
                0 => {
                    put_in(&row, put(&format!("ghost{i}"), commit - 2, 20 * n + i));
                    put_in(&row, put(&mine, commit, start));
                }
                1 => {
                    t.commit_ts = None;
                    t.outcome = crate::history::Outcome::Aborted;
                }
                _ => {
                    if i % 4 == 2 {
                        t.ops
                            .insert(0, read(&format!("r{}", i - 1), &format!("w{}", i - 1)));
                    }
                    put_in(&row, put(&mine, commit, start));
                    let value = format!("u{i}");
                    t.ops.insert(0, read(&cell, &read_value));
                    t.ops.push(write(&cell, &value));
                    put_in(&cell, put(&value, commit, start));
                }
            }
            txns.push(t);
        }
        let cells = cells
            .into_iter()
            .map(|(row, versions)| CellState {
                row,
                col: "c".into(),
                versions,
            })
            .collect();
        history(txns, cells)
    }

    /// The version orders and judged reads worked out in halves on two
    /// threads give the rule the same report, allowed anomalies, edges and
    /// orders as worked out on one. The history has aborted reads past
    /// the five shown in each half, and cells with orders of their own in
    /// each half of the cells: both are checked, so the comparison covers
    /// the joins.
    #[test]
    fn the_graph_prepared_in_halves_is_the_graph_prepared_on_one_thread() {
        let h = spread(800);
        let mut c = Compact::from_history(&h);
        c.renumber_cells();
        let store = c.take_store();
        let ctx = Ctx::build(&c, store);
        let judge = |halves: bool| {
            let prepared = prepare(&ctx, halves);
            let order = &prepared.versions.order;
            let orders = (order.same.clone(), order.own_off.clone(), order.own.len());
            let (mut sink, mut allowed) = (Sink::new(ID), Sink::new(ID));
            let stats = check(&ctx, Some(prepared), &mut sink, &mut allowed);
            (
                sink.into_rule(NAME),
                allowed.into_allowed(),
                stats.edges,
                orders,
            )
        };
        let (one, two) = (judge(false), judge(true));
        assert_eq!(one.0, two.0);
        assert_eq!(one.1, two.1);
        assert_eq!(one.2, two.2);
        assert_eq!(one.3, two.3);
        assert_eq!(one.0.counts.get("G1a"), Some(&200), "{:?}", one.0.counts);
        assert_eq!(
            one.0.counts.get("lost-update"),
            Some(&200),
            "{:?}",
            one.0.counts
        );
        let own_off = &one.3.1;
        let mid = ctx.n_cells() / 2 / 64 * 64;
        assert!(own_off[mid] > 0 && own_off[ctx.n_cells()] > own_off[mid]);
        assert!(one.2 > 0);
    }

    #[test]
    fn edge_cells_found_again_are_the_graphs() {
        let pairs = cells_both_ways(&parallel_edges());
        assert!(!pairs.is_empty(), "the history has a cycle");
        assert!(pairs.iter().all(|&(kept, _)| kept != NONE));
        for (kept, found) in pairs {
            assert_eq!(kept, found);
        }
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
        let mut checked = 0;
        for entry in std::fs::read_dir(dir).expect("fixtures") {
            let path = entry.expect("entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if !name.starts_with("cycle_") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read");
            let h = crate::parse(&text).expect("valid fixture");
            for (kept, found) in cells_both_ways(&h) {
                assert_eq!(kept, found, "{name}");
                checked += 1;
            }
        }
        assert!(checked > 5, "{checked} steps checked");
    }

    /// The cycle's T1 -> T2 edge is T2's read of b, its first read (cell
    /// ids: a 0, b 1, d 2, c 3, in order of first mention): a resolver that
    /// took the smallest parallel cell (a) would fail the check above.
    #[test]
    fn the_first_edge_made_is_not_the_smallest_cell() {
        let pairs = cells_both_ways(&parallel_edges());
        assert_eq!(pairs, [(1, 1), (2, 2)]);
    }

    /// (writer, commit_ts, value) of each version of one cell, in order.
    type OrderAnew = Vec<(u32, u64, Val)>;

    /// Each cell's version order as it was built before orders borrowed
    /// the index's versions: (writer, commit_ts, the writer's final value)
    /// of every committed writer with a final write, the store's version
    /// first, then the earliest; and each final write's position in it.
    fn orders_built_anew(ctx: &Ctx<'_>) -> (Vec<OrderAnew>, Vec<u32>) {
        let mut pos = vec![NONE; ctx.fw.len()];
        let mut orders = Vec::new();
        for c in 0..ctx.n_cells() as u32 {
            let mut cand: Vec<(u32, bool, u64, u32)> = Vec::new();
            if ctx.cell_unique[c as usize] {
                for (v, from_store) in ctx.versions_sourced(c) {
                    let w = v.writer;
                    if w == NONE || !ctx.committed[w as usize] {
                        continue;
                    }
                    if let Some(f) = ctx.final_write_idx(w, c) {
                        cand.push((w, !from_store, v.commit_ts, f as u32));
                    }
                }
            }
            cand.sort_unstable();
            cand.dedup_by_key(|x| x.0);
            cand.sort_unstable_by_key(|x| (x.2, x.0));
            for (k, x) in cand.iter().enumerate() {
                pos[x.3 as usize] = k as u32;
            }
            let order = cand.iter().map(|x| (x.0, x.2, ctx.fw[x.3 as usize].value));
            orders.push(order.collect());
        }
        (orders, pos)
    }

    /// On every fixture, each cell's order (borrowed or its own) and each
    /// final write's position are those built anew; the fixtures hold both
    /// kinds of cell (borrowed, and a non-empty order of its own), so a
    /// wrong choice between them would show.
    #[test]
    fn borrowed_version_orders_are_the_orders_built_anew() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
        let (mut borrowed, mut own) = (0, 0);
        for entry in std::fs::read_dir(dir).expect("fixtures") {
            let path = entry.expect("entry").path();
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let Ok(h) = crate::parse(&text) else {
                continue;
            };
            let mut c = Compact::from_history(&h);
            c.renumber_cells();
            let store = c.take_store();
            let ctx = Ctx::build(&c, store);
            let versions = Versions::of(&ctx);
            let (want, want_pos) = orders_built_anew(&ctx);
            for (cell, want) in want.iter().enumerate() {
                let got: Vec<(u32, u64, Val)> = versions
                    .order
                    .of(cell as u32)
                    .iter()
                    .map(|v| (v.writer, v.commit_ts, v.value))
                    .collect();
                assert_eq!(&got, want, "{} cell {cell}", path.display());
                let same = versions.order.same[cell / 64] >> (cell % 64) & 1 == 1;
                if same {
                    borrowed += 1;
                } else if !got.is_empty() {
                    own += 1;
                }
            }
            let got_pos: Vec<u32> = (0..ctx.fw.len()).map(|f| versions.pos_of_fw(f)).collect();
            assert_eq!(got_pos, want_pos, "{}", path.display());
        }
        assert!(borrowed > 20, "{borrowed} borrowed orders");
        assert!(own > 0, "{own} non-empty orders of their own");
    }
}
