//! The exact text the history writer makes for a transaction and for a
//! store cell (serde_json's compact output of [`crate::Transaction`] and
//! [`crate::CellState`]: keys in their declared order, no whitespace,
//! optional keys absent), matched straight through: one literal comparison
//! for each run of punctuation and keys, numbers of at most 19 digits read
//! without overflow checks (19 digits cannot overflow a `u64`).
//!
//! Anything else, even valid and of the usual shape (whitespace, another
//! key order, a 20-digit number, an observer mark, too little text left),
//! is `None`, and the caller's general scanner (`fastread.rs`) takes the
//! element again from its start. So this only has to be right about what
//! it accepts: the general scanner accepts all of it too, with the same
//! result (the same fields, the same strings in the same order).

use super::scan::{Cur, RawOp, Scratch, plain_end};
use crate::compact::{CVersion, NIL, OpKind, Txn};
use crate::history::{Outcome, VersionKind};

impl Cur<'_> {
    /// Consumes `lit` if the text goes on with it.
    #[inline(always)]
    fn lit(&mut self, lit: &[u8]) -> Option<()> {
        let end = self.i + lit.len();
        if self.b.get(self.i..end)? != lit {
            return None;
        }
        self.i = end;
        Some(())
    }

    /// An unsigned integer of 1 to 19 digits without a leading zero, eight
    /// digits at a time (see [`digit_run`]; fewer than eight bytes left
    /// are read as if followed by spaces: a number there is followed by
    /// nothing, which every caller's next literal refuses).
    #[inline(always)]
    fn digits(&mut self) -> Option<u64> {
        let start = self.i;
        let mut n = 0u64;
        loop {
            let rest = self.b.get(self.i..)?;
            let word = match rest.first_chunk::<8>() {
                Some(w) => u64::from_le_bytes(*w),
                None => {
                    let mut w = [b' '; 8];
                    w[..rest.len()].copy_from_slice(rest);
                    u64::from_le_bytes(w)
                }
            };
            let (value, len) = digit_run(word);
            self.i += len;
            if self.i - start > 19 {
                return None;
            }
            n = n * POW10[len] + value;
            if len < 8 {
                break;
            }
        }
        let len = self.i - start;
        // No digit, or a leading zero: not taken here.
        if len == 0 || (len > 1 && self.b[start] == b'0') {
            return None;
        }
        Some(n)
    }

    /// `null` (`Some(None)`) or [`Cur::digits`].
    #[inline(always)]
    fn null_or_digits(&mut self) -> Option<Option<u64>> {
        if self.lit(b"null").is_some() {
            return Some(None);
        }
        self.digits().map(Some)
    }

    /// The rest of a string whose opening quote was consumed: printable
    /// ASCII without escapes up to the closing quote (consumed), eight
    /// bytes at a time while eight are left, then byte by byte. Its range.
    #[inline(always)]
    fn rest_of_str(&mut self) -> Option<(usize, usize)> {
        let start = self.i;
        let end = plain_end(self.b, start);
        self.closing_quote(start, end)
    }

    /// The string from `start` if its first stop, at `end`, is its closing
    /// quote (then consumed).
    #[inline(always)]
    fn closing_quote(&mut self, start: usize, end: usize) -> Option<(usize, usize)> {
        if *self.b.get(end)? != b'"' {
            return None;
        }
        self.i = end + 1;
        Some((start, end))
    }

    /// A string value after its key: `"..."` (its index in the scratch) or
    /// `null` ([`NIL`]).
    #[inline(always)]
    fn null_or_str(&mut self, s: &mut Scratch) -> Option<u32> {
        if self.lit(b"null").is_some() {
            return Some(NIL);
        }
        self.lit(b"\"")?;
        Some(s.str(self.rest_of_str()?))
    }
}

/// Powers of ten up to 10^8.
const POW10: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// The digits at the start of `word` (eight bytes of text, the first in
/// the low byte): their value and how many there are (0 to 8), without a
/// branch per digit.
#[inline(always)]
fn digit_run(word: u64) -> (u64, usize) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte is not a digit if it is below '0' (the subtraction borrows
    // into its high bit), above '9' (adding 0x46 reaches its high bit) or
    // of 0x80 and over. Borrows and carries only spoil bytes after a true
    // non-digit, so the lowest flagged byte is exact.
    let low = word.wrapping_sub(0x30 * ONES);
    let not_digit = (low | word.wrapping_add(0x46 * ONES) | word) & HIGH;
    let len = (not_digit.trailing_zeros() / 8) as usize;
    if len == 0 {
        return (0, 0);
    }
    // The digits' values shifted up so that the last digit sits in the
    // highest byte and zeros (leading zeros of the number) fill the bytes
    // below the first; then pairs, fours and the eight combined by
    // multiplying.
    let mut v = low << (8 * (8 - len));
    v = (v.wrapping_mul(10) + (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_ffff_0000_ffff;
    v = v.wrapping_mul(10_000) + (v >> 32);
    (v & 0xffff_ffff, len)
}

/// One transaction exactly as the writer makes it, into the scratch.
pub(super) fn txn(cur: &mut Cur, s: &mut Scratch) -> Option<()> {
    let mut t = Txn::default();
    cur.lit(b"{\"id\":")?;
    t.id = cur.digits()?;
    cur.lit(b",\"client\":")?;
    t.client = cur.digits()?;
    cur.lit(b",\"start_ts\":")?;
    t.start_ts = cur.digits()?;
    cur.lit(b",\"commit_ts\":")?;
    t.set_commit_ts(cur.null_or_digits()?);
    cur.lit(b",\"invoke_ns\":")?;
    t.invoke_ns = cur.digits()?;
    cur.lit(b",\"complete_ns\":")?;
    t.set_complete_ns(cur.null_or_digits()?);
    cur.lit(b",\"outcome\":\"")?;
    t.outcome = if cur.lit(b"committed\"").is_some() {
        Outcome::Committed
    } else if cur.lit(b"aborted\"").is_some() {
        Outcome::Aborted
    } else {
        cur.lit(b"unknown\"")?;
        Outcome::Unknown
    };
    if cur.lit(b",\"abort_reason\":").is_some() {
        t.abort_reason = cur.null_or_str(s)?;
    }
    cur.lit(b",\"ops\":[")?;
    if cur.lit(b"]").is_none() {
        loop {
            op(cur, s)?;
            if cur.lit(b"]").is_some() {
                break;
            }
            cur.lit(b",")?;
        }
    }
    cur.lit(b"}")?;
    s.txns.push((t, s.ops.len()));
    Some(())
}

/// One op exactly as the writer makes it, into the scratch.
#[inline(always)]
fn op(cur: &mut Cur, s: &mut Scratch) -> Option<()> {
    cur.lit(b"{\"f\":\"")?;
    let kind = if cur.lit(b"read\",\"row\":\"").is_some() {
        OpKind::Read
    } else if cur.lit(b"write\",\"row\":\"").is_some() {
        OpKind::Write
    } else {
        cur.lit(b"delete\",\"row\":\"")?;
        OpKind::Delete
    };
    let row = s.str(cur.rest_of_str()?);
    cur.lit(b",\"col\":\"")?;
    let col = s.str(cur.rest_of_str()?);
    let value = match kind {
        OpKind::Delete => NIL,
        OpKind::Read => {
            cur.lit(b",\"value\":")?;
            cur.null_or_str(s)?
        }
        OpKind::Write => {
            cur.lit(b",\"value\":\"")?;
            s.str(cur.rest_of_str()?)
        }
    };
    cur.lit(b"}")?;
    s.ops.push(RawOp {
        kind,
        row,
        col,
        value,
    });
    Some(())
}

/// One store cell exactly as the writer makes it, into the scratch.
pub(super) fn cell(cur: &mut Cur, s: &mut Scratch) -> Option<()> {
    cur.lit(b"{\"row\":\"")?;
    let row = s.str(cur.rest_of_str()?);
    cur.lit(b",\"col\":\"")?;
    let col = s.str(cur.rest_of_str()?);
    cur.lit(b",\"versions\":[")?;
    if cur.lit(b"]").is_none() {
        loop {
            version(cur, s)?;
            if cur.lit(b"]").is_some() {
                break;
            }
            cur.lit(b",")?;
        }
    }
    cur.lit(b"}")?;
    s.end_cell(row, col);
    Some(())
}

/// One version of a store cell exactly as the writer makes it, into the
/// scratch.
#[inline(always)]
fn version(cur: &mut Cur, s: &mut Scratch) -> Option<()> {
    cur.lit(b"{\"start_ts\":")?;
    let start_ts = cur.digits()?;
    cur.lit(b",\"commit_ts\":")?;
    let commit_ts = cur.digits()?;
    cur.lit(b",\"kind\":\"")?;
    let kind = if cur.lit(b"put\"").is_some() {
        VersionKind::Put
    } else if cur.lit(b"delete\"").is_some() {
        VersionKind::Delete
    } else {
        cur.lit(b"rollback\"")?;
        VersionKind::Rollback
    };
    let value = match cur.lit(b",\"value\":") {
        Some(()) => cur.null_or_str(s)?,
        None => NIL,
    };
    let data_missing = cur.lit(b",\"data_missing\":true").is_some();
    cur.lit(b"}")?;
    s.versions.push(CVersion {
        start_ts,
        commit_ts,
        kind,
        value,
        data_missing,
    });
    Some(())
}

#[cfg(test)]
mod tests {
    use super::super::{Scan, cell_keyed, txn_keyed};
    use super::*;
    use crate::history::{CellState, Op, Transaction, Version};

    /// What one element left in the scratch, comparable.
    fn contents(s: &Scratch) -> String {
        let ops: Vec<_> = s
            .ops
            .iter()
            .map(|o| (o.kind, o.row, o.col, o.value))
            .collect();
        let cells: Vec<_> = s
            .cells
            .iter()
            .map(|c| (c.row, c.col, c.versions_end))
            .collect();
        format!(
            "{:?} {ops:?} {:?} {:?} {cells:?}",
            s.strs, s.txns, s.versions
        )
    }

    /// How far a scanner went, and what it left in its scratch.
    type Taken = (usize, String);

    /// `text` through `fast` and through `keyed`: what each took (`None`
    /// when `fast` did not) and left in its scratch.
    fn both(
        text: &str,
        fast: fn(&mut Cur, &mut Scratch) -> Option<()>,
        keyed: fn(&mut Cur, &mut Scratch) -> Scan<()>,
    ) -> (Option<Taken>, Scan<Taken>) {
        let run = |one: &dyn Fn(&mut Cur, &mut Scratch) -> Scan<()>| {
            let mut s = Scratch::default();
            let mut cur = Cur {
                b: text.as_bytes(),
                i: 0,
            };
            one(&mut cur, &mut s).map(|()| (cur.i, contents(&s)))
        };
        let exact = run(&|c, s| fast(c, s).ok_or(super::super::Miss::Other)).ok();
        (exact, run(&|c, s| keyed(c, s)))
    }

    fn op(f: &str, row: &str, value: Option<&str>) -> Op {
        let (row, col) = (row.to_string(), "c".to_string());
        match (f, value) {
            ("write", Some(v)) => Op::Write {
                row,
                col,
                value: v.into(),
            },
            ("delete", _) => Op::Delete { row, col },
            (_, value) => Op::Read {
                row,
                col,
                value: value.map(Into::into),
            },
        }
    }

    /// Transactions as the writer writes them, with every optional part
    /// present and absent, numbers from 0 to 19 digits: taken here, whole,
    /// into exactly what the key-by-key scanner makes of them.
    #[test]
    fn the_writers_transactions_are_taken_as_key_by_key() {
        let ops = vec![
            op("read", "r1", None),
            op("read", "r2", Some("a long value of thirty bytes..")),
            op("write", "r1", Some("v")),
            op("delete", "r3", None),
            op("write", "", Some("")),
        ];
        let mut t = Transaction {
            id: 9_999_999_999_999_999_999,
            client: 0,
            start_ts: 10,
            commit_ts: Some(11),
            invoke_ns: 1_000_000_000,
            complete_ns: None,
            outcome: Outcome::Committed,
            abort_reason: None,
            ops,
            scans: Vec::new(),
            observer: None,
        };
        let mut texts = vec![serde_json::to_string(&t).expect("json")];
        t.outcome = Outcome::Aborted;
        t.abort_reason = Some("write conflict".into());
        t.commit_ts = None;
        t.complete_ns = Some(12);
        texts.push(serde_json::to_string(&t).expect("json"));
        t.outcome = Outcome::Unknown;
        t.ops.clear();
        texts.push(serde_json::to_string(&t).expect("json"));
        texts.push(texts[0].replace(
            r#""outcome":"committed","#,
            r#""outcome":"committed","abort_reason":null,"#,
        ));
        for text in &texts {
            let (exact, keyed) = both(&format!("{text},"), txn, txn_keyed);
            assert_eq!(exact.as_ref(), keyed.as_ref().ok(), "{text}");
            assert_eq!(exact.map(|e| e.0), Some(text.len()), "{text}");
        }
    }

    /// Store cells as the writer writes them, each kind of version with
    /// and without a value and data missing: the same.
    #[test]
    fn the_writers_store_cells_are_taken_as_key_by_key() {
        let version = |kind, value: Option<&str>, data_missing| Version {
            start_ts: 5,
            commit_ts: 123_456,
            kind,
            value: value.map(Into::into),
            data_missing,
        };
        let mut c = CellState {
            row: "row".into(),
            col: "col".into(),
            versions: vec![
                version(VersionKind::Put, Some("v"), false),
                version(VersionKind::Put, Some("w"), true),
                version(VersionKind::Delete, None, false),
                version(VersionKind::Rollback, None, false),
            ],
        };
        let mut texts = vec![serde_json::to_string(&c).expect("json")];
        c.versions.clear();
        texts.push(serde_json::to_string(&c).expect("json"));
        assert!(texts[0].contains(r#""value":null"#) && texts[0].contains("data_missing"));
        for text in &texts {
            let (exact, keyed) = both(&format!("{text}]"), cell, cell_keyed);
            assert_eq!(exact.as_ref(), keyed.as_ref().ok(), "{text}");
            assert_eq!(exact.map(|e| e.0), Some(text.len()), "{text}");
        }
    }

    /// Numbers of every length up to 19 digits are read exactly, eight
    /// digits at a time, whatever follows them (or nothing); 20 digits,
    /// a leading zero or no digit are not taken.
    #[test]
    fn numbers_are_read_exactly_eight_digits_at_a_time() {
        let read = |text: &str| {
            let mut cur = Cur {
                b: text.as_bytes(),
                i: 0,
            };
            cur.digits().map(|n| (n, cur.i))
        };
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for len in 1..=19usize {
            for round in 0..200 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let digits: String = (0..len)
                    .map(|k| {
                        let d = (x >> (3 * k % 60)) % 10;
                        char::from(b'0' + if k == 0 { 1 + d % 9 } else { d } as u8)
                    })
                    .collect();
                let n: u64 = digits.parse().expect("a number");
                let end = [",", "}", "]", " ", "", ":", "/", ".5", "a", "\u{e9}"][round % 10];
                assert_eq!(
                    read(&format!("{digits}{end}")),
                    Some((n, len)),
                    "{digits}{end}"
                );
            }
        }
        assert_eq!(
            read("9999999999999999999,"),
            Some((9_999_999_999_999_999_999, 19))
        );
        assert_eq!(read("10000000000000000000,"), None);
        assert_eq!(read("0,"), Some((0, 1)));
        assert_eq!(read("0"), Some((0, 1)));
        for odd in ["00,", "01,", "0123456789,", ",", "", "-1,", "a1"] {
            assert_eq!(read(odd), None, "{odd}");
        }
    }

    /// Anything not exactly the writer's is not taken here (the key-by-key
    /// scanner then takes it or leaves it to the visitors).
    #[test]
    fn anything_else_is_left_to_the_key_by_key_scanner() {
        let usual = r#"{"id":7,"client":1,"start_ts":3,"commit_ts":null,"invoke_ns":0,"complete_ns":5,"outcome":"aborted","abort_reason":"x","ops":[{"f":"read","row":"r","col":"c","value":null},{"f":"write","row":"r","col":"c","value":"v"},{"f":"delete","row":"q","col":"c"}]}"#;
        assert!(both(&format!("{usual},"), txn, txn_keyed).0.is_some());
        let odd = [
            usual.replace(r#""id":7"#, r#""id": 7"#),
            usual.replace(r#""id":7"#, r#""id":07"#),
            usual.replace(r#""id":7"#, r#""id":7.5"#),
            usual.replace(r#""id":7"#, r#""id":10000000000000000000"#),
            usual.replace(r#""client":1,"start_ts":3"#, r#""start_ts":3,"client":1"#),
            usual.replace(r#""complete_ns":5,"#, ""),
            usual.replace(r#""abort_reason":"x""#, r#""abort_reason":"\u0078""#),
            usual.replace(r#""value":"v""#, r#""value":"é""#),
            usual.replace(r#""value":"v""#, r#""value":null"#),
            usual.replace(r#","col":"c"}"#, r#","col":"c","value":null}"#),
            usual.replace(r#""ops":["#, r#""ops":[ "#),
            usual.replace("]}", r#"],"observer":null}"#),
            usual.replace("]}", r#"],"scans":[]}"#),
        ];
        for text in &odd {
            assert_ne!(text, usual);
            let (exact, _) = both(&format!("{text},"), txn, txn_keyed);
            assert_eq!(exact, None, "{text}");
        }
        // Cut anywhere, it is not taken (the key-by-key scanner asks for more).
        for end in 0..usual.len() {
            assert_eq!(both(&usual[..end], txn, txn_keyed).0, None, "{end}");
        }
        let cell_text = r#"{"row":"r","col":"c","versions":[{"start_ts":1,"commit_ts":2,"kind":"put","value":"v"}]}"#;
        assert!(both(&format!("{cell_text}]"), cell, cell_keyed).0.is_some());
        let odd = [
            cell_text.replace(r#""put""#, r#""Put""#),
            cell_text.replace(r#""value":"v""#, r#""value":"v","data_missing":false"#),
            cell_text.replace(r#""value":"v"}"#, r#""value":"v","x":1}"#),
            cell_text.replace(r#""row":"r","col":"c""#, r#""col":"c","row":"r""#),
        ];
        for text in &odd {
            assert_eq!(
                both(&format!("{text}]"), cell, cell_keyed).0,
                None,
                "{text}"
            );
        }
    }
}
