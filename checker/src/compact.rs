//! The history as the rules see it: every string (rows, columns, values,
//! names) interned once, every cell a dense id, each transaction a fixed-size
//! record and each op twelve bytes. Built from the public [`History`] or
//! straight from a JSON stream (see `reader.rs`), so that a large file is
//! never held as `String`s.

use crate::fx::FxHasher;
use crate::history::{Event, History, ObserverDecl, Op, Outcome, Scan, VersionKind};
use std::hash::Hasher;

/// "No such string / index" for `u32` ids.
pub(crate) const NIL: u32 = u32::MAX;

/// Interned strings: one arena, an offset per string, and an open-addressing
/// table of ids keyed by the string's hash.
#[derive(Default)]
pub(crate) struct Strs {
    arena: String,
    /// End of string `i` in `arena` (its start is the previous end), less
    /// the multiples of 2^32 counted in `wraps` (4 bytes a string rather
    /// than 8).
    ends: Vec<u32>,
    /// For each multiple of 2^32 bytes the arena has grown past, the id of
    /// the string whose end is the first past it (in order; empty unless
    /// the strings take 4 GiB). See [`Strs::end`].
    wraps: Vec<u32>,
    /// Any length (a string's first slot is found by multiplying, not by
    /// masking), so that it is sized to what a file needs rather than to
    /// the next power of two; see [`Slot`].
    table: Vec<Slot>,
    /// Scratch for [`Strs::intern_batch`]: the batch's keys.
    keys: Vec<Key>,
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
    /// byte. A longer one: the hash's low 32 bits (its high bits choose
    /// the slot), its start in the arena
    /// (4 bytes), its length (3 bytes), and [`LONG`] in the last byte; the
    /// 7 bytes of place are all `0xff` when the start or the length does
    /// not fit (the string is then found through its id).
    body: [u8; 12],
}

/// Strings up to this many bytes are held in their slot.
const INLINE_LEN: usize = 11;

/// For a short string of each length, the mask of its bytes among the
/// first eight of a slot's body ...
const LO_MASK: [u64; INLINE_LEN + 1] = {
    let mut m = [0u64; INLINE_LEN + 1];
    let mut len = 0;
    while len <= INLINE_LEN {
        m[len] = if len >= 8 {
            u64::MAX
        } else {
            (1 << (8 * len)) - 1
        };
        len += 1;
    }
    m
};

/// ... and among the next three (the fourth holds the length).
const HI_MASK: [u32; INLINE_LEN + 1] = {
    let mut m = [0u32; INLINE_LEN + 1];
    let mut len = 9;
    while len <= INLINE_LEN {
        m[len] = (1 << (8 * (len - 8))) - 1;
        len += 1;
    }
    m
};

/// The last byte of a slot holding a longer string (a short one's length
/// is there).
const LONG: u8 = 0xff;

/// A longer string's length must be below this to be placed by its slot.
const LEN_LIMIT: usize = (1 << 24) - 1;

/// A string's hash and the body of the slot that holds it (for a longer
/// string, only its tag and marker: its place is set when it is added).
#[derive(Clone, Copy)]
struct Key {
    hash: u64,
    body: [u8; 12],
}

impl Key {
    /// The key of `s`.
    fn of(s: &[u8]) -> Key {
        if s.len() <= INLINE_LEN {
            let mut body = [0u8; 12];
            body[..s.len()].copy_from_slice(s);
            body[11] = s.len() as u8;
            return Key::short(body);
        }
        let mut h = FxHasher::default();
        h.write(s);
        let hash = mix(h.finish());
        let mut body = [0u8; 12];
        body[..4].copy_from_slice(&(hash as u32).to_le_bytes());
        body[11] = LONG;
        Key { hash, body }
    }

    /// The key of `text[a..b]`, as [`Key::of`] gives, from one 16-byte
    /// load when the string is short and 16 bytes are there (no copy
    /// byte by byte).
    #[inline(always)]
    fn at(text: &[u8], (a, b): (usize, usize)) -> Key {
        let len = b - a;
        if len <= INLINE_LEN
            && let Some(word) = text.get(a..).and_then(<[u8]>::first_chunk::<16>)
        {
            let x = u128::from_le_bytes(*word);
            let (lo, hi) = (x as u64 & LO_MASK[len], (x >> 64) as u32 & HI_MASK[len]);
            return Key::short_parts(lo, hi | (len as u32) << 24);
        }
        Key::of(&text[a..b])
    }

    /// The key of a short string, from its slot's body.
    fn short(body: [u8; 12]) -> Key {
        let mut word = [0u8; 16];
        word[..12].copy_from_slice(&body);
        Key::short_word(u128::from_le_bytes(word))
    }

    /// The key of a short string, from its slot's body as the low 12 bytes
    /// of a number (the first byte lowest).
    fn short_word(x: u128) -> Key {
        Key::short_parts(x as u64, (x >> 64) as u32)
    }

    /// [`Key::short_word`] of the body's first eight bytes and next four.
    #[inline(always)]
    fn short_parts(lo: u64, hi: u32) -> Key {
        let mut body = [0u8; 12];
        body[..8].copy_from_slice(&lo.to_le_bytes());
        body[8..].copy_from_slice(&hi.to_le_bytes());
        Key {
            hash: mix(lo ^ u64::from(hi).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            body,
        }
    }

    fn is_short(&self) -> bool {
        self.body[11] != LONG
    }
}

/// murmur3's 64-bit finaliser: every input bit moves every output bit.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

impl Slot {
    fn new(key: Key, id: u32, s: &[u8], start: usize) -> Slot {
        let mut body = key.body;
        if !key.is_short() {
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

impl Strs {
    /// The string with id `id` ("" for [`NIL`] or an unknown id).
    pub(crate) fn get(&self, id: u32) -> &str {
        if id as usize >= self.ends.len() {
            return "";
        }
        let start = if id == 0 { 0 } else { self.end(id - 1) };
        &self.arena[start..self.end(id)]
    }

    /// Where string `id` (held) ends in the arena.
    fn end(&self, id: u32) -> usize {
        let low = self.ends[id as usize] as usize;
        match self.wraps.partition_point(|&w| w <= id) {
            0 => low,
            wraps => low + (wraps << 32),
        }
    }

    /// Records that string `id` was added and ends at `end` in the arena,
    /// having started at `start`.
    fn push_end(&mut self, id: u32, start: usize, end: usize) {
        self.ends.push(end as u32);
        for _ in (start >> 32)..(end >> 32) {
            self.wraps.push(id);
        }
    }

    /// `Some(string)`, or `None` for [`NIL`].
    pub(crate) fn opt(&self, id: u32) -> Option<&str> {
        (id != NIL).then(|| self.get(id))
    }

    /// Whether the slot of a longer string (one whose tag matched) holds `s`.
    fn holds_long(&self, slot: Slot, s: &[u8]) -> bool {
        match slot.place() {
            Some((start, len)) => len == s.len() && self.arena.as_bytes()[start..start + len] == *s,
            None => self.get(slot.id()).as_bytes() == s,
        }
    }

    /// The slot holding `s` (`Ok`), or the empty slot where it belongs.
    #[inline(always)]
    fn slot(&self, s: &[u8], key: Key) -> Result<usize, usize> {
        let mut i = self.home(key.hash);
        loop {
            let e = self.table[i];
            if e.id1 == 0 {
                return Err(i);
            }
            let hit = if key.is_short() {
                e.body == key.body
            } else {
                e.body[..4] == key.body[..4] && e.body[11] == LONG && self.holds_long(e, s)
            };
            if hit {
                return Ok(i);
            }
            i = self.next(i);
        }
    }

    /// The first slot for a string of hash `hash`: its place in the table
    /// in proportion to the hash (the table must not be empty).
    fn home(&self, hash: u64) -> usize {
        ((u128::from(hash) * self.table.len() as u128) >> 64) as usize
    }

    /// The slot after `i` (the first after the last).
    fn next(&self, i: usize) -> usize {
        if i + 1 == self.table.len() { 0 } else { i + 1 }
    }

    /// Rebuilds the table with room for `strings` strings (at least twice
    /// its length, unless `exact`, and at least room for every string held).
    fn grow_to(&mut self, strings: usize, exact: bool) {
        let fit = strings.max(self.ends.len()) * 4 / 3 + 64;
        let cap = if exact {
            fit
        } else {
            fit.max(2 * self.table.len()).max(1024)
        };
        self.table = vec![Slot::default(); cap];
        let mut start = 0;
        for id in 0..self.ends.len() as u32 {
            let end = self.end(id);
            let key = Key::of(&self.arena.as_bytes()[start..end]);
            let mut i = self.home(key.hash);
            while self.table[i].id1 != 0 {
                i = self.next(i);
            }
            self.table[i] = Slot::new(key, id, &self.arena.as_bytes()[start..end], start);
            start = end;
        }
    }

    /// Room for about `strings` distinct strings of `bytes` bytes in all, so
    /// that a large file's strings are not rehashed and copied at every
    /// doubling.
    fn reserve(&mut self, strings: usize, bytes: usize) {
        self.arena.reserve(bytes);
        self.ends.reserve(strings);
        if Strs::crowded(strings, self.table.len()) {
            self.grow_to(strings, true);
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
    }

    /// How many strings are held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The id of `s`, if it was interned.
    #[cfg(test)]
    pub(crate) fn find(&self, s: &str) -> Option<u32> {
        if self.table.is_empty() {
            return None;
        }
        let i = self.slot(s.as_bytes(), Key::of(s.as_bytes())).ok()?;
        Some(self.table[i].id())
    }

    /// The id of `s`, adding it when new.
    pub(crate) fn intern(&mut self, s: &str) -> u32 {
        if Strs::crowded(self.ends.len() + 1, self.table.len()) {
            self.grow_to(self.ends.len() + 1, false);
        }
        self.intern_keyed(s.as_bytes(), Key::of(s.as_bytes()))
    }

    /// The ids of the strings `text[a..b]` for each `(a, b)` of `ranges`
    /// (into `ids`), as [`Strs::intern`] on each in order would give; each
    /// range must hold UTF-8 (the scanner's hold printable ASCII).
    ///
    /// On a large file nearly every lookup misses the cache, and one at a
    /// time each waits the whole memory latency. So the hashes of the whole
    /// batch come first, then a tight loop that loads every string's first
    /// slot (loads the processor keeps in flight together, as they depend
    /// on nothing), and only then the lookups, which find their slots in
    /// the cache.
    pub(crate) fn intern_batch(
        &mut self,
        text: &[u8],
        ranges: &[(usize, usize)],
        ids: &mut Vec<u32>,
    ) {
        if Strs::crowded(self.ends.len() + ranges.len(), self.table.len()) {
            self.grow_to(self.ends.len() + ranges.len(), false);
        }
        let mut keys = std::mem::take(&mut self.keys);
        keys.clear();
        keys.extend(ranges.iter().map(|&range| Key::at(text, range)));
        let touched = keys
            .iter()
            .fold(0u32, |t, k| t ^ self.table[self.home(k.hash)].id1);
        std::hint::black_box(touched);
        ids.clear();
        for (&(a, b), &k) in ranges.iter().zip(&keys) {
            ids.push(self.intern_keyed(&text[a..b], k));
        }
        self.keys = keys;
    }

    /// [`Strs::intern`] with the key computed and the table large enough;
    /// `s` must be UTF-8.
    #[inline(always)]
    fn intern_keyed(&mut self, s: &[u8], key: Key) -> u32 {
        match self.slot(s, key) {
            Ok(i) => self.table[i].id(),
            Err(i) => self.add(s, key, i),
        }
    }

    /// Adds `s` (UTF-8, of key `key`) with the next id, in the empty slot
    /// `i`: its id.
    #[inline(never)]
    fn add(&mut self, s: &[u8], key: Key, i: usize) -> u32 {
        let start = self.arena.len();
        match std::str::from_utf8(s) {
            Ok(s) => self.arena.push_str(s),
            // Not reached: every caller's strings are UTF-8.
            Err(_) => self.arena.push_str(&String::from_utf8_lossy(s)),
        }
        let id = self.ends.len() as u32;
        self.push_end(id, start, self.arena.len());
        self.table[i] = Slot::new(key, id, s, start);
        id
    }
}

/// The cell table: (row, column) string ids to cell id, open addressing
/// with linear probing in one array (one cache line per lookup, so that a
/// batch's lookups can be loaded ahead, see [`Compact::cell_batch`]).
#[derive(Default)]
struct CellTable {
    /// The length is a power of two (or zero).
    slots: Vec<CellSlot>,
    /// log2 of the length.
    bits: u32,
    /// How many cells are held.
    len: usize,
    /// Scratch for [`Compact::cell_batch`]: the batch's hashes.
    hashes: Vec<u64>,
}

/// One slot of the cell table.
#[derive(Default, Clone, Copy)]
struct CellSlot {
    row: u32,
    col: u32,
    /// `cell id + 1` (0 when empty).
    id1: u32,
}

impl CellTable {
    /// A well-mixed hash of a cell's string ids (murmur3's finaliser).
    fn hash(row: u32, col: u32) -> u64 {
        let mut x = (u64::from(row) << 32 | u64::from(col)) ^ 0x9e37_79b9_7f4a_7c15;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^ (x >> 33)
    }

    /// Room for `more` cells beyond those held, at most three quarters full.
    fn reserve(&mut self, more: usize) {
        if (self.len + more) * 4 <= self.slots.len() * 3 {
            return;
        }
        let mut bits = self.bits.max(9);
        while (self.len + more) * 4 > (1usize << bits) * 3 {
            bits += 1;
        }
        let old = std::mem::replace(&mut self.slots, vec![CellSlot::default(); 1 << bits]);
        self.bits = bits;
        for s in old.into_iter().filter(|s| s.id1 != 0) {
            let i = self.empty_slot(CellTable::hash(s.row, s.col));
            self.slots[i] = s;
        }
    }

    /// The first empty slot from the one `hash` starts at.
    fn empty_slot(&self, hash: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = (hash >> (64 - self.bits)) as usize;
        while self.slots[i].id1 != 0 {
            i = (i + 1) & mask;
        }
        i
    }

    /// Loads the first slot of every hash in `hashes` (see
    /// [`Strs::intern_batch`]).
    fn touch(&self, hashes: &[u64]) {
        let shift = 64 - self.bits;
        let touched = hashes
            .iter()
            .fold(0u32, |t, &h| t ^ self.slots[(h >> shift) as usize].id1);
        std::hint::black_box(touched);
    }

    /// The id of the cell (row, col), or `next` once added as that; the
    /// table must have room for one more.
    fn find_or_add(&mut self, row: u32, col: u32, hash: u64, next: u32) -> u32 {
        let mask = self.slots.len() - 1;
        let mut i = (hash >> (64 - self.bits)) as usize;
        loop {
            let s = self.slots[i];
            if s.id1 == 0 {
                self.slots[i] = CellSlot {
                    row,
                    col,
                    id1: next + 1,
                };
                self.len += 1;
                return next;
            }
            if s.row == row && s.col == col {
                return s.id1 - 1;
            }
            i = (i + 1) & mask;
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
    pub model: Option<crate::Model>,
    pub seed: u64,
    pub strs: Strs,
    /// Cell id -> (row, col) string ids.
    pub cells: Vec<(u32, u32)>,
    cell_ids: CellTable,
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
        self.cell_ids.reserve(1);
        self.cell_hashed(row, col, CellTable::hash(row, col))
    }

    /// The ids of the cells `keys` (row and column string ids) into
    /// `cells`, as [`Compact::cell`] on each in order would give: the
    /// table's slots are all loaded first, as in [`Strs::intern_batch`].
    pub(crate) fn cell_batch(&mut self, keys: &[(u32, u32)], cells: &mut Vec<u32>) {
        self.cell_ids.reserve(keys.len());
        let mut hashes = std::mem::take(&mut self.cell_ids.hashes);
        hashes.clear();
        hashes.extend(keys.iter().map(|&(r, c)| CellTable::hash(r, c)));
        self.cell_ids.touch(&hashes);
        cells.clear();
        for (&(r, c), &h) in keys.iter().zip(&hashes) {
            cells.push(self.cell_hashed(r, c, h));
        }
        self.cell_ids.hashes = hashes;
    }

    /// [`Compact::cell`] with the hash computed and the table large enough.
    fn cell_hashed(&mut self, row: u32, col: u32, hash: u64) -> u32 {
        let next = self.cells.len() as u32;
        let id = self.cell_ids.find_or_add(row, col, hash, next);
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
        self.cell_ids = CellTable::default();
        self.cell_ids.reserve(self.cells.len());
        for (c, &(row, col)) in self.cells.iter().enumerate() {
            self.cell_ids
                .find_or_add(row, col, CellTable::hash(row, col), c as u32);
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
        c.model = h.model;
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

    /// A string's key read from a larger text with one load is the key
    /// of the string alone, at every length and place, near the end too.
    #[test]
    fn keys_read_in_place_equal_keys_of_the_string_alone() {
        let text: Vec<u8> = (0..64u32).map(|i| b'!' + (i * 7 % 90) as u8).collect();
        for a in 0..text.len() {
            for b in a..text.len().min(a + INLINE_LEN + 3) {
                let (at, of) = (Key::at(&text, (a, b)), Key::of(&text[a..b]));
                assert_eq!((at.hash, at.body), (of.hash, of.body), "{a}..{b}");
            }
        }
        // Strings differing in a byte or in their length hash apart.
        let hashes: std::collections::BTreeSet<u64> = [
            "",
            "a",
            "b",
            "ab",
            "a\0",
            "abcdefghijk",
            "abcdefghijl",
            "abcdefghijkl",
        ]
        .iter()
        .map(|s| Key::of(s.as_bytes()).hash)
        .collect();
        assert_eq!(hashes.len(), 8);
    }

    /// A table sized for a file (not to a power of two) and filled to
    /// three quarters still finds every string (probes wrap at its end),
    /// and grows past that.
    #[test]
    fn a_table_of_any_size_finds_every_string() {
        let mut s = Strs::default();
        s.reserve(3000, 0);
        assert_eq!(s.table.len(), 3000 * 4 / 3 + 64);
        let words: Vec<String> = (0..3000).map(|i| format!("w{i}")).collect();
        let ids: Vec<u32> = words.iter().map(|w| s.intern(w)).collect();
        assert_eq!(s.table.len(), 4064, "no growth within the reserve");
        let last = s.table.len() - 1;
        assert!(s.table[last].id1 != 0 || s.table[0].id1 != 0);
        for (w, &id) in words.iter().zip(&ids) {
            assert_eq!(s.find(w), Some(id), "{w}");
        }
        for i in 0..2000 {
            s.intern(&format!("x{i}"));
        }
        assert!(s.table.len() > 4064);
        for (w, &id) in words.iter().zip(&ids) {
            assert_eq!(s.find(w), Some(id), "{w}");
        }
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

    /// Strings past 4 GiB of arena are placed by their ends' low 32 bits
    /// and the wraps counted before them, a string across a multiple of
    /// 2^32 (or two) too.
    #[test]
    fn ends_past_four_gib_are_found_through_the_wraps() {
        let mut s = Strs::default();
        let four = 1usize << 32;
        // Ends recorded as a 12 GiB arena would give them, without one.
        let ends = [5, four - 1, four + 3, 3 * four + 1, 3 * four + 9];
        let mut start = 0;
        for (id, &end) in ends.iter().enumerate() {
            s.push_end(id as u32, start, end);
            start = end;
        }
        assert_eq!(s.wraps, [2, 3, 3]);
        for (id, &end) in ends.iter().enumerate() {
            assert_eq!(s.end(id as u32), end, "{id}");
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

    /// The cell table gives one id per (row, column), numbered in order of
    /// first sight, one at a time or in batches, across its growth.
    #[test]
    fn cells_are_numbered_once_one_at_a_time_or_in_batches() {
        let mut a = Compact::new();
        let mut b = Compact::new();
        let keys: Vec<(u32, u32)> = (0..20_000u32).map(|i| (i % 3001, i % 7)).collect();
        let one: Vec<u32> = keys.iter().map(|&(r, c)| a.cell(r, c)).collect();
        let mut batched = Vec::new();
        let mut out = Vec::new();
        for chunk in keys.chunks(97) {
            b.cell_batch(chunk, &mut out);
            batched.extend_from_slice(&out);
        }
        assert_eq!(one, batched);
        let distinct: std::collections::BTreeSet<(u32, u32)> = keys.iter().copied().collect();
        assert_eq!(a.cells.len(), distinct.len());
        for (&(r, c), &id) in keys.iter().zip(&one) {
            assert_eq!(a.cells[id as usize], (r, c));
        }
        // Ids follow first sight.
        let mut next = 0;
        for &id in &one {
            assert!(id <= next);
            next = next.max(id + 1);
        }
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
