//! Finding cycles: strongly connected components (Tarjan), then per
//! component the most severe class first, each as a shortest cycle (0-1 BFS).

use super::graph::{Graph, NODE_MASK, RT, RT_CHAIN, RT_IN, RT_OUT, RW, WR};
use crate::FindingClass;
use crate::ctx::NONE;
use crate::fx::FxMap;
use std::collections::VecDeque;

/// Total work (edge visits) allowed for the targeted G-single search; past
/// it the exact search for forbidden cycles still runs.
const G_SINGLE_BUDGET: u64 = 50_000_000;

/// Total edges examined while turning a closed walk into a simple cycle.
const SIMPLIFY_BUDGET: usize = 20_000_000;

/// Calls `found(class, steps)` with the most severe cycle of each
/// strongly connected component, in order of their smallest transaction.
pub(crate) fn each_cycle(g: &Graph, mut found: impl FnMut(FindingClass, &[Step])) {
    // Strongly connected components, in order of their smallest transaction.
    let (comp, ncomp) = tarjan(g.n(), &g.off, &g.to);
    // Components of two nodes or more: a bit a component for "seen" and
    // one for "seen again" (not a 4-byte size and rank each).
    let words = (ncomp as usize).div_ceil(64);
    let (mut seen, mut again) = (vec![0u64; words], vec![0u64; words]);
    for &c in &comp {
        let (w, bit) = (c as usize / 64, 1u64 << (c % 64));
        again[w] |= seen[w] & bit;
        seen[w] |= bit;
    }
    drop(seen);
    // Ranked in order of their smallest node: few, so a map.
    let mut rank: FxMap<u32, u32> = FxMap::default();
    let mut members: Vec<(u32, u32)> = Vec::new();
    for (v, &c) in comp.iter().enumerate() {
        if again[c as usize / 64] >> (c % 64) & 1 == 0 {
            continue;
        }
        let next = rank.len() as u32;
        let r = *rank.entry(c).or_insert(next);
        members.push((r, v as u32));
    }
    drop(comp);
    drop(again);
    drop(rank);
    if members.is_empty() {
        return;
    }
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
            found(classify(&steps), &steps);
        }
        for &v in &nodes {
            local_id[v as usize] = NONE;
        }
        i = j;
    }
}

/// Tarjan's algorithm (Pearce's variant), iterative, on edges `to` whose
/// bits above [`NODE_MASK`] are ignored (a graph's edge kinds). Components are
/// numbered in completion order: if x reaches y in another component, y's
/// number is smaller.
fn tarjan(n: usize, off: &[u32], to: &[u32]) -> (Vec<u32>, u32) {
    // Pearce's variant: one number per node (4 bytes, not Tarjan's 12).
    // While a node is open it holds the smallest visit index it reaches;
    // once its component is complete, that component's number, counted
    // down from the top so that it stays above every open node's index
    // (an edge into a complete component then lowers nothing).
    const UNSEEN: u32 = 0;
    let mut rindex = vec![UNSEEN; n];
    let mut stack: Vec<u32> = Vec::new();
    // (node, how many of its edges were followed, whether it is still its
    // component's root as far as seen).
    let mut call: Vec<(u32, u32, bool)> = Vec::new();
    let mut index = 1u32;
    let top = n as u32;
    let mut c = top;
    for s in 0..n {
        if rindex[s] != UNSEEN {
            continue;
        }
        rindex[s] = index;
        index += 1;
        call.push((s as u32, 0, true));
        while let Some(frame) = call.last_mut() {
            let v = frame.0 as usize;
            let e = off[v] as usize + frame.1 as usize;
            if e < off[v + 1] as usize {
                let w = (to[e] & NODE_MASK) as usize;
                frame.1 += 1;
                if rindex[w] == UNSEEN {
                    rindex[w] = index;
                    index += 1;
                    call.push((w as u32, 0, true));
                } else if rindex[w] < rindex[v] {
                    rindex[v] = rindex[w];
                    frame.2 = false;
                }
                continue;
            }
            let root = frame.2;
            call.pop();
            if root {
                index -= 1;
                while let Some(&w) = stack.last() {
                    if rindex[v] > rindex[w as usize] {
                        break;
                    }
                    stack.pop();
                    rindex[w as usize] = c;
                    index -= 1;
                }
                rindex[v] = c;
                c -= 1;
            } else {
                stack.push(v as u32);
            }
            if let Some(parent) = call.last_mut() {
                let p = parent.0 as usize;
                if rindex[v] < rindex[p] {
                    rindex[p] = rindex[v];
                    parent.2 = false;
                }
            }
        }
    }
    // Numbered in completion order from 0, as Tarjan's own numbering.
    for r in &mut rindex {
        *r = top - *r;
    }
    (rindex, top - c)
}

/// A subgraph of one component with local node ids. In a state graph, local
/// node `2i + f` is component node `i` entered by an rw edge (`f = 1`) or not.
struct Local<'g> {
    g: &'g Graph,
    nodes: &'g [u32],
    state: bool,
    off: Vec<u32>,
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
    let at = Within { g, nodes, local_id };
    at.build(&[false], |_, e, w| keep(g.kind(e)).then_some(w))
}

/// The state graph whose cycles are exactly the closed walks with no two
/// consecutive rw edges: the cycles snapshot isolation forbids.
fn state_graph<'g>(g: &'g Graph, nodes: &'g [u32], local_id: &[u32]) -> Local<'g> {
    let at = Within { g, nodes, local_id };
    at.build(&[false, true], |after_rw, e, w| {
        if g.kind(e) == RW {
            (!after_rw).then_some(2 * w + 1)
        } else {
            Some(2 * w)
        }
    })
}

/// One component of a graph: its nodes, and each graph node's local id
/// ([`NONE`] outside it).
struct Within<'g, 'l> {
    g: &'g Graph,
    nodes: &'g [u32],
    local_id: &'l [u32],
}

impl<'g> Within<'g, '_> {
    /// The local graph with one local node per component node and layer
    /// (two layers make a state graph, see [`Local`]): its edges are those
    /// of the graph inside the component to which `arc(layer, edge, local
    /// id of the target)` gives a local target.
    fn build(&self, layers: &[bool], arc: impl Fn(bool, usize, u32) -> Option<u32>) -> Local<'g> {
        let (g, nodes) = (self.g, self.nodes);
        let mut off = Vec::with_capacity(layers.len() * nodes.len() + 1);
        let mut to = Vec::new();
        let mut eid = Vec::new();
        off.push(0);
        for &v in nodes {
            for &layer in layers {
                for e in g.edges(v) {
                    let w = self.local_id[g.to(e) as usize];
                    if let Some(t) = (w != NONE).then(|| arc(layer, e, w)).flatten() {
                        to.push(t);
                        eid.push(e as u32);
                    }
                }
                off.push(local_offset(to.len()));
            }
        }
        let state = layers.len() == 2;
        Local {
            g,
            nodes,
            state,
            off,
            to,
            eid,
        }
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
        for p in l.off[u as usize] as usize..l.off[u as usize + 1] as usize {
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
        for e in g.edges(a) {
            if g.kind(e) != RW {
                continue;
            }
            let b = local_id[g.to(e) as usize];
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
        .all(|k| !(g.kind(c[k].1 as usize) == RW && g.kind(c[(k + 1) % c.len()].1 as usize) == RW))
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
#[derive(Debug, Clone, Copy)]
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
        match g.kind(e) {
            RT_IN => rt_from = from,
            RT_CHAIN => {}
            RT_OUT if rt_from != NONE => steps.push(Step {
                from: rt_from,
                to: g.to(e),
                kind: RT,
                cell: NONE,
            }),
            RT_OUT => {}
            kind => steps.push(Step {
                from,
                to: g.to(e),
                kind,
                cell: g.cell(e),
            }),
        }
    }
    steps
}

/// The cycle's Adya class.
fn classify(steps: &[Step]) -> FindingClass {
    let rw = steps.iter().filter(|s| s.kind == RW).count();
    let wr = steps.iter().filter(|s| s.kind == WR).count();
    let adjacent =
        (0..steps.len()).any(|k| steps[k].kind == RW && steps[(k + 1) % steps.len()].kind == RW);
    match rw {
        0 if wr == 0 => FindingClass::G0,
        0 => FindingClass::G1c,
        1 => FindingClass::GSingle,
        _ if adjacent => FindingClass::G2Item,
        _ => FindingClass::G2ItemNonadjacent,
    }
}

/// An offset into a component's own edge list. Within the sizes `parse`
/// accepts (fewer than 2^29 ops and store versions) a component has fewer
/// than 2^32 edges even when doubled, so this never fails on a history
/// that was read; it refuses to wrap around silently on one that was not.
fn local_offset(len: usize) -> u32 {
    u32::try_from(len).expect("a component of fewer than 2^32 edges")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tarjan's algorithm as it was (three numbers a node): the reference
    /// the one in use must agree with exactly.
    fn tarjan_reference(n: usize, off: &[u32], to: &[u32]) -> (Vec<u32>, u32) {
        const UNSET: u32 = u32::MAX;
        let mut index = vec![UNSET; n];
        let mut low = vec![0u32; n];
        // A node is on the stack when it was visited and has no component yet.
        let mut comp = vec![UNSET; n];
        let mut stack: Vec<u32> = Vec::new();
        // (node, how many of its edges were followed): 8 bytes a frame.
        let mut call: Vec<(u32, u32)> = Vec::new();
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
            call.push((s as u32, 0));
            while let Some(frame) = call.last_mut() {
                let v = frame.0 as usize;
                let e = off[v] as usize + frame.1 as usize;
                if e < off[v + 1] as usize {
                    let w = to[e] as usize;
                    frame.1 += 1;
                    if index[w] == UNSET {
                        index[w] = next;
                        low[w] = next;
                        next += 1;
                        stack.push(w as u32);
                        call.push((w as u32, 0));
                    } else if comp[w] == UNSET {
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

    /// Same components, same numbering, on random graphs of every density,
    /// with self-loops, parallel edges and long chains.
    #[test]
    fn pearce_numbers_components_as_tarjan_does() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for round in 0..400u64 {
            let n = 1 + next(60) as usize;
            let per = next(4) + round % 3;
            let mut off = vec![0u32];
            let mut to = Vec::new();
            for v in 0..n {
                for _ in 0..next(per + 1) {
                    let w = if next(4) == 0 {
                        (v + 1) % n
                    } else {
                        next(n as u64) as usize
                    };
                    to.push(w as u32);
                }
                off.push(local_offset(to.len()));
            }
            assert_eq!(
                tarjan(n, &off, &to),
                tarjan_reference(n, &off, &to),
                "round {round}"
            );
        }
        // A chain deep enough that a recursive search would overflow.
        let n = 300_000;
        let off: Vec<u32> = (0..=n as u32).collect();
        let to: Vec<u32> = (0..n as u32).map(|v| (v + 1) % n as u32).collect();
        let (comp, count) = tarjan(n, &off, &to);
        assert_eq!(count, 1);
        assert!(comp.iter().all(|&c| c == 0));
    }
}
