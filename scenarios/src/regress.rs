//! Scenarios as regression tests: run one (or a seed sweep) from any
//! `#[test]` and get the verdict and the history, or turn a directory of
//! scenario files into one test per file (with `libtest-mimic`, in a test
//! target that sets `harness = false`).
//!
//! A sweep honours two environment variables: `PERCSIM_SEED=N` runs seed
//! `N` alone, `PERCSIM_SEEDS=K` runs `K` seeds from the range's start.
//! Every failure names its seed and the `percsim` command that replays it
//! from any directory.

use crate::system::SystemDef;
use crate::{Scenario, ScenarioError};
use percsim_sim::RunOutput;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// One run of a scenario, judged.
#[derive(Debug, Clone)]
pub struct Judged {
    /// The scenario as run (with its seed).
    pub scenario: Scenario,
    /// Why the run failed: failed script expectations and other workload
    /// invariants, a liveness failure, the checker's report. Empty: passed.
    pub problems: Vec<String>,
    /// The history and the run's counters.
    pub output: RunOutput,
}

impl Judged {
    /// Whether the run passed.
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }

    /// The problems, the seed and how to replay the run from a shell.
    /// The scenario is written to `replay_file` for that (an error writing
    /// it is said in the text).
    pub fn explain(&self, replay_file: &Path) -> String {
        let written = std::fs::write(
            replay_file,
            serde_json::to_string_pretty(&self.scenario).unwrap_or_default(),
        );
        let mut text = format!(
            "seed {} failed:\n  {}\n{}",
            self.scenario.seed,
            self.problems.join("\n  "),
            replay_lines(replay_file, self.scenario.seed),
        );
        if let Err(e) = written {
            text += &format!("\n(cannot write {}: {e})", replay_file.display());
        }
        text
    }
}

/// How to replay seed `seed` of the scenario file `file` from any
/// directory: the installed `percsim` binary (`cargo install --path
/// scenarios` in percsim's checkout), or the sweep's test again.
pub fn replay_lines(file: &Path, seed: u64) -> String {
    let file = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    format!(
        "replay: percsim run {} --seed {seed}\n   or: PERCSIM_SEED={seed} cargo test (the same test)",
        file.display()
    )
}

/// The environment variable that runs one seed of every sweep.
pub const SEED_VAR: &str = "PERCSIM_SEED";

/// The environment variable that sets how many seeds a sweep runs.
pub const SEEDS_VAR: &str = "PERCSIM_SEEDS";

/// The seeds a sweep over `seeds` runs, as the environment says:
/// `PERCSIM_SEED=N` alone, `PERCSIM_SEEDS=K` seeds from the range's start,
/// else `seeds`. A value that is not a number (or `PERCSIM_SEEDS=0`) is
/// an error naming the variable.
pub fn seeds_from_env(seeds: Range<u64>) -> Result<Range<u64>, ScenarioError> {
    seeds_from(seeds, |k| std::env::var(k).ok())
}

/// [`seeds_from_env`] with the environment read through `var`.
fn seeds_from(
    seeds: Range<u64>,
    var: impl Fn(&str) -> Option<String>,
) -> Result<Range<u64>, ScenarioError> {
    let number = |k: &str| -> Result<Option<u64>, ScenarioError> {
        let Some(v) = var(k) else { return Ok(None) };
        v.trim().parse().map(Some).map_err(|_| {
            ScenarioError::Invalid(format!("{k}={v:?} is not a number of seeds or a seed"))
        })
    };
    if let Some(seed) = number(SEED_VAR)? {
        return Ok(seed..seed.saturating_add(1));
    }
    match number(SEEDS_VAR)? {
        Some(0) => Err(ScenarioError::Invalid(format!(
            "{SEEDS_VAR}=0: a sweep needs at least one seed"
        ))),
        Some(k) => Ok(seeds.start..seeds.start.saturating_add(k)),
        None => Ok(seeds),
    }
}

/// Run `scenario` once and judge it.
pub fn run(scenario: &Scenario) -> Result<Judged, ScenarioError> {
    let output = scenario.run()?;
    // A script's violations are its own expectations (as `percsim run` says).
    let label = match scenario.spec.expectations() {
        true => "expectation failed",
        false => "workload invariant",
    };
    let mut problems: Vec<String> = output
        .summary
        .workload_violations
        .iter()
        .map(|v| format!("{label}: {v}"))
        .collect();
    if let Some(l) = &output.summary.liveness_failure {
        problems.push(format!("liveness: {l}"));
    }
    // A configured crash or pause that never fired tested nothing.
    for entry in scenario.spec.not_fired(&output.history) {
        problems.push(format!("not fired: {entry}"));
    }
    if let Some(history) = output.transactions() {
        let report = percsim_checker::check(history);
        if !report.passed() {
            problems.push(report.render_text());
        }
    }
    if let Some(stream) = output.stream() {
        let report = percsim_checker::stream::check(stream);
        if !report.passed() {
            problems.push(report.render_text());
        }
    }
    Ok(Judged {
        scenario: scenario.clone(),
        problems,
        output,
    })
}

/// Run `scenario` with every seed of `seeds` (or the seeds `PERCSIM_SEED`
/// or `PERCSIM_SEEDS` choose: [`seeds_from_env`]); the first failing run,
/// if any.
pub fn sweep(scenario: &Scenario, seeds: Range<u64>) -> Result<Option<Judged>, ScenarioError> {
    for seed in seeds_from_env(seeds)? {
        let mut s = scenario.clone();
        s.seed = seed;
        let judged = run(&s)?;
        if !judged.passed() {
            return Ok(Some(judged));
        }
    }
    Ok(None)
}

/// Sweep `scenario` over `seeds` (as [`sweep`]) and panic on the first
/// failure, naming the seed, the problems and the replay command; the
/// failing scenario is written to the system's temporary directory as
/// `percsim-<test>-seed-<N>.json`. For a `#[test]`.
pub fn assert_sweep(scenario: &Scenario, seeds: Range<u64>, test: &str) {
    match sweep(scenario, seeds) {
        Err(e) => panic!("{test}: {e}"),
        Ok(None) => {}
        Ok(Some(judged)) => {
            let file = std::env::temp_dir()
                .join(format!("percsim-{test}-seed-{}.json", judged.scenario.seed));
            panic!("{test}: {}", judged.explain(&file));
        }
    }
}

/// A scenario of `system` running `script` (its script workload, typed by
/// the system) on a cluster just large enough for it, with `seed`, built by
/// the system ([`SystemDef::script_scenario`]); an error when the script
/// does not fit it or the system has no `script_scenario` hook.
pub fn script_scenario<T: serde::Serialize>(
    system: &dyn SystemDef,
    script: &T,
    seed: u64,
) -> Result<Scenario, ScenarioError> {
    system.script_scenario(crate::spec::to_json("workload", script)?, seed)
}

/// The scenario files (`*.json`) of `dir`, sorted by name.
pub fn scenario_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// One test per scenario file of `dir`, named `PREFIX/FILE`: it loads the
/// file, runs it with its own seed and fails with the file, the seed, the
/// problems and the replay command. Run them with
/// `libtest_mimic::run(&libtest_mimic::Arguments::from_args(), trials).exit()`.
pub fn file_trials(dir: &Path, prefix: &str) -> Result<Vec<libtest_mimic::Trial>, String> {
    Ok(scenario_files(dir)?
        .into_iter()
        .map(|path| {
            let stem = path.file_stem().unwrap_or_default().to_string_lossy();
            let name = format!("{prefix}/{stem}");
            libtest_mimic::Trial::test(name, move || run_file(&path).map_err(Into::into))
        })
        .collect())
}

/// The `main` of a test target with `harness = false`: one test per
/// scenario file of `dir` ([`file_trials`]), named `PREFIX/FILE`, run with
/// the command line's test arguments; exits with the tests' status. A
/// directory that cannot be read fails the target, naming it.
pub fn file_tests_main(dir: &Path, prefix: &str) -> ! {
    let trials = file_trials(dir, prefix).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    libtest_mimic::run(&libtest_mimic::Arguments::from_args(), trials).exit()
}

/// Run one scenario file as a test; the failure names the file, the seed
/// and the replay command.
pub fn run_file(path: &Path) -> Result<(), String> {
    let scenario = Scenario::load(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let judged = run(&scenario).map_err(|e| format!("{}: {e}", path.display()))?;
    if judged.passed() {
        return Ok(());
    }
    Err(format!(
        "{}: seed {} failed:\n  {}\n{}",
        path.display(),
        scenario.seed,
        judged.problems.join("\n  "),
        replay_lines(path, scenario.seed),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_seed_variables_choose_a_sweeps_seeds_and_bad_values_are_named() {
        assert_eq!(seeds_from(3..9, env(&[])).unwrap(), 3..9);
        assert_eq!(seeds_from(3..9, env(&[(SEED_VAR, "42")])).unwrap(), 42..43);
        assert_eq!(
            seeds_from(3..9, env(&[(SEEDS_VAR, "100")])).unwrap(),
            3..103
        );
        let both = [(SEED_VAR, "7"), (SEEDS_VAR, "100")];
        assert_eq!(seeds_from(0..1, env(&both)).unwrap(), 7..8);
        let e = seeds_from(0..1, env(&[(SEEDS_VAR, "many")])).unwrap_err();
        assert!(e.to_string().contains("PERCSIM_SEEDS=\"many\""), "{e}");
        let e = seeds_from(0..1, env(&[(SEEDS_VAR, "0")])).unwrap_err();
        assert!(e.to_string().contains("at least one seed"), "{e}");
        let e = seeds_from(0..1, env(&[(SEED_VAR, "-1")])).unwrap_err();
        assert!(e.to_string().contains("PERCSIM_SEED=\"-1\""), "{e}");
    }

    #[test]
    fn a_replay_line_is_an_installed_percsim_command_with_an_absolute_file() {
        let text = replay_lines(Path::new("tests/scenarios/a.json"), 5);
        assert!(text.starts_with("replay: percsim run /"), "{text}");
        assert!(text.contains("tests/scenarios/a.json --seed 5"), "{text}");
        assert!(!text.contains("cargo run"), "{text}");
        assert!(text.contains("PERCSIM_SEED=5 cargo test"), "{text}");
    }
}
