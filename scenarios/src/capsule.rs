//! Failure capsules (`percsim-capsule/1`): what a campaign saves of a
//! failing seed so that anyone can replay it, judge it again or draw it.

use crate::judge::{Judged, Verdict};
use crate::scenario::Scenario;
use percsim_checker::History;
use percsim_checker::stream::StreamHistory;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The `format` of a failure capsule.
pub const FORMAT: &str = "percsim-capsule/1";

/// The commit percsim was built from (or "unknown").
pub const COMMIT: &str = match option_env!("PERCSIM_COMMIT") {
    Some(c) => c,
    None => "unknown",
};

/// A failing seed, saved: the scenario (and a smaller one that fails the
/// same way), the verdict and its explanation, the history the verdict was
/// judged on, the build, and the commands that replay it.
///
/// Only `format`, `verdict` and `scenario` are required when one is read:
/// a capsule written by hand (a scenario to replay) needs nothing else.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Capsule {
    /// Always [`FORMAT`].
    pub format: String,
    /// The version of percsim that saved it.
    #[serde(default)]
    pub percsim_version: String,
    /// The commit percsim was built from.
    #[serde(default)]
    pub percsim_commit: String,
    /// The system the seed ran (capsules saved before systems were named
    /// leave it out; the scenario says it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// How the run ended.
    pub verdict: Verdict,
    /// The rules it broke.
    #[serde(default)]
    pub violated_rules: Vec<String>,
    /// The explanation of the failure.
    #[serde(default)]
    pub explanation: Option<String>,
    /// The command that replays it.
    #[serde(default)]
    pub replay: String,
    /// The command that replays the shrunk scenario, if there is one.
    #[serde(default)]
    pub replay_shrunk: Option<String>,
    /// The failing scenario.
    pub scenario: Scenario,
    /// A smaller scenario that fails the same way, if shrinking found one.
    #[serde(default)]
    pub shrunk: Option<Scenario>,
    /// Runs spent shrinking.
    #[serde(default)]
    pub shrink_runs: Option<usize>,
    /// The run's `percsim-history/1` history (none if the run crashed, or
    /// if its system writes another format). Kept as JSON: an older
    /// capsule's history may break today's validation and is still read.
    /// (Capsules of stream runs saved by an older percsim hold the run's
    /// events here, in a history without transactions.)
    #[serde(default)]
    pub history: Option<serde_json::Value>,
    /// The `percsim-stream-history/1` history of a system that writes one
    /// (with the run's events), which its verdict was judged on.
    #[serde(default)]
    pub stream_history: Option<StreamHistory>,
}

impl Capsule {
    /// The capsule of `scenario`, judged as `judged`, with the smaller
    /// scenario shrinking found and the runs it took; `path` is where it
    /// will be saved (for the replay commands).
    pub fn new(
        path: &Path,
        scenario: &Scenario,
        judged: &Judged,
        shrunk: Option<(&Scenario, usize)>,
    ) -> Capsule {
        let history: Option<&History> = judged.transactions();
        Capsule {
            format: FORMAT.to_string(),
            percsim_version: env!("CARGO_PKG_VERSION").to_string(),
            percsim_commit: COMMIT.to_string(),
            system: Some(scenario.system().to_string()),
            verdict: judged.result.verdict,
            violated_rules: judged.result.violated_rules.clone(),
            explanation: judged.result.explanation.clone(),
            replay: format!("percsim replay {}", path.display()),
            replay_shrunk: shrunk.map(|_| format!("percsim replay {} --shrunk", path.display())),
            scenario: scenario.clone(),
            shrunk: shrunk.map(|(s, _)| s.clone()),
            shrink_runs: shrunk.map(|(_, n)| n),
            history: history.and_then(|h| serde_json::to_value(h).ok()),
            stream_history: judged.stream().cloned(),
        }
    }

    /// Read a capsule; the error names the file and the problem.
    pub fn load(path: &Path) -> Result<Capsule, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let de = &mut serde_json::Deserializer::from_str(&text);
        let c: Capsule = serde_path_to_error::deserialize(de)
            .map_err(|e| format!("{} is not a valid capsule: {e}", path.display()))?;
        if c.format != FORMAT {
            return Err(format!(
                "{}: format {:?} is not {FORMAT:?}",
                path.display(),
                c.format
            ));
        }
        Ok(c)
    }

    /// Write it to `path`.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, serde_json::to_string_pretty(self)?)
    }
}

/// Save a failing seed as a capsule in `out`, named after its system and
/// seed; returns its absolute path (which its replay commands name).
pub fn save(
    out: &Path,
    scenario: &Scenario,
    judged: &Judged,
    shrunk: Option<(&Scenario, usize)>,
) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(out)?;
    // Absolute, so that the replay command it prints works from anywhere.
    let path = std::path::absolute(out.join(file_name(scenario.system(), scenario.seed)))?;
    Capsule::new(&path, scenario, judged, shrunk).save(&path)?;
    Ok(path)
}

/// The file a failing seed's capsule is saved as: its system and seed.
pub fn file_name(system: &str, seed: u64) -> String {
    format!("{system}-seed-{seed}.json")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    fn scenario() -> Scenario {
        Scenario::parse(r#"{"format":"percsim-scenario/2","seed":3,"workload":{"name":"bank"}}"#)
            .expect("a scenario")
    }

    #[test]
    fn a_capsule_round_trips_and_a_minimal_one_reads() {
        let dir = std::env::temp_dir().join(format!("percsim-capsule-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let s = scenario();
        let judged = crate::judge::verdict_of(
            &s,
            Err(crate::ScenarioError::Crashed("boom".into())),
            std::time::Instant::now(),
        );
        let path = save(&dir, &s, &judged, Some((&s, 4))).unwrap();
        assert!(
            path.ends_with(file_name(s.system(), 3)) && path.is_absolute(),
            "{}",
            path.display()
        );
        let back = Capsule::load(&path).unwrap();
        assert_eq!(back.verdict, Verdict::Crash);
        assert_eq!(back.shrink_runs, Some(4));
        assert_eq!(back.scenario.to_value().unwrap(), s.to_value().unwrap());
        assert_eq!(back.system.as_deref(), Some(s.system()));
        let minimal = dir.join("minimal.json");
        let text = format!(
            r#"{{"format":"{FORMAT}","verdict":"pass","scenario":{}}}"#,
            serde_json::to_string(&s).unwrap()
        );
        std::fs::write(&minimal, text).unwrap();
        assert_eq!(Capsule::load(&minimal).unwrap().verdict, Verdict::Pass);
        std::fs::write(
            &minimal,
            r#"{"format":"percsim-capsule/1","verdict":"pass"}"#,
        )
        .unwrap();
        let e = Capsule::load(&minimal).unwrap_err();
        assert!(e.contains("scenario"), "{e}");
        std::fs::write(&minimal, r#"{"format":"percsim-capsule/7","verdict":"pass","scenario":{"format":"percsim-scenario/2","workload":{"name":"bank"}}}"#).unwrap();
        let e = Capsule::load(&minimal).unwrap_err();
        assert!(e.contains("percsim-capsule/7"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
