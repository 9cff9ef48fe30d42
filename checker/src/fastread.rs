//! A hand-written scanner for the transactions and store cells of a history
//! file in their usual shape, the hot path of reading a large file: known
//! keys only, each once; plain ASCII strings without escapes; unsigned
//! integers without sign, fraction or exponent; no observer mark and no
//! scans.
//!
//! It judges nothing it is unsure of: anything else, well-formed or not, is
//! a [`Miss::Other`], and the caller parses that transaction (or cell) with
//! the serde visitors of `reader.rs`, which accept exactly what the derived
//! `Deserialize` of [`crate::Transaction`] (or [`crate::CellState`]) accepts
//! and name any problem. So
//! the scanner only has to be right about what it accepts: what it accepts,
//! it turns into exactly what the visitors would have made (strings are
//! interned in the order they appear in the text, as the visitors do).

use crate::compact::{COp, CState, CVersion, Compact, NIL, OpKind, Txn};
use crate::history::{Outcome, VersionKind};
// The keys the visitors of `reader.rs` know, in their order (a bit per key).
use crate::reader::{CELL, KINDS, OP, TXN, VERSION};

/// Why the scanner did not take a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Miss {
    /// The text ended inside the transaction: read more and try again.
    Short,
    /// Not of the usual shape (or not valid): parse it the ordinary way.
    Other,
}

type Scan<T> = Result<T, Miss>;

/// One op as scanned: its kind and its strings, as indices into
/// [`Scratch::strs`] ([`NIL`] for none).
#[derive(Clone, Copy)]
struct RawOp {
    kind: OpKind,
    row: u32,
    col: u32,
    value: u32,
}

/// What one transaction's scan collects before anything is added to the
/// history (reused from one transaction to the next).
#[derive(Default)]
pub(crate) struct Scratch {
    /// Each string's range in the scanned text, in the order of the text.
    strs: Vec<(usize, usize)>,
    ops: Vec<RawOp>,
    /// A store cell's versions, `value` an index into `strs` (or [`NIL`]).
    versions: Vec<CVersion>,
    /// The interned ids of `strs`.
    ids: Vec<u32>,
}

/// A position in the text of one transaction.
struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cur<'_> {
    /// Skips JSON whitespace; the next byte.
    fn peek(&mut self) -> Scan<u8> {
        loop {
            match self.b.get(self.i) {
                None => return Err(Miss::Short),
                Some(b' ' | b'\n' | b'\t' | b'\r') => self.i += 1,
                Some(&c) => return Ok(c),
            }
        }
    }

    /// Consumes `c` (after whitespace).
    fn eat(&mut self, c: u8) -> Scan<()> {
        if self.peek()? != c {
            return Err(Miss::Other);
        }
        self.i += 1;
        Ok(())
    }

    /// A string of printable ASCII without escapes: its range.
    fn str(&mut self) -> Scan<(usize, usize)> {
        self.eat(b'"')?;
        let start = self.i;
        loop {
            match self.b.get(self.i) {
                None => return Err(Miss::Short),
                Some(b'"') => break,
                Some(&c) if !(0x20..0x80).contains(&c) || c == b'\\' => return Err(Miss::Other),
                Some(_) => self.i += 1,
            }
        }
        self.i += 1;
        Ok((start, self.i - 1))
    }

    /// A string, compared with `names`: its index there.
    fn name(&mut self, names: &[&str]) -> Scan<usize> {
        let (s, e) = self.str()?;
        let text = &self.b[s..e];
        names
            .iter()
            .position(|n| n.as_bytes() == text)
            .ok_or(Miss::Other)
    }

    /// An unsigned integer that fits a `u64`, written plainly.
    fn u64(&mut self) -> Scan<u64> {
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
    fn bool(&mut self) -> Scan<bool> {
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
    fn null(&mut self) -> Scan<bool> {
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
    fn opt_u64(&mut self) -> Scan<Option<u64>> {
        if self.null()? {
            return Ok(None);
        }
        self.u64().map(Some)
    }

    /// Walks an object's members: `each(cursor, index of the key in
    /// names)` reads the value; a key not in `names`, or one seen twice,
    /// is a miss. Returns the bits of the keys seen.
    fn members(
        &mut self,
        names: &[&str],
        mut each: impl FnMut(&mut Self, usize) -> Scan<()>,
    ) -> Scan<u32> {
        let mut seen = 0u32;
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Ok(seen);
        }
        loop {
            let k = self.name(names)?;
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
    fn elements(&mut self, mut each: impl FnMut(&mut Self) -> Scan<()>) -> Scan<()> {
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

/// The keys a transaction must have: id, client, start_ts, invoke_ns, outcome, ops.
const TXN_REQUIRED: u32 = 1 | 1 << 1 | 1 << 2 | 1 << 4 | 1 << 6 | 1 << 8;

const OUTCOMES: &[&str] = &["committed", "aborted", "unknown"];

/// Scans the transaction at the start of `text` and, if it is of the usual
/// shape, adds it to `c`: the number of bytes it took. Nothing is added on
/// a miss.
pub(crate) fn txn(text: &[u8], c: &mut Compact, s: &mut Scratch) -> Scan<usize> {
    s.strs.clear();
    s.ops.clear();
    let mut cur = Cur { b: text, i: 0 };
    let mut t = Txn::default();
    let seen = cur.members(TXN, |cur, k| {
        match k {
            0 => t.id = cur.u64()?,
            1 => t.client = cur.u64()?,
            2 => t.start_ts = cur.u64()?,
            3 => t.set_commit_ts(cur.opt_u64()?),
            4 => t.invoke_ns = cur.u64()?,
            5 => t.set_complete_ns(cur.opt_u64()?),
            6 => {
                t.outcome = match cur.name(OUTCOMES)? {
                    0 => Outcome::Committed,
                    1 => Outcome::Aborted,
                    _ => Outcome::Unknown,
                }
            }
            7 => {
                if !cur.null()? {
                    t.abort_reason = s.strs.len() as u32;
                    s.strs.push(cur.str()?);
                }
            }
            8 => cur.elements(|cur| op(cur, s))?,
            9 => {
                if !cur.null()? {
                    return Err(Miss::Other);
                }
            }
            _ => cur.elements(|_| Err(Miss::Other))?,
        }
        Ok(())
    })?;
    if seen & TXN_REQUIRED != TXN_REQUIRED {
        return Err(Miss::Other);
    }
    add(text, c, s, t);
    Ok(cur.i)
}

/// One op, into the scratch.
fn op(cur: &mut Cur, s: &mut Scratch) -> Scan<()> {
    let mut o = RawOp {
        kind: OpKind::Read,
        row: NIL,
        col: NIL,
        value: NIL,
    };
    let seen = cur.members(OP, |cur, k| {
        if k == 0 {
            o.kind = [OpKind::Read, OpKind::Write, OpKind::Delete][cur.name(KINDS)?];
            return Ok(());
        }
        if k == 3 && cur.null()? {
            return Ok(());
        }
        let at = s.strs.len() as u32;
        s.strs.push(cur.str()?);
        match k {
            1 => o.row = at,
            2 => o.col = at,
            _ => o.value = at,
        }
        Ok(())
    })?;
    // f, row and col are required; a write has a value.
    if seen & 0b111 != 0b111 || (o.kind == OpKind::Write && o.value == NIL) {
        return Err(Miss::Other);
    }
    s.ops.push(o);
    Ok(())
}

/// Interns the scanned strings, in the order of the text, into `s.ids`.
fn intern(text: &[u8], c: &mut Compact, s: &mut Scratch) {
    // Every byte of a scanned string is ASCII: valid UTF-8.
    let strs: Vec<&str> = s
        .strs
        .iter()
        .map(|&(a, b)| std::str::from_utf8(&text[a..b]).unwrap_or(""))
        .collect();
    c.strs.intern_all(&strs, &mut s.ids);
}

/// Interns the scanned strings (in the order of the text) and adds the
/// transaction and its ops.
fn add(text: &[u8], c: &mut Compact, s: &mut Scratch, mut t: Txn) {
    intern(text, c, s);
    let id = |k: u32| if k == NIL { NIL } else { s.ids[k as usize] };
    for o in &s.ops {
        let cell = c.cell(id(o.row), id(o.col));
        let value = if o.kind == OpKind::Delete {
            NIL
        } else {
            id(o.value)
        };
        c.ops.push(COp {
            kind: o.kind,
            cell,
            value,
        });
    }
    t.abort_reason = id(t.abort_reason);
    c.push_txn(t);
}

const VERSION_KINDS: &[&str] = &["put", "delete", "rollback"];

/// Scans the store cell (a `final_state.cells` entry) at the start of
/// `text` and, if it is of the usual shape, adds it and its versions to
/// `c`: the number of bytes it took. Nothing is added on a miss.
pub(crate) fn cell(text: &[u8], c: &mut Compact, s: &mut Scratch) -> Scan<usize> {
    s.strs.clear();
    s.versions.clear();
    let mut cur = Cur { b: text, i: 0 };
    let (mut row, mut col) = (NIL, NIL);
    let seen = cur.members(CELL, |cur, k| {
        if k == 2 {
            return cur.elements(|cur| version(cur, s));
        }
        let at = s.strs.len() as u32;
        s.strs.push(cur.str()?);
        if k == 0 {
            row = at
        } else {
            col = at
        }
        Ok(())
    })?;
    if seen != 0b111 {
        return Err(Miss::Other);
    }
    intern(text, c, s);
    let cell = c.cell(s.ids[row as usize], s.ids[col as usize]);
    let lo = c.versions.len();
    for v in &s.versions {
        let value = if v.value == NIL {
            NIL
        } else {
            s.ids[v.value as usize]
        };
        c.versions.push(CVersion { value, ..*v });
    }
    let hi = c.versions.len();
    c.state.push(CState { cell, lo, hi });
    Ok(cur.i)
}

/// One version of a store cell, into the scratch.
fn version(cur: &mut Cur, s: &mut Scratch) -> Scan<()> {
    let mut v = CVersion {
        start_ts: 0,
        commit_ts: 0,
        kind: VersionKind::Put,
        value: NIL,
        data_missing: false,
    };
    let seen = cur.members(VERSION, |cur, k| {
        match k {
            0 => v.start_ts = cur.u64()?,
            1 => v.commit_ts = cur.u64()?,
            2 => {
                let kinds = [VersionKind::Put, VersionKind::Delete, VersionKind::Rollback];
                v.kind = kinds[cur.name(VERSION_KINDS)?];
            }
            3 => {
                if !cur.null()? {
                    v.value = s.strs.len() as u32;
                    s.strs.push(cur.str()?);
                }
            }
            _ => v.data_missing = cur.bool()?,
        }
        Ok(())
    })?;
    // start_ts, commit_ts and kind are required.
    if seen & 0b111 != 0b111 {
        return Err(Miss::Other);
    }
    s.versions.push(v);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> (Scan<usize>, Compact) {
        let mut c = Compact::new();
        let r = txn(text.as_bytes(), &mut c, &mut Scratch::default());
        (r, c)
    }

    const USUAL: &str = r#"{"id":7,"client":1,"start_ts":3,"commit_ts":null,"invoke_ns":0,"outcome":"aborted","abort_reason":"x","ops":[{"f":"read","row":"r","col":"c","value":null},{"f":"write","row":"r","col":"c","value":"v"},{"f":"delete","row":"q","col":"c"}],"observer":null,"scans":[]}"#;

    #[test]
    fn a_transaction_of_the_usual_shape_is_taken_whole() {
        let (r, c) = scan(&format!("{USUAL} ,"));
        assert_eq!(r, Ok(USUAL.len()));
        assert_eq!(c.txns.len(), 1);
        let t = c.txns[0];
        assert_eq!((t.id, t.client, t.start_ts, t.commit_ts()), (7, 1, 3, None));
        assert_eq!(t.outcome, Outcome::Aborted);
        assert_eq!(c.strs.get(t.abort_reason), "x");
        let ops = c.ops(0);
        assert_eq!(ops.len(), 3);
        assert_eq!((ops[0].kind, ops[0].value), (OpKind::Read, NIL));
        assert_eq!(c.strs.get(ops[1].value), "v");
        assert_eq!(ops[0].cell, ops[1].cell);
        assert_ne!(ops[0].cell, ops[2].cell);
        assert_eq!((ops[2].kind, ops[2].value), (OpKind::Delete, NIL));
        // The strings were interned in the order of the text, as the
        // visitors do: "x" first, then "r", "c", "v", "q".
        assert_eq!(c.strs.get(0), "x");
        assert_eq!(c.strs.get(3), "v");
    }

    #[test]
    fn a_cut_transaction_asks_for_more() {
        for end in 0..USUAL.len() {
            let (r, c) = scan(&USUAL[..end]);
            assert_eq!(r, Err(Miss::Short), "{}", &USUAL[..end]);
            assert!(c.txns.is_empty() && c.ops.is_empty());
        }
    }

    /// Whatever is not of the usual shape is left to the visitors, valid
    /// or not; nothing is added.
    #[test]
    fn anything_unusual_is_left_to_the_visitors() {
        let odd = [
            USUAL.replace(r#""id":7"#, r#""id":7,"id":7"#),
            USUAL.replace(r#""id":7"#, r#""id":07"#),
            USUAL.replace(r#""id":7"#, r#""id":7.0"#),
            USUAL.replace(r#""id":7"#, r#""id":-7"#),
            USUAL.replace(r#""id":7"#, r#""id":99999999999999999999"#),
            USUAL.replace(r#""client":1,"#, ""),
            USUAL.replace(r#""ops":["#, r#""ops":[],"x":["#),
            USUAL.replace(r#""aborted""#, r#""Aborted""#),
            USUAL.replace(r#""value":"v""#, r#""value":"\u0076""#),
            USUAL.replace(r#""value":"v""#, r#""value":"é""#),
            USUAL.replace(r#""value":"v""#, r#""value":null"#),
            USUAL.replace(r#""value":"v""#, ""),
            USUAL.replace(r#""f":"delete","#, r#""f":"put","#),
            USUAL.replace(r#""observer":null"#, r#""observer":{}"#),
            USUAL.replace(r#""scans":[]"#, r#""scans":[{}]"#),
            USUAL.replace(r#""commit_ts":null"#, r#""commit_ts":nul1"#),
            USUAL.replace(r#""col":"c"}"#, r#""col":"c",}"#),
        ];
        for text in &odd {
            assert_ne!(text, USUAL);
            let (r, c) = scan(text);
            assert_eq!(r, Err(Miss::Other), "{text}");
            assert!(c.txns.is_empty() && c.ops.is_empty(), "{text}");
        }
    }

    const CELL_TEXT: &str = r#"{"row":"r","col":"c","versions":[{"start_ts":1,"commit_ts":2,"kind":"put","value":"v"},{"start_ts":3,"commit_ts":3,"kind":"rollback","value":null},{"start_ts":4,"commit_ts":5,"kind":"put","data_missing":true},{"start_ts":6,"commit_ts":7,"kind":"delete"}]}"#;

    fn scan_cell(text: &str) -> (Scan<usize>, Compact) {
        let mut c = Compact::new();
        let r = cell(text.as_bytes(), &mut c, &mut Scratch::default());
        (r, c)
    }

    #[test]
    fn a_store_cell_of_the_usual_shape_is_taken_whole() {
        let (r, c) = scan_cell(&format!("{CELL_TEXT}]"));
        assert_eq!(r, Ok(CELL_TEXT.len()));
        assert_eq!(c.state.len(), 1);
        let st = c.state[0];
        assert_eq!((st.lo, st.hi), (0, 4));
        assert_eq!(c.cell_name(st.cell), ("r", "c"));
        let v = &c.versions;
        assert_eq!(
            (v[0].start_ts, v[0].commit_ts, v[0].kind),
            (1, 2, VersionKind::Put)
        );
        assert_eq!(c.strs.get(v[0].value), "v");
        assert_eq!((v[1].kind, v[1].value), (VersionKind::Rollback, NIL));
        assert!(v[2].data_missing && !v[0].data_missing);
        assert_eq!((v[3].kind, v[3].commit_ts), (VersionKind::Delete, 7));
        for end in 0..CELL_TEXT.len() {
            let (r, c) = scan_cell(&CELL_TEXT[..end]);
            assert_eq!(r, Err(Miss::Short), "{}", &CELL_TEXT[..end]);
            assert!(c.state.is_empty() && c.versions.is_empty());
        }
    }

    #[test]
    fn an_unusual_store_cell_is_left_to_the_visitors() {
        let odd = [
            CELL_TEXT.replace(r#""col":"c","#, ""),
            CELL_TEXT.replace(r#""col":"c","#, r#""col":"c","col":"c","#),
            CELL_TEXT.replace(r#""col":"c","#, r#""col":"c","x":1,"#),
            CELL_TEXT.replace(r#""kind":"delete""#, r#""kind":"Delete""#),
            CELL_TEXT.replace(r#""start_ts":6,"#, ""),
            CELL_TEXT.replace(r#""data_missing":true"#, r#""data_missing":1"#),
            CELL_TEXT.replace(r#""data_missing":true"#, r#""data_missing":tru"#),
            CELL_TEXT.replace(r#""value":"v""#, r#""value":"\n""#),
            CELL_TEXT.replace(r#""row":"r""#, r#""row":null"#),
        ];
        for text in &odd {
            assert_ne!(text, CELL_TEXT);
            let (r, c) = scan_cell(text);
            assert_eq!(r, Err(Miss::Other), "{text}");
            assert!(c.state.is_empty() && c.versions.is_empty(), "{text}");
        }
    }
}
