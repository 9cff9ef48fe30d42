//! Scenario files (`percsim-scenario/1`): the complete description of a run.

use crate::workloads::Built;
use crate::workloads::WorkloadSpec;
use percsim_sim::{PulsarConfig, RunOutput, SimConfig, SystemKind};
use serde::{Deserialize, Serialize};

/// The format tag of scenario files.
pub const FORMAT: &str = "percsim-scenario/1";

/// A run: cluster, workload, seed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Always [`FORMAT`].
    pub format: String,
    /// The seed of the run.
    #[serde(default)]
    pub seed: u64,
    /// The system under test (`"percolator"` when absent; an unknown name
    /// is refused).
    #[serde(default, skip_serializing_if = "is_percolator")]
    pub system: SystemKind,
    /// What the scenario shows, for people reading it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The cluster and its phases.
    #[serde(default)]
    pub cluster: SimConfig,
    /// The Pulsar cluster (brokers, partitions, ablations, crash points),
    /// for `"system": "pulsar"`; the world's settings stay in `cluster`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pulsar: Option<PulsarConfig>,
    /// The workload.
    pub workload: WorkloadSpec,
}

/// The message of a panic payload.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string())
}

/// Percolator is the default system: files that name no system run it, and
/// scenarios of it are written as before (without the field).
fn is_percolator(s: &SystemKind) -> bool {
    *s == SystemKind::Percolator
}

/// Why a scenario could not be read or run.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The JSON is malformed or does not fit the format.
    #[error("bad scenario: {0}")]
    Parse(String),
    /// A value is impossible.
    #[error("bad scenario: {0}")]
    Invalid(String),
    /// The simulation panicked (a bug in the simulator or a tripped
    /// assertion); the message is the panic's.
    #[error("the simulation crashed: {0}")]
    Crashed(String),
    /// The watchdog ended a run that stopped making progress.
    #[error("the run was stuck: {0}")]
    Stuck(String),
}

impl Scenario {
    /// A scenario for `workload` on `cluster` with `seed`.
    pub fn new(seed: u64, cluster: SimConfig, workload: WorkloadSpec) -> Self {
        Scenario {
            format: FORMAT.to_string(),
            seed,
            system: SystemKind::Percolator,
            description: None,
            cluster,
            pulsar: None,
            workload,
        }
    }

    /// Parse and validate a scenario from JSON text.
    pub fn parse(text: &str) -> Result<Self, ScenarioError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let s: Scenario = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path.is_empty() || path == "." {
                ScenarioError::Parse(inner.to_string())
            } else {
                ScenarioError::Parse(format!("{path}: {inner}"))
            }
        })?;
        if s.format != FORMAT {
            return Err(ScenarioError::Invalid(format!(
                "format: expected {FORMAT:?}, found {:?}",
                s.format
            )));
        }
        s.validate()?;
        Ok(s)
    }

    /// Read a scenario file.
    pub fn load(path: &std::path::Path) -> Result<Self, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Scenario::parse(&text)
    }

    /// Check for impossible values.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.workload.system() != self.system {
            return Err(ScenarioError::Invalid(format!(
                "workload {:?} runs on system {:?}, not {:?}",
                self.workload.name(),
                self.workload.system().name(),
                self.system.name()
            )));
        }
        if self.pulsar.is_some() && self.system != SystemKind::Pulsar {
            return Err(ScenarioError::Invalid(
                "pulsar: only for \"system\": \"pulsar\"".into(),
            ));
        }
        if self.system == SystemKind::Pulsar {
            let pulsar = self.pulsar.clone().unwrap_or_default();
            percsim_sim::validate_pulsar(&self.cluster, &pulsar).map_err(|e| {
                ScenarioError::Invalid(if e.field == "pulsar" {
                    e.problem // names its own field
                } else {
                    format!("cluster.{}: {}", e.field, e.problem)
                })
            })?;
        } else {
            self.cluster.validate().map_err(|e| {
                ScenarioError::Invalid(format!("cluster.{}: {}", e.field, e.problem))
            })?;
        }
        self.workload
            .validate(&self.cluster)
            .map_err(ScenarioError::Invalid)
    }

    /// Run the scenario on a fresh OS thread (each seed gets its own
    /// thread, so nothing leaks from one run into the next).
    pub fn run(&self) -> Result<RunOutput, ScenarioError> {
        self.validate()?;
        let me = self.clone();
        run_on_thread(self.seed, move || {
            let description = serde_json::to_value(&me).unwrap_or_default();
            match me.workload.build() {
                Built::Percolator(w) => percsim_sim::run(&me.cluster, me.seed, w, description),
                Built::Pulsar(w) => {
                    let pulsar = me.pulsar.clone().unwrap_or_default();
                    percsim_sim::run_pulsar(&me.cluster, &pulsar, me.seed, w, description)
                }
            }
        })
    }
}

/// Run a simulation on a fresh OS thread named after `seed` (so nothing
/// leaks from one run into the next); a panic in it (a tripped invariant)
/// is [`ScenarioError::Crashed`] with the panic's message, or
/// [`ScenarioError::Stuck`] when the watchdog ended the run.
pub fn run_on_thread(
    seed: u64,
    run: impl FnOnce() -> Result<RunOutput, percsim_sim::ConfigError> + Send + 'static,
) -> Result<RunOutput, ScenarioError> {
    std::thread::Builder::new()
        .name(format!("seed-{seed}"))
        .spawn(run)
        .map_err(|e| ScenarioError::Crashed(format!("cannot start a simulation thread: {e}")))?
        .join()
        .map_err(|panic| {
            let message = panic_message(panic.as_ref());
            if percsim_sim::is_stuck(&message) {
                ScenarioError::Stuck(message)
            } else {
                ScenarioError::Crashed(message)
            }
        })?
        .map_err(|e| ScenarioError::Invalid(format!("cluster.{}: {}", e.field, e.problem)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BANK: &str = r#""format":"percsim-scenario/1","workload":{"name":"bank"}"#;

    #[test]
    fn the_system_defaults_to_percolator_and_is_written_only_when_named() {
        let old = Scenario::parse(&format!("{{{BANK}}}")).unwrap();
        let named = Scenario::parse(&format!(r#"{{"system":"percolator",{BANK}}}"#)).unwrap();
        assert_eq!(old.system, SystemKind::Percolator);
        assert_eq!(named.system, SystemKind::Percolator);
        let text = serde_json::to_string(&old).unwrap();
        assert!(!text.contains("system"), "{text}");
    }

    #[test]
    fn an_unknown_system_is_a_parse_error_naming_it() {
        let e = Scenario::parse(&format!(r#"{{"system":"tidb",{BANK}}}"#)).unwrap_err();
        assert!(matches!(e, ScenarioError::Parse(_)), "{e}");
        assert!(
            e.to_string().contains("system: unknown system \"tidb\""),
            "{e}"
        );
    }
}
