//! Rule `predicate_reads`: a scan returns exactly the cells of its range
//! visible at its snapshot. `valid_scans` passes; each test below breaks one
//! scan's answer (and nothing else) and expects one finding naming the cell.

mod common;

use common::*;
use percsim_checker::{History, Outcome, ScanCell, check};

const SCANS: &str = "predicate_reads";

fn cell(row: &str, col: &str, value: &str) -> ScanCell {
    ScanCell {
        row: row.into(),
        col: col.into(),
        value: value.into(),
    }
}

/// `valid_scans` with the answer of T3's scan `k` replaced.
fn with_answer(k: usize, returned: Vec<ScanCell>) -> History {
    let mut h = load("valid_scans");
    h.transactions[2].scans[k].returned = returned;
    h
}

#[test]
fn valid_scans_pass() {
    let r = report("valid_scans");
    assert_failed(&r, &[]);
    let rule = r.rule(SCANS).expect("rule reported");
    assert!(rule.passed && rule.note.is_none(), "{rule:?}");
    assert_eq!(run("valid_scans", false).0, 0);
}

#[test]
fn a_history_without_scans_says_so() {
    let r = report("valid_basic");
    assert_failed(&r, &[]);
    let note = r.rule(SCANS).and_then(|x| x.note.clone());
    assert_eq!(note.as_deref(), Some("no scans recorded: nothing to check"));
}

#[test]
fn a_dropped_row_is_a_missing_row() {
    let r = report("scan_missing_row");
    assert_failed(&r, &[SCANS]);
    let f = assert_one(&r, SCANS, "missing_row", &[3, 1]);
    says(
        &f.summary,
        &[
            "did not return a.v = \"1\"",
            "written by T1, committed at 2",
        ],
    );
    let (code, text) = run("scan_missing_row", false);
    assert_eq!(code, 1);
    assert!(text.contains("missing_row"), "{text}");
}

#[test]
fn a_missing_row_in_an_all_columns_scan() {
    let h = with_answer(1, vec![cell("a", "v", "1"), cell("c", "v", "3")]);
    let r = check(&h);
    assert_failed(&r, &[SCANS]);
    let f = assert_one(&r, SCANS, "missing_row", &[3, 1]);
    says(&f.summary, &["a.w", "every column"]);
}

#[test]
fn a_row_committed_after_the_snapshot_is_a_phantom() {
    let mut returned = load("valid_scans").transactions[2].scans[1]
        .returned
        .clone();
    returned.push(cell("d", "v", "4"));
    let r = check(&with_answer(1, returned));
    assert_failed(&r, &[SCANS]);
    let f = assert_one(&r, SCANS, "phantom", &[3, 4]);
    says(&f.summary, &["d.v = \"4\"", "committed only at 7 (by T4)"]);
}

#[test]
fn a_deleted_row_is_a_phantom() {
    let h = with_answer(
        0,
        vec![
            cell("a", "v", "1"),
            cell("b", "v", "2"),
            cell("c", "v", "3"),
        ],
    );
    let r = check(&h);
    assert_failed(&r, &[SCANS]);
    let f = assert_one(&r, SCANS, "phantom", &[3, 2]);
    says(&f.summary, &["b.v was deleted"]);
}

#[test]
fn a_row_outside_the_predicate_or_returned_twice_is_a_phantom() {
    let outside = with_answer(
        0,
        vec![
            cell("a", "v", "1"),
            cell("a", "w", "x"),
            cell("c", "v", "3"),
        ],
    );
    let r = check(&outside);
    assert_failed(&r, &[SCANS]);
    let f = assert_one(&r, SCANS, "phantom", &[3]);
    says(&f.summary, &["outside its rows and columns"]);

    let twice = with_answer(
        0,
        vec![
            cell("a", "v", "1"),
            cell("c", "v", "3"),
            cell("c", "v", "3"),
        ],
    );
    let f = assert_one(&check(&twice), SCANS, "phantom", &[3]).clone();
    says(&f.summary, &["returned c.v twice"]);
}

#[test]
fn a_row_never_written_is_a_phantom() {
    let h = with_answer(
        0,
        vec![
            cell("a", "v", "1"),
            cell("bb", "v", "?"),
            cell("c", "v", "3"),
        ],
    );
    let f = assert_one(&check(&h), SCANS, "phantom", &[3]).clone();
    says(&f.summary, &["no version of bb.v"]);
}

#[test]
fn another_value_is_a_wrong_version() {
    let h = with_answer(0, vec![cell("a", "v", "1"), cell("c", "v", "9")]);
    let r = check(&h);
    assert_failed(&r, &[SCANS]);
    let f = assert_one(&r, SCANS, "wrong_version", &[3, 2]);
    says(&f.summary, &["returned c.v = \"9\"", "is \"3\""]);
}

#[test]
fn the_store_not_the_client_decides_what_is_visible() {
    // T4 is reported aborted but the store committed it at 7: a scan at 8
    // must return d.v (and atomic_commits reports the disagreement).
    let mut h = load("valid_scans");
    h.transactions[3].outcome = Outcome::Aborted;
    h.transactions[3].commit_ts = None;
    let mut late = h.transactions[2].clone();
    late.id = 5;
    late.start_ts = 8;
    late.ops.clear();
    late.scans.truncate(1);
    late.scans[0].start_ts = 8;
    late.scans[0].end_row = "e".into();
    h.transactions.push(late);
    let r = check(&h);
    let f = assert_one(&r, SCANS, "missing_row", &[5, 4]);
    says(&f.summary, &["d.v"]);
}

/// A scan is judged at its transaction's snapshot, not at the start_ts the
/// scan records: T3 (start_ts 5) scanning "at 8" and returning T4's row
/// (committed at 7) returned a phantom.
#[test]
fn a_scan_is_judged_at_its_transactions_start_ts() {
    let mut h = load("valid_scans");
    let scan = &mut h.transactions[2].scans[1];
    scan.start_ts = 8;
    scan.returned.push(cell("d", "v", "4"));
    let r = check(&h);
    assert_failed(&r, &[SCANS]);
    let f = findings(&r, SCANS, "phantom");
    assert_eq!(f.len(), 1, "{}", r.render_text());
    assert!(
        f[0].summary
            .contains("at start_ts 5 (the scan records start_ts 8)"),
        "{}",
        f[0].summary
    );
    // The same answer from a scan that records its transaction's start_ts
    // (5) is the same phantom; returning what start_ts 5 shows passes.
    let mut h = load("valid_scans");
    h.transactions[2].scans[1].start_ts = 8;
    assert_failed(&check(&h), &[]);
}
