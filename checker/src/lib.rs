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
mod both;
mod class;
mod compact;
mod conflicts;
mod ctx;
mod cycles;
mod edn;
mod elle;
mod fastread;
mod front;
mod fx;
mod history;
mod identity;
mod judge;
mod keys;
pub mod liveness;
mod model;
mod notifications;
mod observer_once;
mod observers;
mod parse;
mod pending;
mod reader;
mod report;
mod rules;
mod scans;
mod snapshot;
mod sort;
pub mod stream;
mod timestamps;
pub mod units;
mod window;

pub use class::{FindingClass, Rule};
pub use edn::EdnError;
pub use elle::{ElleHistory, check_elle, is_edn, parse_elle};
pub use front::{
    CheckOptions, HistoryFormat, Judged, detect, detect_file, run_check_file, run_check_file_with,
};
pub use history::*;
pub use identity::{ClassOf, Named, RuleOf};
pub use liveness::{
    LivenessFinding, LivenessReport, LivenessRule, LivenessThresholds, LockThresholds,
    NotifyThresholds, check_liveness,
};
pub use model::{Model, ModelSource, UnknownModel};
pub use parse::{HistoryError, parse};
pub use report::{AllowedAnomalies, CycleStep, Finding, Report, RuleReport, Stats};

use report::REPORT_FORMAT;
use std::path::Path;

/// Judges a history against every rule, under the consistency model it
/// names (its `model`), or [`Model::DEFAULT`] when it names none (the
/// report says which and why; [`Report::judged_by`] judges it against
/// another). Never panics on a history within
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
    let (model, source) = ModelSource::choose(None, history.model);

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
        model: String::new(),
        model_source: String::new(),
        satisfies: Vec::new(),
        rules,
        allowed,
    }
    .judged_by(model, source)
}

/// Asks the kernel not to back this process's memory with transparent huge
/// pages when `PERCSIM_HUGE_PAGES=0` asks for small pages (Linux only;
/// elsewhere, or when the kernel refuses, nothing changes); otherwise the
/// pages stay as the kernel and the allocator set them. Returns whether
/// small pages were set.
///
/// `percsim check` calls it before reading a history. Huge pages save the
/// check most of its TLB misses (its string and cell tables, version orders
/// and graph are read at random): on the 1M-transaction file 15% less CPU
/// time with them in alternated runs on 2026-11-28 (docs/measurements.md).
/// On the virtual machines percsim is measured on (Firecracker, with
/// free-page reporting), a huge page first touched has at times cost far
/// more system time than its 512 small pages (1.6 s against 0.3-0.4 s on
/// that file on 2026-11-26, though not on 2026-11-28): where it does,
/// `PERCSIM_HUGE_PAGES=0` turns them off.
pub fn set_page_size() -> bool {
    if !small_pages_asked_for(std::env::var_os("PERCSIM_HUGE_PAGES").as_deref()) {
        return false;
    }
    #[cfg(target_os = "linux")]
    return nix::sys::prctl::set_thp_disable(true).is_ok();
    #[cfg(not(target_os = "linux"))]
    return false;
}

/// mimalloc's `purge_delay` option: its place in `mi_option_e` (mimalloc
/// v3's `mimalloc.h`; `libmimalloc-sys` names no constant for it). Its
/// default, 1,000 ms, is no other option's, which `tests/pages.rs` checks.
pub const MI_OPTION_PURGE_DELAY: i32 = 15;

/// Asks mimalloc to hand memory it has freed back to the kernel at once,
/// unless `MIMALLOC_PURGE_DELAY` in the environment already says when.
/// Returns whether the delay was set.
///
/// `percsim check` runs on mimalloc and calls it before reading a history.
/// mimalloc keeps freed pages resident for its purge delay (1 s, ten times
/// that in its arenas), so the check's short-lived tables add up: in
/// alternated runs on 2026-11-28 the peak was 10-15% lower without the delay
/// (the 1M-transaction file 0.38 against 0.45 GB, the 10M file 3.4-3.5
/// against 3.65-4.04 GB) for the same CPU time (docs/measurements.md). In a
/// process whose allocator is not mimalloc this changes nothing.
pub fn free_memory_promptly() -> bool {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return false;
    }
    // SAFETY: sets one of mimalloc's options by its number; mimalloc reads
    // the options atomically, and a number out of range is ignored.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    true
}

/// Whether `PERCSIM_HUGE_PAGES`, of value `value`, asks for small pages:
/// only `0` does.
fn small_pages_asked_for(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|v| v == "0")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_zero_asks_for_small_pages() {
        let asked = |v: Option<&str>| small_pages_asked_for(v.map(std::ffi::OsStr::new));
        assert!(asked(Some("0")));
        assert!(!asked(Some("1")));
        assert!(!asked(Some("")));
        assert!(!asked(None));
    }
}
