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
//!
//! Elements are taken in batches of up to [`BATCH`]: all of a batch is
//! scanned first, then its strings and cells are looked up together, so
//! that on a large file the cache misses of those lookups overlap instead
//! of coming one after another. A batch ends before the first element the
//! scanner does not take, which then goes to the visitors in its turn.

use crate::compact::{COp, CState, CVersion, Compact, NIL, OpKind, Strs, Txn};
use crate::history::{Outcome, VersionKind};

mod exact;
mod scan;

use scan::{
    BATCH, CELL_NAMES, Cur, KIND_NAMES, OP_NAMES, OUTCOME_NAMES, RawOp, Scan, TXN_NAMES,
    VERSION_KIND_NAMES, VERSION_NAMES,
};
pub(crate) use scan::{Miss, Scratch};

/// How many elements a batch takes at most.
#[cfg(test)]
pub(crate) const BATCH_LEN: usize = BATCH;

/// Scans the elements of an array from the start of `text` with `one`: the
/// first at its start, then each after a `,`, up to [`BATCH`], stopping
/// before the first one not taken. The bytes taken (to the end of the last
/// element taken); a miss on the first element is that miss.
fn run(text: &[u8], s: &mut Scratch, one: fn(&mut Cur, &mut Scratch) -> Scan<()>) -> Scan<usize> {
    s.clear();
    let mut cur = Cur { b: text, i: 0 };
    one(&mut cur, s)?;
    let mut end = cur.i;
    for _ in 1..BATCH {
        let mark = s.mark();
        if cur.eat(b',').and_then(|()| one(&mut cur, s)).is_err() {
            s.back_to(&mark);
            break;
        }
        end = cur.i;
    }
    Ok(end)
}

/// The keys a transaction must have: id, client, start_ts, invoke_ns, outcome, ops.
const TXN_REQUIRED: u32 = 1 | 1 << 1 | 1 << 2 | 1 << 4 | 1 << 6 | 1 << 8;

/// The steps of reading a batch of one kind of array element. `scan`
/// takes the elements of the usual shape at the start of `text` (see
/// [`run`]) into the scratch; [`intern`] then interns their strings (the
/// only step that needs the string table), and
/// `add` adds the elements to the history. The reader of a large file runs
/// the steps on two threads, one batch behind the other (`reader.rs`).
pub(crate) struct Elements {
    /// Scans: the number of bytes taken.
    pub scan: fn(&[u8], &mut Scratch) -> Scan<usize>,
    /// Adds what `scan` left in the scratch to the history, once
    /// [`intern`] has interned its strings.
    pub add: fn(&mut Compact, &mut Scratch),
}

impl Elements {
    /// Every step on the calling thread: the bytes taken from `text`.
    /// Nothing is added on a miss.
    pub(crate) fn read(&self, text: &[u8], c: &mut Compact, s: &mut Scratch) -> Scan<usize> {
        let n = (self.scan)(text, s)?;
        intern(text, &mut c.strs, s);
        (self.add)(c, s);
        Ok(n)
    }
}

/// Interns the strings of a batch scanned from `text`.
pub(crate) fn intern(text: &[u8], strs: &mut Strs, s: &mut Scratch) {
    strs.intern_batch(text, &s.strs, &mut s.ids);
}

/// The transactions (the elements of the `transactions` array).
pub(crate) const TXNS: Elements = Elements {
    scan: scan_txns,
    add: add_txns,
};

/// The store cells (the elements of `final_state.cells`).
pub(crate) const CELLS: Elements = Elements {
    scan: scan_cells,
    add: add_cells,
};

/// Scans the transactions at the start of `text` (the elements of the
/// `transactions` array from one on, see [`run`]): the number of bytes
/// they took.
fn scan_txns(text: &[u8], s: &mut Scratch) -> Scan<usize> {
    run(text, s, txn)
}

/// One transaction, into the scratch: as the writer makes it (see
/// `exact.rs`), or else key by key.
fn txn(cur: &mut Cur, s: &mut Scratch) -> Scan<()> {
    either(cur, s, exact::txn, txn_keyed)
}

/// `fast` from where `cur` is, or, when it does not take the element,
/// `general` from there again with nothing of `fast`'s kept.
#[inline(always)]
fn either(
    cur: &mut Cur,
    s: &mut Scratch,
    fast: fn(&mut Cur, &mut Scratch) -> Option<()>,
    general: fn(&mut Cur, &mut Scratch) -> Scan<()>,
) -> Scan<()> {
    let (at, mark) = (cur.i, s.mark());
    if fast(cur, s).is_some() {
        return Ok(());
    }
    cur.i = at;
    s.back_to(&mark);
    general(cur, s)
}

/// One transaction, key by key, into the scratch.
fn txn_keyed(cur: &mut Cur, s: &mut Scratch) -> Scan<()> {
    let mut t = Txn::default();
    let seen = cur.members(&TXN_NAMES, |cur, k| {
        match k {
            0 => t.id = cur.u64()?,
            1 => t.client = cur.u64()?,
            2 => t.start_ts = cur.u64()?,
            3 => t.set_commit_ts(cur.opt_u64()?),
            4 => t.invoke_ns = cur.u64()?,
            5 => t.set_complete_ns(cur.opt_u64()?),
            6 => {
                t.outcome = match cur.name(&OUTCOME_NAMES)? {
                    0 => Outcome::Committed,
                    1 => Outcome::Aborted,
                    _ => Outcome::Unknown,
                }
            }
            7 => {
                if !cur.null()? {
                    t.abort_reason = s.str(cur.str()?);
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
    s.txns.push((t, s.ops.len()));
    Ok(())
}

/// One op, into the scratch.
fn op(cur: &mut Cur, s: &mut Scratch) -> Scan<()> {
    let mut o = RawOp {
        kind: OpKind::Read,
        row: NIL,
        col: NIL,
        value: NIL,
    };
    let seen = cur.members(&OP_NAMES, |cur, k| {
        if k == 0 {
            o.kind = [OpKind::Read, OpKind::Write, OpKind::Delete][cur.name(&KIND_NAMES)?];
            return Ok(());
        }
        if k == 3 && cur.null()? {
            return Ok(());
        }
        let at = s.str(cur.str()?);
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

/// Adds the batch's transactions and their ops (their strings interned by
/// [`intern`]).
fn add_txns(c: &mut Compact, s: &mut Scratch) {
    let ids = &s.ids;
    let id = |k: u32| if k == NIL { NIL } else { ids[k as usize] };
    s.keys.clear();
    s.keys.extend(s.ops.iter().map(|o| (id(o.row), id(o.col))));
    c.cell_batch(&s.keys, &mut s.cell_ids);
    let mut from = 0;
    for &(mut t, to) in &s.txns {
        for (o, &cell) in s.ops[from..to].iter().zip(&s.cell_ids[from..to]) {
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
        from = to;
        t.abort_reason = id(t.abort_reason);
        c.push_txn(t);
    }
}

/// Scans the store cells (`final_state.cells` entries) at the start of
/// `text` (see [`run`]): the number of bytes they took.
fn scan_cells(text: &[u8], s: &mut Scratch) -> Scan<usize> {
    run(text, s, cell)
}

/// One store cell, into the scratch: as the writer makes it (see
/// `exact.rs`), or else key by key.
fn cell(cur: &mut Cur, s: &mut Scratch) -> Scan<()> {
    either(cur, s, exact::cell, cell_keyed)
}

/// One store cell, key by key, into the scratch.
fn cell_keyed(cur: &mut Cur, s: &mut Scratch) -> Scan<()> {
    let (mut row, mut col) = (NIL, NIL);
    let seen = cur.members(&CELL_NAMES, |cur, k| {
        if k == 2 {
            return cur.elements(|cur| version(cur, s));
        }
        let at = s.str(cur.str()?);
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
    s.end_cell(row, col);
    Ok(())
}

/// Adds the batch's store cells and their versions (their strings
/// interned by [`intern`]).
fn add_cells(c: &mut Compact, s: &mut Scratch) {
    let ids = &s.ids;
    s.keys.clear();
    s.keys.extend(
        s.cells
            .iter()
            .map(|k| (ids[k.row as usize], ids[k.col as usize])),
    );
    c.cell_batch(&s.keys, &mut s.cell_ids);
    let mut from = 0;
    for (k, &cell) in s.cells.iter().zip(&s.cell_ids) {
        let lo = c.versions.len();
        for v in &s.versions[from..k.versions_end] {
            let value = if v.value == NIL {
                NIL
            } else {
                ids[v.value as usize]
            };
            c.versions.push(CVersion { value, ..*v });
        }
        from = k.versions_end;
        let hi = c.versions.len();
        c.state.push(CState { cell, lo, hi });
    }
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
    let seen = cur.members(&VERSION_NAMES, |cur, k| {
        match k {
            0 => v.start_ts = cur.u64()?,
            1 => v.commit_ts = cur.u64()?,
            2 => {
                let kinds = [VersionKind::Put, VersionKind::Delete, VersionKind::Rollback];
                v.kind = kinds[cur.name(&VERSION_KIND_NAMES)?];
            }
            3 => {
                if !cur.null()? {
                    v.value = s.str(cur.str()?);
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
    use super::scan::{stops, word};
    use super::*;

    fn scan(text: &str) -> (Scan<usize>, Compact) {
        let mut c = Compact::new();
        let r = TXNS.read(text.as_bytes(), &mut c, &mut Scratch::default());
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

    /// Numbers up to `u64::MAX` are read exactly; one more is left to the
    /// visitors.
    #[test]
    fn numbers_are_read_exactly_up_to_the_largest() {
        let read = |text: &str| {
            let mut cur = Cur {
                b: text.as_bytes(),
                i: 0,
            };
            cur.u64()
        };
        for n in [
            0,
            7,
            999_999_999_999_999_999,
            1_000_000_000_000_000_000,
            u64::MAX - 1,
            u64::MAX,
        ] {
            assert_eq!(read(&format!("{n},")), Ok(n));
        }
        assert_eq!(read("18446744073709551616,"), Err(Miss::Other));
        assert_eq!(read("99999999999999999999,"), Err(Miss::Other));
        assert_eq!(read("184467440737095516150"), Err(Miss::Other));
        assert_eq!(read("1844674407370955161"), Err(Miss::Short));
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

    /// `n` transactions of the usual shape, each with its own values and
    /// rows shared between neighbours, as one array's elements.
    fn many(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| {
                USUAL
                    .replace(r#""id":7"#, &format!(r#""id":{i}"#))
                    .replace(r#""row":"q""#, &format!(r#""row":"q{}""#, i / 2))
                    .replace(r#""value":"v""#, &format!(r#""value":"v{i}""#))
            })
            .collect()
    }

    /// Consecutive transactions are taken in one batch, up to [`BATCH`],
    /// and come out as one at a time would make them: the same strings in
    /// the same order, the same cells.
    #[test]
    fn a_batch_is_what_one_at_a_time_makes() {
        let texts = many(BATCH + 5);
        let all = texts.join(" , ");
        let (r, batched) = scan(&all);
        let taken = texts[..BATCH].join(" , ").len();
        assert_eq!(r, Ok(taken));
        assert_eq!(batched.txns.len(), BATCH);
        let mut single = Compact::new();
        let mut s = Scratch::default();
        for t in &texts[..BATCH] {
            assert_eq!(TXNS.read(t.as_bytes(), &mut single, &mut s), Ok(t.len()));
        }
        let names = |c: &Compact| -> Vec<(String, String, Option<String>)> {
            (0..c.txns.len())
                .flat_map(|t| c.ops(t).to_vec())
                .map(|o| {
                    let (r, col) = c.cell_name(o.cell);
                    (r.into(), col.into(), c.strs.opt(o.value).map(Into::into))
                })
                .collect()
        };
        assert_eq!(names(&batched), names(&single));
        let cells = |c: &Compact| c.ops.iter().map(|o| o.cell).collect::<Vec<_>>();
        assert_eq!(cells(&batched), cells(&single));
        assert_eq!(batched.cells.len(), single.cells.len());
        let ids: Vec<u64> = batched.txns.iter().map(|t| t.id).collect();
        assert_eq!(ids, (0..BATCH as u64).collect::<Vec<_>>());
        assert_eq!(batched.strs.len(), single.strs.len());
        for i in 0..batched.strs.len() as u32 {
            assert_eq!(batched.strs.get(i), single.strs.get(i));
        }
    }

    /// A batch stops before the first element it does not take (unusual,
    /// or cut short), keeping the ones before it whole and nothing of it.
    #[test]
    fn a_batch_stops_before_an_element_it_does_not_take() {
        let mut texts = many(6);
        texts[3] = texts[3].replace(r#""client":1,"#, "");
        let all = texts.join(",");
        let (r, c) = scan(&all);
        assert_eq!(r, Ok(texts[..3].join(",").len()));
        assert_eq!(c.txns.len(), 3);
        assert_eq!(c.ops.len(), 9);
        let clean = many(6);
        let all = clean.join(",");
        let (r, c) = scan(&all[..all.len() - 5]);
        assert_eq!(r, Ok(clean[..5].join(",").len()));
        assert_eq!((c.txns.len(), c.ops.len()), (5, 15));
        // An element that is not a transaction after the comma ends it too.
        let (r, c) = scan(&format!("{}, 5", texts[0]));
        assert_eq!((r, c.txns.len()), (Ok(texts[0].len()), 1));
    }

    /// The word-at-a-time search finds the same first stop as a byte at a
    /// time, for each kind of stop at each place among ordinary bytes and
    /// for words made of bytes near every boundary.
    #[test]
    fn eight_bytes_at_a_time_stop_where_one_at_a_time_does() {
        let first = |w: [u8; 8]| {
            w.iter()
                .position(|&c| c == b'"' || c == b'\\' || !(0x20..0x80).contains(&c))
        };
        let fast = |w: [u8; 8]| match stops(u64::from_le_bytes(w)) {
            0 => None,
            f => Some((f.trailing_zeros() / 8) as usize),
        };
        let edges = [
            0u8,
            0x1f,
            0x20,
            0x21,
            b'"' - 1,
            b'"',
            b'"' + 1,
            b'\\',
            0x7f,
            0x80,
            0xff,
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..200_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut w = [b'a'; 8];
            if round < 8 * edges.len() as u32 {
                w[(round / edges.len() as u32) as usize] =
                    edges[(round % edges.len() as u32) as usize];
            } else {
                for (i, b) in w.iter_mut().enumerate() {
                    *b = edges[((x >> (8 * i)) % edges.len() as u64) as usize];
                    if (x >> (60 - i)) & 1 == 1 {
                        *b = b'a';
                    }
                }
            }
            assert_eq!(fast(w), first(w), "{w:?}");
        }
    }

    /// Keys compare as numbers: equal only to the same name, whatever
    /// follows them in the text.
    #[test]
    fn keys_compare_whole() {
        let text = b"start_ts\"abort_reason\"start\"";
        let start_ts = word(text, 8).expect("short");
        assert_eq!(Some(2), TXN_NAMES.iter().position(|n| n.word == start_ts));
        let start = word(&text[22..], 5).expect("short");
        assert!(TXN_NAMES.iter().all(|n| n.word != start));
        assert_eq!(word(&text[9..], 12), Some(TXN_NAMES[7].word));
        assert_eq!(word(&text[9..21], 12), Some(TXN_NAMES[7].word));
        // The name expected next is matched whole, quotes and all; any
        // other string is compared with every name.
        let name = |text: &str, first: usize| {
            let padded = format!("{text}                ");
            let mut cur = Cur {
                b: padded.as_bytes(),
                i: 0,
            };
            cur.name_from(&TXN_NAMES, first).map(|k| (k, cur.i))
        };
        assert_eq!(name(r#""client":"#, 1), Ok((1, 8)));
        assert_eq!(name(r#""client":"#, 0), Ok((1, 8)));
        assert_eq!(name(r#" "client":"#, 1), Ok((1, 9)));
        assert_eq!(name(r#""clients":"#, 1), Err(Miss::Other));
        assert_eq!(name(r#""clien":"#, 1), Err(Miss::Other));
        assert_eq!(name(r#""client\u0020":"#, 1), Err(Miss::Other));
        assert_eq!(name(r#""abort_reason""#, 10), Ok((7, 14)));
        assert_eq!(name(r#""id""#, 11), Ok((0, 4)));
        assert_eq!(word(b"x", 0), Some(0));
        assert_eq!(word(&[b'a'; 17], 17), None);
    }

    const CELL_TEXT: &str = r#"{"row":"r","col":"c","versions":[{"start_ts":1,"commit_ts":2,"kind":"put","value":"v"},{"start_ts":3,"commit_ts":3,"kind":"rollback","value":null},{"start_ts":4,"commit_ts":5,"kind":"put","data_missing":true},{"start_ts":6,"commit_ts":7,"kind":"delete"}]}"#;

    fn scan_cell(text: &str) -> (Scan<usize>, Compact) {
        let mut c = Compact::new();
        let r = CELLS.read(text.as_bytes(), &mut c, &mut Scratch::default());
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

    /// Store cells in one batch: each keeps its own versions.
    #[test]
    fn store_cells_in_a_batch_keep_their_own_versions() {
        let other = CELL_TEXT.replace(r#""row":"r""#, r#""row":"s""#);
        let text = format!("{CELL_TEXT},{other} ,{CELL_TEXT}]");
        let (r, c) = scan_cell(&text);
        assert_eq!(r, Ok(text.len() - 1));
        let spans: Vec<(usize, usize)> = c.state.iter().map(|s| (s.lo, s.hi)).collect();
        assert_eq!(spans, [(0, 4), (4, 8), (8, 12)]);
        assert_eq!(c.cell_name(c.state[1].cell), ("s", "c"));
        assert_eq!(c.state[0].cell, c.state[2].cell);
        assert_ne!(c.state[0].cell, c.state[1].cell);
        assert_eq!(c.strs.get(c.versions[4].value), "v");
        assert_eq!(c.versions[4].value, c.versions[8].value);
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
