//! One generic [`SystemSpec`] for every system whose part of a scenario is
//! a typed section and a typed workload: parsing, writing and naming done
//! once. A system implements [`TypedSystem`] beside its
//! [`SystemDef`]; its part of a scenario is then
//! [`Typed<Self>`](Typed).

use crate::error::ScenarioError;
use crate::scenario::Scenario;
use crate::spec::{SystemSpec, to_json};
use crate::system::SystemDef;
use percsim_sim::{ConfigError, RunOutput, SystemHistory, WorldConfig};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt::Debug;

/// A system whose part of a scenario is two typed values: its section of a
/// scenario file and its workload. Implementing it (beside [`SystemDef`])
/// gives the system its [`SystemSpec`], [`Typed`], with parsing ("the
/// defaults, or the typed section"), writing and the workload's name
/// written once for every system.
pub trait TypedSystem: SystemDef + Sized + Sync + 'static {
    /// Its section of a scenario file (its defaults when the file has none).
    type Section: Serialize + DeserializeOwned + Default + Clone + Debug + Send + Sync + 'static;
    /// Its workload, a scenario file's `workload` object.
    type Workload: Serialize + DeserializeOwned + Clone + Debug + Send + Sync + 'static;
    /// Its name, as [`SystemDef::name`] gives it.
    const NAME: &'static str;
    /// The name of `workload`.
    fn workload_name(workload: &Self::Workload) -> &'static str;
    /// Check `spec`, and the world's settings it runs in, for impossible
    /// values; the error names the field.
    fn validate(spec: &Typed<Self>, world: &WorldConfig) -> Result<(), ScenarioError>;
    /// Run `spec` in a world set up by `world` with `seed`.
    fn run(
        spec: &Typed<Self>,
        world: &WorldConfig,
        seed: u64,
        description: Value,
    ) -> Result<RunOutput, ConfigError>;
    /// Whether `spec`'s violations are its author's expectations (a
    /// script). False by default.
    fn expectations(_spec: &Typed<Self>) -> bool {
        false
    }
    /// The faults `spec` configured that never happened in the run that
    /// wrote `history` ([`SystemSpec::not_fired`]). None by default.
    fn not_fired(_spec: &Typed<Self>, _history: &SystemHistory) -> Vec<String> {
        Vec::new()
    }
}

/// The part of a scenario of a [`TypedSystem`]: its cluster (its section
/// of the file) and its workload.
pub struct Typed<S: TypedSystem> {
    /// The cluster (a scenario file's section named after the system).
    pub cluster: S::Section,
    /// The workload.
    pub workload: S::Workload,
}

impl<S: TypedSystem> Typed<S> {
    /// Parse a scenario file's section of the system (`None`: its
    /// defaults) and its `workload` object; errors name the field by its
    /// path in the file. What [`SystemDef::parse`] of a typed system does.
    pub fn parse(
        def: &S,
        section: Option<Value>,
        workload: Value,
    ) -> Result<Box<dyn SystemSpec>, ScenarioError> {
        let cluster = match section {
            None => S::Section::default(),
            Some(v) => crate::scenario::typed(S::NAME, v)?,
        };
        let workload = crate::scenario::typed_workload(def, workload)?;
        Ok(Box::new(Typed::<S> { cluster, workload }))
    }

    /// The scenario of this part in a world set up by `world`, with `seed`.
    pub fn scenario(self, seed: u64, world: WorldConfig) -> Scenario {
        Scenario::of(seed, world, Box::new(self))
    }

    /// The part of `s` if it runs the system.
    pub fn of(s: &Scenario) -> Option<&Self> {
        s.spec.as_any().downcast_ref()
    }

    /// The part of `s`, mutable, if it runs the system.
    pub fn of_mut(s: &mut Scenario) -> Option<&mut Self> {
        s.spec.as_any_mut().downcast_mut()
    }
}

impl<S: TypedSystem> Clone for Typed<S> {
    fn clone(&self) -> Self {
        Typed {
            cluster: self.cluster.clone(),
            workload: self.workload.clone(),
        }
    }
}

impl<S: TypedSystem> Debug for Typed<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(S::NAME)
            .field("cluster", &self.cluster)
            .field("workload", &self.workload)
            .finish()
    }
}

impl<S: TypedSystem> SystemSpec for Typed<S> {
    fn system(&self) -> &'static str {
        S::NAME
    }

    fn section(&self) -> Result<Value, ScenarioError> {
        to_json(S::NAME, &self.cluster)
    }

    fn workload(&self) -> Result<Value, ScenarioError> {
        to_json("workload", &self.workload)
    }

    fn workload_name(&self) -> &'static str {
        S::workload_name(&self.workload)
    }

    fn validate(&self, world: &WorldConfig) -> Result<(), ScenarioError> {
        S::validate(self, world)
    }

    fn run(
        &self,
        world: &WorldConfig,
        seed: u64,
        description: Value,
    ) -> Result<RunOutput, ConfigError> {
        S::run(self, world, seed, description)
    }

    fn expectations(&self) -> bool {
        S::expectations(self)
    }

    fn not_fired(&self, history: &SystemHistory) -> Vec<String> {
        S::not_fired(self, history)
    }
}
