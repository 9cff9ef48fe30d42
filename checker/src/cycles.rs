//! Rule `no_dependency_cycles`: a black-box dependency graph over committed
//! transactions (ww by version order, wr, rw anti-dependencies, real-time
//! order), built from what clients read on cells whose written values are
//! unique, with Adya's anomaly classes.
//!
//! Cycles are found per strongly connected component (Tarjan), trying the most
//! severe class first; each explanation is a shortest cycle (0-1 BFS) inside
//! the component. Snapshot isolation allows exactly the cycles with two
//! adjacent rw edges (write skew): those go to the "allowed" section.

use crate::compact::OpKind;
use crate::ctx::{Ctx, NONE, fmt_value};
use crate::fx::FxMap;
use crate::report::{CycleStep, Draft, Sink};
use std::collections::VecDeque;

pub(crate) const ID: &str = "no_dependency_cycles";
pub(crate) const NAME: &str = "the dependency graph of committed transactions (on cells with unique written values) has no cycle that snapshot isolation forbids, no aborted or intermediate read and no lost update";

pub(crate) const WW: u8 = 0;
pub(crate) const WR: u8 = 1;
pub(crate) const RW: u8 = 2;
/// Transaction -> its completion point (weight 0).
const RT_IN: u8 = 3;
/// Completion point -> the next completion point (weight 0).
const RT_CHAIN: u8 = 4;
/// Latest completion point before an invocation -> that transaction (weight 1).
const RT_OUT: u8 = 5;
/// A collapsed real-time step in an explained cycle.
pub(crate) const RT: u8 = 6;

/// Total work (edge visits) allowed for the targeted G-single search; past
/// it the exact search for forbidden cycles still runs.
const G_SINGLE_BUDGET: u64 = 50_000_000;

/// Total edges examined while turning a closed walk into a simple cycle.
const SIMPLIFY_BUDGET: usize = 20_000_000;

/// How many steps of a cycle, and transactions, an explanation spells out.
pub(crate) const MAX_STEPS: usize = 200;
pub(crate) const MAX_DESCRIBED: usize = 20;

/// What the rule found besides findings, for the report's statistics.
pub(crate) struct GraphStats {
    pub unique_cells: u64,
    pub edges: u64,
}

/// Per cell, the committed writers in version (commit_ts) order.
struct Order<'a> {
    off: Vec<usize>,
    /// (writer, commit_ts, the writer's final value).
    list: Vec<(u32, u64, &'a str)>,
}

impl<'a> Order<'a> {
    fn of(&self, c: u32) -> &[(u32, u64, &'a str)] {
        &self.list[self.off[c as usize]..self.off[c as usize + 1]]
    }

    fn find(&self, c: u32, w: u32) -> Option<usize> {
        self.of(c).iter().position(|e| e.0 == w)
    }
}

/// The dependency graph in compressed adjacency form. Nodes `0..n_txn` are
/// transactions (by history index); the rest are real-time completion points.
pub(crate) struct Graph {
    n_txn: usize,
    off: Vec<usize>,
    to: Vec<u32>,
    kind: Vec<u8>,
    cell: Vec<u32>,
}

impl Graph {
    fn n(&self) -> usize {
        self.off.len() - 1
    }

    fn weight(&self, node: u32) -> u32 {
        u32::from((node as usize) < self.n_txn)
    }
}

pub(crate) fn check(ctx: &Ctx<'_>, sink: &mut Sink, allowed: &mut Sink) -> GraphStats {
    let n = ctx.n();
    let n_cells = ctx.cells.len();

    // Version order of unique-value cells; the store's record wins over the
    // client's word when a writer appears twice in one cell.
    let mut cand: Vec<(u32, u32, bool, u64, u32)> = Vec::new();
    for c in 0..n_cells as u32 {
        if !ctx.cell_unique[c as usize] {
            continue;
        }
        for v in ctx.versions(c) {
            let w = v.writer;
            if w == NONE || !ctx.committed[w as usize] {
                continue;
            }
            let Some(f) = ctx.final_write_idx(w, c) else {
                continue;
            };
            cand.push((c, w, !v.from_store, v.commit_ts, f as u32));
        }
    }
    cand.sort_unstable();
    cand.dedup_by_key(|x| (x.0, x.1));
    cand.sort_unstable_by_key(|x| (x.0, x.3, x.1));
    let mut off = vec![0usize; n_cells + 1];
    for x in &cand {
        off[x.0 as usize + 1] += 1;
    }
    for i in 0..n_cells {
        off[i + 1] += off[i];
    }
    let mut pos_of_fw = vec![NONE; ctx.fw.len()];
    for (k, x) in cand.iter().enumerate() {
        pos_of_fw[x.4 as usize] = (k - off[x.0 as usize]) as u32;
    }
    let order = Order {
        off,
        list: cand
            .iter()
            .map(|x| (x.1, x.3, ctx.fw[x.4 as usize].value.unwrap_or("")))
            .collect(),
    };
    drop(cand);

    // Reserve the most edges there can be, so the vector never doubles:
    // ww per version, wr + rw per read, three real-time links per transaction.
    let committed_reads: usize = (0..n as u32)
        .filter(|&t| ctx.committed[t as usize])
        .map(|t| {
            ctx.ops(t)
                .iter()
                .zip(ctx.op_cells(t))
                .filter(|(o, c)| o.kind == OpKind::Read && ctx.cell_unique[**c as usize])
                .count()
        })
        .sum();
    let mut edges: Vec<(u32, u32, u32, u8)> =
        Vec::with_capacity(order.list.len() + 2 * committed_reads + 3 * n);
    for c in 0..n_cells as u32 {
        for pair in order.of(c).windows(2) {
            edges.push((pair[0].0, pair[1].0, c, WW));
        }
    }

    // Reads of committed transactions: wr and rw edges, aborted and
    // intermediate reads, and candidates for lost updates.
    let mut lost: Vec<(u32, u32, u32)> = Vec::new();
    for r in 0..n as u32 {
        if !ctx.committed[r as usize] {
            continue;
        }
        let txn = ctx.txn(r);
        let cells = ctx.op_cells(r);
        for (j, op) in ctx.ops(r).iter().enumerate() {
            if op.kind != OpKind::Read {
                continue;
            }
            let value = ctx.value(op);
            let c = cells[j];
            if !ctx.cell_unique[c as usize] {
                continue;
            }
            let ord = order.of(c);
            let key = match value {
                None => {
                    if let Some(first) = ord.first()
                        && first.0 != r
                    {
                        edges.push((r, first.0, c, RW));
                    }
                    0
                }
                Some(v) => {
                    // Fast path: the version a correct snapshot read returns.
                    let p = ord.partition_point(|e| e.1 < txn.start_ts);
                    let (w, pos) = match p.checked_sub(1) {
                        Some(q) if ord[q].2 == v => (ord[q].0, q as u32),
                        _ => {
                            let Some(info) = ctx.writer_of(c, v) else {
                                continue; // nobody wrote it: judged by snapshot_reads
                            };
                            let w = info.txn;
                            if w == r {
                                continue;
                            }
                            if !ctx.committed[w as usize] {
                                sink.add("G1a", || aborted_read(ctx, r, w, c, v));
                                continue;
                            }
                            if info.fw == NONE {
                                sink.add("G1b", || intermediate_read(ctx, r, w, c, v));
                                continue;
                            }
                            (w, pos_of_fw[info.fw as usize])
                        }
                    };
                    if w == r {
                        continue;
                    }
                    edges.push((w, r, c, WR));
                    if pos == NONE {
                        continue;
                    }
                    if let Some(next) = ord.get(pos as usize + 1)
                        && next.0 != r
                    {
                        edges.push((r, next.0, c, RW));
                    }
                    pos + 1
                }
            };
            if ctx.final_write_idx(r, c).is_some() {
                lost.push((c, key, r));
            }
        }
    }

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
            sink.add("lost-update", || lost_update(ctx, &order, group));
        }
        i = j;
    }

    let completions = (0..n as u32)
        .filter(|&t| ctx.committed[t as usize])
        .filter_map(|t| ctx.txn(t).complete_ns.map(|d| (d, t)))
        .collect();
    let invocations = (0..n as u32)
        .filter(|&t| ctx.committed[t as usize])
        .map(|t| (t, ctx.txn(t).invoke_ns));
    let g = build_graph(n, edges, completions, invocations);

    each_cycle(&g, |class, is_allowed, steps| {
        let target = if is_allowed {
            &mut *allowed
        } else {
            &mut *sink
        };
        target.add(class, || explain_cycle(ctx, &order, class, steps));
    });

    GraphStats {
        unique_cells: ctx.cell_unique.iter().filter(|&&u| u).count() as u64,
        edges: g.to.len() as u64,
    }
}

/// Builds the graph of `n` transactions from `edges` (from, to, cell, kind)
/// and real-time order. `points` are (complete_ns, txn) of the transactions
/// that completed, `invocations` (txn, invoke_ns) of those that may follow
/// them in real time.
pub(crate) fn build_graph(
    n: usize,
    mut edges: Vec<(u32, u32, u32, u8)>,
    mut points: Vec<(u64, u32)>,
    invocations: impl Iterator<Item = (u32, u64)>,
) -> Graph {
    // Real-time order through a chain of completion points: A reaches B
    // exactly when A completed before B was invoked, with O(n) edges.
    points.sort_unstable();
    let aux0 = n as u32;
    for (k, &(_, t)) in points.iter().enumerate() {
        edges.push((t, aux0 + k as u32, NONE, RT_IN));
        if k + 1 < points.len() {
            edges.push((aux0 + k as u32, aux0 + k as u32 + 1, NONE, RT_CHAIN));
        }
    }
    for (b, invoke) in invocations {
        let p = points.partition_point(|x| x.0 < invoke);
        if p > 0 {
            edges.push((aux0 + p as u32 - 1, b, NONE, RT_OUT));
        }
    }

    let total = n + points.len();
    let mut goff = vec![0usize; total + 1];
    for e in &edges {
        goff[e.0 as usize + 1] += 1;
    }
    for i in 0..total {
        goff[i + 1] += goff[i];
    }
    let m = edges.len();
    let mut g = Graph {
        n_txn: n,
        off: goff,
        to: vec![0; m],
        kind: vec![0; m],
        cell: vec![0; m],
    };
    let mut fill: Vec<usize> = g.off[..total].to_vec();
    for (from, to, cell, kind) in edges {
        let p = fill[from as usize];
        g.to[p] = to;
        g.kind[p] = kind;
        g.cell[p] = cell;
        fill[from as usize] += 1;
    }
    drop(fill);
    g
}

/// Calls `found(class, allowed, steps)` with the most severe cycle of each
/// strongly connected component, in order of their smallest transaction.
pub(crate) fn each_cycle(g: &Graph, mut found: impl FnMut(&'static str, bool, &[Step])) {
    // Strongly connected components, in order of their smallest transaction.
    let (comp, ncomp) = tarjan(g.n(), &g.off, &g.to);
    let mut size = vec![0u32; ncomp as usize];
    for &c in &comp {
        size[c as usize] += 1;
    }
    let mut rank = vec![NONE; ncomp as usize];
    let mut next_rank = 0u32;
    let mut members: Vec<(u32, u32)> = Vec::new();
    for (v, &c) in comp.iter().enumerate() {
        if size[c as usize] < 2 {
            continue;
        }
        if rank[c as usize] == NONE {
            rank[c as usize] = next_rank;
            next_rank += 1;
        }
        members.push((rank[c as usize], v as u32));
    }
    drop(comp);
    members.sort_unstable();

    let mut local_id = vec![NONE; g.n()];
    let mut budget = G_SINGLE_BUDGET;
    let mut i = 0;
    while i < members.len() {
        let mut j = i;
        while j < members.len() && members[j].0 == members[i].0 {
            j += 1;
        }
        let nodes: Vec<u32> = members[i..j].iter().map(|x| x.1).collect();
        for (k, &v) in nodes.iter().enumerate() {
            local_id[v as usize] = k as u32;
        }
        if let Some(raw) = analyze(g, &nodes, &local_id, &mut budget) {
            let steps = collapse(g, &raw);
            let (class, is_allowed) = classify(&steps);
            found(class, is_allowed, &steps);
        }
        for &v in &nodes {
            local_id[v as usize] = NONE;
        }
        i = j;
    }
}

/// Tarjan's algorithm, iterative. Components are numbered in completion
/// order: if x reaches y in another component, y's number is smaller.
fn tarjan(n: usize, off: &[usize], to: &[u32]) -> (Vec<u32>, u32) {
    const UNSET: u32 = u32::MAX;
    let mut index = vec![UNSET; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut comp = vec![UNSET; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut call: Vec<(u32, usize)> = Vec::new();
    let mut next = 0u32;
    let mut ncomp = 0u32;
    for s in 0..n {
        if index[s] != UNSET {
            continue;
        }
        index[s] = next;
        low[s] = next;
        next += 1;
        stack.push(s as u32);
        on_stack[s] = true;
        call.push((s as u32, off[s]));
        while let Some(frame) = call.last_mut() {
            let v = frame.0 as usize;
            if frame.1 < off[v + 1] {
                let w = to[frame.1] as usize;
                frame.1 += 1;
                if index[w] == UNSET {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w as u32);
                    on_stack[w] = true;
                    call.push((w as u32, off[w]));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                call.pop();
                if let Some(parent) = call.last() {
                    let p = parent.0 as usize;
                    low[p] = low[p].min(low[v]);
                }
                if low[v] == index[v] {
                    while let Some(w) = stack.pop() {
                        on_stack[w as usize] = false;
                        comp[w as usize] = ncomp;
                        if w as usize == v {
                            break;
                        }
                    }
                    ncomp += 1;
                }
            }
        }
    }
    (comp, ncomp)
}

/// A subgraph of one component with local node ids. In a state graph, local
/// node `2i + f` is component node `i` entered by an rw edge (`f = 1`) or not.
struct Local<'g> {
    g: &'g Graph,
    nodes: &'g [u32],
    state: bool,
    off: Vec<usize>,
    to: Vec<u32>,
    /// The graph edge each local edge stands for.
    eid: Vec<u32>,
}

impl Local<'_> {
    fn n(&self) -> usize {
        self.off.len() - 1
    }

    fn global(&self, x: u32) -> u32 {
        if self.state {
            self.nodes[(x / 2) as usize]
        } else {
            self.nodes[x as usize]
        }
    }

    fn weight(&self, x: u32) -> u32 {
        self.g.weight(self.global(x))
    }
}

/// The component's edges whose kind passes `keep`.
fn sub<'g>(
    g: &'g Graph,
    nodes: &'g [u32],
    local_id: &[u32],
    keep: impl Fn(u8) -> bool,
) -> Local<'g> {
    let mut off = Vec::with_capacity(nodes.len() + 1);
    let mut to = Vec::new();
    let mut eid = Vec::new();
    off.push(0);
    for &v in nodes {
        for e in g.off[v as usize]..g.off[v as usize + 1] {
            let w = local_id[g.to[e] as usize];
            if w != NONE && keep(g.kind[e]) {
                to.push(w);
                eid.push(e as u32);
            }
        }
        off.push(to.len());
    }
    Local {
        g,
        nodes,
        state: false,
        off,
        to,
        eid,
    }
}

/// The state graph whose cycles are exactly the closed walks with no two
/// consecutive rw edges: the cycles snapshot isolation forbids.
fn state_graph<'g>(g: &'g Graph, nodes: &'g [u32], local_id: &[u32]) -> Local<'g> {
    let mut off = Vec::with_capacity(2 * nodes.len() + 1);
    let mut to = Vec::new();
    let mut eid = Vec::new();
    off.push(0);
    for &v in nodes {
        for after_rw in [false, true] {
            for e in g.off[v as usize]..g.off[v as usize + 1] {
                let w = local_id[g.to[e] as usize];
                if w == NONE {
                    continue;
                }
                if g.kind[e] == RW {
                    if !after_rw {
                        to.push(2 * w + 1);
                        eid.push(e as u32);
                    }
                } else {
                    to.push(2 * w);
                    eid.push(e as u32);
                }
            }
            off.push(to.len());
        }
    }
    Local {
        g,
        nodes,
        state: true,
        off,
        to,
        eid,
    }
}

/// A cycle as (from node, graph edge) pairs in order.
type RawCycle = Vec<(u32, u32)>;

/// Shortest walk (0-1 BFS: entering a transaction costs 1, a completion
/// point 0) from `src` to `dst` through nodes passing `allow`; with
/// `src == dst`, a shortest cycle through `src`. Charges `budget`.
fn bfs(
    l: &Local<'_>,
    src: u32,
    dst: u32,
    allow: impl Fn(u32) -> bool,
    budget: &mut u64,
) -> Option<RawCycle> {
    let m = l.n();
    let Some(left) = budget.checked_sub(m as u64) else {
        *budget = 0;
        return None;
    };
    *budget = left;
    let mut dist = vec![u32::MAX; m];
    let mut parent: Vec<(u32, usize)> = vec![(NONE, 0); m];
    let mut queue: VecDeque<(u32, u32)> = VecDeque::new();
    dist[src as usize] = 0;
    queue.push_back((src, 0));
    let cycle = src == dst;
    let mut best: Option<(u32, usize, u32)> = None;
    while let Some((u, d)) = queue.pop_front() {
        if d > dist[u as usize] {
            continue;
        }
        if best.is_some_and(|b| d >= b.0) {
            break;
        }
        if !cycle && u == dst {
            break;
        }
        for p in l.off[u as usize]..l.off[u as usize + 1] {
            *budget = budget.checked_sub(1)?;
            let v = l.to[p];
            if !allow(v) {
                continue;
            }
            let w = l.weight(v);
            let nd = d + w;
            if cycle && v == dst {
                if best.is_none_or(|b| nd < b.0) {
                    best = Some((nd, p, u));
                }
                continue;
            }
            if nd < dist[v as usize] {
                dist[v as usize] = nd;
                parent[v as usize] = (u, p);
                if w == 0 {
                    queue.push_front((v, nd));
                } else {
                    queue.push_back((v, nd));
                }
            }
        }
    }
    let mut path: Vec<(u32, usize)> = Vec::new();
    let mut cur = if cycle {
        let (_, p, u) = best?;
        path.push((u, p));
        u
    } else {
        if dist[dst as usize] == u32::MAX {
            return None;
        }
        dst
    };
    while cur != src {
        let (pu, pp) = parent[cur as usize];
        if pu == NONE {
            return None;
        }
        path.push((pu, pp));
        cur = pu;
    }
    path.reverse();
    Some(
        path.into_iter()
            .map(|(u, p)| (l.global(u), l.eid[p]))
            .collect(),
    )
}

/// A shortest cycle in the first non-trivial component of `l`, if any, and
/// `l`'s component numbering.
fn find_cycle(l: &Local<'_>) -> (Option<RawCycle>, Vec<u32>) {
    let (comp, ncomp) = tarjan(l.n(), &l.off, &l.to);
    let mut size = vec![0u32; ncomp as usize];
    for &c in &comp {
        size[c as usize] += 1;
    }
    let Some(src) = (0..l.n() as u32).find(|&x| size[comp[x as usize] as usize] >= 2) else {
        return (None, comp);
    };
    let target = comp[src as usize];
    let mut unlimited = u64::MAX;
    let found = bfs(l, src, src, |v| comp[v as usize] == target, &mut unlimited);
    (found, comp)
}

/// The most severe cycle of one component, or its allowed one.
fn analyze(g: &Graph, nodes: &[u32], local_id: &[u32], budget: &mut u64) -> Option<RawCycle> {
    // G0: write dependencies (and real time) only.
    let l = sub(g, nodes, local_id, |k| k != RW && k != WR);
    if let (Some(c), _) = find_cycle(&l) {
        return Some(c);
    }
    // G1c: no anti-dependencies.
    let nonrw = sub(g, nodes, local_id, |k| k != RW);
    let (found, comp) = find_cycle(&nonrw);
    if found.is_some() {
        return found;
    }
    // G-single: an rw edge a -> b closed by a path b -> a without rw edges.
    // The component numbering prunes pairs where b cannot reach a.
    'single: for (i, &a) in nodes.iter().enumerate() {
        for e in g.off[a as usize]..g.off[a as usize + 1] {
            if g.kind[e] != RW {
                continue;
            }
            let b = local_id[g.to[e] as usize];
            if b == NONE || comp[i] >= comp[b as usize] {
                continue;
            }
            if *budget == 0 {
                break 'single;
            }
            if let Some(path) = bfs(&nonrw, b, i as u32, |_| true, budget) {
                let mut c = vec![(a, e as u32)];
                c.extend(path);
                return Some(c);
            }
        }
    }
    // Any other forbidden cycle (no two adjacent rw edges): exact search.
    if let (Some(walk), _) = find_cycle(&state_graph(g, nodes, local_id)) {
        return Some(simplify(g, walk));
    }
    // Only allowed cycles remain: show one.
    let all = sub(g, nodes, local_id, |_| true);
    let mut unlimited = u64::MAX;
    bfs(&all, 0, 0, |_| true, &mut unlimited)
}

fn no_adjacent_rw(g: &Graph, c: &[(u32, u32)]) -> bool {
    (0..c.len())
        .all(|k| !(g.kind[c[k].1 as usize] == RW && g.kind[c[(k + 1) % c.len()].1 as usize] == RW))
}

/// Turns a closed walk with no two adjacent rw edges into a simple cycle with
/// the same property: split at a repeated node; one half always keeps it.
fn simplify(g: &Graph, mut c: RawCycle) -> RawCycle {
    // Each round is linear; a pathological walk keeps its repeats rather
    // than cost quadratic time (it still witnesses a forbidden cycle).
    let mut work = 0usize;
    loop {
        work += c.len();
        if work > SIMPLIFY_BUDGET {
            return c;
        }
        let mut seen: FxMap<u32, usize> = FxMap::default();
        let mut repeat = None;
        for (k, &(from, _)) in c.iter().enumerate() {
            if let Some(&first) = seen.get(&from) {
                repeat = Some((first, k));
                break;
            }
            seen.insert(from, k);
        }
        let Some((i, j)) = repeat else {
            return c;
        };
        let inner: RawCycle = c[i..j].to_vec();
        c = if no_adjacent_rw(g, &inner) {
            inner
        } else {
            c[j..].iter().chain(&c[..i]).copied().collect()
        };
    }
}

/// One step of an explained cycle between two transactions.
pub(crate) struct Step {
    pub(crate) from: u32,
    pub(crate) to: u32,
    pub(crate) kind: u8,
    pub(crate) cell: u32,
}

/// Merges each run of real-time edges through completion points into one step.
fn collapse(g: &Graph, raw: &[(u32, u32)]) -> Vec<Step> {
    let len = raw.len();
    let start = raw
        .iter()
        .position(|&(from, _)| (from as usize) < g.n_txn)
        .unwrap_or(0);
    let mut steps = Vec::new();
    let mut rt_from = NONE;
    for k in 0..len {
        let (from, e) = raw[(start + k) % len];
        let e = e as usize;
        match g.kind[e] {
            RT_IN => rt_from = from,
            RT_CHAIN => {}
            RT_OUT if rt_from != NONE => steps.push(Step {
                from: rt_from,
                to: g.to[e],
                kind: RT,
                cell: NONE,
            }),
            RT_OUT => {}
            kind => steps.push(Step {
                from,
                to: g.to[e],
                kind,
                cell: g.cell[e],
            }),
        }
    }
    steps
}

fn classify(steps: &[Step]) -> (&'static str, bool) {
    let rw = steps.iter().filter(|s| s.kind == RW).count();
    let wr = steps.iter().filter(|s| s.kind == WR).count();
    let adjacent =
        (0..steps.len()).any(|k| steps[k].kind == RW && steps[(k + 1) % steps.len()].kind == RW);
    match rw {
        0 if wr == 0 => ("G0", false),
        0 => ("G1c", false),
        1 => ("G-single", false),
        _ if adjacent => ("G2-item", true),
        _ => ("G2-item-nonadjacent", false),
    }
}

pub(crate) fn plain(class: &str) -> &'static str {
    match class {
        "G0" => "write cycle: the transactions overwrote one another in a circle",
        "G1c" => {
            "circular information flow: each transaction saw or overwrote the next one's effects"
        }
        "G-single" => "read skew: a cycle with exactly one anti-dependency (rw) edge",
        "G2-item" => {
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

fn explain_cycle(ctx: &Ctx<'_>, order: &Order, class: &str, steps: &[Step]) -> Draft {
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
    fmt_value(ctx.final_write(t, c).and_then(|w| w.value))
}

/// "committed at 118" for a writer's version of a cell.
fn committed_at(order: &Order, c: u32, t: u32) -> String {
    match order.find(c, t) {
        Some(p) => format!("committed at {}", order.of(c)[p].1),
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
            let commit = ord.get(p).map_or(0, |e| e.1);
            let (seen, overwrite) = match p.checked_sub(1).map(|k| ord[k].0) {
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
            "T{a} completed at {} ns, before T{b} was invoked at {} ns (real-time order)",
            ctx.txn(s.from).complete_ns.unwrap_or_default(),
            ctx.txn(s.to).invoke_ns
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

fn aborted_read(ctx: &Ctx<'_>, r: u32, w: u32, c: u32, v: &str) -> Draft {
    Draft::new(
        format!(
            "T{} committed after reading {} = {}, which T{} wrote, but T{} never committed ({})",
            ctx.id(r),
            ctx.cell_name(c),
            fmt_value(Some(v)),
            ctx.id(w),
            ctx.id(w),
            outcome_words(ctx, w)
        ),
        vec![ctx.id(r), ctx.id(w)],
        vec![ctx.describe_txn(r), ctx.describe_txn(w)],
    )
}

fn intermediate_read(ctx: &Ctx<'_>, r: u32, w: u32, c: u32, v: &str) -> Draft {
    Draft::new(
        format!(
            "T{} read {} = {}, an intermediate value: T{} wrote it but then overwrote it with {} in the same transaction",
            ctx.id(r),
            ctx.cell_name(c),
            fmt_value(Some(v)),
            ctx.id(w),
            written(ctx, w, c)
        ),
        vec![ctx.id(r), ctx.id(w)],
        vec![ctx.describe_txn(r), ctx.describe_txn(w)],
    )
}

fn lost_update(ctx: &Ctx<'_>, order: &Order, group: &[(u32, u32, u32)]) -> Draft {
    let c = group[0].0;
    let key = group[0].1;
    let version = match key.checked_sub(1).and_then(|p| order.of(c).get(p as usize)) {
        Some(&(w, _, _)) => format!("{} (the version T{} wrote)", written(ctx, w, c), ctx.id(w)),
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
