//! Every scenario the documentation shows is one percsim reads: each fenced
//! `json` block of `README.md` and `docs/*.md` that holds a scenario's
//! `"format"` tag (`"format": "percsim-scenario/…`) must be of the current
//! format and parse and validate with [`Scenario::parse`]. A block that is
//! meant to be partial, old or wrong says so on the line before its fence:
//!
//! ```text
//! <!-- not a scenario -->
//! ```
//!
//! and is skipped.

use percsim_scenarios::Scenario;
use percsim_scenarios::scenario::FORMAT;
use std::path::{Path, PathBuf};

/// The comment that exempts the next fenced block.
const NOT_A_SCENARIO: &str = "<!-- not a scenario -->";

/// One fenced `json` block of a Markdown file.
#[derive(Debug)]
struct Snippet {
    /// The line of its opening fence (1-based).
    line: usize,
    /// Its text, without the fence's indentation.
    text: String,
    /// Whether the line before its fence exempts it.
    exempt: bool,
}

/// Every fenced block of `markdown` whose info string is `json`.
fn json_blocks(markdown: &str) -> Vec<Snippet> {
    let mut out = Vec::new();
    let mut previous = "";
    let mut lines = markdown.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let fence_char = match trimmed.chars().next() {
            Some(c @ ('`' | '~')) => c,
            _ => {
                if !line.trim().is_empty() {
                    previous = line.trim();
                }
                continue;
            }
        };
        let fence_len = trimmed.chars().take_while(|c| *c == fence_char).count();
        if fence_len < 3 {
            previous = line.trim();
            continue;
        }
        let info = trimmed[fence_len..].split_whitespace().next().unwrap_or("");
        let exempt = previous == NOT_A_SCENARIO;
        let mut body = Vec::new();
        for (_, l) in lines.by_ref() {
            let t = l.trim_start();
            if t.len() >= fence_len
                && t.chars().take_while(|c| *c == fence_char).count() >= fence_len
                && t.trim_start_matches(fence_char).trim().is_empty()
            {
                break;
            }
            // Strip up to the fence's indentation (a block inside a list).
            let strip = l.len() - l.trim_start().len();
            body.push(&l[strip.min(indent)..]);
        }
        if info == "json" {
            out.push(Snippet {
                line: i + 1,
                text: body.join("\n"),
                exempt,
            });
        }
        previous = "";
    }
    out
}

/// Whether a block holds a scenario's format tag.
fn is_scenario(text: &str) -> bool {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    compact.contains(r#""format":"percsim-scenario/"#)
}

/// What is wrong with the scenarios of one Markdown file, as
/// `FILE:LINE: PROBLEM` lines; and how many scenarios it checked.
fn problems(file: &str, markdown: &str) -> (Vec<String>, usize) {
    let mut found = Vec::new();
    let mut checked = 0;
    for s in json_blocks(markdown) {
        if s.exempt || !is_scenario(&s.text) {
            continue;
        }
        checked += 1;
        let format = serde_json::from_str::<serde_json::Value>(&s.text)
            .ok()
            .and_then(|v| v.get("format").and_then(|f| f.as_str()).map(String::from));
        match Scenario::parse(&s.text) {
            Err(e) => found.push(format!("{file}:{}: {e}", s.line)),
            Ok(_) if format.as_deref() != Some(FORMAT) => found.push(format!(
                "{file}:{}: format {format:?}: the docs show {FORMAT:?}",
                s.line
            )),
            Ok(_) => {}
        }
    }
    (found, checked)
}

/// The workspace's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// `README.md` and every `docs/*.md`, by path.
fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("the docs directory")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

#[test]
fn every_scenario_in_the_readme_and_the_docs_parses() {
    let mut all = Vec::new();
    let mut checked = 0;
    for path in documents() {
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let name = path.strip_prefix(root()).unwrap_or(&path).display();
        let (found, n) = problems(&name.to_string(), &text);
        all.extend(found);
        checked += n;
    }
    assert!(
        all.is_empty(),
        "scenarios in the documentation that percsim refuses:\n{}",
        all.join("\n")
    );
    // The scenario format's page alone shows ten: finding far fewer means
    // the extraction broke, not that the docs are right.
    assert!(checked >= 8, "only {checked} scenarios found in the docs");
}

/// A page with a good scenario, an indented one inside a list, a broken
/// one, an exempt broken one, one of the first format, a partial `json`
/// block without a format tag and a scenario in a block of another
/// language.
const PLANTED: &str = r##"# A page

```json
{"format": "percsim-scenario/2", "world": {"run_ms": 1000}, "workload": {"name": "bank"}}
```

1. A step:

   ```json
   {
     "format":"percsim-scenario/2",
     "percolator": { "clients": 2 },
     "workload": { "name": "register" }
   }
   ```

A first-format cluster in a second-format file:

```json
{"format": "percsim-scenario/2", "cluster": {"clients": 2}, "workload": {"name": "bank"}}
```

<!-- not a scenario -->
```json
{"format": "percsim-scenario/2", "cluster": {"clients": 2}, "workload": {"name": "bank"}}
```

```json
{"format": "percsim-scenario/1", "cluster": {"clients": 2}, "workload": {"name": "bank"}}
```

```json
"point_faults": [ { "point": "tablet_after_apply", "node": 1, "nth": 40 } ]
```

```rust
let s = r#"{"format": "percsim-scenario/2", "cluster": {}}"#;
```
"##;

#[test]
fn a_broken_scenario_is_caught_and_an_exempt_one_skipped() {
    let blocks = json_blocks(PLANTED);
    assert_eq!(blocks.len(), 6, "{blocks:?}");
    assert!(blocks[1].text.starts_with('{'), "indentation is stripped");
    assert!(blocks[3].exempt && !blocks[2].exempt);
    let (found, checked) = problems("planted.md", PLANTED);
    assert_eq!(checked, 4, "the good, indented, broken and old ones");
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with("planted.md:19: ") && found[0].contains("cluster"),
        "{}",
        found[0]
    );
    assert!(
        found[1].starts_with("planted.md:28: ") && found[1].contains("percsim-scenario/1"),
        "{}",
        found[1]
    );
}
