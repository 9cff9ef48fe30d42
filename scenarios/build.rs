//! Records the git commit percsim is built from, for failure capsules.
//!
//! Cargo re-runs this script when the commit moves. The files to watch are
//! asked of git itself: in a worktree `.git` is a file and HEAD lives under
//! the main repository's `.git/worktrees/`, and a path that does not exist
//! would make cargo re-run the script (and rebuild the crate) every time.
//! `PERCSIM_BUILD_COMMIT`, when set, names the commit instead and nothing
//! is watched.
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
    // A fixed commit name, for working copies that commit often: with it
    // set, no git file is watched, so a commit does not rebuild the crate.
    println!("cargo:rerun-if-env-changed=PERCSIM_BUILD_COMMIT");
    if let Ok(c) = std::env::var("PERCSIM_BUILD_COMMIT") {
        println!("cargo:rustc-env=PERCSIM_COMMIT={c}");
        return;
    }
    // HEAD names the branch; the branch's own ref (loose, or packed) names
    // the commit. Only that branch's loose ref is watched when it exists:
    // other worktrees share `refs/heads`, and their commits must not rebuild
    // this crate. A packed branch is watched through its folder, where the
    // next commit writes it loose.
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    let loose = branch
        .as_deref()
        .and_then(|b| git(&["rev-parse", "--git-path", b]))
        .filter(|p| std::path::Path::new(p).exists());
    let mut watched: Vec<String> = ["HEAD", "packed-refs"]
        .iter()
        .filter_map(|p| git(&["rev-parse", "--git-path", p]))
        .collect();
    watched.push(match loose {
        Some(p) => p,
        None => git(&["rev-parse", "--git-path", "refs/heads"]).unwrap_or_default(),
    });
    for p in watched {
        if !p.is_empty() && std::path::Path::new(&p).exists() {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(c) = git(&["rev-parse", "--short=12", "HEAD"]) {
        println!("cargo:rustc-env=PERCSIM_COMMIT={c}");
    }
}
