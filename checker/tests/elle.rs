//! Elle list-append histories in EDN: each hand-made fixture gives the
//! anomaly it was built to show, a valid one passes, malformed ones are
//! exit 2 with the line and column.

use percsim_checker::{Report, check_elle, is_edn, parse_elle, run_check_file};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/elle")
        .join(name)
}

fn check(name: &str) -> Report {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    assert!(is_edn(&text), "{name} is detected as EDN");
    check_elle(&parse_elle(&text).unwrap_or_else(|e| panic!("{name}: {e}")))
}

/// Class -> count over every broken rule, and over the allowed section.
fn classes(r: &Report) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let mut broken = BTreeMap::new();
    for rule in &r.rules {
        for (c, n) in &rule.counts {
            *broken.entry(c.clone()).or_insert(0) += n;
        }
    }
    (broken, r.allowed.counts.clone())
}

#[test]
fn valid_history_is_serializable() {
    let r = check("valid.edn");
    assert!(r.passed(), "{}", r.render_text());
    assert!(r.snapshot_isolated() && r.serializable());
    // The nemesis op is skipped; one transaction failed.
    assert_eq!(
        (r.stats.transactions, r.stats.committed, r.stats.aborted),
        (4, 3, 1)
    );
    assert!(r.stats.graph_edges >= 2, "wr edges x and y: {:?}", r.stats);
}

#[test]
fn each_anomaly_fixture_shows_its_class() {
    let cases = [
        ("g0.edn", "G0"),
        ("g1a.edn", "G1a"),
        ("g1b.edn", "G1b"),
        ("g1c.edn", "G1c"),
        ("g_single.edn", "G-single-item"),
        ("lost_update.edn", "lost-update"),
        ("incompatible_order.edn", "incompatible-order"),
        ("duplicate_elements.edn", "duplicate-elements"),
        ("duplicate_appends.edn", "duplicate-appends"),
    ];
    for (name, class) in cases {
        let r = check(name);
        let (broken, _) = classes(&r);
        assert!(!r.passed(), "{name} must fail");
        assert!(!r.snapshot_isolated() && !r.serializable(), "{name}");
        assert!(
            broken.contains_key(class),
            "{name}: expected {class}, got {broken:?}"
        );
    }
    // The cycle is explained step by step with the lists read.
    let r = check("g_single.edn");
    let f = &r.rule("no_dependency_cycles").unwrap().violations[0];
    assert_eq!(f.cycle.len(), 2, "{f:?}");
    assert!(
        f.cycle
            .iter()
            .any(|s| s.edge == "rw" && s.explanation.contains("read key :x = [1]")),
        "{f:?}"
    );
}

#[test]
fn write_skew_is_snapshot_isolated_but_not_serializable() {
    let r = check("g2_item.edn");
    assert!(r.passed(), "{}", r.render_text());
    assert!(r.snapshot_isolated());
    assert!(!r.serializable());
    assert_eq!(classes(&r).1.get("G2-item"), Some(&1));
}

#[test]
fn malformed_histories_are_exit_2_with_line_and_column() {
    let cases = [
        ("bad_syntax.edn", 2, 76, "unexpected '}'"),
        ("bad_type.edn", 2, 18, "unknown :type :okay"),
        (
            "bad_orphan_completion.edn",
            3,
            3,
            "no operation in progress",
        ),
        ("bad_micro_op.edn", 1, 67, "unsupported micro-op :w"),
    ];
    for (name, line, column, what) in cases {
        let text = std::fs::read_to_string(fixture(name)).unwrap();
        let e = parse_elle(&text).unwrap_err();
        assert_eq!((e.line, e.column), (line, column), "{name}: {e}");
        assert!(e.message.contains(what), "{name}: {e}");
        let mut out = Vec::new();
        assert_eq!(run_check_file(&fixture(name), false, &mut out), 2, "{name}");
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.contains(&format!("line {line} column {column}")),
            "{name}: {out}"
        );
        let mut json = Vec::new();
        assert_eq!(run_check_file(&fixture(name), true, &mut json), 2);
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(v["line"], line as u64, "{name}");
        assert_eq!(v["column"], column as u64, "{name}");
    }
}

#[test]
fn check_file_detects_edn_and_reports_the_models() {
    let mut out = Vec::new();
    assert_eq!(run_check_file(&fixture("g2_item.edn"), false, &mut out), 0);
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("snapshot isolated: yes") && text.contains("serializable: no"),
        "{text}"
    );
    let mut json = Vec::new();
    assert_eq!(run_check_file(&fixture("g0.edn"), true, &mut json), 1);
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["snapshot_isolated"], false);
    assert_eq!(v["serializable"], false);
    assert!(!is_edn("{\"format\": \"percsim-history/1\"}"));
    assert!(is_edn(" ; c\n {:type :invoke}"));
}

/// An append no read shows comes after the key's longest read (as Elle
/// orders it): a reader of that last version is anti-dependent on it. Read
/// skew through such an append is G-single-item; two such reads are write
/// skew, allowed under snapshot isolation but not serializable.
#[test]
fn unobserved_appends_come_after_the_longest_read() {
    let r = check("g_single_unobserved.edn");
    assert!(!r.passed() && !r.serializable(), "{}", r.render_text());
    let (broken, _) = classes(&r);
    assert_eq!(broken.get("G-single-item"), Some(&1), "{broken:?}");
    let f = &r.rule("no_dependency_cycles").unwrap().violations[0];
    assert!(
        f.cycle
            .iter()
            .any(|s| s.edge == "rw" && s.explanation.contains("is in no read")),
        "{f:?}"
    );
    let r = check("g2_unobserved.edn");
    assert!(r.passed() && r.snapshot_isolated(), "{}", r.render_text());
    assert!(!r.serializable(), "{}", r.render_text());
    assert_eq!(classes(&r).1.get("G2-item"), Some(&1));
}
