//! The core knows no system: outside the registry and the systems' own
//! folders, no code names a system. Comments may (they explain); code may
//! not, except in the places listed below, each with its reason. A listed
//! place that no longer names a system must leave the list.

use std::path::{Path, PathBuf};

/// The registered systems' names, as identifiers and strings spell them.
fn names() -> Vec<&'static str> {
    percsim_scenarios::systems::names()
}

/// Where systems live: each registered system's own folders in the
/// protocol and sim crates, and the scenarios crate's systems folder.
fn system_folders() -> Vec<String> {
    let mut folders = vec!["scenarios/src/systems/".to_string()];
    for n in names() {
        folders.push(format!("protocol/src/{n}/"));
        folders.push(format!("sim/src/{n}/"));
    }
    folders
}

/// Files outside the systems' folders that still name a system, and why.
const EXCEPTIONS: &[(&str, &str)] = &[
    (
        "protocol/src/lib.rs",
        "the protocol crate's registry: one module per system",
    ),
    (
        "sim/src/lib.rs",
        "the sim crate's registry: one module per system and its public exports",
    ),
    (
        "scenarios/src/shrink.rs",
        "its unit tests (only) shrink a real system's script (Pulsar's) and check that a scenario with no script (Percolator's default) offers no step edits",
    ),
    (
        "scenarios/src/summary.rs",
        "its unit tests (only) check that a campaign of one real system's stream-only workload (Pulsar's) does not list the processor's named points as never reached",
    ),
    (
        "scenarios/src/lib.rs",
        "re-exports Percolator's workloads at `percsim_scenarios::workloads`, the path users' tests import them from",
    ),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The lines of `text`'s code (comments dropped) that name a system.
fn naming_lines(text: &str) -> Vec<String> {
    let names = names();
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .filter(|code| {
            let lower = code.to_lowercase();
            names.iter().any(|n| lower.contains(n))
        })
        .map(|code| code.trim().to_string())
        .collect()
}

/// Every file of the four crates' `src/` outside `folders` whose code
/// names a system, with those of its lines that `keep` accepts.
fn lines_outside(folders: &[String], keep: impl Fn(&str) -> bool) -> Vec<(String, Vec<String>)> {
    let root = root();
    let mut files = Vec::new();
    for krate in ["protocol", "sim", "checker", "scenarios"] {
        rust_files(&root.join(krate).join("src"), &mut files);
    }
    files
        .into_iter()
        .filter_map(|f| {
            let rel = f
                .strip_prefix(&root)
                .expect("under root")
                .display()
                .to_string();
            if folders.iter().any(|d| rel.starts_with(d)) {
                return None;
            }
            let text = std::fs::read_to_string(&f).expect("read");
            let lines: Vec<String> = naming_lines(&text)
                .into_iter()
                .filter(|l| keep(l))
                .collect();
            (!lines.is_empty()).then_some((rel, lines))
        })
        .collect()
}

/// Every file outside the systems' folders whose code names a system.
fn offenders() -> Vec<(String, Vec<String>)> {
    lines_outside(&system_folders(), |_| true)
}

#[test]
fn no_code_outside_the_registry_and_the_systems_names_a_system() {
    let found = offenders();
    let unlisted: Vec<String> = found
        .iter()
        .filter(|(f, _)| !EXCEPTIONS.iter().any(|(e, _)| e == f))
        .map(|(f, lines)| format!("{f}:\n    {}", lines.join("\n    ")))
        .collect();
    assert!(
        unlisted.is_empty(),
        "code outside the systems' folders names a system (move it into the system, or list it with its reason):\n{}",
        unlisted.join("\n")
    );
    let stale: Vec<&str> = EXCEPTIONS
        .iter()
        .map(|(e, _)| *e)
        .filter(|e| !found.iter().any(|(f, _)| f == e))
        .collect();
    assert!(
        stale.is_empty(),
        "listed as naming a system but no longer does: {stale:?}"
    );
}

/// Omid's folders, and the registry lines that name it: one module line
/// per crate, the sim crate's entry in its doc comment aside, and the
/// built-in list's entry.
const OMID_FOLDERS: &[&str] = &[
    "protocol/src/omid/",
    "sim/src/omid/",
    "scenarios/src/systems/omid/",
];

/// The code lines outside [`OMID_FOLDERS`] that name Omid, by file.
fn omid_lines() -> Vec<(String, Vec<String>)> {
    let folders: Vec<String> = OMID_FOLDERS.iter().map(|f| f.to_string()).collect();
    lines_outside(&folders, |l| l.to_lowercase().contains("omid"))
}

/// Omid is one folder per crate plus its registry lines: outside its
/// folders, only the three registries name it: a module line in each, and
/// the built-in list's entry.
#[test]
fn outside_its_folders_only_the_registry_lines_name_omid() {
    let found = omid_lines();
    let files: Vec<&str> = found.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        files,
        [
            "protocol/src/lib.rs",
            "sim/src/lib.rs",
            "scenarios/src/systems/mod.rs"
        ],
        "{found:?}"
    );
    let counts: Vec<usize> = found.iter().map(|(_, lines)| lines.len()).collect();
    assert_eq!(counts, [1, 1, 2], "{found:?}");
}

#[test]
fn the_omid_count_sees_a_line_outside_its_folders() {
    assert_eq!(
        naming_lines(
            "use percsim_sim::omid::run;
// omid explained
"
        ),
        ["use percsim_sim::omid::run;"]
    );
}

/// The test toy (`scenarios/tests/toy/`, outside the scanned `src/`
/// folders: it is no system of the crates) reaches the testbed through the
/// generic interface only: its code names no built-in system.
#[test]
fn the_test_toy_names_no_built_in_system() {
    let root = root();
    let mut files = Vec::new();
    rust_files(&root.join("scenarios/tests/toy"), &mut files);
    assert!(!files.is_empty(), "the toy's folder has its code");
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read");
        let lines = naming_lines(&text);
        assert!(lines.is_empty(), "{}: {lines:?}", f.display());
    }
}

#[test]
fn the_scan_sees_code_and_skips_comments() {
    let text =
        "// Percolator explained\nlet x = 1; // pulsar too\nuse crate::systems::percolator;\n";
    assert_eq!(naming_lines(text), vec!["use crate::systems::percolator;"]);
    assert!(naming_lines("/// Pulsar docs\nfn f() {}\n").is_empty());
}
