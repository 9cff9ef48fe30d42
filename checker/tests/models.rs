//! The consistency model as an input: a report judged against each model
//! fails on what that model forbids and passes what it allows.

mod common;

use common::*;
use percsim_checker::{CheckOptions, Model, ModelSource, Report, run_check_file_with};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Runs `percsim check --model MODEL` on the fixture at `path` (relative to
/// the fixtures folder): (exit code, output).
fn run_as(path: &str, model: Option<Model>, json: bool) -> (i32, String) {
    let mut out = Vec::new();
    let options = CheckOptions { json, model };
    let code = run_check_file_with(&fixtures().join(path), options, &mut out);
    (code, String::from_utf8(out).expect("utf-8 output"))
}

/// Every model's exit code on the fixture, strongest model first.
fn codes(path: &str) -> Vec<(Model, i32)> {
    Model::ALL
        .into_iter()
        .map(|m| (m, run_as(path, Some(m), false).0))
        .collect()
}

/// The models `codes` says pass.
fn passing(path: &str) -> Vec<&'static str> {
    codes(path)
        .into_iter()
        .filter(|&(_, c)| c == 0)
        .map(|(m, c)| {
            assert!(c == 0 || c == 1, "{path} under {m}: exit {c}");
            m.name()
        })
        .collect()
}

#[test]
fn serializable_flags_the_write_skew_snapshot_isolation_allows() {
    let path = "valid_write_skew.json";
    let (code, text) = run_as(path, Some(Model::Serializable), false);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("FAIL  no_dependency_cycles"), "{text}");
    assert!(text.contains("[G2-item]"), "{text}");
    assert!(text.contains("model: serializable (as asked)"), "{text}");
    let (code, text) = run_as(path, Some(Model::SnapshotIsolation), false);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("Allowed under snapshot isolation") && text.contains("G2-item"),
        "{text}"
    );
    // Without --model: the history names no model, so the default,
    // snapshot isolation, said so.
    let (code, json) = run_as(path, None, true);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["model"], "snapshot-isolation");
    assert_eq!(v["model_source"], "default");
    assert_eq!(
        v["satisfies"],
        serde_json::json!(["snapshot-isolation", "read-committed", "read-uncommitted"])
    );
    let (_, json) = run_as(path, Some(Model::Serializable), true);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (&v["model"], &v["passed"]),
        (&"serializable".into(), &false.into())
    );
    assert_eq!(v["model_source"], "asked");
    assert_eq!(v["rules"][4]["counts"]["G2-item"], 1);
    assert_eq!(v["allowed"]["total"], 0);
}

/// Each model fails on a history with an anomaly it forbids and passes it
/// under the models that allow that anomaly (Elle's lattice).
#[test]
fn each_model_fails_on_what_it_forbids() {
    let cases: [(&str, &[&str]); 7] = [
        // G0: every model forbids it.
        ("elle/g0.edn", &[]),
        // G1a and G1c: only read uncommitted allows them.
        ("elle/g1a.edn", &["read-uncommitted"]),
        ("cycle_g1c.json", &["read-uncommitted"]),
        // G-single (read skew): read committed allows it, snapshot
        // isolation and repeatable read forbid it.
        (
            "cycle_g_single.json",
            &["read-committed", "read-uncommitted"],
        ),
        // A stale read by timestamps: snapshot isolation's own promise.
        (
            "snapshot_stale_read.json",
            &["repeatable-read", "read-committed", "read-uncommitted"],
        ),
        // Write skew: repeatable read (G2-item) and serializable forbid it.
        (
            "valid_write_skew.json",
            &["snapshot-isolation", "read-committed", "read-uncommitted"],
        ),
        (
            "valid_basic.json",
            &[
                "serializable",
                "snapshot-isolation",
                "repeatable-read",
                "read-committed",
                "read-uncommitted",
            ],
        ),
    ];
    for (path, want) in cases {
        assert_eq!(passing(path), want, "{path}");
    }
}

/// What a weaker model allows moves to the allowed section, with its
/// explanation; judging again against the first model gives the first
/// report back.
#[test]
fn a_weaker_model_files_the_anomaly_as_allowed() {
    let r = report("cycle_g_single");
    assert_failed(&r, &["snapshot_reads", "no_dependency_cycles"]);
    let rc = r
        .clone()
        .judged_by(Model::ReadCommitted, ModelSource::Asked);
    assert_failed(&rc, &[]);
    assert_eq!(rc.allowed.counts.get("G-single"), Some(&1));
    assert_eq!(rc.allowed.counts.get("future_read"), Some(&1));
    assert_eq!(rc.allowed.total, 2);
    let shown: Vec<&str> = rc
        .allowed
        .examples
        .iter()
        .map(|f| f.class.as_str())
        .collect();
    assert_eq!(shown, ["G-single", "future_read"]);
    assert!(!rc.allowed.examples[0].cycle.is_empty());
    assert_eq!(rc.satisfies, r.satisfies);
    let text = rc.render_text();
    assert!(text.contains("Allowed under read committed"), "{text}");
    assert!(
        text.contains("satisfies: read-committed, read-uncommitted"),
        "{text}"
    );
    let back = rc.judged_by(Model::SnapshotIsolation, ModelSource::Default);
    assert_eq!(back, r);
}

/// The Elle import is judged the same way, with Elle's names.
#[test]
fn an_elle_history_is_judged_against_the_model_asked() {
    let (code, text) = run_as("elle/g_single.edn", Some(Model::ReadCommitted), false);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("G-single-item"), "{text}");
    assert!(text.contains("snapshot isolated: no"), "{text}");
    let (code, _) = run_as("elle/g2_item.edn", Some(Model::RepeatableRead), false);
    assert_eq!(code, 1);
}

/// A stream history has its own rules and takes no model: bad input.
#[test]
fn a_model_for_a_stream_history_is_an_error() {
    let (code, text) = run_as("stream/duplicate.json", Some(Model::Serializable), false);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("take no consistency model") && text.contains("--model serializable"),
        "{text}"
    );
    let (code, _) = run_as("stream/duplicate.json", None, false);
    assert_ne!(code, 2);
}

/// The report names its model whichever way it was made.
#[test]
fn every_report_names_its_model() {
    let r: Report = report("valid_basic");
    assert_eq!(
        (r.model.as_str(), r.model_source.as_str()),
        ("snapshot-isolation", "default")
    );
    assert!(r.satisfies(Model::Serializable) && r.serializable() && r.snapshot_isolated());
}

/// Without `--model`, a history is judged against the model it names (the
/// promise of the system that wrote it); `--model` still overrides it, and
/// a history that names none is judged against the stated default.
#[test]
fn the_model_the_history_names_is_the_default() {
    let named = "model_serializable_write_skew.json";
    let (code, text) = run_as(named, None, false);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("FAIL  no_dependency_cycles"), "{text}");
    let line = text.lines().nth(2).unwrap_or_default();
    assert!(
        line.starts_with("model: serializable (named by the history: what the system"),
        "{text}"
    );
    let (_, json) = run_as(named, None, true);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (&v["model"], &v["model_source"]),
        (&"serializable".into(), &"history".into())
    );
    assert_eq!(
        report("model_serializable_write_skew").model_source,
        "history"
    );

    let (code, text) = run_as(named, Some(Model::SnapshotIsolation), false);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("model: snapshot-isolation (as asked)"),
        "{text}"
    );

    let (code, text) = run_as("valid_write_skew.json", None, false);
    assert_eq!(code, 0, "{text}");
    let line = text.lines().nth(2).unwrap_or_default();
    assert!(
        line.starts_with("model: snapshot-isolation (default: the history names no model)"),
        "{text}"
    );
}

/// An Elle history has no header to name a model in: the default, said so.
#[test]
fn an_elle_history_is_judged_against_the_stated_default() {
    let (_, text) = run_as("elle/g_single.edn", None, false);
    assert!(
        text.contains("model: snapshot-isolation (default: the history names no model)"),
        "{text}"
    );
}
