//! percsim's history checker: judges a `percsim-history/1` file.
//!
//! It depends on no other percsim crate, so a history produced anywhere can be
//! fed to it. It judges only what clients observed and what the store holds,
//! never the protocol's own bookkeeping (events are shown for context only).
//!
//! Eight rules, each reported separately with a stable id:
//!
//! | id | what must hold |
//! |----|----------------|
//! | `snapshot_reads` | every read returns the newest version committed before its start_ts |
//! | `no_write_conflicts` | no two committed writers of a cell overlap between start_ts and commit_ts |
//! | `timestamp_order` | timestamps are unique, commit follows start, real-time order is respected |
//! | `atomic_commits` | all of a transaction's writes are committed with one commit_ts, or none; no lock left |
//! | `no_dependency_cycles` | no G0, G1a, G1b, G1c, G-single, lost update or non-adjacent G2 cycle |
//! | `observer_at_most_once` | at most one observer transaction commits per change of an observed cell |
//! | `no_lost_notification` | every change to an observed cell is followed by a committed observer run that saw it; no notify entry is left |
//! | `predicate_reads` | every scan returns exactly the cells of its range with a value visible at its start_ts: no missing row, no phantom, no wrong version |
//!
//! It also judges Jepsen/Elle list-append histories in EDN, which carry no
//! timestamps ([`parse_elle`], [`check_elle`]): version orders are inferred
//! from the lists read, as Elle does.
//!
//! Stream and queue transactions (Pulsar or Kafka style) have their own
//! format, `percsim-stream-history/1`, and rules: see [`stream`].
//!
//! The two observer rules pass trivially (with a note saying so) when the
//! history declares no observers.
//!
//! Write skew (G2-item with adjacent rw edges) is allowed under snapshot
//! isolation: it is reported in a separate section and does not fail a check.
//!
//! ```
//! let json = r#"{"format": "percsim-history/1", "transactions": [],
//!                "final_state": {"cells": []}}"#;
//! let history = percsim_checker::parse(json).unwrap();
//! let report = percsim_checker::check(&history);
//! assert!(report.passed());
//! ```

mod atomicity;
mod class;
mod compact;
mod conflicts;
mod ctx;
mod cycles;
mod edn;
mod elle;
mod fastread;
mod fx;
mod history;
mod keys;
mod notifications;
mod observer_once;
mod observers;
mod parse;
mod reader;
mod report;
mod rules;
mod scans;
mod snapshot;
mod sort;
pub mod stream;
mod timestamps;
mod window;

pub use class::{FindingClass, Rule};
pub use edn::EdnError;
pub use elle::{ElleHistory, check_elle, is_edn, parse_elle};
pub use history::*;
pub use parse::{HistoryError, parse};
pub use report::{AllowedAnomalies, CycleStep, Finding, Report, RuleReport, Stats};

use report::REPORT_FORMAT;
use serde::Serialize;
use std::io::Write;
use std::path::Path;

/// Judges a history against every rule. Never panics on a history within
/// the sizes [`parse()`] accepts (fewer than 2^27 transactions and 2^29
/// operations, store versions and store cells, far beyond what memory
/// holds): one that
/// was not produced by [`parse()`] (and so may break its references) is judged
/// as well as it can be.
pub fn check(history: &History) -> Report {
    check_compact(compact::Compact::from_history(history))
}

/// [`check`] on the compact form.
fn check_compact(mut history: compact::Compact) -> Report {
    history.renumber_cells();
    let store = history.take_store();
    let ctx = ctx::Ctx::build(&history, store);

    // Each rule into its own sink, the dependency graph first (see `rules.rs`).
    let rules::Verdicts {
        rules,
        allowed,
        graph,
    } = rules::run_all(&ctx);

    let txns = &history.txns;
    let count = |o: Outcome| txns.iter().filter(|t| t.outcome == o).count() as u64;
    let reads = history
        .ops
        .iter()
        .filter(|o| o.kind == compact::OpKind::Read)
        .count() as u64;
    let ops = history.ops.len() as u64;
    let stats = Stats {
        transactions: txns.len() as u64,
        committed: count(Outcome::Committed),
        aborted: count(Outcome::Aborted),
        unknown: count(Outcome::Unknown),
        committed_in_store_only: (0..txns.len() as u32)
            .filter(|&t| ctx.txn(t).outcome != Outcome::Committed && ctx.store_commit(t).is_some())
            .count() as u64,
        reads,
        writes: ops - reads,
        cells: ctx.n_cells() as u64,
        unique_value_cells: graph.unique_cells,
        store_versions: ctx.all_recs().len() as u64,
        locks: history.locks.len() as u64,
        graph_edges: graph.edges,
        observers: history.observers.len() as u64,
        observer_runs: ctx.runs.len() as u64,
        notify_entries: history.notify.len() as u64,
    };

    Report {
        format: REPORT_FORMAT.to_string(),
        passed: rules.iter().all(|r| r.passed),
        seed: history.seed,
        stats,
        rules,
        allowed,
    }
}

/// Asks the kernel not to back this process's memory with transparent huge
/// pages (Linux only; elsewhere, or when the kernel refuses, nothing
/// changes), unless `PERCSIM_HUGE_PAGES=1` is set. Returns whether it took.
///
/// `percsim check` calls it before reading a history. On the virtual
/// machines percsim is measured on (Firecracker, with free-page reporting),
/// a huge page first touched costs far more system time than its 512 small
/// pages do: on a 1M-transaction file 1.6 s of system time with huge pages
/// against 0.3-0.4 s without, for 0.1-0.2 s more user time
/// (docs/measurements.md, measured at abe82c6 on 2026-11-26). On a machine where huge pages are cheap to
/// fault in, `PERCSIM_HUGE_PAGES=1` keeps them.
pub fn use_small_pages() -> bool {
    if huge_pages_asked_for(std::env::var_os("PERCSIM_HUGE_PAGES").as_deref()) {
        return false;
    }
    #[cfg(target_os = "linux")]
    return nix::sys::prctl::set_thp_disable(true).is_ok();
    #[cfg(not(target_os = "linux"))]
    return false;
}

/// Whether `PERCSIM_HUGE_PAGES`, of value `value`, asks for huge pages: only
/// `1` does.
fn huge_pages_asked_for(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|v| v == "1")
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
/// it is read again the ordinary way, which names the problem as [`parse()`]
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

/// Whether the file at `path` starts like an EDN history (judged on its
/// first 64 KiB, so a large JSON history is never read whole for this).
fn starts_like_edn(path: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut head = Vec::with_capacity(1 << 16);
    std::fs::File::open(path)?
        .take(1 << 16)
        .read_to_end(&mut head)?;
    Ok(elle::is_edn(&String::from_utf8_lossy(&head)))
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

/// The top-level `format` of the JSON file at `path`, if the file's first
/// 64 KiB mention `tag` (a cheap test first, so that a large file of
/// another format is never read whole for this); `None` if it does not, or
/// the file cannot be read or parsed, or has no `format`.
pub fn file_format(path: &Path, tag: &str) -> Option<String> {
    use std::io::Read;
    let mut head = Vec::with_capacity(1 << 16);
    let file = std::fs::File::open(path).ok()?;
    file.take(1 << 16).read_to_end(&mut head).ok()?;
    if !String::from_utf8_lossy(&head).contains(tag) {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Probe {
        format: Option<String>,
    }
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str::<Probe>(&text).ok()?.format
}

/// Reads the history at `path`, checks it, and writes the report to `out`:
/// text, or JSON when `json` is set. Returns the process exit code: 0 when
/// every rule holds, 1 when any is broken, 2 when the file cannot be read or
/// is not a valid history (the message says why and where).
pub fn run_check_file(path: &Path, json: bool, out: &mut dyn Write) -> i32 {
    let cannot_read = |out: &mut dyn Write, e: std::io::Error| {
        let message = format!("cannot read {}: {e}", path.display());
        write_error(out, json, message, None);
        2
    };
    match starts_like_edn(path) {
        Ok(true) => {
            return match std::fs::read_to_string(path) {
                Ok(text) => run_check_edn(path, &text, json, out),
                Err(e) => cannot_read(out, e),
            };
        }
        Ok(false) => {}
        Err(e) => return cannot_read(out, e),
    }
    let history = match read_file(path) {
        Ok(h) => h,
        Err(FileError::Read(e)) => {
            let message = format!("cannot read {}: {e}", path.display());
            write_error(out, json, message, None);
            return 2;
        }
        Err(FileError::Invalid(e)) => {
            let message = format!("{} is not a valid history: {e}", path.display());
            write_error(out, json, message, Some(&e));
            return 2;
        }
    };
    let report = check_compact(history);
    // A failed write cannot change the verdict, which the exit code carries.
    let _ = if json {
        serde_json::to_writer_pretty(&mut *out, &report)
            .map_err(std::io::Error::other)
            .and_then(|()| writeln!(out))
    } else {
        out.write_all(report.render_text().as_bytes())
    };
    if report.passed() { 0 } else { 1 }
}

pub(crate) fn write_error(
    out: &mut dyn Write,
    json: bool,
    message: String,
    e: Option<&HistoryError>,
) {
    let _ = if json {
        let r = ErrorReport {
            format: REPORT_FORMAT,
            passed: false,
            error: message,
            path: e.and_then(HistoryError::path),
            line: e.and_then(HistoryError::line),
            column: e.and_then(HistoryError::column),
        };
        serde_json::to_writer_pretty(&mut *out, &r)
            .map_err(std::io::Error::other)
            .and_then(|()| writeln!(out))
    } else {
        writeln!(out, "error: {message}")
    };
}

/// The JSON report of an EDN history: the report, and the two models.
#[derive(Serialize)]
struct EdnReport<'a> {
    #[serde(flatten)]
    report: &'a Report,
    snapshot_isolated: bool,
    serializable: bool,
}

/// `run_check_file` for an Elle list-append history in EDN.
fn run_check_edn(path: &Path, text: &str, json: bool, out: &mut dyn Write) -> i32 {
    let history = match parse_elle(text) {
        Ok(h) => h,
        Err(e) => {
            let message = format!(
                "{} is not a valid Elle list-append history: {e}",
                path.display()
            );
            let _ = if json {
                let r = ErrorReport {
                    format: REPORT_FORMAT,
                    passed: false,
                    error: message,
                    path: None,
                    line: Some(e.line),
                    column: Some(e.column),
                };
                serde_json::to_writer_pretty(&mut *out, &r)
                    .map_err(std::io::Error::other)
                    .and_then(|()| writeln!(out))
            } else {
                writeln!(out, "error: {message}")
            };
            return 2;
        }
    };
    let report = check_elle(&history);
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let _ = if json {
        let r = EdnReport {
            report: &report,
            snapshot_isolated: report.snapshot_isolated(),
            serializable: report.serializable(),
        };
        serde_json::to_writer_pretty(&mut *out, &r)
            .map_err(std::io::Error::other)
            .and_then(|()| writeln!(out))
    } else {
        writeln!(
            out,
            "Elle list-append history (EDN): version orders inferred from the lists read\n{}\nsnapshot isolated: {}\nserializable: {}",
            report.render_text().trim_end(),
            yes_no(report.snapshot_isolated()),
            yes_no(report.serializable())
        )
    };
    if report.passed() { 0 } else { 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_one_asks_for_huge_pages() {
        let asked = |v: Option<&str>| huge_pages_asked_for(v.map(std::ffi::OsStr::new));
        assert!(asked(Some("1")));
        assert!(!asked(Some("0")));
        assert!(!asked(Some("")));
        assert!(!asked(None));
    }

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
        assert_eq!(check_compact(mapped), check_compact(streamed));
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
