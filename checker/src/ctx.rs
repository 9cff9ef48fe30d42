//! The index every rule works from: cells interned as integers, each
//! transaction's final write per cell, the store's records grouped by the
//! transaction that wrote them, and the committed versions of every cell.
//! Everything borrows from the history; nothing is copied.

use crate::fx::FxMap;
use crate::history::{History, Op, Outcome, Transaction, VersionKind};

/// "No such index" for `u32` indices.
pub(crate) const NONE: u32 = u32::MAX;

/// A transaction's last write (or delete, `value: None`) to one cell.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FinalWrite<'a> {
    pub cell: u32,
    /// Index of the op within the transaction.
    pub op: u32,
    pub value: Option<&'a str>,
}

/// One write record of the final state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoreRec<'a> {
    pub cell: u32,
    /// The transaction whose start_ts it carries, or [`NONE`].
    pub txn: u32,
    pub start_ts: u64,
    pub commit_ts: u64,
    pub kind: VersionKind,
    pub value: Option<&'a str>,
}

impl StoreRec<'_> {
    pub(crate) fn is_commit(&self) -> bool {
        self.kind != VersionKind::Rollback
    }
}

/// A committed version of a cell (`value: None` is a delete).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cv<'a> {
    pub commit_ts: u64,
    pub value: Option<&'a str>,
    /// The transaction that wrote it, or [`NONE`].
    pub writer: u32,
    pub from_store: bool,
}

/// Where a value written to a cell came from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriteInfo {
    pub txn: u32,
    /// Index into [`Ctx::fw`] when this is the writer's final write to the cell, else [`NONE`].
    pub fw: u32,
}

/// One write op, by the hash of (cell, value).
#[derive(Debug, Clone, Copy)]
struct WriteEntry {
    hash: u64,
    txn: u32,
    op: u32,
    fw: u32,
}

/// Who wrote each (cell, value): entries sorted by hash, then history order.
struct WriteIndex {
    entries: Vec<WriteEntry>,
}

fn value_hash(cell: u32, value: &str) -> u64 {
    use std::hash::Hasher;
    let mut h = crate::fx::FxHasher::default();
    h.write_u32(cell);
    h.write(value.as_bytes());
    h.finish()
}

/// The indexed history. Transactions are named by their index in
/// `history.transactions` (`u32`), cells by their interned id.
pub(crate) struct Ctx<'a> {
    pub h: &'a History,
    /// Cell id -> (row, col).
    pub cells: Vec<(&'a str, &'a str)>,
    op_off: Vec<usize>,
    op_cell: Vec<u32>,
    fw_off: Vec<usize>,
    /// Final writes, grouped by transaction, sorted by cell within one.
    pub fw: Vec<FinalWrite<'a>>,
    /// Each transaction's slice of `recs`.
    rec_range: Vec<(usize, usize)>,
    /// Store records by start_ts, then cell and commit_ts.
    recs: Vec<StoreRec<'a>>,
    /// Indices into `recs` of records whose start_ts is no transaction's.
    orphans: Vec<u32>,
    by_start: Vec<(u64, u32)>,
    /// Smallest commit_ts of the transaction's put/delete records in the store.
    pub store_commit: Vec<Option<u64>>,
    /// The commit_ts that counts: the client's, else the store's.
    pub eff_commit: Vec<Option<u64>>,
    /// Committed by the client's word (with a commit_ts, or without one when
    /// read-only) or by the store's.
    pub committed: Vec<bool>,
    cv_off: Vec<usize>,
    cv: Vec<Cv<'a>>,
    /// (cell, written value) -> first writer; only for values written by a write op.
    windex: WriteIndex,
    /// Cells whose written values are all distinct, never deleted, and
    /// with no put whose data is missing.
    pub cell_unique: Vec<bool>,
    events_by_start: Vec<(u64, u32)>,
    /// (transaction, cell) of every transaction marked as an observer run,
    /// in history order.
    pub runs: Vec<(u32, u32)>,
    /// The cell of every `final_state.notify` entry, in order.
    pub notify_cells: Vec<u32>,
}

pub(crate) fn op_parts(op: &Op) -> (&str, &str) {
    match op {
        Op::Read { row, col, .. } | Op::Write { row, col, .. } | Op::Delete { row, col } => {
            (row, col)
        }
    }
}

/// A value as JSON: quoted and escaped, or `null`.
pub(crate) fn fmt_value(v: Option<&str>) -> String {
    match v {
        Some(s) => serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}")),
        None => "null".to_string(),
    }
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Committed => "committed",
        Outcome::Aborted => "aborted",
        Outcome::Unknown => "unknown",
    }
}

const OPS_SHOWN: usize = 12;

/// Every cell named in a history as a dense id, in order of first mention.
struct Interned<'a> {
    names: Vec<(&'a str, &'a str)>,
    /// Per op, in history order.
    op_cell: Vec<u32>,
    /// Per `final_state.cells` entry.
    state_cell: Vec<u32>,
    /// Per transaction with an `observer` mark, in history order.
    run_cell: Vec<u32>,
    /// Per `final_state.notify` entry.
    notify_cell: Vec<u32>,
}

fn cell_hash(row: &str, col: &str) -> u64 {
    use std::hash::Hasher;
    let mut h = crate::fx::FxHasher::default();
    h.write(row.as_bytes());
    h.write_u8(0xff);
    h.write(col.as_bytes());
    h.finish()
}

/// Interns cells by sorting the hashes of all references (cache-friendly,
/// unlike a hash table probed once per op), then confirming each reference
/// against its group's first member, kept in a compact arena. References
/// whose hash collides with a different cell go through an exact map.
fn intern_cells(h: &History) -> Interned<'_> {
    let refs = || {
        h.transactions
            .iter()
            .flat_map(|t| t.ops.iter().map(op_parts))
            .chain(
                h.final_state
                    .cells
                    .iter()
                    .map(|c| (c.row.as_str(), c.col.as_str())),
            )
            .chain(h.final_state.locks.iter().flat_map(|l| {
                [
                    (l.row.as_str(), l.col.as_str()),
                    (l.primary.row.as_str(), l.primary.col.as_str()),
                ]
            }))
    };
    let mut keys: Vec<(u64, u32)> = refs()
        .enumerate()
        .map(|(k, (row, col))| (cell_hash(row, col), k as u32))
        .collect();
    let n_refs = keys.len();
    keys.sort_unstable_by_key(|e| e.0);
    let mut group = vec![0u32; n_refs];
    let mut g = 0u32;
    for i in 0..keys.len() {
        if i > 0 && keys[i - 1].0 != keys[i].0 {
            g += 1;
        }
        group[keys[i].1 as usize] = g;
    }
    let n_groups = if n_refs == 0 { 0 } else { g as usize + 1 };
    drop(keys);

    let mut group_id = vec![NONE; n_groups];
    let mut arena: Vec<u8> = Vec::new();
    let mut spans: Vec<(usize, usize, usize)> = Vec::new();
    let mut names: Vec<(&str, &str)> = Vec::new();
    let mut collided: FxMap<(&str, &str), u32> = FxMap::default();
    let mut ids: Vec<u32> = Vec::with_capacity(n_refs);
    fn add(
        row: &str,
        col: &str,
        arena: &mut Vec<u8>,
        spans: &mut Vec<(usize, usize, usize)>,
    ) -> u32 {
        spans.push((arena.len(), row.len(), col.len()));
        arena.extend_from_slice(row.as_bytes());
        arena.extend_from_slice(col.as_bytes());
        (spans.len() - 1) as u32
    }
    for (k, (row, col)) in refs().enumerate() {
        let gi = group[k] as usize;
        let id = match group_id[gi] {
            NONE => {
                let id = add(row, col, &mut arena, &mut spans);
                names.push((row, col));
                group_id[gi] = id;
                id
            }
            id => {
                let (off, rl, cl) = spans[id as usize];
                if arena[off..off + rl] == *row.as_bytes()
                    && arena[off + rl..off + rl + cl] == *col.as_bytes()
                {
                    id
                } else {
                    match collided.get(&(row, col)) {
                        Some(&id) => id,
                        None => {
                            let id = add(row, col, &mut arena, &mut spans);
                            names.push((row, col));
                            collided.insert((row, col), id);
                            id
                        }
                    }
                }
            }
        };
        ids.push(id);
    }
    let n_ops: usize = h.transactions.iter().map(|t| t.ops.len()).sum();
    let n_state = h.final_state.cells.len();
    let state_cell = ids[n_ops..n_ops + n_state].to_vec();
    ids.truncate(n_ops);

    // Observer marks and notify entries, rare, through an exact map, so that
    // histories without them pay nothing.
    let marks = || {
        h.transactions
            .iter()
            .filter_map(|t| t.observer.as_ref())
            .map(|o| (o.row.as_str(), o.col.as_str()))
    };
    let mut run_cell = Vec::new();
    let mut notify_cell = Vec::new();
    if marks().next().is_some() || !h.final_state.notify.is_empty() {
        let mut known: FxMap<(&str, &str), u32> = names
            .iter()
            .enumerate()
            .map(|(i, &name)| (name, i as u32))
            .collect();
        let n_marks = marks().count();
        let extra = marks().chain(
            h.final_state
                .notify
                .iter()
                .map(|c| (c.row.as_str(), c.col.as_str())),
        );
        for (k, cell) in extra.enumerate() {
            let id = *known.entry(cell).or_insert_with(|| {
                names.push(cell);
                (names.len() - 1) as u32
            });
            if k < n_marks {
                run_cell.push(id);
            } else {
                notify_cell.push(id);
            }
        }
    }
    Interned {
        names,
        op_cell: ids,
        state_cell,
        run_cell,
        notify_cell,
    }
}

impl<'a> Ctx<'a> {
    pub(crate) fn build(h: &'a History) -> Ctx<'a> {
        let txns = &h.transactions;
        let n = txns.len();
        let Interned {
            names: cells,
            op_cell,
            state_cell,
            run_cell,
            notify_cell: notify_cells,
        } = intern_cells(h);
        let runs: Vec<(u32, u32)> = txns
            .iter()
            .enumerate()
            .filter(|(_, t)| t.observer.is_some())
            .map(|(i, _)| i as u32)
            .zip(run_cell)
            .collect();

        // Ops: cell ids and final writes.
        let mut op_off = Vec::with_capacity(n + 1);
        let mut fw_off = Vec::with_capacity(n + 1);
        let mut fw: Vec<FinalWrite<'a>> = Vec::new();
        let mut scratch: Vec<(u32, u32, Option<&'a str>)> = Vec::new();
        op_off.push(0);
        fw_off.push(0);
        for t in txns {
            scratch.clear();
            let base = *op_off.last().unwrap_or(&0);
            for (j, op) in t.ops.iter().enumerate() {
                let c = op_cell[base + j];
                match op {
                    Op::Write { value, .. } => scratch.push((c, j as u32, Some(value.as_str()))),
                    Op::Delete { .. } => scratch.push((c, j as u32, None)),
                    Op::Read { .. } => {}
                }
            }
            scratch.sort_unstable_by_key(|w| (w.0, w.1));
            for (k, w) in scratch.iter().enumerate() {
                if scratch.get(k + 1).is_none_or(|next| next.0 != w.0) {
                    fw.push(FinalWrite {
                        cell: w.0,
                        op: w.1,
                        value: w.2,
                    });
                }
            }
            op_off.push(base + t.ops.len());
            fw_off.push(fw.len());
        }

        // Transactions by start_ts (the first one in history order on a tie).
        let mut by_start: Vec<(u64, u32)> = txns
            .iter()
            .enumerate()
            .map(|(i, t)| (t.start_ts, i as u32))
            .collect();
        by_start.sort_unstable();

        // Store records, sorted by start_ts and matched to transactions by a
        // merge with `by_start` (no per-record search).
        let mut recs: Vec<StoreRec<'a>> = Vec::new();
        for (cs, &c) in h.final_state.cells.iter().zip(&state_cell) {
            for v in &cs.versions {
                recs.push(StoreRec {
                    cell: c,
                    txn: NONE,
                    start_ts: v.start_ts,
                    commit_ts: v.commit_ts,
                    kind: v.kind,
                    value: v.value.as_deref(),
                });
            }
        }
        recs.sort_unstable_by_key(|r| (r.start_ts, r.cell, r.commit_ts, r.kind));
        let mut rec_range: Vec<(usize, usize)> = vec![(0, 0); n];
        let mut orphans: Vec<u32> = Vec::new();
        let mut k = 0; // into by_start
        let mut i = 0;
        while i < recs.len() {
            let ts = recs[i].start_ts;
            let mut j = i;
            while j < recs.len() && recs[j].start_ts == ts {
                j += 1;
            }
            while k < by_start.len() && by_start[k].0 < ts {
                k += 1;
            }
            match by_start.get(k) {
                Some(&(s, t)) if s == ts => {
                    for r in &mut recs[i..j] {
                        r.txn = t;
                    }
                    rec_range[t as usize] = (i, j);
                }
                _ => orphans.extend(i as u32..j as u32),
            }
            i = j;
        }

        let mut store_commit: Vec<Option<u64>> = vec![None; n];
        for (t, sc) in store_commit.iter_mut().enumerate() {
            let (lo, hi) = rec_range[t];
            *sc = recs[lo..hi]
                .iter()
                .filter(|r| r.is_commit())
                .map(|r| r.commit_ts)
                .min();
        }
        let eff_commit: Vec<Option<u64>> = txns
            .iter()
            .zip(&store_commit)
            .map(|(t, sc)| match (t.outcome, t.commit_ts) {
                (Outcome::Aborted, _) | (_, None) => *sc,
                (_, Some(c)) => Some(c),
            })
            .collect();
        // A client's "committed" counts with a commit_ts, or without one for a
        // read-only transaction (Percolator commits those without asking the
        // oracle); a writer without one is only committed by the store's word.
        let committed: Vec<bool> = txns
            .iter()
            .zip(&store_commit)
            .enumerate()
            .map(|(i, (t, sc))| {
                let read_only = fw_off[i] == fw_off[i + 1];
                (t.outcome == Outcome::Committed && (t.commit_ts.is_some() || read_only))
                    || sc.is_some()
            })
            .collect();

        // Committed versions per cell: the store's, plus the client-reported ones.
        let mut all: Vec<(u32, Cv<'a>)> = Vec::new();
        for r in &recs {
            if r.is_commit() {
                let value = if r.kind == VersionKind::Put {
                    r.value
                } else {
                    None
                };
                all.push((
                    r.cell,
                    Cv {
                        commit_ts: r.commit_ts,
                        value,
                        writer: r.txn,
                        from_store: true,
                    },
                ));
            }
        }
        for (i, t) in txns.iter().enumerate() {
            if let (Outcome::Committed, Some(c)) = (t.outcome, t.commit_ts) {
                let (lo, hi) = rec_range[i];
                let stored = &recs[lo..hi];
                for w in &fw[fw_off[i]..fw_off[i + 1]] {
                    // Already there as the store's own record: the store's wins anyway.
                    let p = stored.partition_point(|r| (r.cell, r.commit_ts) < (w.cell, c));
                    if stored[p..]
                        .iter()
                        .take_while(|r| (r.cell, r.commit_ts) == (w.cell, c))
                        .any(StoreRec::is_commit)
                    {
                        continue;
                    }
                    all.push((
                        w.cell,
                        Cv {
                            commit_ts: c,
                            value: w.value,
                            writer: i as u32,
                            from_store: false,
                        },
                    ));
                }
            }
        }
        all.sort_unstable_by_key(|(c, v)| (*c, v.commit_ts, !v.from_store, v.writer));
        all.dedup_by_key(|(c, v)| (*c, v.commit_ts));
        let n_cells = cells.len();
        let mut cv_off = vec![0usize; n_cells + 1];
        for (c, _) in &all {
            cv_off[*c as usize + 1] += 1;
        }
        for i in 0..n_cells {
            cv_off[i + 1] += cv_off[i];
        }
        let mut cv: Vec<Cv<'a>> = Vec::with_capacity(all.len());
        cv.extend(all.iter().map(|(_, v)| *v));
        drop(all);

        // Who wrote which value, and which cells have unique values: hashes of
        // (cell, value) sorted, equal hashes verified against the real strings.
        let n_writes = txns
            .iter()
            .flat_map(|t| &t.ops)
            .filter(|o| matches!(o, Op::Write { .. }))
            .count();
        let mut entries: Vec<WriteEntry> = Vec::with_capacity(n_writes);
        let mut cell_unique = vec![true; n_cells];
        for (i, t) in txns.iter().enumerate() {
            let cells_of = &op_cell[op_off[i]..op_off[i + 1]];
            let finals = &fw[fw_off[i]..fw_off[i + 1]];
            for (j, op) in t.ops.iter().enumerate() {
                let c = cells_of[j];
                match op {
                    Op::Write { value, .. } => {
                        let fw_idx = match finals.binary_search_by_key(&c, |w| w.cell) {
                            Ok(k) if finals[k].op == j as u32 => (fw_off[i] + k) as u32,
                            _ => NONE,
                        };
                        entries.push(WriteEntry {
                            hash: value_hash(c, value),
                            txn: i as u32,
                            op: j as u32,
                            fw: fw_idx,
                        });
                    }
                    Op::Delete { .. } => cell_unique[c as usize] = false,
                    Op::Read { .. } => {}
                }
            }
        }
        entries.sort_unstable_by_key(|e| (e.hash, e.txn, e.op));
        let written = |e: &WriteEntry| -> (u32, &'a str) {
            let k = op_off[e.txn as usize] + e.op as usize;
            match &txns[e.txn as usize].ops[e.op as usize] {
                Op::Write { value, .. } => (op_cell[k], value.as_str()),
                _ => (NONE, ""),
            }
        };
        let mut i = 0;
        while i < entries.len() {
            let mut j = i + 1;
            while j < entries.len() && entries[j].hash == entries[i].hash {
                j += 1;
            }
            if j - i > 1 {
                let mut group: Vec<(u32, &'a str)> = entries[i..j].iter().map(written).collect();
                group.sort_unstable();
                for pair in group.windows(2) {
                    if pair[0] == pair[1] {
                        cell_unique[pair[0].0 as usize] = false;
                    }
                }
            }
            i = j;
        }
        // A put whose data is missing serves reads a null that names no
        // writer: like a delete, it takes its cell out of the graph.
        for r in &recs {
            if r.kind == VersionKind::Put && r.value.is_none() {
                cell_unique[r.cell as usize] = false;
            }
        }
        let windex = WriteIndex { entries };

        let mut events_by_start: Vec<(u64, u32)> = h
            .events
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                e.fields
                    .get("start_ts")
                    .and_then(serde_json::Value::as_u64)
                    .map(|ts| (ts, i as u32))
            })
            .collect();
        events_by_start.sort_unstable();

        Ctx {
            h,
            cells,
            op_off,
            op_cell,
            fw_off,
            fw,
            rec_range,
            recs,
            orphans,
            by_start,
            store_commit,
            eff_commit,
            committed,
            cv_off,
            cv,
            windex,
            cell_unique,
            events_by_start,
            runs,
            notify_cells,
        }
    }

    /// The first transaction (in history order) that wrote `value` to `cell`.
    pub(crate) fn writer_of(&self, cell: u32, value: &str) -> Option<WriteInfo> {
        let h = value_hash(cell, value);
        let entries = &self.windex.entries;
        let p = entries.partition_point(|e| e.hash < h);
        entries[p..]
            .iter()
            .take_while(|e| e.hash == h)
            .find(|e| {
                let k = self.op_off[e.txn as usize] + e.op as usize;
                self.op_cell[k] == cell
                    && matches!(&self.txn(e.txn).ops[e.op as usize],
                        Op::Write { value: v, .. } if v == value)
            })
            .map(|e| WriteInfo {
                txn: e.txn,
                fw: e.fw,
            })
    }

    pub(crate) fn n(&self) -> usize {
        self.h.transactions.len()
    }

    pub(crate) fn txn(&self, t: u32) -> &'a Transaction {
        &self.h.transactions[t as usize]
    }

    pub(crate) fn id(&self, t: u32) -> u64 {
        self.txn(t).id
    }

    /// Cell ids of the transaction's ops, parallel to `ops`.
    pub(crate) fn op_cells(&self, t: u32) -> &[u32] {
        &self.op_cell[self.op_off[t as usize]..self.op_off[t as usize + 1]]
    }

    pub(crate) fn final_writes(&self, t: u32) -> &[FinalWrite<'a>] {
        &self.fw[self.fw_off[t as usize]..self.fw_off[t as usize + 1]]
    }

    /// Index into `fw` of the transaction's final write to `cell`.
    pub(crate) fn final_write_idx(&self, t: u32, cell: u32) -> Option<usize> {
        let base = self.fw_off[t as usize];
        self.final_writes(t)
            .binary_search_by_key(&cell, |w| w.cell)
            .ok()
            .map(|k| base + k)
    }

    pub(crate) fn final_write(&self, t: u32, cell: u32) -> Option<&FinalWrite<'a>> {
        self.final_write_idx(t, cell).map(|k| &self.fw[k])
    }

    /// The store records carrying the transaction's start_ts, by cell then commit_ts.
    pub(crate) fn recs_of(&self, t: u32) -> &[StoreRec<'a>] {
        let (lo, hi) = self.rec_range[t as usize];
        &self.recs[lo..hi]
    }

    /// Store records whose start_ts is no transaction's.
    pub(crate) fn orphan_recs(&self) -> impl Iterator<Item = &StoreRec<'a>> {
        self.orphans.iter().map(|&i| &self.recs[i as usize])
    }

    pub(crate) fn all_recs(&self) -> &[StoreRec<'a>] {
        &self.recs
    }

    /// Committed versions of a cell, by commit_ts.
    pub(crate) fn versions(&self, cell: u32) -> &[Cv<'a>] {
        &self.cv[self.cv_off[cell as usize]..self.cv_off[cell as usize + 1]]
    }

    pub(crate) fn by_start(&self, ts: u64) -> u32 {
        let p = self.by_start.partition_point(|x| x.0 < ts);
        match self.by_start.get(p) {
            Some(&(s, i)) if s == ts => i,
            _ => NONE,
        }
    }

    pub(crate) fn cell_name(&self, c: u32) -> String {
        match self.cells.get(c as usize) {
            Some((row, col)) => format!("{row}.{col}"),
            None => "?".to_string(),
        }
    }

    /// "T7" for a transaction index, or a placeholder for none.
    pub(crate) fn tname(&self, t: u32) -> String {
        if (t as usize) < self.n() {
            format!("T{}", self.id(t))
        } else {
            "no transaction".to_string()
        }
    }

    pub(crate) fn describe_op(&self, op: &Op) -> String {
        match op {
            Op::Read { row, col, value } => {
                format!("read {row}.{col} = {}", fmt_value(value.as_deref()))
            }
            Op::Write { row, col, value } => {
                format!("write {row}.{col} = {}", fmt_value(Some(value)))
            }
            Op::Delete { row, col } => format!("delete {row}.{col}"),
        }
    }

    /// One line describing a transaction: client, outcome, timestamps, ops.
    pub(crate) fn describe_txn(&self, t: u32) -> String {
        let x = self.txn(t);
        let mut s = format!(
            "T{}: client {}, {}, start_ts {}",
            x.id,
            x.client,
            outcome_name(x.outcome),
            x.start_ts
        );
        match (x.commit_ts, self.store_commit[t as usize]) {
            (Some(c), _) => s.push_str(&format!(", commit_ts {c}")),
            (None, Some(c)) => s.push_str(&format!(
                ", no commit_ts reported (the store has it committed at {c})"
            )),
            (None, None) if self.committed[t as usize] => {
                s.push_str(", read-only with no commit_ts");
            }
            (None, None) => {}
        }
        s.push_str(&format!(", invoked at {} ns", x.invoke_ns));
        match x.complete_ns {
            Some(d) => s.push_str(&format!(", completed at {d} ns")),
            None => s.push_str(", never completed"),
        }
        if let Some(r) = &x.abort_reason {
            s.push_str(&format!(", abort reason {r:?}"));
        }
        if let Some(o) = &x.observer {
            s.push_str(&format!(
                ", ran observer {:?} for {}.{}",
                o.name, o.row, o.col
            ));
        }
        let ops: Vec<String> = x
            .ops
            .iter()
            .take(OPS_SHOWN)
            .map(|o| self.describe_op(o))
            .collect();
        if ops.is_empty() {
            s.push_str("; no ops");
        } else {
            s.push_str(&format!("; ops: {}", ops.join(", ")));
            if x.ops.len() > OPS_SHOWN {
                s.push_str(&format!(", ... and {} more", x.ops.len() - OPS_SHOWN));
            }
        }
        s
    }

    /// Lines describing what the store holds for a transaction, and the events
    /// that name its start_ts.
    pub(crate) fn describe_store(&self, t: u32) -> Vec<String> {
        let x = self.txn(t);
        let recs = self.recs_of(t);
        let mut lines = Vec::new();
        if recs.is_empty() {
            lines.push(format!(
                "the store has no write record with T{}'s start_ts {}",
                x.id, x.start_ts
            ));
        } else {
            let parts: Vec<String> = recs
                .iter()
                .take(OPS_SHOWN)
                .map(|r| self.describe_rec(r))
                .collect();
            let more = if recs.len() > OPS_SHOWN {
                format!(", ... and {} more", recs.len() - OPS_SHOWN)
            } else {
                String::new()
            };
            lines.push(format!(
                "the store holds for T{} (start_ts {}): {}{more}",
                x.id,
                x.start_ts,
                parts.join(", ")
            ));
        }
        let p = self.events_by_start.partition_point(|e| e.0 < x.start_ts);
        for &(ts, e) in self.events_by_start[p..].iter().take(3) {
            if ts != x.start_ts {
                break;
            }
            if let Some(ev) = self.h.events.get(e as usize) {
                let fields = serde_json::to_string(&ev.fields).unwrap_or_default();
                lines.push(format!(
                    "event at {} ns: {} {fields} (for context only; events are not trusted)",
                    ev.t_ns, ev.kind
                ));
            }
        }
        lines
    }

    pub(crate) fn describe_rec(&self, r: &StoreRec<'_>) -> String {
        let cell = self.cell_name(r.cell);
        match r.kind {
            VersionKind::Put if r.value.is_none() => format!(
                "{cell} put committed at {} whose data is missing",
                r.commit_ts
            ),
            VersionKind::Put => format!(
                "{cell} put {} committed at {}",
                fmt_value(r.value),
                r.commit_ts
            ),
            VersionKind::Delete => format!("{cell} delete committed at {}", r.commit_ts),
            VersionKind::Rollback => format!("{cell} rollback record"),
        }
    }
}
