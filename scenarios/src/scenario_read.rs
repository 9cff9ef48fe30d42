//! Reading a scenario from its JSON form (see [`crate::scenario`]): the
//! part of scenario files that looks the system up in the registry, so the
//! scenario type itself knows no registry.

use crate::faultmix;
use crate::scenario::{FORMAT, FORMAT_V1, Scenario, ScenarioError, typed};
use crate::systems;
use percsim_sim::WorldConfig;
use serde_json::{Map, Value};

/// The world's settings as a first-format file's `cluster` held them.
const WORLD_KEYS: &[&str] = &["run_ms", "quiesce_ms", "rpc_timeout_ms", "clocks", "faults"];

impl Scenario {
    /// A scenario from its JSON form (either format), not yet validated.
    pub fn from_value(value: Value) -> Result<Self, ScenarioError> {
        let Value::Object(mut map) = value else {
            return Err(ScenarioError::Parse(
                "a scenario is a JSON object".to_string(),
            ));
        };
        let format = take_str(&mut map, "format")?
            .ok_or_else(|| ScenarioError::Parse("missing field `format`".into()))?;
        if format != FORMAT && format != FORMAT_V1 {
            return Err(ScenarioError::Invalid(format!(
                "format: expected {FORMAT:?} (or {FORMAT_V1:?}), found {format:?}"
            )));
        }
        let def = match take_str(&mut map, "system")? {
            Some(name) => {
                systems::find(&name).map_err(|e| ScenarioError::Parse(format!("system: {e}")))?
            }
            None => systems::default_system(),
        };
        let seed = match map.remove("seed") {
            None => 0,
            Some(v) => typed::<u64>("seed", v)?,
        };
        let description = take_str(&mut map, "description")?;
        let mut section = map.remove(def.name());
        let mut world = map.remove("world");
        if let Some(cluster) = map.remove("cluster") {
            if format != FORMAT_V1 {
                return Err(ScenarioError::Parse(format!(
                    "cluster: {FORMAT} has a `world` section and a `{}` section instead",
                    def.name()
                )));
            }
            split_cluster(cluster, &mut world, &mut section, def)?;
        }
        let workload = map
            .remove("workload")
            .ok_or_else(|| ScenarioError::Parse("missing field `workload`".into()))?;
        if let Some(key) = map.keys().next() {
            return Err(ScenarioError::Parse(unknown_key(key, def.name())));
        }
        let world = match world {
            None => WorldConfig::default(),
            Some(v) => typed::<WorldConfig>("world", role_named_classes(v, def)?)?,
        };
        let spec = def.parse(section, workload)?;
        Ok(Scenario {
            format: FORMAT.to_string(),
            seed,
            description,
            world,
            spec,
        })
    }
}

/// The `world` section with its random fault classes named by a role
/// (`"kill:broker"`, `"pause:tablet_server"`, `"stall:client"`, the role as
/// the system or the world names it) written as the world keys them:
/// `kill_data_server`, `pause_of.data_server`, `stall_of.client`. A role the
/// system has not, or a class it cannot honour, is an error naming the
/// class, the role and the system.
fn role_named_classes(
    mut world: Value,
    def: &dyn crate::system::SystemDef,
) -> Result<Value, ScenarioError> {
    let Some(Value::Object(random)) = world.pointer_mut("/faults/random") else {
        return Ok(world);
    };
    let named: Vec<String> = random
        .keys()
        .filter(|k| faultmix::role_named(k).is_some())
        .cloned()
        .collect();
    let roles = def.roles();
    for key in named {
        let field = format!("world.faults.random.{key}");
        let refuse = |why: String| {
            let system = def.name();
            ScenarioError::Invalid(format!("{field}: system {system} {why}"))
        };
        let (verb, written) = faultmix::role_named(&key).expect("named by a role");
        let Some(role) = roles
            .iter()
            .find(|(r, label)| *label == written || r.name() == written)
            .map(|(r, _)| *r)
        else {
            let labels: Vec<&str> = roles.iter().map(|(_, l)| *l).collect();
            let why = format!("has no role {written:?} (its roles: {})", labels.join(", "));
            return Err(refuse(why));
        };
        let class = faultmix::resolve(&key, &roles);
        let honoured =
            def.fault_classes().contains(&class.as_str()) || def.role_classes().contains(&class);
        if !honoured {
            let why = format!(
                "cannot {} its {written} nodes (its classes: {})",
                verb.name(),
                def.class_names().join(", ")
            );
            return Err(refuse(why));
        }
        let value = random.remove(&key).expect("a key of the map");
        let (map, name) = match verb {
            faultmix::RoleVerb::Kill => (None, class),
            faultmix::RoleVerb::Pause => (Some("pause_of"), role.name().to_string()),
            faultmix::RoleVerb::Stall => (Some("stall_of"), role.name().to_string()),
        };
        let into = match map {
            None => &mut *random,
            Some(m) => match random.entry(m).or_insert_with(|| Value::Object(Map::new())) {
                Value::Object(o) => o,
                _ => return Err(refuse(format!("has `{m}` that is not an object"))),
            },
        };
        if into.insert(name.clone(), value).is_some() {
            return Err(refuse(format!(
                "is given this class twice (also as {name:?})"
            )));
        }
    }
    Ok(world)
}

/// A string field, removed from `map`.
fn take_str(map: &mut Map<String, Value>, key: &str) -> Result<Option<String>, ScenarioError> {
    match map.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ScenarioError::Parse(format!(
            "{key}: expected a string, found {other}"
        ))),
    }
}

/// A system's `workload` object as its own workload type `T`. A workload
/// of another system is refused by name.
pub fn typed_workload<T: serde::de::DeserializeOwned>(
    def: &dyn crate::system::SystemDef,
    value: Value,
) -> Result<T, ScenarioError> {
    if let Some(name) = value.get("name").and_then(Value::as_str)
        && !def.workloads().contains(&name)
        && let Some(owner) = systems::all()
            .into_iter()
            .find(|s| s.workloads().contains(&name))
    {
        return Err(ScenarioError::Invalid(format!(
            "workload {name:?} runs on system {:?}, not {:?}",
            owner.name(),
            def.name()
        )));
    }
    typed("workload", value)
}

/// Split a first-format `cluster` object: the world's settings into
/// `world`, the rest into the system's section.
fn split_cluster(
    cluster: Value,
    world: &mut Option<Value>,
    section: &mut Option<Value>,
    def: &dyn crate::system::SystemDef,
) -> Result<(), ScenarioError> {
    let Value::Object(cluster) = cluster else {
        return Err(ScenarioError::Parse("cluster: expected an object".into()));
    };
    let own = def.v1_cluster_keys();
    for (key, value) in cluster {
        let is_world = WORLD_KEYS.contains(&key.as_str());
        if !is_world && own.is_some_and(|own| !own.contains(&key.as_str())) {
            continue;
        }
        let (target, name) = if is_world {
            (&mut *world, "world")
        } else {
            (&mut *section, def.name())
        };
        let into = target.get_or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(into) = into else {
            return Err(ScenarioError::Parse(format!(
                "cluster.{key}: its section is not an object"
            )));
        };
        if into.insert(key.clone(), value).is_some() {
            return Err(ScenarioError::Parse(format!(
                "cluster.{key}: also given in the {name} section"
            )));
        }
    }
    Ok(())
}

/// Why a top-level key is refused.
fn unknown_key(key: &str, system: &str) -> String {
    if systems::find(key).is_ok() {
        format!("{key}: a section of system {key:?}, but the scenario runs {system:?}")
    } else {
        format!(
            "unknown field `{key}`, expected one of `format`, `seed`, `system`, `description`, `world`, `{system}`, `workload`"
        )
    }
}
