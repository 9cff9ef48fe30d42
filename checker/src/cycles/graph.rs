//! The dependency graph: per-cell version orders and the graph of
//! transactions and real-time completion points in compressed adjacency form.

use crate::ctx::{Ctx, Cv, NONE};

pub(crate) const WW: u8 = 0;
pub(crate) const WR: u8 = 1;
pub(crate) const RW: u8 = 2;
/// Transaction -> its completion point (weight 0).
pub(super) const RT_IN: u8 = 3;
/// Completion point -> the next completion point (weight 0).
pub(super) const RT_CHAIN: u8 = 4;
/// Latest completion point before an invocation -> that transaction (weight 1).
pub(super) const RT_OUT: u8 = 5;
/// A collapsed real-time step in an explained cycle.
pub(crate) const RT: u8 = 6;

/// A node id takes the low 29 bits of a stored edge, its kind the 3 above
/// (a graph holds fewer than 2^29 nodes: about 268 million transactions).
pub(super) const NODE_BITS: u32 = 29;
/// The bits of a stored edge that name its head.
pub(super) const NODE_MASK: u32 = (1 << NODE_BITS) - 1;

/// Per cell, the committed writers in version (commit_ts) order: each a
/// [`Cv`] (writer, commit_ts, and the writer's final value). A cell whose
/// committed versions are already exactly that (the usual case) borrows
/// them from the index rather than holding a copy (16 bytes a version).
pub(super) struct Order<'c> {
    /// The index whose committed versions a borrowed order is.
    pub(super) ctx: &'c Ctx<'c>,
    /// Bit `c`: cell `c`'s order is [`Ctx::versions`] as it stands.
    pub(super) same: Vec<u64>,
    /// Cell `c`'s own order, when it is not the same, is
    /// `own[own_off[c]..own_off[c + 1]]` (empty for a cell outside the graph).
    pub(super) own_off: Vec<u32>,
    /// The orders of the cells that do not borrow theirs, one after another.
    pub(super) own: Vec<Cv>,
}

impl Order<'_> {
    pub(super) fn of(&self, c: u32) -> &[Cv] {
        let i = c as usize;
        if self.same[i / 64] >> (i % 64) & 1 == 1 {
            self.ctx.versions(c)
        } else {
            &self.own[self.own_off[i] as usize..self.own_off[i + 1] as usize]
        }
    }

    pub(super) fn find(&self, c: u32, w: u32) -> Option<usize> {
        self.of(c).iter().position(|e| e.writer == w)
    }
}

/// The dependency graph in compressed adjacency form. Nodes `0..n_txn` are
/// transactions (by history index); the rest are real-time completion points.
pub(crate) struct Graph {
    pub(super) n_txn: usize,
    /// Node `v`'s edges are `off[v]..off[v + 1]` (4 bytes a node: a graph
    /// holds fewer than 2^32 edges, about 450 million transactions).
    pub(super) off: Vec<u32>,
    /// Each edge's head in the low [`NODE_BITS`] bits, its kind above them
    /// (4 bytes an edge, not 5).
    pub(super) to: Vec<u32>,
    /// Each edge's cell, when the builder keeps them ([`build_graph`]);
    /// empty otherwise (see [`Graph::cell`]).
    cell: Vec<u32>,
}

impl Graph {
    pub(super) fn n(&self) -> usize {
        self.off.len() - 1
    }

    /// The head of edge `e`.
    pub(super) fn to(&self, e: usize) -> u32 {
        self.to[e] & NODE_MASK
    }

    /// The kind of edge `e`.
    pub(super) fn kind(&self, e: usize) -> u8 {
        (self.to[e] >> NODE_BITS) as u8
    }

    /// How many edges the graph has.
    pub(super) fn n_edges(&self) -> usize {
        self.to.len()
    }

    /// Node `v`'s edges (indices for [`Graph::to`] and [`Graph::kind`]).
    pub(super) fn edges(&self, v: u32) -> std::ops::Range<usize> {
        self.off[v as usize] as usize..self.off[v as usize + 1] as usize
    }

    pub(super) fn weight(&self, node: u32) -> u32 {
        u32::from((node as usize) < self.n_txn)
    }

    /// The cell of edge `e`, or `NONE` when the graph keeps no cells (the
    /// caller finds it again for the few edges it explains).
    pub(super) fn cell(&self, e: usize) -> u32 {
        self.cell.get(e).copied().unwrap_or(NONE)
    }
}

/// Builds the graph of `n` transactions from `edges` (from, to, cell, kind)
/// and real-time order: [`build_graph_with`] on a list.
pub(crate) fn build_graph(
    n: usize,
    edges: Vec<(u32, u32, u32, u8)>,
    points: Vec<(u64, u32)>,
    invocations: impl Iterator<Item = (u32, u64)>,
) -> Graph {
    let each = |emit: &mut dyn FnMut(Edge)| edges.iter().for_each(|&e| emit(e));
    let mut g = build_graph_with(n, each, points, invocations);
    // Placed as `build_graph_with` placed the edges: by node, in order.
    let mut at = g.off.clone();
    g.cell = vec![NONE; g.to.len()];
    for &(from, _, cell, _) in &edges {
        g.cell[at[from as usize] as usize] = cell;
        at[from as usize] += 1;
    }
    g
}

/// A graph edge before the graph is built: (from, to, cell, kind).
pub(crate) type Edge = (u32, u32, u32, u8);

/// Builds the graph of `n` transactions from the edges `each` hands to its
/// argument (from, to, cell, kind) and real-time order. The graph keeps no
/// cells (4 of 9 bytes an edge): an explanation finds its edges' again. `each` is called
/// twice, once to count each node's edges and once to place them, and must
/// hand over the same edges in the same order both times: no list of all
/// edges is ever held beside the graph. `points` are (complete_ns, txn) of
/// the transactions that completed, `invocations` (txn, invoke_ns) of those
/// that may follow them in real time, in transaction order.
///
/// Real-time order goes through a chain of completion points: A reaches B
/// exactly when A completed before B was invoked, with O(n) edges. Each
/// node's edges keep the order in which they were handed over: its own,
/// then its completion link, then (for a point) the chain link and the
/// links to the transactions invoked after it.
pub(crate) fn build_graph_with(
    n: usize,
    mut each: impl FnMut(&mut dyn FnMut(Edge)),
    mut points: Vec<(u64, u32)>,
    invocations: impl Iterator<Item = (u32, u64)>,
) -> Graph {
    // By time, then transaction: as a stable sort of a list made in
    // transaction order. In place (no second buffer as a radix sort
    // needs), and fast on the nearly sorted order of a real history.
    points.sort_unstable();
    let aux0 = n as u32;
    // The point just before each invocation, indexed by the invoked transaction (4 bytes a transaction, not 8 a
    // pair): `NONE` for none.
    let mut after: Vec<u32> = vec![NONE; n];
    let mut last = None;
    for (b, invoke) in invocations {
        debug_assert!(
            last.is_none_or(|l| l < b),
            "invocations in transaction order"
        );
        last = Some(b);
        let p = points.partition_point(|x| x.0 < invoke);
        if p > 0 {
            after[b as usize] = aux0 + p as u32 - 1;
        }
    }
    // From here on a point is its transaction alone (4 bytes, not 16).
    let points: Vec<u32> = points.into_iter().map(|(_, t)| t).collect();
    let rt = RealTime {
        aux0,
        points: &points,
        after: &after,
    };

    let total = n + points.len();
    assert!(
        total <= NODE_MASK as usize,
        "a dependency graph of fewer than 2^29 nodes"
    );
    // goff[from + 1] counts from's edges, then (summed) is where they end.
    let mut goff = vec![0u32; total + 1];
    let mut count = |e: Edge| goff[e.0 as usize + 1] += 1;
    each(&mut count);
    rt.edges().for_each(&mut count);
    for i in 0..total {
        goff[i + 1] = goff[i + 1]
            .checked_add(goff[i])
            .expect("a dependency graph of fewer than 2^32 edges");
    }
    let m = goff[total] as usize;
    let mut g = Graph {
        n_txn: n,
        off: goff,
        to: vec![0; m],
        cell: Vec::new(),
    };
    // off[from] serves as from's cursor while placing (it ends as the
    // start of the next node's edges), and is shifted back after.
    let mut place = |(from, to, _, kind): Edge| {
        let p = g.off[from as usize] as usize;
        g.to[p] = to | u32::from(kind) << NODE_BITS;
        g.off[from as usize] += 1;
    };
    each(&mut place);
    rt.edges().for_each(&mut place);
    g.off.copy_within(0..total, 1);
    g.off[0] = 0;
    g
}

/// The real-time edges of a graph, generated on demand (twice: once to
/// count them per node, once to place them).
struct RealTime<'a> {
    aux0: u32,
    /// The transactions that completed, by completion time.
    points: &'a [u32],
    /// Per transaction, the point just before its invocation, or `NONE`.
    after: &'a [u32],
}

impl RealTime<'_> {
    fn edges(&self) -> impl Iterator<Item = (u32, u32, u32, u8)> + '_ {
        let aux0 = self.aux0;
        let last = self.points.len().saturating_sub(1);
        let chain = self.points.iter().enumerate().flat_map(move |(k, &t)| {
            let point = aux0 + k as u32;
            let next = (k < last).then_some((point, point + 1, NONE, RT_CHAIN));
            std::iter::once((t, point, NONE, RT_IN)).chain(next)
        });
        let out = (0..self.after.len() as u32)
            .filter(|&b| self.after[b as usize] != NONE)
            .map(|b| (self.after[b as usize], b, NONE, RT_OUT));
        chain.chain(out)
    }
}
