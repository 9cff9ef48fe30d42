//! The messages `docs/using-percsim.md` quotes are the ones percsim prints:
//! the first test's failure with its seed and replay commands (section 5),
//! and the refusals of a script's mistakes, each naming its step (section 8).
//! The page's first test is rebuilt here; a quote the code no longer
//! prints, or a quote the page gains without a case here, fails.

use percsim_scenarios::regress;
use percsim_scenarios::systems::percolator::script_scenario;
use percsim_scenarios::workloads::{ExpectOutcome, ScriptBuilder};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The page, as text.
fn page() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/using-percsim.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The section of `page` whose heading starts with `## {number}.`, up to
/// the next heading of its level.
fn section(page: &str, number: u32) -> String {
    let heading = format!("## {number}.");
    let start = page
        .find(&heading)
        .unwrap_or_else(|| panic!("no section {heading}"));
    let rest = &page[start + heading.len()..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    rest[..end].to_string()
}

/// The page's first test (section 4), its last expectation `last`.
fn first_test(last: ExpectOutcome) -> percsim_scenarios::Scenario {
    let script = ScriptBuilder::new()
        .initial("x", "v", "0")
        .begin(0, "T1")
        .begin(1, "T2")
        .get("T1", "x", "v", Some("0"))
        .get("T2", "x", "v", Some("0"))
        .set("T1", "x", "v", "1")
        .set("T2", "x", "v", "2")
        .commit("T1", ExpectOutcome::Committed)
        .commit("T2", last)
        .build();
    script_scenario(script, 0)
}

/// The text of the fenced block (without language) that follows `after`
/// in `text`.
fn block_after(text: &str, after: &str) -> String {
    let at = text.find(after).unwrap_or_else(|| panic!("no {after:?}"));
    let rest = &text[at..];
    let open = rest.find("\n```\n").expect("a fenced block") + 5;
    let close = rest[open..].find("\n```").expect("its end");
    rest[open..open + close].to_string()
}

#[test]
fn the_first_test_passes_then_fails_as_the_page_shows() {
    regress::assert_sweep(&first_test(ExpectOutcome::Aborted), 0..5, "second_writer");
    let failed = std::panic::catch_unwind(|| {
        regress::assert_sweep(&first_test(ExpectOutcome::Committed), 0..5, "second_writer")
    })
    .expect_err("the changed expectation fails");
    let message = failed
        .downcast_ref::<String>()
        .expect("a formatted panic message");
    // The page shows the system's temporary directory as /tmp.
    let tmp = std::env::temp_dir();
    let message = message.replace(&format!("{}/", tmp.display()), "/tmp/");
    let quoted = block_after(&section(&page(), 5), "The test fails");
    assert_eq!(message, quoted, "section 5 quotes another failure");
}

/// `percsim run my.json` in a folder of its own: its standard error.
fn run_error(dir: &Path, scenario: &Value) -> String {
    std::fs::write(dir.join("my.json"), scenario.to_string()).expect("written");
    let out = Command::new(env!("CARGO_BIN_EXE_percsim"))
        .args(["run", "my.json"])
        .current_dir(dir)
        .output()
        .expect("percsim runs");
    assert_eq!(out.status.code(), Some(2), "a refused file exits 2");
    String::from_utf8_lossy(&out.stderr).trim().to_string()
}

/// Whether `actual` is what `quote` shows: `quote`'s pieces between
/// `...` appear in `actual` in order; a quote starting with `...` leaves
/// out `actual`'s start up to the step's place, and one not ending with
/// `...` ends where `actual` does.
fn shows(quote: &str, actual: &str) -> bool {
    let pieces: Vec<&str> = quote.split("...").collect();
    let mut rest = actual;
    for (i, piece) in pieces.iter().enumerate() {
        let piece = piece.trim_start();
        let at = match i {
            0 if !piece.is_empty() => rest.starts_with(piece).then_some(0),
            _ => rest.find(piece),
        };
        let Some(at) = at else { return false };
        rest = &rest[at + piece.len()..];
    }
    quote.ends_with("...") || rest.is_empty()
}

/// The inline code spans of `text` (single or double backticks) that
/// quote a refusal of a step: `workload.` in them, starting with `error:`
/// or `...`.
fn quoted_refusals(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        let ticks = rest[open..].chars().take_while(|c| *c == '`').count();
        let fence = "`".repeat(ticks);
        let body = &rest[open + ticks..];
        let Some(close) = body.find(&fence) else {
            break;
        };
        let span = body[..close].trim();
        if span.contains("workload.") && (span.starts_with("error:") || span.starts_with("...")) {
            out.push(span.to_string());
        }
        rest = &body[close + ticks..];
    }
    out
}

/// The page's first test as a scenario file with `change` made to it.
fn changed(change: &dyn Fn(&mut Value)) -> Value {
    let mut v = serde_json::to_value(first_test(ExpectOutcome::Aborted)).expect("JSON");
    change(&mut v["workload"]);
    v
}

#[test]
fn the_quoted_step_refusals_are_percsims() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("percsim-using-page-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a folder");
    let cases: Vec<Value> = vec![
        changed(&|w| w["steps"][7]["do"] = json!("comit")),
        changed(&|w| w["steps"][7]["expext"] = json!("aborted")),
        changed(&|w| w["steps"][7]["txn"] = json!("T9")),
        changed(&|w| {
            w["at_end"] = json!([{
                "do": "wait",
                "until": {"lock_gone": {"row": "x", "col": "v"}},
                "timeout_ms": 1000
            }])
        }),
    ];
    let quotes = quoted_refusals(&section(&page(), 8));
    assert_eq!(quotes.len(), cases.len(), "one case per quote: {quotes:#?}");
    for (quote, case) in quotes.iter().zip(&cases) {
        let actual = run_error(&dir, case);
        assert!(
            shows(quote, &actual),
            "the page quotes\n  {quote}\npercsim says\n  {actual}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_quote_unlike_the_message_is_caught() {
    let actual = "error: my.json: bad scenario: workload.steps[7] (do \"commit\"): txn: \
                  transaction \"T9\" is used before it is begun";
    assert!(shows(
        "... workload.steps[7] (do \"commit\"): txn: transaction \"T9\" is used before it is begun",
        actual
    ));
    assert!(shows(
        "error: my.json: bad scenario: workload.steps[7] ...",
        actual
    ));
    for wrong in [
        "... workload.steps[7] (do \"commit\"): txn: transaction \"T9\" is not begun before this step",
        "... workload.steps[3] (do \"commit\"): txn: transaction \"T9\" is used before it is begun",
        "error: other.json: bad scenario: workload.steps[7] ...",
        "... workload.steps[7] (do \"commit\"): txn:",
    ] {
        assert!(!shows(wrong, actual), "{wrong}");
    }
    let spans = quoted_refusals("a `... workload.x` b ``... `d` workload.y`` `workload.z` `f`");
    assert_eq!(spans, ["... workload.x", "... `d` workload.y"]);
}
