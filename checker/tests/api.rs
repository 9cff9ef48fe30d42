//! Histories built in code: read-your-writes, robustness of `check` on
//! histories `parse` would reject, the per-class cap, larger cycles.

mod common;

use common::{HistoryBuilder, put, txn};
use percsim_checker::{History, LockState, Op, Outcome, Transaction, Version, VersionKind, check};

fn read(row: &str, v: Option<&str>) -> Op {
    Op::Read {
        row: row.into(),
        col: "c".into(),
        value: v.map(Into::into),
    }
}

fn write(row: &str, v: &str) -> Op {
    common::write(row, "c", v)
}

fn history(transactions: Vec<Transaction>, cells: Vec<(&str, Vec<Version>)>) -> History {
    let b = HistoryBuilder::new().seed(7).txns(transactions);
    cells
        .into_iter()
        .fold(b, |b, (row, versions)| b.cell(row, "c", versions))
        .build()
}

#[test]
fn a_read_after_an_own_write_may_see_it_or_the_snapshot() {
    use Outcome::Committed as C;
    let base = txn(1, 1, Some(2), C, vec![write("x", "a")]);
    for (seen, ok) in [
        (Some("b"), true),
        (Some("a"), true),
        (None, false),
        (Some("z"), false),
    ] {
        let t2 = txn(2, 3, Some(4), C, vec![write("x", "b"), read("x", seen)]);
        let h = history(
            vec![base.clone(), t2],
            vec![("x", vec![put(1, 2, "a"), put(3, 4, "b")])],
        );
        let r = check(&h);
        assert_eq!(r.passed(), ok, "read {seen:?}\n{}", r.render_text());
        if !ok {
            assert_eq!(r.violated_rules()[0], "snapshot_reads");
        }
    }
}

#[test]
fn check_never_panics_on_histories_parse_would_reject() {
    use Outcome::*;
    let mut weird = vec![
        // Committed without commit_ts, aborted with one, duplicate ids and timestamps.
        txn(
            1,
            5,
            None,
            Committed,
            vec![write("x", "a"), read("x", Some("zzz"))],
        ),
        txn(1, 5, Some(3), Aborted, vec![write("x", "a")]),
        txn(2, 5, Some(5), Unknown, vec![read("y", None)]),
        txn(
            3,
            u64::MAX,
            Some(u64::MAX),
            Committed,
            vec![write("y", "q")],
        ),
        txn(4, 0, Some(0), Committed, vec![]),
    ];
    weird[0].complete_ns = Some(0);
    weird[0].invoke_ns = 10; // completes before it begins
    weird[3].invoke_ns = u64::MAX;
    weird[3].complete_ns = Some(u64::MAX);
    let mut h = history(
        weird,
        vec![
            ("x", vec![put(5, 5, "a"), put(5, 5, "b")]),
            (
                "x",
                vec![Version {
                    start_ts: 9,
                    commit_ts: 1,
                    kind: VersionKind::Rollback,
                    value: Some("r".into()),
                    data_missing: false,
                }],
            ),
            (
                "y",
                vec![Version {
                    start_ts: 1,
                    commit_ts: 0,
                    kind: VersionKind::Put,
                    value: None,
                    data_missing: false,
                }],
            ),
        ],
    );
    h.format = "something else".into();
    h.final_state.locks.push(LockState {
        row: "nowhere".into(),
        col: "c".into(),
        start_ts: 77,
        primary: percsim_checker::CellRef {
            row: "x".into(),
            col: "c".into(),
        },
    });
    let r = check(&h);
    assert!(!r.passed());
    let text = r.render_text();
    assert!(text.contains("FAIL"));
    serde_json::to_string(&r).expect("serializable");

    // Empty history.
    let r = check(&history(vec![], vec![]));
    assert!(r.passed());
}

#[test]
fn findings_are_capped_per_class_but_all_counted() {
    use Outcome::Committed as C;
    let mut txns = vec![
        txn(1, 1, Some(2), C, vec![write("x", "a")]),
        txn(2, 3, Some(4), C, vec![write("x", "b")]),
    ];
    // Twelve readers that all see the stale "a" (concurrent, so no rt edges).
    for i in 0..12 {
        txns.push(txn(
            10 + i,
            10 + 2 * i,
            Some(11 + 2 * i),
            C,
            vec![read("x", Some("a"))],
        ));
    }
    let h = history(txns, vec![("x", vec![put(1, 2, "a"), put(3, 4, "b")])]);
    let r = check(&h);
    let rule = r.rule("snapshot_reads").unwrap();
    assert_eq!(rule.total, 12);
    assert_eq!(rule.counts.get("stale_read"), Some(&12));
    assert_eq!(rule.violations.len(), 5);
    assert_eq!(rule.violations[0].txns[0], 10);
    assert!(r.render_text().contains("showing the first 5 of 12"));
}

#[test]
fn a_long_cycle_is_found_and_explained_in_full() {
    // Each Ti reads what T(i-1) wrote (wr), and T0 reads what the last one
    // wrote: a ring of 200 wr edges, one G1c of 200 steps.
    use Outcome::Committed as C;
    let n = 200u64;
    let mut txns = Vec::new();
    let mut cells = Vec::new();
    for i in 0..n {
        let mut ops = vec![];
        if i > 0 {
            ops.push(read(&format!("k{}", i - 1), Some(&format!("v{}", i - 1))));
        }
        ops.push(write(&format!("k{i}"), &format!("v{i}")));
        txns.push(txn(i, 10 * i + 1, Some(10 * i + 2), C, ops));
        cells.push((
            format!("k{i}"),
            vec![put(10 * i + 1, 10 * i + 2, &format!("v{i}"))],
        ));
    }
    // T0 read k_last and saw its version: a future read closing the ring.
    txns[0].ops.insert(
        0,
        read(&format!("k{}", n - 1), Some(&format!("v{}", n - 1))),
    );
    let cells_ref: Vec<(&str, Vec<Version>)> =
        cells.iter().map(|(r, v)| (r.as_str(), v.clone())).collect();
    let r = check(&history(txns, cells_ref));
    let rule = r.rule("no_dependency_cycles").unwrap();
    assert_eq!(rule.counts.get("G1c"), Some(&1), "{}", r.render_text());
    assert_eq!(rule.violations[0].cycle.len(), n as usize);
    assert_eq!(rule.violations[0].txns.len(), n as usize);
}

#[test]
fn separate_components_are_reported_separately() {
    use Outcome::Committed as C;
    // Two independent write skews.
    let mut txns = Vec::new();
    let mut cells = Vec::new();
    for k in 0..2u64 {
        let (x, y) = (format!("x{k}"), format!("y{k}"));
        let b = 100 * k;
        txns.push(txn(
            b + 1,
            b + 1,
            Some(b + 2),
            C,
            vec![write(&x, "x1"), write(&y, "y1")],
        ));
        txns.push(txn(
            b + 2,
            b + 3,
            Some(b + 6),
            C,
            vec![read(&x, Some("x1")), read(&y, Some("y1")), write(&x, "x2")],
        ));
        txns.push(txn(
            b + 3,
            b + 4,
            Some(b + 5),
            C,
            vec![read(&x, Some("x1")), read(&y, Some("y1")), write(&y, "y2")],
        ));
        cells.push((x, vec![put(b + 1, b + 2, "x1"), put(b + 3, b + 6, "x2")]));
        cells.push((y, vec![put(b + 1, b + 2, "y1"), put(b + 4, b + 5, "y2")]));
    }
    let cells_ref: Vec<(&str, Vec<Version>)> =
        cells.iter().map(|(r, v)| (r.as_str(), v.clone())).collect();
    let r = check(&history(txns, cells_ref));
    assert!(r.passed(), "{}", r.render_text());
    assert_eq!(r.allowed.counts.get("G2-item"), Some(&2));
    let mut first = r.allowed.examples[0].txns.clone();
    first.sort_unstable();
    assert_eq!(first, [2, 3]);
}

#[test]
fn reports_are_deterministic() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/cycle_lost_update.json"
    ))
    .unwrap();
    let h = percsim_checker::parse(&text).unwrap();
    let a = serde_json::to_string(&check(&h)).unwrap();
    for _ in 0..5 {
        assert_eq!(serde_json::to_string(&check(&h)).unwrap(), a);
    }
}

#[test]
fn the_documented_example_is_a_valid_passing_history() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/history-format.md"
    ))
    .expect("docs/history-format.md exists");
    let start = doc.find("```json\n").expect("a json example") + "```json\n".len();
    let end = start + doc[start..].find("```").expect("closed block");
    let h = percsim_checker::parse(&doc[start..end]).expect("the example parses");
    let r = check(&h);
    assert!(r.passed(), "{}", r.render_text());
    assert_eq!(h.transactions.len(), 6);
}

#[test]
fn a_history_broken_everywhere_is_still_judged_in_linear_time() {
    // 20 000 committed transactions that all read the initial null of one
    // hot cell and all write it, with overlapping intervals: one huge lost
    // update, one huge strongly connected component, and a conflict per
    // transaction after the first. Quadratic work here would take minutes.
    use Outcome::Committed as C;
    let n = 20_000u64;
    let mut txns = Vec::new();
    let mut versions = Vec::new();
    for i in 0..n {
        let v = format!("v{i}");
        txns.push(txn(
            i,
            i + 1,
            Some(n + 1 + i),
            C,
            vec![read("hot", None), write("hot", &v)],
        ));
        versions.push(put(i + 1, n + 1 + i, &v));
    }
    let start = std::time::Instant::now();
    let r = check(&history(txns, vec![("hot", versions)]));
    let cycles = r.rule("no_dependency_cycles").unwrap();
    assert_eq!(cycles.counts.get("lost-update"), Some(&1));
    assert_eq!(cycles.counts.get("G-single"), Some(&1));
    let lost = cycles
        .violations
        .iter()
        .find(|f| f.class == "lost-update")
        .unwrap();
    assert_eq!(lost.txns.len(), n as usize);
    assert_eq!(r.rule("no_write_conflicts").unwrap().total, n - 1);
    // Every read is right: nothing committed before any of them started.
    assert_eq!(r.rule("snapshot_reads").unwrap().total, 0);
    assert!(start.elapsed().as_secs() < 60, "took {:?}", start.elapsed());
}
