//! Node names are typed (a kind with its role, and an index): code reads a
//! name back with `NodeName::parse` and a system's kinds, never by the
//! prefix of a string (`strip_prefix("client-")`, `starts_with("broker-")`),
//! which silently misreads a system that labels its nodes otherwise.

use std::path::{Path, PathBuf};

/// The workspace's crates, by folder.
const CRATES: [&str; 4] = ["protocol", "sim", "checker", "scenarios"];

/// The string functions that read a prefix or split a name at a dash.
const PREFIX_READS: [&str; 5] = [
    "strip_prefix(",
    "starts_with(",
    "trim_start_matches(",
    "split_once(",
    "rsplit_once(",
];

/// Every place in `src` that reads a node name by its prefix: one of
/// [`PREFIX_READS`] applied to a string literal of a node kind's label
/// (one of `labels`) and a dash (`"client-"`). Each as `line: text`.
fn prefix_reads(src: &str, labels: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (n, line) in src.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for call in PREFIX_READS {
            let mut rest = code;
            while let Some(at) = rest.find(call) {
                let arg = &rest[at + call.len()..];
                let literal = arg
                    .strip_prefix('"')
                    .and_then(|a| a.split_once('"'))
                    .map(|(text, _)| text);
                let label = literal.and_then(|t| t.strip_suffix('-'));
                if label.is_some_and(|l| labels.iter().any(|x| x == l)) {
                    out.push(format!("{}: {}", n + 1, line.trim()));
                }
                rest = arg;
            }
        }
    }
    out
}

/// The label of every kind of node of every registered system
/// (`client`, `tablet`, `broker`, `tso`, ...).
fn node_labels() -> Vec<String> {
    let mut labels: Vec<String> = percsim_scenarios::systems::all()
        .iter()
        .flat_map(|s| s.node_kinds().iter().map(|k| k.label.to_string()))
        .collect();
    labels.sort();
    labels.dedup();
    labels
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_code_reads_a_node_name_by_its_prefix() {
    let labels = node_labels();
    assert!(labels.len() >= 5, "{labels:?}");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in CRATES {
        rust_files(&root.join(krate).join("src"), &mut files);
        let tests = root.join(krate).join("tests");
        if tests.is_dir() {
            rust_files(&tests, &mut files);
        }
    }
    assert!(files.len() > 100, "{} files read", files.len());
    let mut found = Vec::new();
    // This file plants prefix reads to show the scan finds them.
    let this = Path::new(file!()).file_name().expect("this file's name");
    for file in files.iter().filter(|f| f.file_name() != Some(this)) {
        let src = std::fs::read_to_string(file).expect("a source file");
        for hit in prefix_reads(&src, &labels) {
            found.push(format!("{}:{hit}", file.display()));
        }
    }
    assert!(
        found.is_empty(),
        "node names read back by prefix (parse them with NodeName::parse and the system's kinds):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_finds_a_prefix_read_and_passes_other_prefixes() {
    let planted = r#"
fn client_of(node: &str) -> Option<u64> {
    node.strip_prefix("client-")?.parse().ok()
}
fn broker(node: &str) -> bool { node.starts_with("broker-") || node.starts_with("tso-") }
fn other(row: &str) -> bool { row.starts_with("doc/") || row.starts_with("events-partition-") }
// node.strip_prefix("tablet-") in a comment
"#;
    let found = prefix_reads(planted, &node_labels());
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].starts_with("3: "), "{found:?}");
    assert!(found[1].contains("broker-") && found[2].contains("tso-"));
}
