//! A sliding window over a JSON stream, for reading a large history one
//! array element at a time: the window finds where each value ends (string-
//! and bracket-aware, without judging it), and the caller parses that value
//! from memory with `serde_json::from_slice`, which is several times faster
//! than parsing from an `io::Read`. Only the window (a few MiB, or one
//! value when a value is larger) is ever held.

use std::io::Read;

/// How much is read at a time.
const CHUNK_BYTES: usize = 4 << 20;

/// Why the stream could not be read the fast way.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// Reading the input failed.
    Io(std::io::Error),
    /// The input is not a history the fast path accepts (the caller reads
    /// it again the ordinary way to name the problem).
    Json(serde_json::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => e.fmt(f),
            ReadError::Json(e) => e.fmt(f),
        }
    }
}

impl From<serde_json::Error> for ReadError {
    fn from(e: serde_json::Error) -> ReadError {
        ReadError::Json(e)
    }
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> ReadError {
        ReadError::Io(e)
    }
}

/// A refusal: what was expected where.
pub(crate) fn refuse(what: &str) -> ReadError {
    ReadError::Json(<serde_json::Error as serde::de::Error>::custom(what))
}

/// The unread part of a stream: `buf[pos..end]`. The buffer is written
/// once (zeroed when allocated) and then reused: what was read is moved to
/// its start, and more is read into it after `end`, so that no byte is
/// zeroed again at each refill.
pub(crate) struct Window<R> {
    input: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
}

impl<R: Read> Window<R> {
    pub(crate) fn new(input: R) -> Window<R> {
        Window {
            input,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            eof: false,
        }
    }

    /// Whether the byte `i` past the current position exists, reading more
    /// when needed (and dropping what was consumed first).
    fn has(&mut self, i: usize) -> Result<bool, ReadError> {
        while self.pos + i >= self.end {
            if self.eof {
                return Ok(false);
            }
            if self.pos >= self.end / 2 {
                self.buf.copy_within(self.pos..self.end, 0);
                self.end -= self.pos;
                self.pos = 0;
            }
            if self.buf.len() < self.end + CHUNK_BYTES {
                self.buf
                    .resize((2 * self.buf.len()).max(self.end + CHUNK_BYTES), 0);
            }
            let room = &mut self.buf[self.end..self.end + CHUNK_BYTES];
            let n = loop {
                match self.input.read(room) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    r => break r?,
                }
            };
            self.end += n;
            if n == 0 {
                self.eof = true;
            }
        }
        Ok(true)
    }

    /// The unread bytes held now (after whitespace, once [`Window::peek`]
    /// has run).
    pub(crate) fn rest(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    /// Consumes `n` bytes of [`Window::rest`].
    pub(crate) fn advance(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.end);
    }

    /// Reads more into [`Window::rest`]; false at the end of the input.
    pub(crate) fn more(&mut self) -> Result<bool, ReadError> {
        let held = self.end - self.pos;
        self.has(held)
    }

    /// Skips JSON whitespace; the next byte, or `None` at the end.
    pub(crate) fn peek(&mut self) -> Result<Option<u8>, ReadError> {
        loop {
            if !self.has(0)? {
                return Ok(None);
            }
            match self.buf[self.pos] {
                b' ' | b'\n' | b'\t' | b'\r' => self.pos += 1,
                b => return Ok(Some(b)),
            }
        }
    }

    /// Consumes the byte `b` (after whitespace), or refuses.
    pub(crate) fn expect(&mut self, b: u8) -> Result<(), ReadError> {
        if self.peek()? != Some(b) {
            return Err(refuse(&format!("expected `{}`", b as char)));
        }
        self.pos += 1;
        Ok(())
    }

    /// The next value (after whitespace), unjudged: the caller parses it and
    /// so finds any error in it. `depth` is how deep the value sits, so that
    /// nesting deeper than `serde_json` allows is refused here too.
    pub(crate) fn value(&mut self, depth: usize) -> Result<&[u8], ReadError> {
        let Some(first) = self.peek()? else {
            return Err(refuse("expected a value, found the end"));
        };
        let len = match first {
            b'{' | b'[' | b'"' => self.nested_len(depth)?,
            b',' | b':' | b']' | b'}' => return Err(refuse("expected a value")),
            _ => self.scalar_len()?,
        };
        let start = self.pos;
        self.pos += len;
        Ok(&self.buf[start..start + len])
    }

    /// Length of the number or literal at the position (up to a delimiter).
    fn scalar_len(&mut self) -> Result<usize, ReadError> {
        let mut i = 0;
        while self.has(i)? {
            match self.buf[self.pos + i] {
                b',' | b']' | b'}' | b':' | b' ' | b'\n' | b'\t' | b'\r' => break,
                _ => i += 1,
            }
        }
        Ok(i)
    }

    /// Length of the string, object or array at the position, to its
    /// closing byte.
    fn nested_len(&mut self, depth: usize) -> Result<usize, ReadError> {
        let (mut i, mut open, mut in_str, mut escaped) = (0usize, 0usize, false, false);
        loop {
            if !self.has(i)? {
                return Err(refuse("unexpected end of the input"));
            }
            for &b in &self.buf[self.pos + i..self.end] {
                i += 1;
                if in_str {
                    match (escaped, b) {
                        (true, _) => escaped = false,
                        (false, b'\\') => escaped = true,
                        (false, b'"') => in_str = false,
                        _ => {}
                    }
                } else {
                    match b {
                        b'"' => in_str = true,
                        b'{' | b'[' => {
                            open += 1;
                            if depth + open > MAX_DEPTH {
                                return Err(refuse("nested too deeply"));
                            }
                        }
                        b'}' | b']' => open = open.saturating_sub(1),
                        _ => {}
                    }
                }
                if !in_str && open == 0 {
                    return Ok(i);
                }
            }
        }
    }
}

/// Nesting beyond this is left to the ordinary reader (whose limit is 128).
const MAX_DEPTH: usize = 100;

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> Vec<String> {
        values_from(Window::new(text.as_bytes()))
    }

    fn values_from<R: Read>(mut w: Window<R>) -> Vec<String> {
        let mut out = Vec::new();
        while w.peek().unwrap().is_some() {
            let v = w.value(0).unwrap();
            out.push(String::from_utf8(v.to_vec()).unwrap());
            if w.peek().unwrap() == Some(b',') {
                w.expect(b',').unwrap();
            }
        }
        out
    }

    #[test]
    fn values_end_where_json_says() {
        let got = values(r#" 12 ,"a\"]}",{"x":[1,{"y":"}"}]} , [[],{}] ,true,null"#);
        let want = [
            "12",
            r#""a\"]}""#,
            r#"{"x":[1,{"y":"}"}]}"#,
            "[[],{}]",
            "true",
            "null",
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn truncated_or_missing_values_are_refused() {
        for bad in [r#"{"a":"#, r#""abc"#, "[1,2", "]"] {
            let mut w = Window::new(bad.as_bytes());
            assert!(w.value(0).is_err(), "{bad}");
        }
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(Window::new(deep.as_bytes()).value(0).is_err());
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(Window::new(ok.as_bytes()).value(0).is_ok());
    }

    /// An input that hands over `n` bytes at a time.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.0.len()).min(self.1);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// Whatever the size of each read, the values are the same: the
    /// bytes left in the reused buffer past what was read are never seen.
    #[test]
    fn reads_of_any_size_give_the_same_values() {
        let one = r#"{"x":[1,{"y":"}\""}]},"]]]",[[],{}],12,"#;
        let text = format!("{}true", one.repeat(500));
        let want = values(&text);
        assert_eq!(want.len(), 2001);
        for n in [1, 3, 7, 64, 4096] {
            assert_eq!(
                values_from(Window::new(Trickle(text.as_bytes(), n))),
                want,
                "{n}"
            );
        }
        let long = format!("\"{}\",{}", "z".repeat(CHUNK_BYTES + 10), text);
        let got = values_from(Window::new(Trickle(long.as_bytes(), CHUNK_BYTES - 3)));
        assert_eq!(got.len(), 2002);
        assert_eq!(got[1..], want[..]);
    }

    /// Values longer than a chunk are read whole across refills.
    #[test]
    fn values_span_chunks() {
        let long = format!("[\"{}\",\"{}\"]", "x".repeat(CHUNK_BYTES), "y".repeat(10));
        let text = format!("{long},7");
        assert_eq!(values(&text), [long, "7".to_string()]);
    }
}
