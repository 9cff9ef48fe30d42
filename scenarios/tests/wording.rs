//! The project speaks of the software only. Code, comments, tests and docs
//! name a measurement by its commit and date, and a change by what it does,
//! never by the work that produced it: no numbered or relative work
//! sessions, issue numbers, lines of work named by their branch, helpers
//! named as workers, or agents. This test reads every `.rs`, `.md`,
//! `.json`, `.toml`, `.sh`, `.yml` and `.yaml` file of the repository
//! (outside `target/` and `.git/`) and names each offending `file:line`.
//!
//! The patterns are narrow on purpose: the software's own vocabulary stays
//! free to use, such as a liveness or consumer *session* ("its session 2
//! held"), a *branch* of an `if` ("a branch per digit"), git's branch in the
//! build script, and helper functions, tasks and nodes ("helper_nodes").

use std::path::{Path, PathBuf};

/// One kind of wording about the work rather than the software.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pattern {
    /// A work session named by its number ("in session 8").
    NumberedSession,
    /// A work session named relative to the text ("before this session").
    RelativeSession,
    /// An issue named by its number ("issue 10 asks").
    IssueNumber,
    /// An issue named as the reason for a change ("the issue's table").
    TheIssue,
    /// A line of work named by its branch or by the main line it was merged
    /// into ("branch s9-gr", "merged main").
    WorkBranch,
    /// A helper named as a worker ("helper PQ", "the reading helper's").
    Helper,
    /// An agent.
    Agent,
}

impl Pattern {
    /// Every pattern, in the order they are reported.
    const ALL: [Pattern; 7] = [
        Pattern::NumberedSession,
        Pattern::RelativeSession,
        Pattern::IssueNumber,
        Pattern::TheIssue,
        Pattern::WorkBranch,
        Pattern::Helper,
        Pattern::Agent,
    ];

    /// The pattern's name, as reports print it.
    fn name(self) -> &'static str {
        match self {
            Pattern::NumberedSession => "numbered-session",
            Pattern::RelativeSession => "relative-session",
            Pattern::IssueNumber => "issue-number",
            Pattern::TheIssue => "the-issue",
            Pattern::WorkBranch => "work-branch",
            Pattern::Helper => "helper",
            Pattern::Agent => "agent",
        }
    }

    /// What the pattern finds, and what to write instead.
    fn describe(self) -> &'static str {
        match self {
            Pattern::NumberedSession | Pattern::RelativeSession => {
                "a work session: name the commit and the date instead"
            }
            Pattern::IssueNumber | Pattern::TheIssue => {
                "an issue: say what the change does, or name its commit"
            }
            Pattern::WorkBranch => "a branch of work: name the commit instead",
            Pattern::Helper | Pattern::Agent => {
                "who did the work: say what was done, and at which commit"
            }
        }
    }

    /// A sentence the pattern must catch.
    fn example(self) -> &'static str {
        match self {
            Pattern::NumberedSession => "Measured in session 8 on a quiet machine.",
            Pattern::RelativeSession => "94% before this session's tests.",
            Pattern::IssueNumber => "the bound of 10 (issue 10's target)",
            Pattern::TheIssue => "The issue's table now reads 299.",
            Pattern::WorkBranch => "at 82de6c6 (branch s9-gr) against merged main",
            Pattern::Helper => "on helper PQ's branch, before the merge",
            Pattern::Agent => "Written by an agent for the tests.",
        }
    }

    /// Sentences of the software's own vocabulary the pattern must let be.
    fn software_wording(self) -> &'static [&'static str] {
        match self {
            Pattern::NumberedSession => &[
                "p1's new session reads: it takes back what its session 2 held",
                "the next session id survives a crash",
            ],
            Pattern::RelativeSession => &[
                "an earlier session of the reader's own name",
                "the session expires when heartbeats stop",
            ],
            Pattern::IssueNumber => &[
                "Redelivered messages bypass the filter (Pulsar #19814)",
                "a client issues 3 requests at once",
            ],
            Pattern::TheIssue => &["the client issues a request", "the issued timestamp"],
            Pattern::WorkBranch => &[
                "numbers eight digits at a time without a branch per digit",
                "HEAD names the branch; the branch's ref names the commit",
                "fn main() { run(s3) }",
            ],
            Pattern::Helper => &[
                "The world's own helper tasks run on a node of their own",
                "fn helper_nodes(&self) -> Vec<String>",
                "Trace helpers: a table of the coordinator",
            ],
            Pattern::Agent => &["the `user_agent` field", "reagents"],
        }
    }

    /// Whether `line` holds wording of this kind.
    fn matches(self, line: &str) -> bool {
        let lower = line.to_lowercase();
        match self {
            Pattern::NumberedSession => numbered_session(&lower),
            Pattern::RelativeSession => RELATIVE_SESSIONS.iter().any(|p| has_phrase(&lower, p)),
            Pattern::IssueNumber => issue_number(&lower),
            Pattern::TheIssue => has_phrase(&lower, "the issue"),
            Pattern::WorkBranch => work_branch(&lower),
            Pattern::Helper => helper(line, &lower),
            Pattern::Agent => has_phrase(&lower, "agent") || has_phrase(&lower, "agents"),
        }
    }
}

/// Phrases that name a work session relative to the text.
const RELATIVE_SESSIONS: &[&str] = &[
    "this session's",
    "in this session",
    "before this session",
    "after this session",
    "since this session",
    "until this session",
    "during this session",
    "the previous session",
    "a previous session",
    "previous sessions",
    "work session",
    "work sessions",
];

/// Whether `c` continues a word (identifiers included).
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The byte offsets where `needle` starts in `hay` with no word character
/// just before it.
fn word_starts<'a>(hay: &'a str, needle: &'a str) -> impl Iterator<Item = usize> + 'a {
    hay.match_indices(needle)
        .map(|(i, _)| i)
        .filter(move |&i| !hay[..i].chars().next_back().is_some_and(is_word))
}

/// Whether `hay` holds `phrase` as whole words.
fn has_phrase(hay: &str, phrase: &str) -> bool {
    word_starts(hay, phrase).any(|i| !hay[i + phrase.len()..].chars().next().is_some_and(is_word))
}

/// The word before byte offset `i` of `hay`.
fn word_before(hay: &str, i: usize) -> &str {
    let head = hay[..i].trim_end();
    let start = head
        .char_indices()
        .rev()
        .find(|&(_, c)| c.is_whitespace() || c == '(')
        .map_or(0, |(j, c)| j + c.len_utf8());
    &head[start..]
}

/// "session 8", "sessions 6 and 7", "session-4", unless a possessive names
/// whose session it is ("its session 2": a consumer's).
fn numbered_session(lower: &str) -> bool {
    word_starts(lower, "session").any(|i| {
        let rest = &lower[i + "session".len()..];
        let rest = rest.strip_prefix('s').unwrap_or(rest);
        let rest = rest.strip_prefix([' ', '-']).unwrap_or(rest);
        let before = word_before(lower, i);
        rest.starts_with(|c: char| c.is_ascii_digit())
            && !(before == "its" || before == "their" || before.ends_with("'s"))
    })
}

/// "issue 10", "issue #12", "issues #14", "issue10-5"; not the verb ("a
/// client issues 3 requests").
fn issue_number(lower: &str) -> bool {
    let digit = |s: &str| s.starts_with(|c: char| c.is_ascii_digit());
    word_starts(lower, "issue").any(|i| {
        let rest = &lower[i + "issue".len()..];
        if let Some(plural) = rest.strip_prefix("s ") {
            return plural.strip_prefix('#').is_some_and(digit);
        }
        let rest = rest.strip_prefix(' ').unwrap_or(rest);
        digit(rest.strip_prefix('#').unwrap_or(rest))
    })
}

/// "s9-rd" (a line of work's branch name), "branch s7-...", "merged main",
/// "main at 2a89ee1".
fn work_branch(lower: &str) -> bool {
    let branch_name = word_starts(lower, "s").any(|i| {
        let rest = &lower[i + 1..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        digits > 0
            && rest[digits..].starts_with('-')
            && rest[digits + 1..].starts_with(|c: char| c.is_ascii_lowercase())
    });
    let main_at = word_starts(lower, "main at ").any(|i| {
        let rest = &lower[i + "main at ".len()..];
        rest.chars().take_while(char::is_ascii_hexdigit).count() >= 7
    });
    branch_name || main_at || has_phrase(lower, "merged main")
}

/// "helper PQ" (a helper's name in capitals), "the reading helper's",
/// "the helpers' changes", "run by its helper".
fn helper(line: &str, lower: &str) -> bool {
    let named = word_starts(line, "helper ").any(|i| {
        let name: String = line[i + "helper ".len()..]
            .chars()
            .take_while(|c| is_word(*c))
            .collect();
        name.len() >= 2 && name.chars().all(|c| c.is_ascii_uppercase())
    });
    named
        || has_phrase(lower, "helper's")
        || lower.contains("helpers'")
        || has_phrase(lower, "its helper")
}

/// One offending line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hit {
    /// The file, relative to the repository's root, with `/` separators.
    file: String,
    /// The line (1-based).
    line: usize,
    /// What it says.
    pattern: Pattern,
}

/// The patterns `text`'s lines match, as hits in `file`.
fn hits_in(file: &str, text: &str) -> Vec<Hit> {
    let mut hits = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for pattern in Pattern::ALL {
            if pattern.matches(line) {
                hits.push(Hit {
                    file: file.to_string(),
                    line: n + 1,
                    pattern,
                });
            }
        }
    }
    hits
}

/// The kinds of file the project writes its words in.
const EXTENSIONS: &[&str] = &["rs", "md", "json", "toml", "sh", "yml", "yaml"];

/// Directories never read: build output and git's own store.
const SKIPPED_DIRS: &[&str] = &["target", ".git"];

/// This file: it holds the patterns' example sentences.
const THIS_FILE: &str = "scenarios/tests/wording.rs";

/// Every file under `dir` with one of [`EXTENSIONS`], outside
/// [`SKIPPED_DIRS`], sorted.
fn project_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .map(|e| {
            e.map(|e| e.path())
                .map_err(|e| format!("{}: {e}", dir.display()))
        })
        .collect::<Result<_, _>>()?;
    paths.sort();
    for p in paths {
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        if p.is_dir() {
            if !SKIPPED_DIRS.contains(&name.as_ref()) {
                project_files(&p, out)?;
            }
        } else if p
            .extension()
            .is_some_and(|x| EXTENSIONS.iter().any(|e| x == *e))
        {
            out.push(p);
        }
    }
    Ok(())
}

/// Every hit in the project's files under `root`, except in this file.
fn scan(root: &Path) -> Result<Vec<Hit>, String> {
    let mut files = Vec::new();
    project_files(root, &mut files)?;
    let mut hits = Vec::new();
    for path in files {
        let rel = path.strip_prefix(root).unwrap_or(&path);
        let rel = rel.to_string_lossy().replace('\\', "/");
        if rel == THIS_FILE {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| format!("{rel}: {e}"))?;
        hits.extend(hits_in(&rel, &String::from_utf8_lossy(&bytes)));
    }
    Ok(hits)
}

/// Files whose offending lines are being rewritten elsewhere, and are
/// allowed until then. The list can only shrink: a file listed here with no
/// hit left fails the test, so that it leaves the list.
const ALLOWED: &[(&str, &str)] = &[];

/// What is wrong, as `FILE:LINE: PATTERN: DESCRIPTION` lines: every hit
/// outside `allowed`, and every allowed file with no hit left.
fn problems(hits: &[Hit], allowed: &[(&str, &str)]) -> Vec<String> {
    let mut out: Vec<String> = hits
        .iter()
        .filter(|h| !allowed.iter().any(|(f, _)| *f == h.file))
        .map(|h| {
            format!(
                "{}:{}: {}: {}",
                h.file,
                h.line,
                h.pattern.name(),
                h.pattern.describe()
            )
        })
        .collect();
    for (file, _) in allowed {
        if !hits.iter().any(|h| h.file == *file) {
            out.push(format!(
                "{file}: allowed, but no offending wording is left: remove it from ALLOWED"
            ));
        }
    }
    out
}

/// The workspace's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

#[test]
fn the_project_speaks_of_the_software_only() {
    let hits = scan(&root()).expect("the repository's files can be read");
    let found = problems(&hits, ALLOWED);
    assert!(
        found.is_empty(),
        "wording about the work rather than the software:\n{}",
        found.join("\n")
    );
}

#[test]
fn each_pattern_catches_its_example_and_lets_the_software_speak() {
    for pattern in Pattern::ALL {
        assert!(
            pattern.matches(pattern.example()),
            "{} misses {:?}",
            pattern.name(),
            pattern.example()
        );
        for ok in pattern.software_wording() {
            let caught: Vec<_> = Pattern::ALL.iter().filter(|p| p.matches(ok)).collect();
            assert!(
                caught.is_empty(),
                "{ok:?} is the software's wording, caught by {caught:?}"
            );
        }
    }
}

#[test]
fn more_forms_of_each_kind_are_caught() {
    let caught = |s: &str| Pattern::ALL.iter().filter(|p| p.matches(s)).count();
    for s in [
        "Every mutant has been measured once (sessions 6 and 7).",
        "the session-4 merge",
        "Session 9: `percsim check` on the 1M file",
        "Merge branch 'issue10-5'",
        "on helper PQ's branch",
        "Branch s9-gr alone, one run by its helper: 51.3 s",
        "Where the time went before (main at 2a89ee1, perf)",
        "The reading helper's probes aligned to cache lines",
        "issues #14 and #15",
        "before issue 15's time-out change",
        "aborts (issue 16).",
    ] {
        assert!(caught(s) > 0, "{s:?} is not caught");
    }
}

#[test]
fn a_hit_names_its_file_and_line_and_a_stale_allowance_fails() {
    let hits = hits_in("docs/x.md", "fine\nmeasured in session 8\n");
    assert_eq!(
        hits,
        vec![Hit {
            file: "docs/x.md".into(),
            line: 2,
            pattern: Pattern::NumberedSession
        }]
    );
    let found = problems(&hits, &[]);
    assert_eq!(found.len(), 1);
    assert!(
        found[0].starts_with("docs/x.md:2: numbered-session: "),
        "{}",
        found[0]
    );
    assert!(problems(&hits, &[("docs/x.md", "planted")]).is_empty());
    let stale = problems(&hits, &[("docs/x.md", "planted"), ("docs/y.md", "planted")]);
    assert_eq!(stale.len(), 1);
    assert!(
        stale[0].starts_with("docs/y.md: allowed, but"),
        "{}",
        stale[0]
    );
}

#[test]
fn the_scan_reads_the_project_files_and_skips_build_output_and_git() {
    let dir = std::env::temp_dir().join(format!("percsim-wording-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let offending = "measured in session 8\n";
    for f in [
        "docs/a.md",
        "deploy/b.yml",
        "c.json",
        "target/d.md",
        ".git/e.md",
        "sub/target/f.rs",
        "g.txt",
    ] {
        let path = dir.join(f);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a directory");
        std::fs::write(&path, offending).expect("a file");
    }
    let hits = scan(&dir).expect("the planted tree can be read");
    let _ = std::fs::remove_dir_all(&dir);
    let files: Vec<&str> = hits.iter().map(|h| h.file.as_str()).collect();
    assert_eq!(files, ["c.json", "deploy/b.yml", "docs/a.md"]);
}
