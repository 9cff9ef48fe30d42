//! The one front end: each file is read as the format its tag (or, without
//! a tag, its syntax) names; a broken file of a known format is reported as
//! that format's error, with line and column; an empty or unknown document
//! is exit 2 saying what was expected.

use percsim_checker::{HistoryFormat, detect, run_check_file};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A scratch file holding `text`, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str, text: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("percsim-front-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// (exit code, text output, JSON output) of checking `path`.
fn run(path: &Path) -> (i32, String, serde_json::Value) {
    let mut text = Vec::new();
    let code = run_check_file(path, false, &mut text);
    let mut json = Vec::new();
    assert_eq!(run_check_file(path, true, &mut json), code);
    let v = serde_json::from_slice(&json).expect("a JSON report");
    (code, String::from_utf8(text).unwrap(), v)
}

#[test]
fn each_fixture_is_detected_as_its_format() {
    let cases = [
        ("valid_basic.json", HistoryFormat::Transactions),
        ("bad_format_tag.json", HistoryFormat::Transactions),
        ("stream/valid_pipeline.json", HistoryFormat::Stream),
        ("elle/valid.edn", HistoryFormat::ElleListAppend),
    ];
    for (name, format) in cases {
        let text = std::fs::read_to_string(fixture(name)).unwrap();
        assert_eq!(detect(&text).ok(), Some(format), "{name}");
    }
}

#[test]
fn a_truncated_stream_history_is_a_stream_error_with_line_and_column() {
    let text = std::fs::read_to_string(fixture("stream/valid_pipeline.json")).unwrap();
    let cut = Scratch::new("cut.json", &text[..text.len() / 2]);
    let (code, out, v) = run(&cut.0);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("is not a valid stream history"), "{out}");
    assert!(out.contains("JSON syntax error"), "{out}");
    assert!(!out.contains("start_ts"), "{out}");
    assert!(
        v["line"].as_u64().is_some() && v["column"].as_u64().is_some(),
        "{v}"
    );
}

#[test]
fn a_stream_history_missing_a_field_is_a_stream_error() {
    let text = std::fs::read_to_string(fixture("stream/valid_pipeline.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v.as_object_mut().unwrap().remove("ops");
    let f = Scratch::new("no_ops.json", &serde_json::to_string_pretty(&v).unwrap());
    let (code, out, _) = run(&f.0);
    assert_eq!(code, 2);
    assert!(
        out.contains("is not a valid stream history") && out.contains("`ops`"),
        "{out}"
    );
}

#[test]
fn empty_and_unknown_documents_are_exit_2_naming_what_was_expected() {
    let cases = [
        ("empty.json", "", "empty document"),
        ("blank.edn", "  \n ; only a comment\n", "empty document"),
        ("empty_vector.edn", "[]", "holds no operation"),
        ("empty_list.edn", "()", "holds no operation"),
        (
            "no_tag.json",
            "{\"transactions\": []}",
            "without a \"format\" tag",
        ),
        (
            "other_tag.json",
            "{\"format\": \"jepsen/1\"}",
            "unknown format \"jepsen/1\"",
        ),
        ("number.json", "42", "a document starting \"42\""),
    ];
    for (name, text, what) in cases {
        let f = Scratch::new(name, text);
        let (code, out, v) = run(&f.0);
        assert_eq!(code, 2, "{name}: {out}");
        assert!(out.contains(what), "{name}: {out}");
        assert_eq!(v["passed"], false, "{name}");
        if what != "holds no operation" {
            assert!(
                out.contains("percsim-history/1") && out.contains("percsim-stream-history/1"),
                "{name}: {out}"
            );
        }
    }
}

#[test]
fn a_missing_file_is_exit_2() {
    let (code, out, _) = run(&fixture("no_such_file.json"));
    assert_eq!(code, 2);
    assert!(out.contains("cannot read"), "{out}");
}

/// A writer that sorts keys puts `final_state` before `format`: a tag
/// beyond the first 64 KiB is still found.
#[test]
fn a_tag_after_a_long_final_state_is_found() {
    let text = std::fs::read_to_string(fixture("valid_basic.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let padding = "p".repeat(100_000);
    let obj = v.as_object_mut().unwrap();
    obj.insert("aaa_padding".into(), serde_json::json!(padding));
    let sorted: std::collections::BTreeMap<_, _> = obj.clone().into_iter().collect();
    let f = Scratch::new("sorted.json", &serde_json::to_string(&sorted).unwrap());
    let head = std::fs::read_to_string(&f.0).unwrap();
    assert!(!head[..1 << 16].contains("\"format\""));
    let (code, out, _) = run(&f.0);
    assert_eq!(code, 0, "{out}");
}
