//! One system's part of a scenario, as the core sees it.

use crate::error::ScenarioError;
use percsim_sim::{ConfigError, RunOutput, SystemHistory, WorldConfig};
use serde::Serialize;
use serde_json::Value;
use std::any::Any;
use std::fmt::Debug;

/// One system's part of a scenario: its cluster and workload, typed by the
/// system. The core sees it through this trait; the system's own tools
/// reach the typed value with [`SpecValue::as_any`].
pub trait SystemSpec: SpecValue + Send + Sync + Debug + 'static {
    /// The name of the system it belongs to (its [`crate::system::SystemDef`]
    /// in the registry).
    fn system(&self) -> &'static str;
    /// Its section of a scenario file, as JSON ([`to_json`]: an error
    /// naming the section when it cannot be written).
    fn section(&self) -> Result<Value, ScenarioError>;
    /// Its workload, as a scenario file's `workload` object.
    fn workload(&self) -> Result<Value, ScenarioError>;
    /// The workload's name.
    fn workload_name(&self) -> &'static str;
    /// Check it, and the world's settings it runs in, for impossible
    /// values; the error names the field.
    fn validate(&self, world: &WorldConfig) -> Result<(), ScenarioError>;
    /// Run it in a world set up by `world` with `seed` (on the calling
    /// thread); `description` is stored in the history.
    fn run(
        &self,
        world: &WorldConfig,
        seed: u64,
        description: serde_json::Value,
    ) -> Result<RunOutput, ConfigError>;
    /// Whether the workload's own violations are its author's expectations
    /// (a script) rather than invariants of the workload.
    fn expectations(&self) -> bool {
        false
    }
    /// The faults its cluster configured that never happened in the run
    /// that wrote `history` (a stop keyed to a transaction number or an
    /// occurrence the run never reached), each named by its path in the
    /// scenario file. None by default.
    fn not_fired(&self, _history: &SystemHistory) -> Vec<String> {
        Vec::new()
    }
}

/// What every [`SystemSpec`] has by being a cloneable value: a copy, and
/// the typed value for the system's own tools. Implemented for every
/// `SystemSpec` that is `Clone`, so a system writes none of it.
pub trait SpecValue {
    /// A copy.
    fn clone_box(&self) -> Box<dyn SystemSpec>;
    /// The typed value, for the system's own tools.
    fn as_any(&self) -> &dyn Any;
    /// The typed value, mutable.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: SystemSpec + Clone> SpecValue for T {
    fn clone_box(&self) -> Box<dyn SystemSpec> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl Clone for Box<dyn SystemSpec> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// `value` as JSON for the part of a scenario file named `field`; an error
/// naming the field when it cannot be written (a map whose keys are not
/// strings, a value whose serialiser fails), never a silent `null`.
pub fn to_json<T: Serialize + ?Sized>(field: &str, value: &T) -> Result<Value, ScenarioError> {
    serde_json::to_value(value)
        .map_err(|e| ScenarioError::Invalid(format!("{field}: cannot be written as JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_value_that_cannot_be_json_is_an_error_naming_the_field() {
        let mut bad = BTreeMap::new();
        bad.insert((1u8, 2u8), 3u8);
        let e = to_json("toy", &bad).unwrap_err().to_string();
        assert!(e.contains("toy: cannot be written as JSON"), "{e}");
        assert_eq!(to_json("toy", &[1, 2]).unwrap(), serde_json::json!([1, 2]));
    }
}
