//! Scenario files (`percsim-scenario/2`): the complete description of a
//! run. A file names its system (the default system when it names none),
//! the world's settings (`world`: phases, faults, clocks, RPC timeout), the
//! system's own section (named after the system: `"percolator": {...}`)
//! and the workload. Files of the first format (`percsim-scenario/1`, with
//! one `cluster` object) keep loading: the world's settings in `cluster` go
//! to `world`, the rest to the system's section.

pub use crate::error::ScenarioError;
pub use crate::scenario_read::typed_workload;
use crate::spec::SystemSpec;
use percsim_sim::{RunOutput, WorldConfig};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The format tag of scenario files.
pub const FORMAT: &str = "percsim-scenario/2";

/// The format tag of the first scenario files (one `cluster` object),
/// still read.
pub const FORMAT_V1: &str = "percsim-scenario/1";

/// A run: the world's settings, a system's cluster and workload, a seed.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Always [`FORMAT`] once read.
    pub format: String,
    /// The seed of the run.
    pub seed: u64,
    /// What the scenario shows, for people reading it.
    pub description: Option<String>,
    /// The world's settings: phases, faults, clocks, RPC timeout.
    pub world: WorldConfig,
    /// The system's cluster and workload.
    pub spec: Box<dyn SystemSpec>,
}

/// The message of a panic payload.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string())
}

impl Scenario {
    /// A scenario of `spec` in a world set up by `world`, with `seed`.
    pub fn of(seed: u64, world: WorldConfig, spec: Box<dyn SystemSpec>) -> Self {
        Scenario {
            format: FORMAT.to_string(),
            seed,
            description: None,
            world,
            spec,
        }
    }

    /// The name of the system it runs.
    pub fn system(&self) -> &'static str {
        self.spec.system()
    }

    /// The name of its workload.
    pub fn workload_name(&self) -> &'static str {
        self.spec.workload_name()
    }

    /// Parse and validate a scenario from JSON text.
    pub fn parse(text: &str) -> Result<Self, ScenarioError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| ScenarioError::Parse(e.to_string()))?;
        let s = Scenario::from_value(value)?;
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

    /// Its JSON form, in [`FORMAT`]; an error naming the part that cannot
    /// be written as JSON.
    pub fn to_value(&self) -> Result<Value, ScenarioError> {
        let mut map = Map::new();
        map.insert("format".into(), Value::from(FORMAT));
        map.insert("seed".into(), Value::from(self.seed));
        map.insert("system".into(), Value::from(self.system()));
        if let Some(d) = &self.description {
            map.insert("description".into(), Value::from(d.as_str()));
        }
        map.insert("world".into(), crate::spec::to_json("world", &self.world)?);
        map.insert(self.system().into(), self.spec.section()?);
        map.insert("workload".into(), self.spec.workload()?);
        Ok(Value::Object(map))
    }

    /// Check for impossible values.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.spec.validate(&self.world)
    }

    /// Run the scenario on a fresh OS thread (each seed gets its own
    /// thread, so nothing leaks from one run into the next).
    pub fn run(&self) -> Result<RunOutput, ScenarioError> {
        self.validate()?;
        let me = self.clone();
        let system = self.system();
        let description = self.to_value()?;
        run_on_thread(self.seed, system, move || {
            me.spec.run(&me.world, me.seed, description)
        })
    }

    /// Run the scenario's system and workload with its seed in `world`
    /// (its own world, or one that differs only in `world.explore`) on the
    /// calling thread, for a caller that runs many short scenarios one
    /// after another on its own threads (`percsim explore`): no thread is
    /// started per run, and the history's `scenario` is null (the caller
    /// describes the run itself). What a run leaves on its thread: madsim
    /// restores its thread-local context as its runtime ends, even when
    /// a run panics; the standard library's hash keys do not go back to
    /// what a fresh thread's first run gets (madsim seeds them only
    /// there), which changes only the iteration order of `HashMap`s and
    /// `HashSet`s: the simulator iterates none, and madsim iterates one
    /// only to tell each of its simulators (network, file system) of a
    /// node, in an order nothing sees. A run here records what it records
    /// on a fresh thread (`scenarios/tests/explore.rs` checks it).
    pub fn run_here(&self, world: &WorldConfig) -> Result<RunOutput, ScenarioError> {
        self.spec.validate(world)?;
        self.run_here_validated(world)
    }

    /// [`Scenario::run_here`] without checking `world` against the
    /// system's settings again: for a caller that checked them once for
    /// every run it makes (`percsim explore` checks its base world with the
    /// exploration's schedule before the first run; its runs differ only
    /// in the schedule's forced choices, each checked by the caller).
    pub fn run_here_validated(&self, world: &WorldConfig) -> Result<RunOutput, ScenarioError> {
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.spec.run(world, self.seed, Value::Null)
        }));
        run_ended(self.system(), run)
    }
}

impl Serialize for Scenario {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value()
            .map_err(serde::ser::Error::custom)?
            .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Scenario {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Scenario::from_value(v).map_err(serde::de::Error::custom)
    }
}

/// `value` as a `T`, an error naming the path inside `field`. An error
/// that names its own path from `field` on (a script's
/// `workload.steps[3] (do "commit"): ...`) is kept as it is.
pub fn typed<T: serde::de::DeserializeOwned>(
    field: &str,
    value: Value,
) -> Result<T, ScenarioError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let own_path = inner
            .strip_prefix(field)
            .is_some_and(|rest| rest.starts_with('.'));
        if own_path {
            ScenarioError::Parse(inner)
        } else if path.is_empty() || path == "." {
            ScenarioError::Parse(format!("{field}: {inner}"))
        } else {
            ScenarioError::Parse(format!("{field}.{path}: {inner}"))
        }
    })
}

/// Run a simulation on a fresh OS thread named after `seed` (so nothing
/// leaks from one run into the next); a panic in it (a tripped invariant)
/// is [`ScenarioError::Crashed`] with the panic's message, or
/// [`ScenarioError::Stuck`] when the watchdog ended the run.
pub fn run_on_thread(
    seed: u64,
    system: &'static str,
    run: impl FnOnce() -> Result<RunOutput, percsim_sim::ConfigError> + Send + 'static,
) -> Result<RunOutput, ScenarioError> {
    let joined = std::thread::Builder::new()
        .name(format!("seed-{seed}"))
        .spawn(run)
        .map_err(|e| ScenarioError::Crashed(format!("cannot start a simulation thread: {e}")))?
        .join();
    run_ended(system, joined)
}

/// How a run of `system` ended: its output, or a panic (a tripped
/// invariant: [`ScenarioError::Crashed`]; the watchdog:
/// [`ScenarioError::Stuck`]) or a configuration error.
fn run_ended(
    system: &'static str,
    ended: std::thread::Result<Result<RunOutput, percsim_sim::ConfigError>>,
) -> Result<RunOutput, ScenarioError> {
    ended
        .map_err(|panic| {
            let message = panic_message(panic.as_ref());
            if percsim_sim::is_stuck(&message) {
                ScenarioError::Stuck(message)
            } else {
                ScenarioError::Crashed(message)
            }
        })?
        .map_err(|e| crate::error::config_error(system, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::systems;

    const BANK: &str = r#""workload":{"name":"bank"}"#;

    fn v2(rest: &str) -> String {
        format!(r#"{{"format":"{FORMAT}",{rest}}}"#)
    }

    #[test]
    fn the_system_defaults_to_the_registry_default_and_is_always_written() {
        let s = Scenario::parse(&v2(BANK)).unwrap();
        assert_eq!(s.system(), systems::default_system().name());
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains(r#""system":"#), "{text}");
        let again = Scenario::parse(&text).unwrap();
        assert_eq!(again.to_value().unwrap(), s.to_value().unwrap());
    }

    #[test]
    fn an_unknown_system_is_a_parse_error_naming_it() {
        let e = Scenario::parse(&v2(&format!(r#""system":"tidb",{BANK}"#))).unwrap_err();
        assert!(matches!(e, ScenarioError::Parse(_)), "{e}");
        assert!(
            e.to_string().contains("system: unknown system \"tidb\""),
            "{e}"
        );
    }

    #[test]
    fn a_first_format_cluster_splits_into_world_and_the_system_section() {
        let old =
            format!(r#"{{"format":"{FORMAT_V1}","cluster":{{"run_ms":1234,"clients":3}},{BANK}}}"#);
        let s = Scenario::parse(&old).unwrap();
        assert_eq!(s.world.run_ms, 1234);
        let section = s.spec.section().unwrap();
        assert_eq!(section["clients"], 3, "{section}");
        assert!(section.get("run_ms").is_none(), "{section}");
    }

    #[test]
    fn a_key_given_twice_names_the_section_it_is_also_in() {
        let old = format!(
            r#"{{"format":"{FORMAT_V1}","cluster":{{"run_ms":1}},"world":{{"run_ms":2}},{BANK}}}"#
        );
        let e = Scenario::parse(&old).unwrap_err();
        assert!(
            e.to_string().contains("also given in the world section"),
            "{e}"
        );
    }

    #[test]
    fn a_cluster_in_the_second_format_and_stray_keys_are_refused() {
        let e = Scenario::parse(&v2(&format!(r#""cluster":{{}},{BANK}"#))).unwrap_err();
        assert!(e.to_string().contains("cluster: "), "{e}");
        let e = Scenario::parse(&v2(&format!(r#""clusterr":{{}},{BANK}"#))).unwrap_err();
        assert!(e.to_string().contains("unknown field `clusterr`"), "{e}");
        let e = Scenario::parse(&v2(&format!(r#""world":{{"run_msx":1}},{BANK}"#))).unwrap_err();
        assert!(e.to_string().contains("world.run_msx"), "{e}");
    }

    #[test]
    fn planted_bugs_are_added_to_a_scenario_by_name_and_unknown_ones_refused() {
        for system in systems::all() {
            let Some((bug, _)) = system.ablations().first().copied() else {
                continue;
            };
            let s = system.generate(3, &crate::system::Mix::default());
            let ablated = crate::systems::with_ablations(&s, &[bug.to_string()]).unwrap();
            let list = ablated.to_value().unwrap()[system.name()]["ablations"].clone();
            assert!(
                list.as_array().is_some_and(|a| a.iter().any(|v| v == bug)),
                "{}: {list}",
                system.name()
            );
            assert_eq!(ablated.seed, 3);
            let again = crate::systems::with_ablations(&ablated, &[bug.to_string()]).unwrap();
            assert_eq!(
                again.to_value().unwrap(),
                ablated.to_value().unwrap(),
                "no duplicate"
            );
            let e = crate::systems::with_ablations(&s, &["no-such-bug".into()]).unwrap_err();
            let e = e.to_string();
            assert!(e.contains("no-such-bug") && e.contains(bug), "{e}");
        }
    }

    #[test]
    fn another_systems_section_is_refused_by_name() {
        let other = systems::all()
            .into_iter()
            .find(|s| s.name() != systems::default_system().name())
            .expect("two systems are registered");
        let e = Scenario::parse(&v2(&format!(r#""{}":{{}},{BANK}"#, other.name()))).unwrap_err();
        assert!(e.to_string().contains("a section of system"), "{e}");
    }
}
