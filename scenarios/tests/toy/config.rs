//! The toy's settings: its section of a scenario file (`"toy": {...}`, a
//! [`ToyConfig`]) and its workload (`{"name": "read-write", ...}`), with
//! serde defaults and checks whose errors name the field.

use super::protocol::{ToyAblation, ToyPoint};
use super::script::ToyScriptFile;
use percsim_sim::ConfigError;
use serde::{Deserialize, Serialize};

/// The most clients a toy runs.
pub const MAX_CLIENTS: usize = 100;

/// The longest the primary may take to make a write durable, in ms.
pub const MAX_PERSIST_MS: u64 = 10_000;

/// The toy's cluster: a scenario file's `toy` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToyConfig {
    /// Client nodes (`client-0`, ...), beside the one `primary`.
    pub clients: usize,
    /// Simulated ms the primary takes to make a write durable.
    pub persist_ms: u64,
    /// Crashes of the primary at its named points.
    pub crashes: Vec<CrashAt>,
    /// Planted bugs switched on, by name.
    pub ablations: Vec<ToyAblation>,
}

impl Default for ToyConfig {
    fn default() -> Self {
        ToyConfig {
            clients: 3,
            persist_ms: 5,
            crashes: Vec::new(),
            ablations: Vec::new(),
        }
    }
}

/// Kill the primary the `nth` time (from 1, over the whole run) it reaches
/// `point`, and restart it `restart_after_ms` later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashAt {
    /// The named point.
    pub point: ToyPoint,
    /// Which time the point is reached.
    pub nth: u64,
    /// When the primary comes back.
    #[serde(default = "default_restart_ms")]
    pub restart_after_ms: u64,
}

fn default_restart_ms() -> u64 {
    200
}

impl ToyConfig {
    /// Check for impossible values; the error names the field in the
    /// section (`clients`, `crashes[1].nth`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field: String, problem: String| Err(ConfigError { field, problem });
        if self.clients == 0 || self.clients > MAX_CLIENTS {
            return err(
                "clients".into(),
                format!("must be 1 to {MAX_CLIENTS}, found {}", self.clients),
            );
        }
        if self.persist_ms > MAX_PERSIST_MS {
            return err(
                "persist_ms".into(),
                format!(
                    "must be at most {MAX_PERSIST_MS}, found {}",
                    self.persist_ms
                ),
            );
        }
        for (i, c) in self.crashes.iter().enumerate() {
            if c.nth == 0 {
                return err(format!("crashes[{i}].nth"), "counts from 1, found 0".into());
            }
            if c.restart_after_ms > percsim_sim::world::MAX_PHASE_MS {
                return err(
                    format!("crashes[{i}].restart_after_ms"),
                    "more than one simulated hour".into(),
                );
            }
        }
        Ok(())
    }

    /// Whether planted bug `a` is on.
    pub fn ablated(&self, a: ToyAblation) -> bool {
        self.ablations.contains(&a)
    }
}

/// The toy's workloads, as a scenario file's `workload` object names them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ToyWorkload {
    /// Every client writes and reads the register.
    ReadWrite(ReadWrite),
    /// A script: the engine's steps with the toy's verbs (see
    /// [`super::script`]).
    Script(ToyScriptFile),
}

/// Every client, in a loop until the workload phase ends: with probability
/// `write_fraction` write a new value, else read; then wait `think_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReadWrite {
    /// The share of operations that write.
    pub write_fraction: f64,
    /// Simulated ms a client waits between two operations.
    pub think_ms: u64,
    /// The register's key (the history's row; messages' item).
    pub key: String,
}

impl Default for ReadWrite {
    fn default() -> Self {
        ReadWrite {
            write_fraction: 0.5,
            think_ms: 5,
            key: "x".into(),
        }
    }
}

impl ToyWorkload {
    /// Its name.
    pub fn name(&self) -> &'static str {
        match self {
            ToyWorkload::ReadWrite(_) => "read-write",
            ToyWorkload::Script(_) => "script",
        }
    }

    /// The read-write workload's settings; a script's clients use the
    /// defaults' key (`x`) and run only the script's operations.
    pub fn read_write(&self) -> ReadWrite {
        match self {
            ToyWorkload::ReadWrite(rw) => rw.clone(),
            ToyWorkload::Script(_) => ReadWrite::default(),
        }
    }

    /// The script, if the workload is one.
    pub fn script(&self) -> Option<&ToyScriptFile> {
        match self {
            ToyWorkload::Script(s) => Some(s),
            ToyWorkload::ReadWrite(_) => None,
        }
    }

    /// Check for impossible values; the error names the field
    /// (`workload.write_fraction`). A script is checked against its
    /// cluster by [`super::world::validate`].
    pub fn validate(&self) -> Result<(), String> {
        let ToyWorkload::ReadWrite(rw) = self else {
            return Ok(());
        };
        if !(0.0..=1.0).contains(&rw.write_fraction) {
            return Err(format!(
                "workload.write_fraction: must be between 0 and 1, found {}",
                rw.write_fraction
            ));
        }
        if rw.key.is_empty() {
            return Err("workload.key: must not be empty".into());
        }
        if rw.think_ms > percsim_sim::world::MAX_PHASE_MS {
            return Err("workload.think_ms: more than one simulated hour".into());
        }
        Ok(())
    }
}
