//! Helpers shared by the integration tests.
#![allow(dead_code)]

use percsim_checker::{
    CellState, FORMAT, FinalState, Finding, History, ObserverDecl, Op, Outcome, Report,
    Transaction, Version, VersionKind, check, parse, run_check_file,
};
use std::path::PathBuf;

pub fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.json"))
}

pub fn load(name: &str) -> History {
    let text = std::fs::read_to_string(fixture_path(name)).expect("fixture exists");
    parse(&text).unwrap_or_else(|e| panic!("{name} should parse: {e}"))
}

pub fn report(name: &str) -> Report {
    check(&load(name))
}

/// Runs the file the way `percsim check` does: (exit code, output).
pub fn run(name: &str, json: bool) -> (i32, String) {
    let mut out = Vec::new();
    let code = run_check_file(&fixture_path(name), json, &mut out);
    (code, String::from_utf8(out).expect("utf-8 output"))
}

/// Asserts exactly these rules failed, printing the report otherwise.
pub fn assert_failed(r: &Report, rules: &[&str]) {
    assert_eq!(r.violated_rules(), rules, "\n{}", r.render_text());
    assert_eq!(r.passed(), rules.is_empty());
    assert_eq!(r.passed, rules.is_empty());
}

pub fn findings<'a>(r: &'a Report, rule: &str, class: &str) -> Vec<&'a Finding> {
    r.rule(rule)
        .unwrap_or_else(|| panic!("rule {rule} is reported"))
        .violations
        .iter()
        .filter(|f| f.class == class)
        .collect()
}

pub fn count(r: &Report, rule: &str, class: &str) -> u64 {
    r.rule(rule)
        .and_then(|x| x.counts.get(class).copied())
        .unwrap_or(0)
}

/// The one finding of `class` under `rule`; asserts its transactions (any order).
pub fn assert_one<'a>(r: &'a Report, rule: &str, class: &str, txns: &[u64]) -> &'a Finding {
    let fs = findings(r, rule, class);
    assert_eq!(
        fs.len(),
        1,
        "one {rule}/{class} finding expected\n{}",
        r.render_text()
    );
    assert_eq!(count(r, rule, class), 1);
    let mut got = fs[0].txns.clone();
    got.sort_unstable();
    let mut want = txns.to_vec();
    want.sort_unstable();
    assert_eq!(
        got,
        want,
        "transactions of {rule}/{class}\n{}",
        r.render_text()
    );
    assert_eq!(fs[0].rule, rule);
    assert!(!fs[0].summary.is_empty());
    fs[0]
}

/// Fixture `name` fails exactly the rules `failed`, and has one finding of
/// `class` under `rule` over `txns` (any order): the report and a copy of
/// that finding.
pub fn one_finding(
    name: &str,
    failed: &[&str],
    rule: &str,
    class: &str,
    txns: &[u64],
) -> (Report, Finding) {
    let r = report(name);
    assert_failed(&r, failed);
    let f = assert_one(&r, rule, class, txns).clone();
    (r, f)
}

/// Asserts `text` contains each of `needles`, printing it otherwise.
pub fn says(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "{n:?} missing from:\n{text}");
    }
}

/// A cycle's steps as (from, to, edge).
pub fn steps(f: &Finding) -> Vec<(u64, u64, &str)> {
    let cycle = f.cycle.iter();
    cycle.map(|s| (s.from, s.to, s.edge.as_str())).collect()
}

/// Asserts one of `details` contains each of `needles`.
pub fn a_detail_says(details: &[String], needles: &[&str]) {
    assert!(
        details
            .iter()
            .any(|d| needles.iter().all(|n| d.contains(n))),
        "no detail says {needles:?}: {details:?}"
    );
}

/// A history built in code: transactions, the store's cells and the
/// observers, with no locks or notify entries unless a test adds them.
pub struct HistoryBuilder {
    h: History,
}

impl HistoryBuilder {
    /// An empty `percsim-history/1` history with seed 0.
    pub fn new() -> HistoryBuilder {
        HistoryBuilder {
            h: History {
                format: FORMAT.into(),
                model: None,
                seed: 0,
                scenario: serde_json::Value::Null,
                transactions: Vec::new(),
                events: Vec::new(),
                final_state: FinalState {
                    cells: Vec::new(),
                    locks: Vec::new(),
                    notify: Vec::new(),
                },
                observers: Vec::new(),
            },
        }
    }

    pub fn seed(mut self, seed: u64) -> Self {
        self.h.seed = seed;
        self
    }

    pub fn txns(mut self, txns: impl IntoIterator<Item = Transaction>) -> Self {
        self.h.transactions.extend(txns);
        self
    }

    /// The store's versions of cell `row.col`.
    pub fn cell(mut self, row: &str, col: &str, versions: Vec<Version>) -> Self {
        self.h.final_state.cells.push(CellState {
            row: row.into(),
            col: col.into(),
            versions,
        });
        self
    }

    pub fn observers(mut self, observers: Vec<ObserverDecl>) -> Self {
        self.h.observers = observers;
        self
    }

    pub fn build(self) -> History {
        self.h
    }
}

/// A transaction of client `id`, invoked at 0 and never completed.
pub fn txn(
    id: u64,
    start: u64,
    commit: Option<u64>,
    outcome: Outcome,
    ops: Vec<Op>,
) -> Transaction {
    Transaction {
        id,
        client: id,
        start_ts: start,
        commit_ts: commit,
        invoke_ns: 0,
        complete_ns: None,
        outcome,
        abort_reason: None,
        ops,
        scans: Vec::new(),
        observer: None,
    }
}

pub fn write(row: &str, col: &str, v: &str) -> Op {
    Op::Write {
        row: row.into(),
        col: col.into(),
        value: v.into(),
    }
}

/// A committed put of `v`.
pub fn put(start: u64, commit: u64, v: &str) -> Version {
    Version {
        start_ts: start,
        commit_ts: commit,
        kind: VersionKind::Put,
        value: Some(v.into()),
        data_missing: false,
    }
}
