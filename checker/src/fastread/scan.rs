//! The scanner's cursor and what it collects: the text position [`Cur`]
//! with its readers of JSON tokens, the [`Scratch`] a batch fills, and the
//! known names keys and values are compared with. Shared by the general
//! scanner (`fastread.rs`) and the exact matcher (`exact.rs`).

use crate::compact::{CVersion, OpKind, Txn};
use crate::keys::{CELL, KINDS, OP, TXN, VERSION};

/// Why the scanner did not take a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Miss {
    /// The text ended inside the transaction: read more and try again.
    Short,
    /// Not of the usual shape (or not valid): parse it the ordinary way.
    Other,
}

pub(super) type Scan<T> = Result<T, Miss>;

/// One op as scanned: its kind and its strings, as indices into
/// [`Scratch::strs`] ([`NIL`] for none).
#[derive(Clone, Copy)]
pub(super) struct RawOp {
    pub(super) kind: OpKind,
    pub(super) row: u32,
    pub(super) col: u32,
    pub(super) value: u32,
}

/// What a batch of scanned transactions (or store cells) collects before
/// anything is added to the history (reused from one batch to the next).
#[derive(Default)]
pub(crate) struct Scratch {
    /// Each string's range in the scanned text, in the order of the text.
    pub(super) strs: Vec<(usize, usize)>,
    pub(super) ops: Vec<RawOp>,
    /// Each transaction, its `abort_reason` an index into `strs` (or
    /// [`NIL`]), with the end of its ops in `ops`.
    pub(super) txns: Vec<(Txn, usize)>,
    /// Store cells' versions, `value` an index into `strs` (or [`NIL`]).
    pub(super) versions: Vec<CVersion>,
    /// Each store cell: its row and column (indices into `strs`) and the
    /// end of its versions in `versions`.
    pub(super) cells: Vec<RawCell>,
    /// The interned ids of `strs`.
    pub(super) ids: Vec<u32>,
    /// The cells of the batch's ops (or store cells), as row and column
    /// string ids.
    pub(super) keys: Vec<(u32, u32)>,
    /// The cell ids of `keys`.
    pub(super) cell_ids: Vec<u32>,
}

/// One store cell as scanned (see [`Scratch::cells`]).
#[derive(Clone, Copy)]
pub(super) struct RawCell {
    pub(super) row: u32,
    pub(super) col: u32,
    pub(super) versions_end: usize,
}

/// How many transactions (or store cells) are scanned before their strings
/// and cells are looked up together.
pub(super) const BATCH: usize = 64;

/// The lengths of a [`Scratch`]'s lists, to drop an element scanned only in
/// part.
pub(super) struct Mark([usize; 5]);

impl Scratch {
    /// Ends a store cell of row and column `row`, `col` (indices into
    /// `strs`) whose versions were pushed last.
    pub(super) fn end_cell(&mut self, row: u32, col: u32) {
        let versions_end = self.versions.len();
        self.cells.push(RawCell {
            row,
            col,
            versions_end,
        });
    }

    /// Empties what one batch collects.
    pub(super) fn clear(&mut self) {
        self.strs.clear();
        self.ops.clear();
        self.txns.clear();
        self.versions.clear();
        self.cells.clear();
    }

    /// Where each list ends now.
    pub(super) fn mark(&self) -> Mark {
        Mark([
            self.strs.len(),
            self.ops.len(),
            self.txns.len(),
            self.versions.len(),
            self.cells.len(),
        ])
    }

    /// Drops what was collected after `m`.
    pub(super) fn back_to(&mut self, m: &Mark) {
        self.strs.truncate(m.0[0]);
        self.ops.truncate(m.0[1]);
        self.txns.truncate(m.0[2]);
        self.versions.truncate(m.0[3]);
        self.cells.truncate(m.0[4]);
    }

    /// Adds a string's range; its index.
    #[inline(always)]
    pub(super) fn str(&mut self, range: (usize, usize)) -> u32 {
        self.strs.push(range);
        self.strs.len() as u32 - 1
    }
}

/// A position in the text of one transaction.
pub(super) struct Cur<'a> {
    pub(super) b: &'a [u8],
    pub(super) i: usize,
}

impl Cur<'_> {
    /// Skips JSON whitespace; the next byte.
    pub(super) fn peek(&mut self) -> Scan<u8> {
        loop {
            match self.b.get(self.i) {
                None => return Err(Miss::Short),
                Some(b' ' | b'\n' | b'\t' | b'\r') => self.i += 1,
                Some(&c) => return Ok(c),
            }
        }
    }

    /// Consumes `c` (after whitespace).
    pub(super) fn eat(&mut self, c: u8) -> Scan<()> {
        if self.peek()? != c {
            return Err(Miss::Other);
        }
        self.i += 1;
        Ok(())
    }

    /// A string of printable ASCII without escapes: its range. Eight bytes
    /// at a time while eight are left (see [`stops`]), then byte by byte.
    pub(super) fn str(&mut self) -> Scan<(usize, usize)> {
        self.eat(b'"')?;
        let start = self.i;
        let i = plain_end(self.b, start);
        match self.b.get(i) {
            None => return Err(Miss::Short),
            Some(b'"') => {}
            Some(_) => return Err(Miss::Other),
        }
        self.i = i + 1;
        Ok((start, i))
    }

    /// A string, compared with `names`: its index there.
    pub(super) fn name(&mut self, names: &[Name]) -> Scan<usize> {
        self.name_from(names, 0)
    }

    /// [`Cur::name`], trying `names[first]` first with one comparison of
    /// the next 16 bytes (keys usually come in the order of their names,
    /// so that is the one after the previous key), then comparing the
    /// string read with every name as a [`word`].
    #[inline(always)]
    pub(super) fn name_from(&mut self, names: &[Name], first: usize) -> Scan<usize> {
        if let Some(n) = names.get(first)
            && let Some(next) = self.b.get(self.i..).and_then(<[u8]>::first_chunk::<16>)
            && u128::from_le_bytes(*next) & n.quoted_mask == n.quoted
        {
            self.i += n.quoted_len;
            return Ok(first);
        }
        self.name_any(names)
    }

    /// [`Cur::name`] by reading the string and comparing it with every
    /// name (out of line: the usual key is the expected one).
    #[inline(never)]
    pub(super) fn name_any(&mut self, names: &[Name]) -> Scan<usize> {
        let (s, e) = self.str()?;
        let word = word(&self.b[s..], e - s).ok_or(Miss::Other)?;
        names.iter().position(|n| n.word == word).ok_or(Miss::Other)
    }

    /// An unsigned integer that fits a `u64`, written plainly.
    pub(super) fn u64(&mut self) -> Scan<u64> {
        let first = self.peek()?;
        if !first.is_ascii_digit() {
            return Err(Miss::Other);
        }
        let start = self.i;
        let mut n: u64 = 0;
        while let Some(&c) = self.b.get(self.i) {
            if !c.is_ascii_digit() {
                break;
            }
            let d = u64::from(c - b'0');
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(d))
                .ok_or(Miss::Other)?;
            self.i += 1;
        }
        match self.b.get(self.i) {
            None => Err(Miss::Short),
            Some(b'.' | b'e' | b'E') => Err(Miss::Other),
            _ if first == b'0' && self.i - start > 1 => Err(Miss::Other),
            _ => Ok(n),
        }
    }

    /// `true` or `false`.
    pub(super) fn bool(&mut self) -> Scan<bool> {
        let (word, value): (&[u8], bool) = match self.peek()? {
            b't' => (b"true", true),
            b'f' => (b"false", false),
            _ => return Err(Miss::Other),
        };
        match self.b.get(self.i..self.i + word.len()) {
            None => Err(Miss::Short),
            Some(w) if w == word => {
                self.i += word.len();
                Ok(value)
            }
            Some(_) => Err(Miss::Other),
        }
    }

    /// `null` (true) or not (false, nothing consumed).
    pub(super) fn null(&mut self) -> Scan<bool> {
        if self.peek()? != b'n' {
            return Ok(false);
        }
        match self.b.get(self.i..self.i + 4) {
            None => Err(Miss::Short),
            Some(b"null") => {
                self.i += 4;
                Ok(true)
            }
            Some(_) => Err(Miss::Other),
        }
    }

    /// `null`, or an unsigned integer.
    pub(super) fn opt_u64(&mut self) -> Scan<Option<u64>> {
        if self.null()? {
            return Ok(None);
        }
        self.u64().map(Some)
    }

    /// Walks an object's members: `each(cursor, index of the key in
    /// names)` reads the value; a key not in `names`, or one seen twice,
    /// is a miss. Returns the bits of the keys seen.
    pub(super) fn members(
        &mut self,
        names: &[Name],
        mut each: impl FnMut(&mut Self, usize) -> Scan<()>,
    ) -> Scan<u32> {
        let mut seen = 0u32;
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Ok(seen);
        }
        let mut next = 0;
        loop {
            let k = self.name_from(names, next)?;
            next = k + 1;
            if seen & (1 << k) != 0 {
                return Err(Miss::Other);
            }
            seen |= 1 << k;
            self.eat(b':')?;
            each(self, k)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Ok(seen);
                }
                _ => return Err(Miss::Other),
            }
        }
    }

    /// Walks an array, calling `each` at the start of every element.
    pub(super) fn elements(&mut self, mut each: impl FnMut(&mut Self) -> Scan<()>) -> Scan<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.i += 1;
            return Ok(());
        }
        loop {
            each(self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(Miss::Other),
            }
        }
    }
}

/// Bytes 0x80 in every byte of a word.
pub(super) const HIGH: u64 = 0x8080_8080_8080_8080;
/// Where the plain string (printable ASCII without `"` or `\\`) starting at
/// `start` in `b` ends: the index of its first other byte, or `b.len()`.
/// Eight bytes at a time while eight are left (see [`stops`]), then byte by
/// byte.
#[inline(always)]
pub(super) fn plain_end(b: &[u8], start: usize) -> usize {
    let mut i = start;
    while let Some(word) = b.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        let found = stops(u64::from_le_bytes(*word));
        if found != 0 {
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while b
        .get(i)
        .is_some_and(|&c| (0x20..0x80).contains(&c) && c != b'"' && c != b'\\')
    {
        i += 1;
    }
    i
}

/// Bytes 0x01 in every byte of a word.
pub(super) const ONES: u64 = 0x0101_0101_0101_0101;

/// The bytes of `word` (eight bytes of text, the first in the low byte)
/// that end a plain string (`"`, `\\`, a control character, or a byte of
/// 0x80 and over), as their high bits; exact for the lowest one, which is
/// all [`Cur::str`] uses (the borrow tricks may mark bytes after a true one,
/// never before).
pub(super) fn stops(word: u64) -> u64 {
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let control = word.wrapping_sub(0x20 * ONES) & !word & HIGH;
    zero(word ^ (u64::from(b'"') * ONES))
        | zero(word ^ (u64::from(b'\\') * ONES))
        | control
        | (word & HIGH)
}

/// The first `len` bytes of `text` as a number, zero-padded (the first in
/// the low byte), if `len` is at most 16: a key compared with every known
/// name at once. Keys are scanned strings, without zero bytes, so two of
/// different lengths never give the same number.
pub(super) fn word(text: &[u8], len: usize) -> Option<u128> {
    if len > 16 {
        return None;
    }
    let raw = match text.first_chunk::<16>() {
        Some(chunk) => u128::from_le_bytes(*chunk),
        None => {
            let mut padded = [0u8; 16];
            padded[..len].copy_from_slice(&text[..len]);
            u128::from_le_bytes(padded)
        }
    };
    let mask = u128::MAX.checked_shr(8 * (16 - len) as u32).unwrap_or(0);
    Some(raw & mask)
}

/// A known name (of a key, or of a field's value).
#[derive(Clone, Copy)]
pub(super) struct Name {
    /// The name as a [`word`].
    pub(super) word: u128,
    /// The name between quotes as a [`word`], and the mask of its bytes.
    pub(super) quoted: u128,
    pub(super) quoted_mask: u128,
    /// The length of the name between quotes.
    pub(super) quoted_len: usize,
}

/// The [`Name`]s of `names` (each of at most 14 bytes, none with a zero
/// byte, a quote, a backslash or a control character; checked when
/// compiled).
pub(super) const fn names<const N: usize>(names: &[&str]) -> [Name; N] {
    assert!(names.len() == N);
    let mut out = [Name {
        word: 0,
        quoted: 0,
        quoted_mask: 0,
        quoted_len: 0,
    }; N];
    let mut k = 0;
    while k < N {
        let b = names[k].as_bytes();
        assert!(b.len() <= 14);
        let mut word = 0u128;
        let mut i = 0;
        while i < b.len() {
            assert!(b[i] >= 0x20 && b[i] < 0x80 && b[i] != b'"' && b[i] != b'\\');
            word |= (b[i] as u128) << (8 * i);
            i += 1;
        }
        let quote = b'"' as u128;
        out[k] = Name {
            word,
            quoted: quote | word << 8 | quote << (8 * (b.len() + 1)),
            quoted_mask: u128::MAX >> (8 * (14 - b.len())),
            quoted_len: b.len() + 2,
        };
        k += 1;
    }
    out
}

pub(super) const TXN_NAMES: [Name; TXN.len()] = names(TXN);
pub(super) const OP_NAMES: [Name; OP.len()] = names(OP);
pub(super) const KIND_NAMES: [Name; KINDS.len()] = names(KINDS);
pub(super) const CELL_NAMES: [Name; CELL.len()] = names(CELL);
pub(super) const VERSION_NAMES: [Name; VERSION.len()] = names(VERSION);
pub(super) const OUTCOME_NAMES: [Name; 3] = names(&["committed", "aborted", "unknown"]);
pub(super) const VERSION_KIND_NAMES: [Name; 3] = names(&["put", "delete", "rollback"]);
