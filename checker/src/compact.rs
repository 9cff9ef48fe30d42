//! The history as the rules see it: every string (rows, columns, values,
//! names) interned once, every cell a dense id, each transaction a fixed-size
//! record and each op twelve bytes. Built from the public [`History`] or
//! straight from a JSON stream (see `reader.rs`), so that a large file is
//! never held as `String`s.

use crate::fx::{FxHasher, FxMap};
use crate::history::{Event, History, ObserverDecl, Op, Outcome, Scan, VersionKind};
use std::hash::Hasher;

/// "No such string / index" for `u32` ids.
pub(crate) const NIL: u32 = u32::MAX;

/// Interned strings: one arena, an offset per string, and an open-addressing
/// table of ids keyed by the string's hash.
#[derive(Default)]
pub(crate) struct Strs {
    arena: String,
    /// End of string `i` in `arena` (its start is the previous end).
    ends: Vec<u64>,
    /// The length is a power of two; see [`Slot`].
    table: Vec<Slot>,
    /// log2 of the table's length.
    bits: u32,
}

/// One slot of the string table. A lookup reads the slot and, for a string
/// longer than [`INLINE_LEN`] bytes, the string's bytes; nothing else.
/// Short strings (rows, columns and values are mostly short) are held in
/// the slot itself, so their lookup is one memory access; a longer one's
/// place in the arena is in the slot, not only in `ends` (each of those is
/// a dependent cache miss per lookup on a large file).
#[derive(Default, Clone, Copy)]
struct Slot {
    /// `id + 1` (0 when empty).
    id1: u32,
    /// A short string: its bytes, zero-padded, and its length in the last
    /// byte. A longer one: the hash's high 32 bits, its start in the arena
    /// (4 bytes), its length (3 bytes), and [`LONG`] in the last byte; the
    /// 7 bytes of place are all `0xff` when the start or the length does
    /// not fit (the string is then found through its id).
    body: [u8; 12],
}

/// Strings up to this many bytes are held in their slot.
const INLINE_LEN: usize = 11;

/// The last byte of a slot holding a longer string.
const LONG: u8 = 0xff;

/// A longer string's length must be below this to be placed by its slot.
const LEN_LIMIT: usize = (1 << 24) - 1;

impl Slot {
    /// The body a slot holding `s` has, except for a long string's place
    /// (only its tag and marker are set).
    fn probe(s: &[u8], hash: u64) -> [u8; 12] {
        let mut body = [0u8; 12];
        if s.len() <= INLINE_LEN {
            body[..s.len()].copy_from_slice(s);
            body[11] = s.len() as u8;
        } else {
            body[..4].copy_from_slice(&((hash >> 32) as u32).to_le_bytes());
            body[11] = LONG;
        }
        body
    }

    fn new(hash: u64, id: u32, s: &[u8], start: usize) -> Slot {
        let mut body = Slot::probe(s, hash);
        if s.len() > INLINE_LEN {
            match (u32::try_from(start), s.len() < LEN_LIMIT) {
                (Ok(at), true) => {
                    body[4..8].copy_from_slice(&at.to_le_bytes());
                    body[8..11].copy_from_slice(&(s.len() as u32).to_le_bytes()[..3]);
                }
                _ => body[4..11].fill(0xff),
            }
        }
        Slot { id1: id + 1, body }
    }

    fn id(self) -> u32 {
        self.id1.wrapping_sub(1)
    }

    /// A longer string's (start, length) in the arena, if the slot has them.
    fn place(self) -> Option<(usize, usize)> {
        if self.body[4..11] == [0xff; 7] {
            return None;
        }
        let mut at = [0u8; 4];
        at.copy_from_slice(&self.body[4..8]);
        let mut len = [0u8; 4];
        len[..3].copy_from_slice(&self.body[8..11]);
        Some((
            u32::from_le_bytes(at) as usize,
            u32::from_le_bytes(len) as usize,
        ))
    }
}

/// A well-mixed 64-bit hash of a string (FxHash, then murmur3's finaliser,
/// so that short keys differing only in their last bytes spread out).
fn str_hash(s: &str) -> u64 {
    let mut h = FxHasher::default();
    h.write(s.as_bytes());
    let mut x = h.finish();
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

impl Strs {
    /// The string with id `id` ("" for [`NIL`] or an unknown id).
    pub(crate) fn get(&self, id: u32) -> &str {
        let i = id as usize;
        let Some(&end) = self.ends.get(i) else {
            return "";
        };
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.arena[start as usize..end as usize]
    }

    /// `Some(string)`, or `None` for [`NIL`].
    pub(crate) fn opt(&self, id: u32) -> Option<&str> {
        (id != NIL).then(|| self.get(id))
    }

    /// Whether the slot of a longer string (one whose tag matched) holds `s`.
    fn holds_long(&self, slot: Slot, s: &str) -> bool {
        match slot.place() {
            Some((start, len)) => {
                len == s.len() && self.arena.as_bytes()[start..start + len] == *s.as_bytes()
            }
            None => self.get(slot.id()) == s,
        }
    }

    /// The slot holding `s` (`Ok`), or the empty slot where it belongs.
    fn slot(&self, s: &str, hash: u64) -> Result<usize, usize> {
        let mask = self.table.len() - 1;
        let probe = Slot::probe(s.as_bytes(), hash);
        let short = s.len() <= INLINE_LEN;
        let mut i = (hash >> (64 - self.bits)) as usize;
        loop {
            let e = self.table[i];
            if e.id1 == 0 {
                return Err(i);
            }
            let hit = if short {
                e.body == probe
            } else {
                e.body[..4] == probe[..4] && e.body[11] == LONG && self.holds_long(e, s)
            };
            if hit {
                return Ok(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// Doubles the table (at least, and at least to fit every string held).
    fn grow(&mut self) {
        self.bits = (self.bits + 1).max(10);
        while Strs::crowded(self.ends.len(), 1 << self.bits) {
            self.bits += 1;
        }
        let cap = 1usize << self.bits;
        let mask = cap - 1;
        self.table = vec![Slot::default(); cap];
        let mut start = 0;
        for id in 0..self.ends.len() as u32 {
            let end = self.ends[id as usize] as usize;
            let hash = str_hash(&self.arena[start..end]);
            let mut i = (hash >> (64 - self.bits)) as usize;
            while self.table[i].id1 != 0 {
                i = (i + 1) & mask;
            }
            self.table[i] = Slot::new(hash, id, &self.arena.as_bytes()[start..end], start);
            start = end;
        }
    }

    /// Room for about `strings` distinct strings of `bytes` bytes in all, so
    /// that a large file's strings are not rehashed and copied at every
    /// doubling.
    fn reserve(&mut self, strings: usize, bytes: usize) {
        self.arena.reserve(bytes);
        self.ends.reserve(strings);
        while Strs::crowded(strings, self.table.len()) {
            self.grow();
        }
    }

    /// Whether a table of `slots` slots is too small for `strings` strings
    /// (more than three quarters full: probes stay within a cache line or two).
    fn crowded(strings: usize, slots: usize) -> bool {
        strings * 4 > slots * 3
    }

    /// Frees the lookup table once every string is in: the rules only turn
    /// ids into strings, and on a large file the table is about a third of
    /// what the read holds. A later [`Strs::intern`] rebuilds it.
    pub(crate) fn drop_index(&mut self) {
        self.table = Vec::new();
        self.bits = 0;
    }

    /// The id of `s`, if it was interned.
    #[cfg(test)]
    pub(crate) fn find(&self, s: &str) -> Option<u32> {
        if self.table.is_empty() {
            return None;
        }
        let i = self.slot(s, str_hash(s)).ok()?;
        Some(self.table[i].id())
    }

    /// The id of `s`, adding it when new.
    pub(crate) fn intern(&mut self, s: &str) -> u32 {
        while Strs::crowded(self.ends.len() + 1, self.table.len()) {
            self.grow();
        }
        self.intern_hashed(s, str_hash(s))
    }

    /// The ids of `strs` (into `ids`), as [`Strs::intern`] on each in
    /// order would give. On a large file nearly every lookup misses the
    /// cache: the slots of the whole batch are loaded first, loads the
    /// processor overlaps instead of waiting for each in turn.
    pub(crate) fn intern_all(&mut self, strs: &[&str], ids: &mut Vec<u32>) {
        while Strs::crowded(self.ends.len() + strs.len(), self.table.len()) {
            self.grow();
        }
        let mut hashes = [0u64; 32];
        ids.clear();
        for chunk in strs.chunks(hashes.len()) {
            let mut touched = 0u32;
            for (h, s) in hashes.iter_mut().zip(chunk) {
                *h = str_hash(s);
                touched ^= self.table[(*h >> (64 - self.bits)) as usize].id1;
            }
            std::hint::black_box(touched);
            for (&h, s) in hashes.iter().zip(chunk) {
                ids.push(self.intern_hashed(s, h));
            }
        }
    }

    /// [`Strs::intern`] with the hash computed and the table large enough.
    fn intern_hashed(&mut self, s: &str, hash: u64) -> u32 {
        match self.slot(s, hash) {
            Ok(i) => self.table[i].id(),
            Err(i) => {
                let start = self.arena.len();
                self.arena.push_str(s);
                self.ends.push(self.arena.len() as u64);
                let id = self.ends.len() as u32 - 1;
                self.table[i] = Slot::new(hash, id, s.as_bytes(), start);
                id
            }
        }
    }
}

/// What an op does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpKind {
    Read,
    Write,
    Delete,
}

/// One op: its kind, its cell and its value (a string id, [`NIL`] for none).
#[derive(Debug, Clone, Copy)]
pub(crate) struct COp {
    pub kind: OpKind,
    pub cell: u32,
    pub value: u32,
}

/// One transaction, without its ops (see [`Compact::ops`]): 64 bytes (the
/// two optional timestamps are told present by bits, not by `Option`'s
/// 8-byte tags).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Txn {
    pub id: u64,
    pub client: u64,
    pub start_ts: u64,
    /// See [`Txn::commit_ts`].
    commit: u64,
    pub invoke_ns: u64,
    /// See [`Txn::complete_ns`].
    complete: u64,
    pub outcome: Outcome,
    /// [`HAS_COMMIT`] and [`HAS_COMPLETE`].
    has: u8,
    /// String id of the abort reason, or [`NIL`].
    pub abort_reason: u32,
    /// Index into [`Compact::runs`], or [`NIL`].
    pub observer: u32,
}

/// [`Txn::has`]: the client reported a commit_ts.
const HAS_COMMIT: u8 = 1;
/// [`Txn::has`]: the transaction completed.
const HAS_COMPLETE: u8 = 2;

impl Txn {
    /// The commit_ts its client reported, if any.
    pub(crate) fn commit_ts(&self) -> Option<u64> {
        (self.has & HAS_COMMIT != 0).then_some(self.commit)
    }

    /// When it completed, if it did.
    pub(crate) fn complete_ns(&self) -> Option<u64> {
        (self.has & HAS_COMPLETE != 0).then_some(self.complete)
    }

    pub(crate) fn set_commit_ts(&mut self, ts: Option<u64>) {
        self.commit = ts.unwrap_or(0);
        self.has = (self.has & !HAS_COMMIT) | if ts.is_some() { HAS_COMMIT } else { 0 };
    }

    pub(crate) fn set_complete_ns(&mut self, ns: Option<u64>) {
        self.complete = ns.unwrap_or(0);
        self.has = (self.has & !HAS_COMPLETE) | if ns.is_some() { HAS_COMPLETE } else { 0 };
    }
}

impl Default for Txn {
    /// A transaction with no field read yet: zeros, no timestamps, outcome
    /// unknown, no abort reason and no observer mark.
    fn default() -> Self {
        Txn {
            id: 0,
            client: 0,
            start_ts: 0,
            commit: 0,
            invoke_ns: 0,
            complete: 0,
            outcome: Outcome::Unknown,
            has: 0,
            abort_reason: NIL,
            observer: NIL,
        }
    }
}

/// An observer mark: the observer's name (string id) and the notified cell.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    pub name: u32,
    pub cell: u32,
}

/// One write record of the store.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CVersion {
    pub start_ts: u64,
    pub commit_ts: u64,
    pub kind: VersionKind,
    /// String id, or [`NIL`].
    pub value: u32,
    pub data_missing: bool,
}

/// One `final_state.cells` entry: its cell and its slice of `versions`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CState {
    pub cell: u32,
    pub lo: usize,
    pub hi: usize,
}

/// A lock left in the store.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CLock {
    pub cell: u32,
    pub start_ts: u64,
    pub primary: u32,
}

/// The store's cells and their versions, taken out of a [`Compact`] so that
/// the rules' index can consume them (it holds them in its own form).
pub(crate) struct Store {
    pub state: Vec<CState>,
    pub versions: Vec<CVersion>,
}

/// The compact history.
#[derive(Default)]
pub(crate) struct Compact {
    pub format: String,
    pub seed: u64,
    pub strs: Strs,
    /// Cell id -> (row, col) string ids.
    pub cells: Vec<(u32, u32)>,
    cell_ids: FxMap<(u32, u32), u32>,
    pub txns: Vec<Txn>,
    /// Transaction `i`'s ops are `ops[op_off[i]..op_off[i + 1]]`.
    pub op_off: Vec<usize>,
    pub ops: Vec<COp>,
    pub runs: Vec<Mark>,
    /// The scans (predicate reads), each with its transaction's index, in
    /// transaction order.
    pub scans: Vec<(u32, Scan)>,
    pub events: Vec<Event>,
    pub state: Vec<CState>,
    pub versions: Vec<CVersion>,
    pub locks: Vec<CLock>,
    pub notify: Vec<u32>,
    pub observers: Vec<ObserverDecl>,
}

impl Compact {
    /// An empty history, ready to be filled.
    pub(crate) fn new() -> Compact {
        Compact {
            op_off: vec![0],
            ..Compact::default()
        }
    }

    /// An empty history with room for one read from a file of `len_bytes`
    /// bytes. The factors are rough bytes-per-item of typical files (a
    /// transaction with its ops takes a few hundred bytes): a reserve that
    /// is too large only costs address space (pages never written are never
    /// touched), one too small means the usual doubling.
    pub(crate) fn for_file_size(len_bytes: u64) -> Compact {
        let len = usize::try_from(len_bytes).unwrap_or(usize::MAX);
        let mut c = Compact::new();
        c.txns.reserve(len / 256);
        c.op_off.reserve(len / 256);
        c.ops.reserve(len / 64);
        c.versions.reserve(len / 128);
        // A generated history has one distinct string per ~230 bytes (a
        // simulator's, fewer): sized so that such a file never doubles it.
        c.strs.reserve(len / 200, len / 16);
        c
    }

    /// The id of the cell (row, col), given as string ids.
    pub(crate) fn cell(&mut self, row: u32, col: u32) -> u32 {
        let next = self.cells.len() as u32;
        let id = *self.cell_ids.entry((row, col)).or_insert(next);
        if id == next {
            self.cells.push((row, col));
        }
        id
    }

    /// The id of the cell (row, col), given as strings.
    pub(crate) fn cell_str(&mut self, row: &str, col: &str) -> u32 {
        let (r, c) = (self.strs.intern(row), self.strs.intern(col));
        self.cell(r, c)
    }

    /// The row and column of a cell.
    pub(crate) fn cell_name(&self, cell: u32) -> (&str, &str) {
        match self.cells.get(cell as usize) {
            Some(&(r, c)) => (self.strs.get(r), self.strs.get(c)),
            None => ("?", "?"),
        }
    }

    /// Transaction `t`'s ops.
    pub(crate) fn ops(&self, t: usize) -> &[COp] {
        &self.ops[self.op_off[t]..self.op_off[t + 1]]
    }

    /// Ends the transaction whose ops were pushed last.
    pub(crate) fn push_txn(&mut self, txn: Txn) {
        self.txns.push(txn);
        self.op_off.push(self.ops.len());
    }

    /// Renumbers the cells densely in order of first mention: ops, store
    /// cells, locks (each cell, then its primary), observer marks, notify
    /// entries; whatever order they were read in (a file may hold
    /// `final_state` before `transactions`). The ids every rule sees.
    pub(crate) fn renumber_cells(&mut self) {
        let mut of = vec![NIL; self.cells.len()];
        let mut next = 0u32;
        let mut number = |c: u32| {
            if let Some(slot) = of.get_mut(c as usize)
                && *slot == NIL
            {
                *slot = next;
                next += 1;
            }
        };
        self.ops.iter().for_each(|o| number(o.cell));
        self.state.iter().for_each(|s| number(s.cell));
        for l in &self.locks {
            number(l.cell);
            number(l.primary);
        }
        self.runs.iter().for_each(|m| number(m.cell));
        self.notify.iter().for_each(|&c| number(c));
        // Every cell is mentioned somewhere; any that is not goes last.
        (0..self.cells.len() as u32).for_each(&mut number);
        if of.iter().enumerate().all(|(i, &n)| n == i as u32) {
            return;
        }
        let new = |c: &mut u32| *c = of.get(*c as usize).copied().unwrap_or(*c);
        self.ops.iter_mut().for_each(|o| new(&mut o.cell));
        self.state.iter_mut().for_each(|s| new(&mut s.cell));
        for l in &mut self.locks {
            new(&mut l.cell);
            new(&mut l.primary);
        }
        self.runs.iter_mut().for_each(|m| new(&mut m.cell));
        self.notify.iter_mut().for_each(new);
        let mut cells = vec![(NIL, NIL); self.cells.len()];
        for (c, &names) in self.cells.iter().enumerate() {
            cells[of[c] as usize] = names;
        }
        self.cells = cells;
        self.cell_ids.clear();
        for (c, &names) in self.cells.iter().enumerate() {
            self.cell_ids.insert(names, c as u32);
        }
    }

    /// Takes the store's cells and their versions out (see [`Store`]).
    pub(crate) fn take_store(&mut self) -> Store {
        Store {
            state: std::mem::take(&mut self.state),
            versions: std::mem::take(&mut self.versions),
        }
    }

    /// The compact form of a history (no validation).
    pub(crate) fn from_history(h: &History) -> Compact {
        let mut c = Compact::new();
        c.format = h.format.clone();
        c.seed = h.seed;
        c.txns.reserve(h.transactions.len());
        for (i, t) in h.transactions.iter().enumerate() {
            c.scans
                .extend(t.scans.iter().map(|s| (i as u32, s.clone())));
            for op in &t.ops {
                let (kind, row, col, value) = match op {
                    Op::Read { row, col, value } => (OpKind::Read, row, col, value.as_deref()),
                    Op::Write { row, col, value } => {
                        (OpKind::Write, row, col, Some(value.as_str()))
                    }
                    Op::Delete { row, col } => (OpKind::Delete, row, col, None),
                };
                let cell = c.cell_str(row, col);
                let value = value.map_or(NIL, |v| c.strs.intern(v));
                c.ops.push(COp { kind, cell, value });
            }
            let abort_reason = t.abort_reason.as_deref().map_or(NIL, |r| c.strs.intern(r));
            let observer = match &t.observer {
                Some(o) => {
                    let mark = Mark {
                        name: c.strs.intern(&o.name),
                        cell: c.cell_str(&o.row, &o.col),
                    };
                    c.runs.push(mark);
                    c.runs.len() as u32 - 1
                }
                None => NIL,
            };
            let mut txn = Txn {
                id: t.id,
                client: t.client,
                start_ts: t.start_ts,
                invoke_ns: t.invoke_ns,
                outcome: t.outcome,
                abort_reason,
                observer,
                ..Txn::default()
            };
            txn.set_commit_ts(t.commit_ts);
            txn.set_complete_ns(t.complete_ns);
            c.push_txn(txn);
        }
        c.events = h.events.clone();
        c.observers = h.observers.clone();
        let fs = &h.final_state;
        for cs in &fs.cells {
            let cell = c.cell_str(&cs.row, &cs.col);
            let lo = c.versions.len();
            for v in &cs.versions {
                let value = v.value.as_deref().map_or(NIL, |s| c.strs.intern(s));
                c.versions.push(CVersion {
                    start_ts: v.start_ts,
                    commit_ts: v.commit_ts,
                    kind: v.kind,
                    value,
                    data_missing: v.data_missing,
                });
            }
            let hi = c.versions.len();
            c.state.push(CState { cell, lo, hi });
        }
        for l in &fs.locks {
            let lock = CLock {
                cell: c.cell_str(&l.row, &l.col),
                start_ts: l.start_ts,
                primary: c.cell_str(&l.primary.row, &l.primary.col),
            };
            c.locks.push(lock);
        }
        for n in &fs.notify {
            let cell = c.cell_str(&n.row, &n.col);
            c.notify.push(cell);
        }
        c.strs.drop_index();
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-transaction record stays 64 bytes, and its two optional
    /// timestamps are set and cleared apart from one another.
    #[test]
    fn a_transaction_record_is_64_bytes_with_independent_timestamps() {
        assert_eq!(std::mem::size_of::<Txn>(), 64);
        let mut t = Txn::default();
        assert_eq!((t.commit_ts(), t.complete_ns()), (None, None));
        t.set_commit_ts(Some(0));
        t.set_complete_ns(Some(u64::MAX));
        assert_eq!((t.commit_ts(), t.complete_ns()), (Some(0), Some(u64::MAX)));
        t.set_commit_ts(None);
        assert_eq!((t.commit_ts(), t.complete_ns()), (None, Some(u64::MAX)));
        t.set_complete_ns(None);
        t.set_commit_ts(Some(7));
        assert_eq!((t.commit_ts(), t.complete_ns()), (Some(7), None));
    }

    #[test]
    fn interning_gives_one_id_per_distinct_string() {
        let mut s = Strs::default();
        let words: Vec<String> = (0..5000).map(|i| format!("w{}", i % 1700)).collect();
        let ids: Vec<u32> = words.iter().map(|w| s.intern(w)).collect();
        for (w, &id) in words.iter().zip(&ids) {
            assert_eq!(s.get(id), w);
        }
        let distinct: std::collections::BTreeSet<u32> = ids.iter().copied().collect();
        assert_eq!(distinct.len(), 1700);
        assert_eq!(s.intern(""), s.intern(""));
        assert_ne!(s.intern(""), s.intern("w1"));
        assert_eq!(s.opt(NIL), None);
    }

    /// Strings held in their slot and strings placed in the arena are told
    /// apart at every length around the limit, with zero bytes and all.
    #[test]
    fn short_and_long_strings_near_the_inline_limit_stay_distinct() {
        let mut s = Strs::default();
        let mut words: Vec<String> = Vec::new();
        for len in 0..=INLINE_LEN + 3 {
            words.push("a".repeat(len));
            words.push("\0".repeat(len));
            words.push(format!("{}\0", "b".repeat(len)));
        }
        words.sort();
        words.dedup();
        let ids: Vec<u32> = words.iter().map(|w| s.intern(w)).collect();
        let distinct: std::collections::BTreeSet<u32> = ids.iter().copied().collect();
        assert_eq!(distinct.len(), words.len());
        for (w, &id) in words.iter().zip(&ids) {
            assert_eq!(s.intern(w), id, "{w:?}");
            assert_eq!(s.get(id), w);
        }
    }

    /// A string too long for a slot's inline length is still found, and
    /// not confused with its prefix.
    #[test]
    fn strings_longer_than_a_slot_holds_are_interned_once() {
        let mut s = Strs::default();
        let long = "x".repeat(LEN_LIMIT + 1);
        let prefix = &long[..LEN_LIMIT - 1];
        let a = s.intern(&long);
        let p = s.intern(prefix);
        assert_ne!(a, p);
        assert_eq!(s.intern(&long), a);
        assert_eq!(s.find(prefix), Some(p));
        assert_eq!(s.get(a).len(), LEN_LIMIT + 1);
        for i in 0..3000 {
            s.intern(&format!("k{i}"));
        }
        assert_eq!(s.find(&long), Some(a));
        assert_eq!(s.find(prefix), Some(p));
    }

    /// A file whose store comes before its transactions is read with the
    /// store's cells numbered first; renumbering puts the ops' cells first,
    /// everywhere at once, and the cell table still finds every cell.
    #[test]
    fn cells_are_renumbered_in_order_of_first_mention() {
        let json = r#"{"format": "percsim-history/1",
            "final_state": {"cells": [{"row": "b", "col": "c", "versions": []}]},
            "transactions": [{"id": 1, "client": 1, "start_ts": 1, "invoke_ns": 0,
                "outcome": "aborted", "ops": [{"f": "read", "row": "a", "col": "c"},
                {"f": "read", "row": "b", "col": "c"}]}]}"#;
        let mut c = crate::reader::read(json.as_bytes(), 0).expect("valid");
        let cells = |c: &Compact| c.ops.iter().map(|o| o.cell).collect::<Vec<_>>();
        assert_eq!(c.cell_name(0), ("b", "c"));
        assert_eq!(cells(&c), [1, 0]);
        c.renumber_cells();
        assert_eq!(c.cell_name(0), ("a", "c"));
        assert_eq!(c.cell_name(1), ("b", "c"));
        assert_eq!(cells(&c), [0, 1]);
        assert_eq!(c.state[0].cell, 1);
        assert_eq!(c.cell_str("b", "c"), 1);
        assert_eq!(c.cell_str("a", "c"), 0);
        assert_eq!(c.cell_str("new", "c"), 2);
    }

    /// After the table is dropped, ids and strings stay, and interning
    /// again still gives one id per string.
    #[test]
    fn a_dropped_index_is_rebuilt_when_needed() {
        let mut s = Strs::default();
        let ids: Vec<u32> = (0..5000).map(|i| s.intern(&format!("w{i}"))).collect();
        s.drop_index();
        assert_eq!(s.find("w7"), None);
        assert_eq!(s.get(ids[7]), "w7");
        assert_eq!(s.intern("w4999"), ids[4999]);
        assert_eq!(s.find("w7"), Some(ids[7]));
        assert_eq!(s.intern("new"), 5000);
    }
}
