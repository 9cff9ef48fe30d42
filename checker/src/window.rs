//! A sliding window over a JSON stream, for reading a large history one
//! array element at a time: the window finds where each value ends (string-
//! and bracket-aware, without judging it), and the caller parses that value
//! from memory with `serde_json::from_slice`, which is several times faster
//! than parsing from an `io::Read`. Only the window (a few MiB, or one
//! value when a value is larger) is ever held.
//!
//! A file can instead be read through a memory map ([`Window::mapped`]):
//! nothing is copied, and the pages already read are handed back to the
//! kernel as the window moves on, so that the file's pages never count
//! whole in the process's resident memory.

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

/// How many bytes already read a mapped window keeps resident before it
/// hands them back to the kernel.
const DROP_BYTES: usize = 64 << 20;

/// Where a window's bytes are.
enum Bytes {
    /// A buffer the input is read into. It is written once (zeroed when
    /// allocated) and then reused: what was read is moved to its start, and
    /// more is read into it after `end`, so that no byte is zeroed again at
    /// each refill.
    Read(Vec<u8>),
    /// The whole file, mapped; `dropped` bytes from its start have been
    /// handed back to the kernel (they are read from the file again if
    /// touched).
    Mapped {
        /// Shared with the thread that interns what was scanned (see
        /// `reader::pipelined`), which reads strings from it.
        map: std::sync::Arc<memmap2::Mmap>,
        dropped: usize,
        /// How many times pages were handed back.
        drops: usize,
        /// How far past `dropped` the position goes before more is dropped.
        stride: usize,
    },
}

/// The unread part of a stream: `bytes[pos..end]`.
pub(crate) struct Window<R> {
    input: R,
    bytes: Bytes,
    pos: usize,
    end: usize,
    eof: bool,
}

impl<R: Read> Window<R> {
    pub(crate) fn new(input: R) -> Window<R> {
        Window {
            input,
            bytes: Bytes::Read(Vec::new()),
            pos: 0,
            end: 0,
            eof: false,
        }
    }

    /// Hands the mapped pages already read back to the kernel, a
    /// [`DROP_BYTES`] stretch at a time, up to a 1 MiB boundary at or
    /// before the position (a multiple of any page size).
    fn drop_read(&mut self) {
        let Bytes::Mapped {
            map,
            dropped,
            drops,
            stride,
        } = &mut self.bytes
        else {
            return;
        };
        if self.pos < *dropped + *stride {
            return;
        }
        let upto = self.pos & !((1 << 20) - 1);
        // SAFETY: the bytes dropped are all before the position: no slice
        // the window handed out is alive (this takes `&mut self`, and every
        // such slice borrows it). The thread that interns what was scanned
        // (`reader::pipelined`) may still read strings there through its
        // own handle on the map: the map is a read-only mapping of a file,
        // so a page touched again is read from the file again, the same
        // bytes (nobody writes the file while it is checked, see
        // `front::map_file`), never zeroed.
        #[cfg(unix)]
        let _refused_pages_stay = unsafe {
            map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                *dropped,
                upto - *dropped,
            )
        };
        *dropped = upto;
        *drops += 1;
    }

    /// The bytes held, read or not.
    fn all(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Read(buf) => buf,
            Bytes::Mapped { map, .. } => map,
        }
    }

    /// Whether the byte `i` past the current position exists, reading more
    /// when needed (and dropping what was consumed first).
    fn has(&mut self, i: usize) -> Result<bool, ReadError> {
        while self.pos + i >= self.end {
            // A mapped window is at its end from the start: only a reading
            // window goes on.
            let Bytes::Read(buf) = &mut self.bytes else {
                return Ok(false);
            };
            if self.eof {
                return Ok(false);
            }
            if self.pos >= self.end / 2 {
                buf.copy_within(self.pos..self.end, 0);
                self.end -= self.pos;
                self.pos = 0;
            }
            if buf.len() < self.end + CHUNK_BYTES {
                buf.resize((2 * buf.len()).max(self.end + CHUNK_BYTES), 0);
            }
            let room = &mut buf[self.end..self.end + CHUNK_BYTES];
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
        &self.all()[self.pos..self.end]
    }

    /// Consumes `n` bytes of [`Window::rest`].
    pub(crate) fn advance(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.end);
    }

    /// Where [`Window::rest`] starts: in a mapped window, its offset in the
    /// file.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// The whole mapped file, when the window is one (`None` when it reads
    /// a stream).
    pub(crate) fn shared_map(&self) -> Option<std::sync::Arc<memmap2::Mmap>> {
        match &self.bytes {
            Bytes::Mapped { map, .. } => Some(map.clone()),
            Bytes::Read(_) => None,
        }
    }

    /// Reads more into [`Window::rest`]; false at the end of the input.
    pub(crate) fn more(&mut self) -> Result<bool, ReadError> {
        let held = self.end - self.pos;
        self.has(held)
    }

    /// Skips JSON whitespace; the next byte, or `None` at the end.
    pub(crate) fn peek(&mut self) -> Result<Option<u8>, ReadError> {
        self.drop_read();
        loop {
            if !self.has(0)? {
                return Ok(None);
            }
            match self.all()[self.pos] {
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
        Ok(&self.all()[start..start + len])
    }

    /// Length of the number or literal at the position (up to a delimiter).
    fn scalar_len(&mut self) -> Result<usize, ReadError> {
        let mut i = 0;
        while self.has(i)? {
            match self.all()[self.pos + i] {
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
            for &b in &self.all()[self.pos + i..self.end] {
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

impl Window<std::io::Empty> {
    /// A window over a whole mapped file (see the module's docs).
    pub(crate) fn mapped(map: memmap2::Mmap) -> Window<std::io::Empty> {
        Window::mapped_with(map, DROP_BYTES)
    }

    /// [`Window::mapped`], dropping what was read `stride` bytes at a time.
    pub(crate) fn mapped_with(map: memmap2::Mmap, stride: usize) -> Window<std::io::Empty> {
        // Read in order: the kernel may read ahead further.
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Sequential);
        Window {
            input: std::io::empty(),
            end: map.len(),
            bytes: Bytes::Mapped {
                map: std::sync::Arc::new(map),
                dropped: 0,
                drops: 0,
                stride,
            },
            pos: 0,
            eof: true,
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

    /// A mapped file gives the values a read one does, and the pages read
    /// are handed back as the window moves on.
    #[test]
    fn a_mapped_file_gives_the_same_values_and_drops_what_was_read() {
        let one = r#"{"x":[1,{"y":"}\""}]},"]]]",[[],{}],12,"#;
        let text = format!("{}true", one.repeat(100_000));
        let path = std::env::temp_dir().join(format!("percsim-window-{}.json", std::process::id()));
        std::fs::write(&path, &text).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: the test's own file, written above and not changed while mapped.
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        std::fs::remove_file(&path).unwrap();
        let mut w = Window::mapped_with(map, 1 << 20);
        let mut got = Vec::new();
        while w.peek().unwrap().is_some() {
            got.push(w.value(0).unwrap().to_vec());
            if w.peek().unwrap() == Some(b',') {
                w.expect(b',').unwrap();
            }
        }
        let want = values(&text);
        assert_eq!(got.len(), want.len());
        assert!(got.iter().zip(&want).all(|(g, w)| g == w.as_bytes()));
        let Bytes::Mapped { dropped, drops, .. } = w.bytes else {
            panic!("not mapped")
        };
        assert_eq!(dropped, text.len() & !((1 << 20) - 1), "{}", text.len());
        // Once a stride (1 MiB here) was passed each time, not at every step.
        assert_eq!(drops, text.len() >> 20, "{}", text.len());
        assert!(w.value(0).is_err(), "past the end");
    }

    /// Values longer than a chunk are read whole across refills.
    #[test]
    fn values_span_chunks() {
        let long = format!("[\"{}\",\"{}\"]", "x".repeat(CHUNK_BYTES), "y".repeat(10));
        let text = format!("{long},7");
        assert_eq!(values(&text), [long, "7".to_string()]);
    }
}
