//! Bad input: exit code 2 and a message that says what is wrong and where.

mod common;

use common::*;
use percsim_checker::{parse, run_check_file};
use std::path::Path;

/// Runs a bad fixture; asserts exit 2 and that the message names every `needle`.
fn bad(name: &str, needles: &[&str]) -> String {
    let (code, text) = run(name, false);
    assert_eq!(code, 2, "{name}: {text}");
    assert!(text.starts_with("error: "), "{text}");
    for n in needles {
        assert!(text.contains(n), "{name}: message lacks {n:?}: {text}");
    }
    let (code, json) = run(name, true);
    assert_eq!(code, 2);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON error report");
    assert_eq!(v["passed"], false);
    assert!(v["error"].as_str().is_some_and(|e| e.contains(needles[0])));
    text
}

#[test]
fn missing_field() {
    bad(
        "bad_missing_field",
        &[
            "missing field `outcome`",
            "$.transactions[1] (transaction id 2)",
            "line 7",
        ],
    );
}

#[test]
fn wrong_type() {
    bad(
        "bad_wrong_type",
        &[
            "$.transactions[1] (transaction id 2).start_ts",
            "invalid type: string \"three\", expected u64",
            "line 7 column",
        ],
    );
}

#[test]
fn bad_format_tag() {
    bad(
        "bad_format_tag",
        &["$.format", "percsim-history/2", "percsim-history/1"],
    );
}

/// A model the checker does not know is refused, named, with the known
/// ones: never judged against a default instead.
#[test]
fn unknown_model_named_by_the_history() {
    bad(
        "bad_model",
        &[
            "$.model",
            "unknown consistency model \"linearizable\"",
            "expected one of serializable, snapshot-isolation",
            "line 3 column",
        ],
    );
    let e = parse(&std::fs::read_to_string(fixture_path("bad_model")).unwrap()).unwrap_err();
    assert_eq!((e.path(), e.line()), (Some("$.model"), Some(3)));
    for doc in [
        r#"{"format": "percsim-history/1", "model": 3, "transactions": [], "final_state": {"cells": []}}"#,
        r#"{"format": "percsim-history/1", "model": "Serializable", "transactions": [], "final_state": {"cells": []}}"#,
    ] {
        let e = parse(doc).expect_err(doc);
        assert_eq!(e.path(), Some("$.model"), "{e}");
    }
}

#[test]
fn duplicate_transaction_id() {
    bad(
        "bad_duplicate_id",
        &[
            "duplicate transaction id 1",
            "$.transactions[1]",
            "$.transactions[0]",
        ],
    );
}

#[test]
fn committed_writer_without_commit_ts() {
    // Only a read-only transaction may commit without a commit timestamp.
    bad(
        "bad_committed_without_commit_ts",
        &[
            "$.transactions[1] (transaction id 2).commit_ts",
            "\"committed\"",
            "ops[0] is a write of y.v",
            "read-only",
        ],
    );
}

#[test]
fn aborted_with_commit_ts() {
    bad(
        "bad_aborted_with_commit_ts",
        &["(transaction id 2).commit_ts", "\"aborted\""],
    );
}

#[test]
fn complete_before_invoke() {
    bad(
        "bad_complete_before_invoke",
        &["(transaction id 2).complete_ns", "250", "300"],
    );
}

#[test]
fn rollback_with_another_timestamp() {
    bad(
        "bad_rollback_ts",
        &["$.final_state.cells[0].versions[1].commit_ts", "rollback"],
    );
}

#[test]
fn put_without_value() {
    bad(
        "bad_put_without_value",
        &["$.final_state.cells[0].versions[0].value", "put"],
    );
}

#[test]
fn data_missing_put_with_a_value() {
    bad(
        "bad_data_missing_with_value",
        &["$.final_state.cells[0].versions[0].value", "data_missing"],
    );
}

#[test]
fn data_missing_on_a_delete() {
    bad(
        "bad_data_missing_on_delete",
        &[
            "$.final_state.cells[0].versions[0].data_missing",
            "only a put",
        ],
    );
}

#[test]
fn unknown_op_kind() {
    bad(
        "bad_op_kind",
        &["$.transactions[0] (transaction id 1).ops[1].f", "scan"],
    );
}

#[test]
fn cell_listed_twice() {
    bad(
        "bad_duplicate_cell",
        &["$.final_state.cells[1]", "listed twice"],
    );
}

#[test]
fn lock_primary_is_not_a_cell() {
    bad(
        "bad_lock_primary",
        &["$.final_state.locks[0].primary", "CellRef"],
    );
}

#[test]
fn observer_run_naming_an_undeclared_observer() {
    bad(
        "bad_observer_name",
        &[
            "$.transactions[1] (transaction id 9).observer.name",
            "\"sumer\"",
            "not declared",
            "declared: \"summer\"",
        ],
    );
    let e =
        parse(&std::fs::read_to_string(fixture_path("bad_observer_name")).unwrap()).unwrap_err();
    assert_eq!(
        e.path(),
        Some("$.transactions[1] (transaction id 9).observer.name")
    );
}

#[test]
fn observer_run_for_another_column() {
    bad(
        "bad_observer_col",
        &[
            "$.transactions[1] (transaction id 9).observer.col",
            "x.w",
            "observes column \"v\"",
            "$.observers[0].col",
        ],
    );
}

#[test]
fn observer_declared_twice() {
    bad(
        "bad_observer_duplicate",
        &["$.observers[1].name", "declared twice", "$.observers[0]"],
    );
}

#[test]
fn observer_run_without_any_declared_observer() {
    let doc = r#"{"format": "percsim-history/1", "transactions": [
        {"id": 4, "client": 1, "start_ts": 1, "invoke_ns": 0, "outcome": "aborted",
         "observer": {"name": "o", "row": "r", "col": "c"}, "ops": []}],
        "final_state": {"cells": []}}"#;
    let e = parse(doc).unwrap_err();
    assert_eq!(
        e.path(),
        Some("$.transactions[0] (transaction id 4).observer.name")
    );
    assert!(e.to_string().contains("declares no observers"), "{e}");
}

#[test]
fn observer_fields_of_the_wrong_type_are_located() {
    for (doc, path) in [
        (
            r#"{"format": "percsim-history/1", "observers": [{"name": "o", "col": "c", "weak": "yes"}],
                "transactions": [], "final_state": {"cells": []}}"#,
            "$.observers[0].weak",
        ),
        (
            r#"{"format": "percsim-history/1", "observers": [{"name": "o"}],
                "transactions": [], "final_state": {"cells": []}}"#,
            "$.observers[0]",
        ),
        (
            r#"{"format": "percsim-history/1", "observers": [{"name": "o", "col": "c"}],
                "transactions": [{"id": 4, "client": 1, "start_ts": 1, "invoke_ns": 0,
                  "outcome": "aborted", "observer": {"name": "o", "row": 5, "col": "c"}, "ops": []}],
                "final_state": {"cells": []}}"#,
            "$.transactions[0] (transaction id 4).observer.row",
        ),
        (
            r#"{"format": "percsim-history/1", "transactions": [],
                "final_state": {"cells": [], "notify": [{"row": "r"}]}}"#,
            "$.final_state.notify[0]",
        ),
    ] {
        let e = parse(doc).expect_err(doc);
        assert_eq!(e.path(), Some(path), "{e}");
    }
}

#[test]
fn syntax_error() {
    bad("bad_syntax", &["JSON syntax error", "line 3 column"]);
    let e = parse(&std::fs::read_to_string(fixture_path("bad_syntax")).unwrap()).unwrap_err();
    assert_eq!(e.line(), Some(3));
    assert!(e.column().is_some());
    assert_eq!(e.path(), None);
}

#[test]
fn unreadable_path() {
    for path in [
        "/nonexistent/percsim/history.json",
        env!("CARGO_MANIFEST_DIR"),
    ] {
        let mut out = Vec::new();
        let code = run_check_file(Path::new(path), false, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(code, 2, "{text}");
        assert!(text.contains("cannot read"), "{text}");
        assert!(text.contains(path), "{text}");
    }
}

#[test]
fn errors_carry_a_json_path() {
    let e = parse(&std::fs::read_to_string(fixture_path("bad_wrong_type")).unwrap()).unwrap_err();
    assert_eq!(
        e.path(),
        Some("$.transactions[1] (transaction id 2).start_ts")
    );
    assert_eq!(e.line(), Some(7));
}

#[test]
fn odd_documents_are_errors_not_panics() {
    for doc in [
        "",
        "null",
        "[]",
        "42",
        "{}",
        r#"{"format": "percsim-history/1"}"#,
        r#"{"format": "percsim-history/1", "transactions": {}, "final_state": {"cells": []}}"#,
        r#"{"format": "percsim-history/1", "transactions": [], "final_state": []}"#,
        r#"{"format": "percsim-history/1", "transactions": [], "final_state": {"cells": [{"row": 1}]}}"#,
        r#"{"format": "percsim-history/1", "transactions": [{"id": -1}], "final_state": {"cells": []}}"#,
        r#"{"format": "percsim-history/1", "transactions": [{"id": 1.5}], "final_state": {"cells": []}}"#,
        r#"{"format": "percsim-history/1", "transactions": [{"id": 18446744073709551616}], "final_state": {"cells": []}}"#,
        r#"{"format": "percsim-history/1", "transactions": [], "events": [{"kind": "x"}], "final_state": {"cells": []}}"#,
        r#"{"format": "percsim-history/1", "transactions": [], "final_state": {"cells": [], "locks": [{"row": "a", "col": "b", "start_ts": 1}]}}"#,
        "{\"format\": \"percsim-history/1\", \"transactions\": [",
    ] {
        let e = parse(doc).expect_err(doc);
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn unknown_fields_are_ignored() {
    let doc = r#"{"format": "percsim-history/1", "future_field": [1, 2],
        "transactions": [{"id": 1, "client": 1, "start_ts": 1, "commit_ts": 2, "invoke_ns": 0,
            "complete_ns": 5, "outcome": "committed", "retries": 3,
            "ops": [{"f": "write", "row": "r", "col": "c", "value": "v", "size": 1}]}],
        "final_state": {"cells": [{"row": "r", "col": "c", "ttl": 0,
            "versions": [{"start_ts": 1, "commit_ts": 2, "kind": "put", "value": "v", "x": true}]}],
            "extra": {}}}"#;
    let h = parse(doc).expect("unknown fields are fine");
    assert!(percsim_checker::check(&h).passed());
}
