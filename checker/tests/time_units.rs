//! Every time a person reads is in ms with its unit written (`0.000355
//! ms`): the text and JSON reports of every fixture history, passing and
//! failing, transactional and stream, show no bare number of ns (raw ns
//! stay in the `_ns` fields of machine formats).

use percsim_checker::units::bare_ns;
use std::path::{Path, PathBuf};

/// The `.json` files of a fixture directory, sorted.
fn fixtures(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// Every bare number of ns in `text`, with some context, named by `what`.
fn mixed(what: &str, text: &str) -> Vec<String> {
    bare_ns(text)
        .into_iter()
        .map(|at| {
            let end = text[at..]
                .char_indices()
                .nth(40)
                .map_or(text.len(), |(i, _)| at + i);
            format!("{what}: {:?}", &text[at..end])
        })
        .collect()
}

/// The text a person reads of each history of `dir` (its reports, or why
/// it cannot be read), with the number of reports that found a violation.
fn explanations(dir: &str, stream: bool) -> (Vec<(String, String)>, usize) {
    let mut texts = Vec::new();
    let mut failing = 0;
    for path in fixtures(dir) {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let json = std::fs::read_to_string(&path).expect("readable");
        let (text, machine, passed) = if stream {
            match percsim_checker::stream::parse(&json) {
                Ok(h) => {
                    let r = percsim_checker::stream::check(&h);
                    (
                        r.render_text(),
                        serde_json::to_string(&r).unwrap(),
                        r.passed(),
                    )
                }
                Err(e) => (e.to_string(), String::new(), true),
            }
        } else {
            match percsim_checker::parse(&json) {
                Ok(h) => {
                    let r = percsim_checker::check(&h);
                    (
                        r.render_text(),
                        serde_json::to_string(&r).unwrap(),
                        r.passed(),
                    )
                }
                Err(e) => (e.to_string(), String::new(), true),
            }
        };
        failing += usize::from(!passed);
        texts.push((format!("{name} (text)"), text));
        texts.push((format!("{name} (JSON report)"), machine));
    }
    (texts, failing)
}

#[test]
fn no_explanation_mixes_ns_into_its_times() {
    let mut found = Vec::new();
    let mut failing = 0;
    for (dir, stream) in [("tests/fixtures", false), ("tests/fixtures/stream", true)] {
        let (texts, n) = explanations(dir, stream);
        failing += n;
        for (what, text) in texts {
            found.extend(mixed(&what, &text));
        }
    }
    // The scan reads real explanations: the failing fixtures explain
    // real-time orders, receipts, commit requests and coordinator records.
    assert!(failing >= 30, "only {failing} failing fixtures");
    assert!(found.is_empty(), "times in ns:\n{}", found.join("\n"));
}

#[test]
fn the_scan_finds_a_mixed_explanation() {
    let text = "T1 completed at 0.000200 ms, before T2 was invoked at 355 ns";
    assert_eq!(mixed("x", text), ["x: \"355 ns\""]);
    assert!(mixed("x", "invoke_ns 5, t_ns: 7, at 0.000355 ms").is_empty());
}
