//! Scenarios as regression tests: run one (or a seed sweep) from any
//! `#[test]` and get the verdict and the history, or turn a directory of
//! scenario files into one test per file (with `libtest-mimic`, in a test
//! target that sets `harness = false`).

use crate::system::SystemDef;
use crate::{Scenario, ScenarioError};
use percsim_sim::RunOutput;
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
    /// The scenario is written to `replay_file` for that.
    pub fn explain(&self, replay_file: &Path) -> String {
        let _ = std::fs::write(
            replay_file,
            serde_json::to_string_pretty(&self.scenario).unwrap_or_default(),
        );
        format!(
            "seed {} failed:\n  {}\nreplay: cargo run --release --bin percsim -- run {} --seed {}",
            self.scenario.seed,
            self.problems.join("\n  "),
            replay_file.display(),
            self.scenario.seed,
        )
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

/// Run `scenario` with every seed of `seeds`; the first failing run, if any.
pub fn sweep(
    scenario: &Scenario,
    seeds: std::ops::Range<u64>,
) -> Result<Option<Judged>, ScenarioError> {
    for seed in seeds {
        let mut s = scenario.clone();
        s.seed = seed;
        let judged = run(&s)?;
        if !judged.passed() {
            return Ok(Some(judged));
        }
    }
    Ok(None)
}

/// A scenario of `system` running `script` (its script workload, typed by
/// the system) on a cluster just large enough for it, with `seed`, built by
/// the system ([`SystemDef::script_scenario`]); an error when the script
/// does not fit it or the system takes no scripts.
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

/// Run one scenario file as a test; the failure names the file, the seed
/// and the replay command.
pub fn run_file(path: &Path) -> Result<(), String> {
    let scenario = Scenario::load(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let judged = run(&scenario).map_err(|e| format!("{}: {e}", path.display()))?;
    if judged.passed() {
        return Ok(());
    }
    Err(format!(
        "{}: seed {} failed:\n  {}\nreplay: cargo run --release --bin percsim -- run {} --seed {}",
        path.display(),
        scenario.seed,
        judged.problems.join("\n  "),
        path.display(),
        scenario.seed
    ))
}
