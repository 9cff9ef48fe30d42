//! Elle's own published test histories (jepsen-io/elle,
//! `test/elle/list_append_test.clj`, `checker-test`), taken as data into
//! `tests/fixtures/elle/published/` (each file cites its test case), judged
//! here against the models Elle judged them by, with Elle's verdicts and
//! anomaly names.

use percsim_checker::{CheckOptions, Model, check_elle, parse_elle, run_check_file_with};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/elle/published")
        .join(name)
}

/// One published history and what Elle says of it.
struct Case {
    file: &'static str,
    /// Elle's `:anomaly-types`, in its names.
    anomalies: &'static [&'static str],
    /// The models Elle's verdict rules out (its `:not`, as far as percsim
    /// has the model), with each one's exit code 1 expected.
    not: &'static [Model],
    /// A model Elle finds the history valid under, where its test asks one.
    valid_under: Option<Model>,
}

const CASES: [Case; 6] = [
    Case {
        file: "g0.edn",
        anomalies: &["G0"],
        not: &[Model::ReadUncommitted],
        valid_under: None,
    },
    Case {
        file: "g1a.edn",
        anomalies: &["G1a"],
        not: &[Model::ReadCommitted, Model::RepeatableRead],
        valid_under: None,
    },
    Case {
        file: "g1b.edn",
        anomalies: &["G-single-item", "G1b"],
        not: &[Model::ReadCommitted, Model::Serializable],
        valid_under: None,
    },
    Case {
        file: "g1c.edn",
        anomalies: &["G1c"],
        not: &[Model::ReadCommitted],
        valid_under: None,
    },
    Case {
        file: "g_single.edn",
        anomalies: &["G-single-item"],
        not: &[Model::RepeatableRead],
        valid_under: None,
    },
    Case {
        file: "g2.edn",
        anomalies: &["G2-item"],
        not: &[Model::RepeatableRead, Model::Serializable],
        valid_under: Some(Model::ReadCommitted),
    },
];

/// Every class found, violation or allowed, by the name the report gives.
fn found(file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(fixture(file)).expect("fixture");
    let h = parse_elle(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    let r = check_elle(&h);
    let mut names: Vec<String> = r
        .rules
        .iter()
        .flat_map(|rule| rule.counts.keys().cloned())
        .chain(r.allowed.counts.keys().cloned())
        .collect();
    names.sort();
    names
}

fn exit_code(file: &str, model: Model) -> (i32, String) {
    let mut out = Vec::new();
    let options = CheckOptions {
        json: false,
        model: Some(model),
    };
    let code = run_check_file_with(&fixture(file), options, &mut out);
    (code, String::from_utf8(out).expect("utf-8"))
}

#[test]
fn elles_histories_show_elles_anomalies() {
    for case in &CASES {
        assert_eq!(found(case.file), case.anomalies, "{}", case.file);
    }
}

#[test]
fn elles_histories_get_elles_verdicts() {
    for case in &CASES {
        for &model in case.not {
            let (code, text) = exit_code(case.file, model);
            assert_eq!(code, 1, "{} under {model}:\n{text}", case.file);
        }
        if let Some(model) = case.valid_under {
            let (code, text) = exit_code(case.file, model);
            assert_eq!(code, 0, "{} under {model}:\n{text}", case.file);
        }
    }
}
