//! The checker's one front end: which format a file is in (by its tag, then
//! by its syntax), reading it, judging it by that format's rules, and writing
//! the report or the error.

use crate::parse::HistoryError;
use crate::report::REPORT_FORMAT;
use crate::{
    EdnError, History, LivenessReport, Model, ModelSource, Report, compact, elle, parse, reader,
    stream, window,
};
use serde::Serialize;
use std::io::Write;
use std::path::Path;

/// How much of a file's start is read to tell its format.
const HEAD_BYTES: u64 = 1 << 16;

/// A history format the checker reads, each judged by its own rule set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryFormat {
    /// `percsim-history/1`: key-value transactions with timestamps and the
    /// store's final state, judged by the eight transaction rules.
    Transactions,
    /// `percsim-stream-history/1`: stream and queue transactions, judged by
    /// the seven stream rules ([`crate::stream`]).
    Stream,
    /// A Jepsen/Elle list-append history in EDN, judged by the dependency
    /// rules with version orders inferred from the lists read.
    ElleListAppend,
}

impl HistoryFormat {
    /// Every format, in the order detection tries their tags.
    pub const ALL: [HistoryFormat; 3] = [
        HistoryFormat::Stream,
        HistoryFormat::Transactions,
        HistoryFormat::ElleListAppend,
    ];

    /// The format's name, as a `format` tag carries it where it has one.
    pub fn name(self) -> &'static str {
        match self {
            HistoryFormat::Transactions => crate::FORMAT,
            HistoryFormat::Stream => stream::STREAM_FORMAT,
            HistoryFormat::ElleListAppend => "elle-list-append (EDN)",
        }
    }

    /// What a document of this format is, in the words of an error message.
    pub fn description(self) -> &'static str {
        match self {
            HistoryFormat::Transactions => "history",
            HistoryFormat::Stream => "stream history",
            HistoryFormat::ElleListAppend => "Elle list-append history",
        }
    }

    /// The family every version of this format's tag starts with, for a
    /// format that carries a tag.
    fn tag_family(self) -> Option<&'static str> {
        match self {
            HistoryFormat::Transactions => Some("percsim-history/"),
            HistoryFormat::Stream => Some("percsim-stream-history/"),
            HistoryFormat::ElleListAppend => None,
        }
    }
}

/// What a document must be, for an error on one that is none of them.
fn expected() -> String {
    format!(
        "expected a JSON object tagged \"format\": \"{}\" or \"{}\", or an {} (a vector of operation maps)",
        crate::FORMAT,
        stream::STREAM_FORMAT,
        HistoryFormat::ElleListAppend.description()
    )
}

/// The format of a document starting with `head`: by its `format` tag when
/// it has one, else by its syntax (EDN). An empty document, an unknown tag,
/// or a document of no known syntax is an error saying what was expected.
pub fn detect(head: &str) -> Result<HistoryFormat, HistoryError> {
    let start = skip_comments(head);
    if start.is_empty() {
        return Err(HistoryError::whole(format!(
            "empty document: {}",
            expected()
        )));
    }
    if let Some(tag) = format_tag(start) {
        return by_tag(tag);
    }
    if elle::is_edn(start) {
        return Ok(HistoryFormat::ElleListAppend);
    }
    let first: String = start.chars().take(20).collect();
    let what = if start.starts_with('{') {
        "a JSON object without a \"format\" tag".to_string()
    } else {
        format!("a document starting {first:?}")
    };
    Err(HistoryError::whole(format!("{what}: {}", expected())))
}

/// The format whose tag family `tag` belongs to.
fn by_tag(tag: &str) -> Result<HistoryFormat, HistoryError> {
    HistoryFormat::ALL
        .into_iter()
        .find(|f| f.tag_family().is_some_and(|t| tag.starts_with(t)))
        .ok_or_else(|| {
            HistoryError::at(
                "$.format".into(),
                format!("unknown format {tag:?}: {}", expected()),
            )
        })
}

/// The top-level `format` of the whole JSON document `text`, when it parses
/// and has one (for a document whose tag lies beyond the head: a writer
/// that sorts keys puts `final_state` first).
fn whole_document_tag(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Probe {
        format: Option<String>,
    }
    serde_json::from_str::<Probe>(text).ok()?.format
}

/// `text` after leading whitespace and `;` comment lines (EDN's).
fn skip_comments(text: &str) -> &str {
    let mut rest = text.trim_start();
    while let Some(r) = rest.strip_prefix(';') {
        rest = r.split_once('\n').map_or("", |x| x.1).trim_start();
    }
    rest
}

/// The string value of the first `"format"` key of a JSON object starting
/// `text`, if it has one within `text` (a truncated or otherwise broken
/// document keeps its tag, so that its own format's reader names the
/// problem).
fn format_tag(text: &str) -> Option<&str> {
    if !text.starts_with('{') {
        return None;
    }
    let mut from = 0;
    while let Some(at) = text[from..].find("\"format\"") {
        let after = &text[from + at + "\"format\"".len()..];
        from += at + 1;
        let Some(value) = after.trim_start().strip_prefix(':') else {
            continue;
        };
        let value = value.trim_start().strip_prefix('"')?;
        return value.split_once('"').map(|(tag, _)| tag);
    }
    None
}

/// The format of the file at `path`, told from its first 64 KiB (a large
/// file is never read whole for this).
pub fn detect_file(path: &Path) -> Result<HistoryFormat, HistoryError> {
    use std::io::Read;
    let mut head = Vec::with_capacity(HEAD_BYTES as usize);
    std::fs::File::open(path)
        .and_then(|f| f.take(HEAD_BYTES).read_to_end(&mut head))
        .map_err(|e| cannot_read(path, &e))?;
    let head = String::from_utf8_lossy(&head);
    let found = detect(&head);
    let untagged_object = skip_comments(&head).starts_with('{') && found.is_err();
    if untagged_object && head.len() as u64 >= HEAD_BYTES {
        let text = std::fs::read_to_string(path).map_err(|e| cannot_read(path, &e))?;
        if let Some(tag) = whole_document_tag(&text) {
            return by_tag(&tag);
        }
    }
    found
}

/// The error for a file that cannot be read.
fn cannot_read(path: &Path, e: &std::io::Error) -> HistoryError {
    HistoryError::whole(format!("cannot read {}: {e}", path.display()))
}

/// A history judged by its format's rules, ready to be printed as
/// `percsim check` prints it: the report, then the liveness verdict when the
/// history records the liveness rules' thresholds.
pub struct Judged(Judgement);

/// What [`Judged`] holds, per format.
enum Judgement {
    /// A `percsim-history/1` file's report, with its liveness verdict.
    Transactions(Report, LivenessReport),
    /// A stream history's report, with its liveness verdict.
    Stream(stream::StreamReport, LivenessReport),
    /// An Elle history's report, with the models it satisfies.
    Elle(Report),
}

impl Judged {
    /// A transaction history judged by the safety rules (against `model`
    /// when one is given, else the model it names) and the liveness rules.
    pub fn transactions(h: &History, model: Option<Model>) -> Judged {
        let r = crate::check(h);
        let r = match model {
            Some(m) => r.judged_by(m, ModelSource::Asked),
            None => r,
        };
        Judged(Judgement::Transactions(r, crate::check_liveness(h)))
    }

    /// A stream history judged by the stream rules and the stream liveness
    /// rule.
    pub fn stream(h: &stream::StreamHistory) -> Judged {
        Judged(Judgement::Stream(
            stream::check(h),
            stream::check_stream_liveness(h),
        ))
    }

    /// The process exit code: 1 when a safety rule is broken, else 3 when
    /// a liveness rule is, else 0.
    pub fn exit_code(&self) -> i32 {
        match &self.0 {
            _ if !self.passed() => 1,
            Judgement::Transactions(_, l) | Judgement::Stream(_, l) if !l.passed() => 3,
            _ => 0,
        }
    }

    /// Writes the report to `out`: text, or pretty JSON (the liveness
    /// verdict under `liveness`) when `json` is set.
    pub fn write(&self, out: &mut dyn Write, json: bool) -> std::io::Result<()> {
        if json {
            self.write_json(&mut *out)
                .map_err(std::io::Error::other)
                .and_then(|()| writeln!(out))
        } else {
            out.write_all(self.text().as_bytes())
        }
    }

    fn passed(&self) -> bool {
        match &self.0 {
            Judgement::Transactions(r, _) | Judgement::Elle(r) => r.passed(),
            Judgement::Stream(r, _) => r.passed(),
        }
    }

    fn text(&self) -> String {
        match &self.0 {
            Judgement::Transactions(r, l) if l.thresholds.is_some() => {
                format!("{}{}", r.render_text(), l.render_text())
            }
            Judgement::Transactions(r, _) => r.render_text(),
            Judgement::Stream(r, l) if l.thresholds.is_some() => {
                format!("{}{}", r.render_text(), l.render_text())
            }
            Judgement::Stream(r, _) => r.render_text(),
            Judgement::Elle(r) => {
                let yes_no = |b: bool| if b { "yes" } else { "no" };
                format!(
                    "Elle list-append history (EDN): version orders inferred from the lists read\n{}\nsnapshot isolated: {}\nserializable: {}\n",
                    r.render_text().trim_end(),
                    yes_no(r.snapshot_isolated()),
                    yes_no(r.serializable())
                )
            }
        }
    }

    fn write_json(&self, out: &mut dyn Write) -> serde_json::Result<()> {
        match &self.0 {
            Judgement::Transactions(r, l) => serde_json::to_writer_pretty(
                out,
                &TransactionsReport {
                    report: r,
                    liveness: l.thresholds.is_some().then_some(l),
                },
            ),
            Judgement::Stream(r, l) => serde_json::to_writer_pretty(
                out,
                &StreamJsonReport {
                    report: r,
                    liveness: l.thresholds.is_some().then_some(l),
                },
            ),
            Judgement::Elle(r) => serde_json::to_writer_pretty(
                out,
                &EdnReport {
                    report: r,
                    snapshot_isolated: r.snapshot_isolated(),
                    serializable: r.serializable(),
                },
            ),
        }
    }
}

/// The JSON report of a stream history: the report, and the liveness
/// verdict when the history records the rule's thresholds.
#[derive(Serialize)]
struct StreamJsonReport<'a> {
    #[serde(flatten)]
    report: &'a stream::StreamReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    liveness: Option<&'a LivenessReport>,
}

/// The JSON report of an EDN history: the report, and the two models.
#[derive(Serialize)]
struct EdnReport<'a> {
    #[serde(flatten)]
    report: &'a Report,
    snapshot_isolated: bool,
    serializable: bool,
}

/// The JSON report of a `percsim-history/1` file: the report, and the
/// liveness verdict when the history records the rules' thresholds.
#[derive(Serialize)]
struct TransactionsReport<'a> {
    #[serde(flatten)]
    report: &'a Report,
    #[serde(skip_serializing_if = "Option::is_none")]
    liveness: Option<&'a LivenessReport>,
}

/// Reads the file at `path` as `format` and judges it by that format's
/// rules, against `model` when one is given (else the model the history
/// names, or the default).
fn judge(format: HistoryFormat, path: &Path, model: Option<Model>) -> Result<Judged, HistoryError> {
    let invalid = |e: HistoryError| e.in_file(path, format);
    let modelled = |r: Report| match model {
        Some(m) => r.judged_by(m, ModelSource::Asked),
        None => r,
    };
    match format {
        HistoryFormat::Transactions => read_file(path)
            .map(|h| {
                let liveness = crate::liveness::check_liveness_compact(&h);
                Judged(Judgement::Transactions(
                    modelled(crate::check_compact(h)),
                    liveness,
                ))
            })
            .map_err(|e| match e {
                FileError::Read(e) => cannot_read(path, &e),
                FileError::Invalid(e) => invalid(e),
            }),
        HistoryFormat::Stream => {
            if let Some(m) = model {
                return Err(HistoryError::whole(format!(
                    "{} is a {}, judged by the stream rules, which take no consistency model \
                     (--model {m} was given); leave --model out",
                    path.display(),
                    format.description()
                )));
            }
            let text = std::fs::read_to_string(path).map_err(|e| cannot_read(path, &e))?;
            let h = stream::parse(&text).map_err(invalid)?;
            Ok(Judged::stream(&h))
        }
        HistoryFormat::ElleListAppend => {
            let text = std::fs::read_to_string(path).map_err(|e| cannot_read(path, &e))?;
            let h = elle::parse_elle(&text).map_err(|e| invalid(e.into()))?;
            Ok(Judged(Judgement::Elle(modelled(elle::check_elle(&h)))))
        }
    }
}

/// How `percsim check` reads and reports a history.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckOptions {
    /// Write the JSON report instead of text.
    pub json: bool,
    /// Judge against this consistency model instead of the one the history
    /// names (or, when it names none, [`Model::DEFAULT`]). A stream history
    /// takes none.
    pub model: Option<Model>,
}

/// Reads the history at `path` (any format the checker knows, told by
/// [`detect_file`]), judges it by its format's rules, and writes the report
/// to `out`: text, or JSON when `json` is set. A `percsim-history/1` file
/// that records the liveness rules' thresholds is also judged by those
/// rules ([`crate::check_liveness`]), a stream history that records them by
/// the stream liveness rule ([`stream::check_stream_liveness`]): their
/// thresholds and findings follow the report (under `liveness` in JSON). Returns the process exit code: 0
/// when every rule holds, 1 when a safety rule is broken, 3 when only
/// liveness rules are, 2 when the file
/// cannot be read, is of no known format, or is not a valid document of its
/// format (the message says which format, why and where).
pub fn run_check_file(path: &Path, json: bool, out: &mut dyn Write) -> i32 {
    run_check_file_with(path, CheckOptions { json, model: None }, out)
}

/// [`run_check_file`] with every option: the report judged against
/// `options.model` when it is given. A model given for a stream history is
/// bad input (exit code 2).
pub fn run_check_file_with(path: &Path, options: CheckOptions, out: &mut dyn Write) -> i32 {
    let json = options.json;
    let judged = detect_file(path).and_then(|format| judge(format, path, options.model));
    // A failed write cannot change the verdict, which the exit code carries.
    match judged {
        Ok(j) => {
            let _ = j.write(out, json);
            j.exit_code()
        }
        Err(e) => {
            write_error(out, json, &e);
            2
        }
    }
}

/// The JSON printed when a history cannot be read.
#[derive(Serialize)]
struct ErrorReport<'a> {
    format: &'a str,
    passed: bool,
    error: String,
    path: Option<&'a str>,
    line: Option<usize>,
    column: Option<usize>,
}

/// Writes `e` to `out`: a line of text, or a JSON error report.
fn write_error(out: &mut dyn Write, json: bool, e: &HistoryError) {
    let _ = if json {
        let r = ErrorReport {
            format: REPORT_FORMAT,
            passed: false,
            error: e.to_string(),
            path: e.path(),
            line: e.line(),
            column: e.column(),
        };
        serde_json::to_writer_pretty(&mut *out, &r)
            .map_err(std::io::Error::other)
            .and_then(|()| writeln!(out))
    } else {
        writeln!(out, "error: {e}")
    };
}

impl From<EdnError> for HistoryError {
    fn from(e: EdnError) -> HistoryError {
        HistoryError {
            message: e.to_string(),
            path: None,
            line: Some(e.line),
            column: Some(e.column),
        }
    }
}

impl HistoryError {
    /// An error about the whole document (no path, line or column).
    pub(crate) fn whole(message: String) -> HistoryError {
        HistoryError {
            message,
            path: None,
            line: None,
            column: None,
        }
    }

    /// This error, said of the file at `path` read as `format`.
    fn in_file(self, path: &Path, format: HistoryFormat) -> HistoryError {
        HistoryError {
            message: format!(
                "{} is not a valid {}: {}",
                path.display(),
                format.description(),
                self.message
            ),
            ..self
        }
    }
}

/// Why a history file could not be read.
enum FileError {
    Read(std::io::Error),
    Invalid(HistoryError),
}

/// Read and validate the history at `path` as a stream, straight into the
/// compact form: the file is mapped into memory (or, where it cannot be,
/// passes through a window of a few MiB), and each transaction and store
/// cell is parsed from memory on its own (the pages already read are given
/// back as the reading moves on, and no `String` is made per row, column or
/// value). When the stream is not a valid history,
/// it is read again the ordinary way, which names the problem as [`parse`]
/// does (with the JSON path of the offending value).
fn read_file(path: &Path) -> Result<compact::Compact, FileError> {
    let file = std::fs::File::open(path).map_err(FileError::Read)?;
    let meta = file.metadata().ok();
    let len_bytes = meta.as_ref().map_or(0, |m| m.len());
    let is_file = meta.is_some_and(|m| m.is_file());
    let read = match is_file.then(|| map_file(&file)).flatten() {
        Some(map) => reader::read_window(window::Window::mapped(map), len_bytes),
        None => reader::read(file, len_bytes),
    };
    match read {
        Ok(c) => {
            parse::validate(&c).map_err(FileError::Invalid)?;
            Ok(c)
        }
        Err(window::ReadError::Io(e)) => Err(FileError::Read(e)),
        Err(window::ReadError::Json(_)) => {
            read_file_slowly(path).map(|h| compact::Compact::from_history(&h))
        }
    }
}

/// The regular file `file`, mapped into memory (read without a copy), or
/// `None` where it cannot be (it is then read the ordinary way).
///
/// The map assumes that nobody writes or shortens the file while it is
/// checked (as any program reading a mapped file does, ripgrep for one): the
/// bytes read would change under the reader, and a page cut off after the
/// map was made cannot be read (the system stops the process).
fn map_file(file: &std::fs::File) -> Option<memmap2::Mmap> {
    // SAFETY: the map is read-only and the checker never writes the file;
    // that nobody else does while it is checked is the assumption stated
    // in the function's docs.
    unsafe { memmap2::Mmap::map(file) }.ok()
}

/// [`read_file`] through the public [`History`]: the reference the stream
/// must agree with, and the source of error messages.
fn read_file_slowly(path: &Path) -> Result<History, FileError> {
    let file = std::fs::File::open(path).map_err(FileError::Read)?;
    let reader = std::io::BufReader::with_capacity(1 << 20, file);
    match serde_json::from_reader::<_, History>(reader) {
        Ok(h) => {
            parse::validate(&compact::Compact::from_history(&h)).map_err(FileError::Invalid)?;
            Ok(h)
        }
        Err(e) if e.is_io() => Err(FileError::Read(std::io::Error::other(e))),
        Err(_) => {
            let text = std::fs::read_to_string(path).map_err(FileError::Read)?;
            parse(&text).map_err(FileError::Invalid)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A history read through the map is the one read the ordinary way
    /// (the reading does not fall back: a mapped read that failed would be
    /// hidden by the fallback).
    #[test]
    fn a_mapped_history_reads_as_a_streamed_one() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let path = dir.join("valid_basic.json");
        let file = std::fs::File::open(&path).unwrap();
        let map = map_file(&file).expect("a regular file maps");
        let len = map.len() as u64;
        let mapped =
            reader::read_window(window::Window::mapped(map), len).unwrap_or_else(|e| panic!("{e}"));
        let streamed = reader::read(std::fs::File::open(&path).unwrap(), len).unwrap();
        assert!(!mapped.txns.is_empty());
        assert_eq!(crate::check_compact(mapped), crate::check_compact(streamed));
    }

    /// A regular file is read through a map holding its bytes.
    #[test]
    fn a_regular_file_is_mapped_whole() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        let file = std::fs::File::open(&path).unwrap();
        let map = map_file(&file).expect("a regular file maps");
        assert_eq!(&map[..], std::fs::read(&path).unwrap());
    }
}
