//! The index every rule works from: cells interned as integers, each
//! transaction's final write per cell, the store's records grouped by the
//! transaction that wrote them, and the committed versions of every cell.
//! Everything borrows from the history; nothing is copied.

use crate::both::{PARALLEL_FROM_TXNS, both};
use crate::compact::{COp, Compact, NIL, OpKind, Store, Txn};
use crate::history::{Outcome, VersionKind};
use crate::sort::{group_by, radix_sort_by_key};
use crate::units::Ms;

/// "No such index" for `u32` indices.
pub(crate) const NONE: u32 = u32::MAX;

/// A value as the rules compare it: the id of its string in the history's
/// table ([`Val::NULL`] for none: a delete, a read of nothing, a put whose
/// data is missing). Strings are interned once, so two values are equal
/// exactly when their ids are, and comparing them reads no string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Val(u32);

impl Val {
    /// No value.
    pub(crate) const NULL: Val = Val(NIL);

    /// The value whose string id is `id` ([`NIL`] for none).
    pub(crate) fn of(id: u32) -> Val {
        Val(id)
    }

    pub(crate) fn is_none(self) -> bool {
        self.0 == NIL
    }

    pub(crate) fn is_some(self) -> bool {
        self.0 != NIL
    }
}

/// A transaction's last write (or delete, `value: None`) to one cell.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FinalWrite {
    pub cell: u32,
    /// Index of the op within the transaction.
    pub op: u32,
    pub value: Val,
}

/// One write record of the final state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoreRec {
    pub cell: u32,
    /// The transaction whose start_ts it carries, or [`NONE`] (its
    /// start_ts is then in [`Ctx::orphan_recs`]; 24 bytes a record).
    pub txn: u32,
    pub commit_ts: u64,
    pub kind: VersionKind,
    pub value: Val,
}

impl StoreRec {
    pub(crate) fn is_commit(&self) -> bool {
        self.kind != VersionKind::Rollback
    }
}

/// A committed version of a cell (`value: None` is a delete).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cv {
    pub commit_ts: u64,
    pub value: Val,
    /// The transaction that wrote it, or [`NONE`].
    pub writer: u32,
}

/// Where a value written to a cell came from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriteInfo {
    pub txn: u32,
    /// Index into [`Ctx::fw`] when this is the writer's final write to the cell, else [`NONE`].
    pub fw: u32,
}

/// One write op: its value (string id), who wrote it, and where (its cell
/// is the group it is in).
#[derive(Debug, Clone, Copy)]
struct WriteEntry {
    value: u32,
    txn: u32,
    fw: u32,
}

/// The indexed history. Transactions are named by their index in
/// the history (`u32`), cells by their interned id.
pub(crate) struct Ctx<'a> {
    pub h: &'a Compact,
    /// Transaction `t`'s final writes are `fw[fw_off[t]..fw_off[t + 1]]`
    /// (4 bytes a transaction: fewer than 2^32 ops).
    fw_off: Vec<u32>,
    /// Final writes, grouped by transaction, sorted by cell within one.
    pub fw: Vec<FinalWrite>,
    /// Each transaction's slice of `recs`.
    rec_range: Vec<(u32, u32)>,
    /// Store records by start_ts, then cell and commit_ts.
    recs: Vec<StoreRec>,
    /// Indices into `recs` of records whose start_ts is no transaction's.
    orphans: Vec<(u32, u64)>,
    /// Transactions by start_ts (the first one in history order on a tie),
    /// made on the first question ([`Ctx::by_start`]: a lock's owner).
    by_start: std::sync::OnceLock<Vec<u32>>,
    /// Committed by the client's word (with a commit_ts, or without one when
    /// read-only) or by the store's.
    pub committed: Vec<bool>,
    /// Cell `c`'s versions are `cv[cv_off[c]..cv_off[c + 1]]`.
    cv_off: Vec<u32>,
    cv: Vec<Cv>,
    /// Bit `i`: the store holds `cv[i]` (else only its client's word).
    cv_from_store: Vec<u64>,
    /// Every write op, by cell, then value, then history order: who wrote
    /// which value. Made on the first question ([`Ctx::writer_of`]): a
    /// valid history asks none (12 bytes a write).
    windex: std::sync::OnceLock<WriteIndex>,
    /// Cells whose written values are all distinct, never deleted, and
    /// with no put whose data is missing.
    pub cell_unique: Vec<bool>,
    events_by_start: Vec<(u64, u32)>,
    /// (transaction, cell) of every transaction marked as an observer run,
    /// in history order.
    pub runs: Vec<(u32, u32)>,
    /// The cell of every `final_state.notify` entry, in order.
    pub notify_cells: Vec<u32>,
    /// Cell id of each lock's cell and of its primary, in order.
    pub lock_cells: Vec<(u32, u32)>,
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

/// An offset into one of the index's lists, as 4 bytes: a history holds
/// fewer than 2^32 ops and versions (48 GB of ops alone).
fn offset(i: usize) -> u32 {
    u32::try_from(i).expect("fewer than 2^32 ops and store versions")
}

/// Each transaction's final write per cell, sorted by cell within one.
fn final_writes(h: &Compact) -> (Vec<u32>, Vec<FinalWrite>) {
    let mut fw_off = Vec::with_capacity(h.txns.len() + 1);
    let mut fw: Vec<FinalWrite> = Vec::new();
    let mut scratch: Vec<(u32, u32, Val)> = Vec::new();
    fw_off.push(0);
    for t in 0..h.txns.len() {
        scratch.clear();
        for (j, op) in h.ops(t).iter().enumerate() {
            let c = op.cell;
            match op.kind {
                OpKind::Write => scratch.push((c, j as u32, Val::of(op.value))),
                OpKind::Delete => scratch.push((c, j as u32, Val::NULL)),
                OpKind::Read => {}
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
        fw_off.push(offset(fw.len()));
    }
    (fw_off, fw)
}

/// The store's records sorted by start_ts and matched to transactions by a
/// merge with `by_start` (no per-record search): the records, each
/// transaction's range of them, and the orphans. The store's own form is
/// freed as soon as the records are made.
fn store_records(h: &Compact, store: Store, by_start: &[(u64, u32)]) -> StoreIndex {
    let n = store.versions.len();
    let mut recs: Vec<StoreRec> = Vec::with_capacity(n);
    // (start_ts, index into recs): the records keep no start_ts of their own.
    let mut keys: Vec<(u64, u32)> = Vec::with_capacity(n);
    for cs in &store.state {
        let cell = cs.cell;
        for v in store.versions.get(cs.lo..cs.hi).unwrap_or_default() {
            keys.push((v.start_ts, recs.len() as u32));
            recs.push(StoreRec {
                cell,
                txn: NONE,
                commit_ts: v.commit_ts,
                kind: v.kind,
                value: Val::of(v.value),
            });
        }
    }
    drop(store);
    radix_sort_by_key(&mut keys, |k| k.0);
    let mut recs: Vec<StoreRec> = keys.iter().map(|&(_, i)| recs[i as usize]).collect();
    let mut rec_range: Vec<(u32, u32)> = vec![(0, 0); h.txns.len()];
    let mut orphans: Vec<(u32, u64)> = Vec::new();
    let mut k = 0; // into by_start
    let mut i = 0;
    while i < recs.len() {
        let ts = keys[i].0;
        // A start_ts's records are few and adjacent: a scan, not a binary
        // search over all the records left (one cache miss a step).
        let j = i + keys[i..].iter().take_while(|x| x.0 == ts).count();
        recs[i..j].sort_by_key(|r| (r.cell, r.commit_ts, r.kind));
        while k < by_start.len() && by_start[k].0 < ts {
            k += 1;
        }
        match by_start.get(k) {
            Some(&(s, t)) if s == ts => {
                for r in &mut recs[i..j] {
                    r.txn = t;
                }
                rec_range[t as usize] = (i as u32, j as u32);
            }
            _ => orphans.extend((i as u32..j as u32).map(|r| (r, ts))),
        }
        i = j;
    }
    StoreIndex {
        recs,
        rec_range,
        orphans,
    }
}

/// What [`store_records`] makes: the records by start_ts, each
/// transaction's range of them, and (index, start_ts) of the orphans.
struct StoreIndex {
    recs: Vec<StoreRec>,
    rec_range: Vec<(u32, u32)>,
    orphans: Vec<(u32, u64)>,
}

/// Whether each transaction committed: by the client's word (with a
/// commit_ts, or without one when read-only) or by the store's.
fn committed(
    h: &Compact,
    recs: &[StoreRec],
    rec_range: &[(u32, u32)],
    fw_off: &[u32],
) -> Vec<bool> {
    // A client's "committed" counts with a commit_ts, or without one for a
    // read-only transaction (Percolator commits those without asking the
    // oracle); a writer without one is only committed by the store's word.
    h.txns
        .iter()
        .zip(rec_range)
        .enumerate()
        .map(|(i, (t, &(lo, hi)))| {
            let read_only = fw_off[i] == fw_off[i + 1];
            (t.outcome == Outcome::Committed && (t.commit_ts().is_some() || read_only))
                || recs[lo as usize..hi as usize]
                    .iter()
                    .any(StoreRec::is_commit)
        })
        .collect()
}

/// Committed versions per cell, by commit_ts: the store's, plus the
/// client-reported ones the store does not hold. Returns offsets and versions.
fn committed_versions(
    h: &Compact,
    n_cells: usize,
    recs: &[StoreRec],
    rec_range: &[(u32, u32)],
    fw: (&[u32], &[FinalWrite]),
) -> CommittedVersions {
    let (fw_off, fw) = fw;
    // Each version, with whether the store holds it (else the client's
    // word) in its writer's top bit ([`STORED`]): 16 bytes, not 24.
    let each = |emit: &mut dyn FnMut(u32, Cv)| {
        for r in recs.iter().filter(|r| r.is_commit()) {
            let value = if r.kind == VersionKind::Put {
                r.value
            } else {
                Val::NULL
            };
            let cv = Cv {
                commit_ts: r.commit_ts,
                value,
                writer: if r.txn == NONE { NONE } else { r.txn | STORED },
            };
            emit(r.cell, cv);
        }
        for (i, t) in h.txns.iter().enumerate() {
            let (Outcome::Committed, Some(c)) = (t.outcome, t.commit_ts()) else {
                continue;
            };
            let (lo, hi) = rec_range[i];
            let stored = &recs[lo as usize..hi as usize];
            for w in &fw[fw_off[i] as usize..fw_off[i + 1] as usize] {
                // Already there as the store's own record: the store's wins anyway.
                let p = stored.partition_point(|r| (r.cell, r.commit_ts) < (w.cell, c));
                if stored[p..]
                    .iter()
                    .take_while(|r| (r.cell, r.commit_ts) == (w.cell, c))
                    .any(StoreRec::is_commit)
                {
                    continue;
                }
                let cv = Cv {
                    commit_ts: c,
                    value: w.value,
                    writer: i as u32,
                };
                emit(w.cell, cv);
            }
        }
    };
    let fill = Cv {
        commit_ts: 0,
        value: Val::NULL,
        writer: NONE,
    };
    assert!(
        h.txns.len() < STORED as usize,
        "fewer than 2^31 transactions"
    );
    let (off, all) = group_by(n_cells, fill, each);
    pack_versions(off, all)
}

/// [`committed_versions`]' grouped versions (`all[off[c]..off[c + 1]]` are
/// cell `c`'s, each writer marked [`STORED`] when the store holds it), each
/// cell's sorted by commit_ts and one kept per commit_ts (the store's
/// first, then the smallest writer), packed down in place; the marks move
/// to a bitmap.
fn pack_versions(mut off: Vec<usize>, mut all: Vec<Cv>) -> CommittedVersions {
    let n_cells = off.len() - 1;
    // (writer, whether the store holds it) of a version as emitted.
    let source = |v: &Cv| match v.writer {
        NONE => (NONE, true),
        w => (w & !STORED, w & STORED != 0),
    };
    let mut kept = 0;
    for c in 0..n_cells {
        let (lo, hi) = (off[c], off[c + 1]);
        all[lo..hi].sort_by_key(|v| {
            let (writer, stored) = source(v);
            (v.commit_ts, !stored, writer)
        });
        off[c] = kept;
        for i in lo..hi {
            if i == lo || all[i].commit_ts != all[kept - 1].commit_ts {
                all[kept] = all[i];
                kept += 1;
            }
        }
    }
    off[n_cells] = kept;
    all.truncate(kept);
    let mut from_store = vec![0u64; kept.div_ceil(64)];
    for (i, v) in all.iter_mut().enumerate() {
        let (writer, stored) = source(v);
        if stored {
            from_store[i / 64] |= 1 << (i % 64);
        }
        v.writer = writer;
    }
    CommittedVersions {
        off,
        cv: all,
        from_store,
    }
}

/// [`committed_versions`]: the top bit of a version's writer while the
/// versions are grouped, set when the store holds it (a store record with
/// no transaction has writer [`NONE`], which says so too).
const STORED: u32 = 1 << 31;

/// Committed versions per cell (see [`Ctx::versions`]).
struct CommittedVersions {
    off: Vec<usize>,
    cv: Vec<Cv>,
    /// One bit per version: the store holds it (else only the client's word).
    from_store: Vec<u64>,
}

/// Who wrote which value, grouped by cell (offsets, entries: by value, then
/// history order, within a cell).
fn write_index(h: &Compact, fw: (&[u32], &[FinalWrite]), n_cells: usize) -> WriteIndex {
    let (fw_off, fw) = fw;
    let each = |emit: &mut dyn FnMut(u32, WriteEntry)| {
        for t in 0..h.txns.len() {
            let finals = &fw[fw_off[t] as usize..fw_off[t + 1] as usize];
            for (j, op) in h.ops(t).iter().enumerate() {
                if op.kind != OpKind::Write {
                    continue;
                }
                let c = op.cell;
                let fw_idx = match finals.binary_search_by_key(&c, |w| w.cell) {
                    Ok(k) if finals[k].op == j as u32 => fw_off[t] + k as u32,
                    _ => NONE,
                };
                let entry = WriteEntry {
                    value: op.value,
                    txn: t as u32,
                    fw: fw_idx,
                };
                emit(c, entry);
            }
        }
    };
    let fill = WriteEntry {
        value: NIL,
        txn: NONE,
        fw: NONE,
    };
    let (off, mut entries) = group_by(n_cells, fill, each);
    for c in 0..n_cells {
        // Stable: one value's writers stay in history order.
        entries[off[c]..off[c + 1]].sort_by_key(|e| e.value);
    }
    WriteIndex { off, entries }
}

/// Who wrote which value: cell `c`'s write ops are
/// `entries[off[c]..off[c + 1]]`, by value, then history order.
struct WriteIndex {
    off: Vec<usize>,
    entries: Vec<WriteEntry>,
}

/// Which cells have unique values: all written values distinct, never
/// deleted, and no put whose data is missing. Only the values are grouped
/// (4 bytes a write, freed on return).
fn unique_cells(h: &Compact, recs: &[StoreRec], n_cells: usize) -> Vec<bool> {
    let mut cell_unique = vec![true; n_cells];
    let each = |emit: &mut dyn FnMut(u32, u32)| {
        for op in &h.ops {
            match op.kind {
                OpKind::Write => emit(op.cell, op.value),
                OpKind::Delete => cell_unique[op.cell as usize] = false,
                OpKind::Read => {}
            }
        }
    };
    let (off, mut values) = group_by(n_cells, NIL, each);
    for c in 0..n_cells {
        let cell = &mut values[off[c]..off[c + 1]];
        cell.sort_unstable();
        if cell.windows(2).any(|p| p[0] == p[1]) {
            cell_unique[c] = false;
        }
    }
    // A put whose data is missing serves reads a null that names no
    // writer: like a delete, it takes its cell out of the graph.
    for r in recs {
        if r.kind == VersionKind::Put && r.value.is_none() {
            cell_unique[r.cell as usize] = false;
        }
    }
    cell_unique
}

/// (start_ts, transaction) of every transaction, by start_ts (the first
/// one in history order on a tie).
fn txns_by_start(h: &Compact) -> Vec<(u64, u32)> {
    let mut by_start: Vec<(u64, u32)> = h
        .txns
        .iter()
        .enumerate()
        .map(|(i, t)| (t.start_ts, i as u32))
        .collect();
    // Stable, and made in history order: ties stay in it.
    radix_sort_by_key(&mut by_start, |x| x.0);
    by_start
}

/// (start_ts, event) of every event that names a start_ts, sorted.
fn events_by_start(h: &Compact) -> Vec<(u64, u32)> {
    let mut events: Vec<(u64, u32)> = h
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
    events.sort_unstable();
    events
}

impl<'a> Ctx<'a> {
    /// The index of `h`, whose cells were renumbered
    /// ([`Compact::renumber_cells`]) and whose store was taken out; on two
    /// threads from [`PARALLEL_FROM_TXNS`] transactions.
    pub(crate) fn build(h: &'a Compact, store: Store) -> Ctx<'a> {
        let two_threads = h.txns.len() >= PARALLEL_FROM_TXNS;
        Ctx::build_with(h, store, two_threads)
    }

    /// [`Ctx::build`], with its independent parts on two threads when
    /// `two_threads` is set: the store's records beside the final writes,
    /// then the committed versions beside the cells with unique values.
    /// Each part is made as on one thread.
    pub(crate) fn build_with(h: &'a Compact, store: Store, two_threads: bool) -> Ctx<'a> {
        let (index, (fw_off, fw)) = both(
            two_threads,
            || store_records(h, store, &txns_by_start(h)),
            || final_writes(h),
        );
        let StoreIndex {
            recs,
            rec_range,
            orphans,
        } = index;
        let n_cells = h.cells.len();
        let committed = committed(h, &recs, &rec_range, &fw_off);
        let (versions, cell_unique) = both(
            two_threads,
            || committed_versions(h, n_cells, &recs, &rec_range, (&fw_off, &fw)),
            || unique_cells(h, &recs, n_cells),
        );
        let runs: Vec<(u32, u32)> = h
            .txns
            .iter()
            .enumerate()
            .filter(|(_, t)| t.observer != NIL)
            .map(|(i, t)| (i as u32, h.runs[t.observer as usize].cell))
            .collect();
        let notify_cells = h.notify.clone();
        let lock_cells = h.locks.iter().map(|l| (l.cell, l.primary)).collect();
        let events_by_start = events_by_start(h);
        Ctx {
            h,
            fw_off,
            fw,
            rec_range,
            recs,
            orphans,
            by_start: std::sync::OnceLock::new(),
            committed,
            cv_off: versions.off.iter().map(|&o| offset(o)).collect(),
            cv: versions.cv,
            cv_from_store: versions.from_store,
            windex: std::sync::OnceLock::new(),
            cell_unique,
            events_by_start,
            runs,
            notify_cells,
            lock_cells,
        }
    }

    /// The first transaction (in history order) that wrote `value` to `cell`.
    pub(crate) fn writer_of(&self, cell: u32, value: Val) -> Option<WriteInfo> {
        let value = value.0;
        let index = self
            .windex
            .get_or_init(|| write_index(self.h, (&self.fw_off, &self.fw), self.n_cells()));
        let lo = *index.off.get(cell as usize)?;
        let entries = &index.entries[lo..index.off[cell as usize + 1]];
        let p = entries.partition_point(|e| e.value < value);
        entries
            .get(p)
            .filter(|e| e.value == value)
            .map(|e| WriteInfo {
                txn: e.txn,
                fw: e.fw,
            })
    }

    /// Smallest commit_ts of the transaction's put/delete records in the
    /// store (worked out when asked: a column of them was 16 bytes a
    /// transaction).
    pub(crate) fn store_commit(&self, t: u32) -> Option<u64> {
        self.recs_of(t)
            .iter()
            .filter(|r| r.is_commit())
            .map(|r| r.commit_ts)
            .min()
    }

    /// The commit_ts that counts: the client's, else the store's.
    pub(crate) fn eff_commit(&self, t: u32) -> Option<u64> {
        let x = self.txn(t);
        match (x.outcome, x.commit_ts()) {
            (Outcome::Aborted, _) | (_, None) => self.store_commit(t),
            (_, Some(c)) => Some(c),
        }
    }

    pub(crate) fn n(&self) -> usize {
        self.h.txns.len()
    }

    pub(crate) fn txn(&self, t: u32) -> &'a Txn {
        &self.h.txns[t as usize]
    }

    pub(crate) fn id(&self, t: u32) -> u64 {
        self.txn(t).id
    }

    /// The transaction's ops, in the order its client issued them.
    pub(crate) fn ops(&self, t: u32) -> &'a [COp] {
        self.h.ops(t as usize)
    }

    /// The value of an op (none for a delete, or a read of nothing).
    pub(crate) fn value(&self, op: &COp) -> Val {
        Val::of(op.value)
    }

    /// The text of a value (`None` for none).
    pub(crate) fn text(&self, v: Val) -> Option<&'a str> {
        self.h.strs.opt(v.0)
    }

    /// A value as JSON: quoted and escaped, or `null`.
    pub(crate) fn fmt(&self, v: Val) -> String {
        fmt_value(self.text(v))
    }

    pub(crate) fn final_writes(&self, t: u32) -> &[FinalWrite] {
        &self.fw[self.fw_off[t as usize] as usize..self.fw_off[t as usize + 1] as usize]
    }

    /// Index into `fw` of the transaction's final write to `cell`.
    pub(crate) fn final_write_idx(&self, t: u32, cell: u32) -> Option<usize> {
        let base = self.fw_off[t as usize] as usize;
        self.final_writes(t)
            .binary_search_by_key(&cell, |w| w.cell)
            .ok()
            .map(|k| base + k)
    }

    pub(crate) fn final_write(&self, t: u32, cell: u32) -> Option<&FinalWrite> {
        self.final_write_idx(t, cell).map(|k| &self.fw[k])
    }

    /// Whether version `v` of `cell` is a put whose data the store lost
    /// (its null stands for what its writer wrote, not for a delete).
    pub(crate) fn data_missing(&self, cell: u32, v: &Cv) -> bool {
        v.value.is_none()
            && v.writer != NONE
            && self
                .recs_of(v.writer)
                .iter()
                .any(|r| r.cell == cell && r.commit_ts == v.commit_ts && r.kind == VersionKind::Put)
    }

    /// The committed version of `cell` written by `t` whose data the store
    /// lost, if there is one.
    pub(crate) fn lost_version_of(&self, cell: u32, t: u32) -> Option<Cv> {
        self.versions(cell)
            .iter()
            .find(|v| v.writer == t && self.data_missing(cell, v))
            .copied()
    }

    /// The store records carrying the transaction's start_ts, by cell then commit_ts.
    pub(crate) fn recs_of(&self, t: u32) -> &[StoreRec] {
        let (lo, hi) = self.rec_range[t as usize];
        &self.recs[lo as usize..hi as usize]
    }

    /// Store records whose start_ts is no transaction's, with that start_ts.
    pub(crate) fn orphan_recs(&self) -> impl Iterator<Item = (u64, &StoreRec)> {
        self.orphans
            .iter()
            .map(|&(i, start_ts)| (start_ts, &self.recs[i as usize]))
    }

    pub(crate) fn all_recs(&self) -> &[StoreRec] {
        &self.recs
    }

    /// Committed versions of a cell, by commit_ts.
    pub(crate) fn versions(&self, cell: u32) -> &[Cv] {
        &self.cv[self.cv_off[cell as usize] as usize..self.cv_off[cell as usize + 1] as usize]
    }

    /// [`Ctx::versions`], each with whether the store holds it (else only
    /// its client's word).
    pub(crate) fn versions_sourced(&self, cell: u32) -> impl Iterator<Item = (&Cv, bool)> {
        let lo = self.cv_off[cell as usize] as usize;
        self.versions(cell).iter().zip(lo..).map(|(v, i)| {
            let bit = self.cv_from_store[i / 64] >> (i % 64) & 1;
            (v, bit == 1)
        })
    }

    /// The transaction whose start_ts is `ts` (the first in history order
    /// on a tie), or [`NONE`].
    pub(crate) fn by_start(&self, ts: u64) -> u32 {
        let by_start = self
            .by_start
            .get_or_init(|| txns_by_start(self.h).into_iter().map(|(_, t)| t).collect());
        let p = by_start.partition_point(|&t| self.txn(t).start_ts < ts);
        match by_start.get(p) {
            Some(&t) if self.txn(t).start_ts == ts => t,
            _ => NONE,
        }
    }

    /// How many cells the history has (ids `0..n_cells()`).
    pub(crate) fn n_cells(&self) -> usize {
        self.h.cells.len()
    }

    /// A cell's row and column ("?" for an unknown id).
    pub(crate) fn cell(&self, c: u32) -> (&'a str, &'a str) {
        self.h.cell_name(c)
    }

    pub(crate) fn cell_name(&self, c: u32) -> String {
        if (c as usize) < self.n_cells() {
            let (row, col) = self.cell(c);
            format!("{row}.{col}")
        } else {
            "?".to_string()
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

    pub(crate) fn describe_op(&self, op: &COp) -> String {
        let (row, col) = self.h.cell_name(op.cell);
        match op.kind {
            OpKind::Read => format!("read {row}.{col} = {}", self.fmt(self.value(op))),
            OpKind::Write => format!("write {row}.{col} = {}", self.fmt(self.value(op))),
            OpKind::Delete => format!("delete {row}.{col}"),
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
        match (x.commit_ts(), self.store_commit(t)) {
            (Some(c), _) => s.push_str(&format!(", commit_ts {c}")),
            (None, Some(c)) => s.push_str(&format!(
                ", no commit_ts reported (the store has it committed at {c})"
            )),
            (None, None) if self.committed[t as usize] => {
                s.push_str(", read-only with no commit_ts");
            }
            (None, None) => {}
        }
        s.push_str(&format!(", invoked at {}", Ms(x.invoke_ns)));
        match x.complete_ns() {
            Some(d) => s.push_str(&format!(", completed at {}", Ms(d))),
            None => s.push_str(", never completed"),
        }
        if let Some(r) = self.h.strs.opt(x.abort_reason) {
            s.push_str(&format!(", abort reason {r:?}"));
        }
        if let Some(o) = self.h.runs.get(x.observer as usize) {
            let (row, col) = self.h.cell_name(o.cell);
            let name = self.h.strs.get(o.name);
            s.push_str(&format!(", ran observer {name:?} for {row}.{col}"));
        }
        let all_ops = self.ops(t);
        let ops: Vec<String> = all_ops
            .iter()
            .take(OPS_SHOWN)
            .map(|o| self.describe_op(o))
            .collect();
        if ops.is_empty() {
            s.push_str("; no ops");
        } else {
            s.push_str(&format!("; ops: {}", ops.join(", ")));
            if all_ops.len() > OPS_SHOWN {
                s.push_str(&format!(", ... and {} more", all_ops.len() - OPS_SHOWN));
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
                    "event at {}: {} {fields} (for context only; events are not trusted)",
                    Ms(ev.t_ns),
                    ev.kind
                ));
            }
        }
        lines
    }

    pub(crate) fn describe_rec(&self, r: &StoreRec) -> String {
        let cell = self.cell_name(r.cell);
        match r.kind {
            VersionKind::Put if r.value.is_none() => format!(
                "{cell} put committed at {} whose data is missing",
                r.commit_ts
            ),
            VersionKind::Put => format!(
                "{cell} put {} committed at {}",
                self.fmt(r.value),
                r.commit_ts
            ),
            VersionKind::Delete => format!("{cell} delete committed at {}", r.commit_ts),
            VersionKind::Rollback => format!("{cell} rollback record"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client reports commit_ts 12 for what the store committed at 10
    /// (and T2's write only its client reports): each version knows
    /// whether the store holds it, across a bit word's boundary too.
    #[test]
    fn versions_know_whether_the_store_holds_them() {
        let txn = |id: u64, start: u64, commit: u64, row: &str| {
            format!(
                r#"{{"id": {id}, "client": 1, "start_ts": {start}, "commit_ts": {commit},
                "invoke_ns": 0, "complete_ns": 1, "outcome": "committed",
                "ops": [{{"f": "write", "row": "{row}", "col": "c", "value": "v{id}"}}]}}"#
            )
        };
        // 70 filler cells put the cell under test past the first 64 bits.
        let mut txns: Vec<String> = (0..70)
            .map(|i| txn(100 + i, 200 + 2 * i, 201 + 2 * i, &format!("f{i}")))
            .collect();
        txns.push(txn(1, 1, 12, "x"));
        txns.push(txn(2, 20, 21, "x"));
        let mut cells: Vec<String> = (0..70)
            .map(|i| {
                format!(
                    r#"{{"row": "f{i}", "col": "c", "versions": [{{"start_ts": {}, "commit_ts": {},
                    "kind": "put", "value": "v{}"}}]}}"#,
                    200 + 2 * i,
                    201 + 2 * i,
                    100 + i
                )
            })
            .collect();
        cells.push(
            r#"{"row": "x", "col": "c", "versions": [{"start_ts": 1, "commit_ts": 10,
            "kind": "put", "value": "v1"}]}"#
                .to_string(),
        );
        let json = format!(
            r#"{{"format": "percsim-history/1", "transactions": [{}],
            "final_state": {{"cells": [{}]}}}}"#,
            txns.join(","),
            cells.join(",")
        );
        let mut h = crate::reader::read(json.as_bytes(), 0).expect("valid");
        h.renumber_cells();
        let store = h.take_store();
        let ctx = Ctx::build(&h, store);
        let x = (0..ctx.n_cells() as u32)
            .find(|&c| ctx.cell(c).0 == "x")
            .expect("cell x");
        let got: Vec<(u64, bool)> = ctx
            .versions_sourced(x)
            .map(|(v, from_store)| (v.commit_ts, from_store))
            .collect();
        assert_eq!(got, [(10, true), (12, false), (21, false)]);
        let filler: Vec<bool> = ctx.versions_sourced(0).map(|(_, s)| s).collect();
        assert_eq!(filler, [true]);
    }
}
