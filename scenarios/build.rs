//! Records the git commit percsim is built from, for failure capsules.
//!
//! Cargo re-runs this script when the commit moves. The files to watch are
//! asked of git itself: in a worktree `.git` is a file and HEAD lives under
//! the main repository's `.git/worktrees/`, and a path that does not exist
//! would make cargo re-run the script (and rebuild the crate) every time.
use std::process::Command;

/// `git` run in this crate's folder, its trimmed output if it succeeded.
fn git(args: &[&str]) -> Option<String> {
    Command::new("git")
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // HEAD names the branch; the branch's ref (loose, or packed) names the commit.
    for path in ["HEAD", "refs/heads", "packed-refs"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path])
            && std::path::Path::new(&p).exists()
        {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(c) = git(&["rev-parse", "--short=12", "HEAD"]) {
        println!("cargo:rustc-env=PERCSIM_COMMIT={c}");
    }
}
