//! The registry: every system the testbed runs, one line each. This is the
//! only place outside the systems' own folders that names them.
//!
//! A system lives in `scenarios/src/systems/<name>/` (and in
//! `sim/src/<name>/`, `protocol/src/<name>/` as it needs) and is known to
//! the rest through its [`SystemDef`]. Tests and embedders may add systems
//! of their own at run time with [`register`].

pub mod omid;
pub mod percolator;
pub mod pulsar;

use crate::scenario::{Scenario, ScenarioError};
use crate::system::SystemDef;
use serde_json::{Map, Value};
use std::sync::{Mutex, MutexGuard};

/// The systems built in, the default (what a scenario naming no system
/// runs) first.
static BUILT_IN: &[&dyn SystemDef] = &[&percolator::PERCOLATOR, &pulsar::PULSAR, &omid::OMID];

/// Systems added at run time, after the built-in ones.
static ADDED: Mutex<Vec<&'static dyn SystemDef>> = Mutex::new(Vec::new());

fn added() -> MutexGuard<'static, Vec<&'static dyn SystemDef>> {
    ADDED.lock().unwrap_or_else(|e| e.into_inner())
}

/// What `--system` takes for every registered system.
pub const ALL: &str = "all";

/// Every registered system, built-in ones first, in registration order.
pub fn all() -> Vec<&'static dyn SystemDef> {
    let mut v: Vec<&'static dyn SystemDef> = BUILT_IN.to_vec();
    v.extend(added().iter().copied());
    v
}

/// The system a scenario that names none runs.
pub fn default_system() -> &'static dyn SystemDef {
    BUILT_IN[0]
}

/// The system named `name`, or an error listing the known ones.
pub fn find(name: &str) -> Result<&'static dyn SystemDef, String> {
    all()
        .into_iter()
        .find(|s| s.name() == name)
        .ok_or_else(|| format!("unknown system {name:?} (known: {})", names().join(", ")))
}

/// The system a recorded scenario (a history's or a capsule's `scenario`)
/// ran: the one its `system` names, the default when it names none; `None`
/// for a system not registered here.
pub fn of_scenario(scenario: &Value) -> Option<&'static dyn SystemDef> {
    match scenario.get("system") {
        Some(name) => find(name.as_str()?).ok(),
        None => Some(default_system()),
    }
}

/// The registered systems' names.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|s| s.name()).collect()
}

/// The systems `choice` selects: one name, several separated by commas, or
/// [`ALL`]; the error names what is unknown.
pub fn select(choice: &str) -> Result<Vec<&'static dyn SystemDef>, String> {
    if choice == ALL {
        return Ok(all());
    }
    let mut out: Vec<&'static dyn SystemDef> = Vec::new();
    for name in choice.split(',').map(str::trim) {
        let s = find(name).map_err(|e| format!("{e}, or {ALL}"))?;
        if !out.iter().any(|o| o.name() == s.name()) {
            out.push(s);
        }
    }
    Ok(out)
}

/// Add `system` to the registry (a system of a test or of an embedding
/// crate). A name already registered is refused.
pub fn register(system: &'static dyn SystemDef) -> Result<(), String> {
    if find(system.name()).is_ok() {
        return Err(format!("system {:?} is already registered", system.name()));
    }
    if system.name() == ALL {
        return Err(format!("{ALL:?} names every system; choose another name"));
    }
    added().push(system);
    Ok(())
}

/// The same scenario with these planted bugs (its system's ablations,
/// by name) switched on as well as those it has. An unknown name is an
/// error listing the system's (`percsim systems` lists them too).
pub fn with_ablations(scenario: &Scenario, names: &[String]) -> Result<Scenario, ScenarioError> {
    if names.is_empty() {
        return Ok(scenario.clone());
    }
    let system = find(scenario.system()).map_err(ScenarioError::Invalid)?;
    let known: Vec<&str> = system.ablations().iter().map(|(n, _)| *n).collect();
    if let Some(bad) = names.iter().find(|n| !known.contains(&n.as_str())) {
        return Err(ScenarioError::Invalid(format!(
            "--ablate: system {} has no planted bug {bad:?} (its planted bugs: {}; `percsim systems` lists every system's)",
            scenario.system(),
            known.join(", ")
        )));
    }
    let mut value = scenario.to_value()?;
    let section = &mut value[scenario.system()];
    if !section.is_object() {
        *section = Value::Object(Map::new());
    }
    let mut list: Vec<Value> = match section.get("ablations") {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    for n in names {
        if !list.iter().any(|v| v.as_str() == Some(n)) {
            list.push(Value::from(n.as_str()));
        }
    }
    section["ablations"] = Value::Array(list);
    let s = Scenario::from_value(value)?;
    s.validate()?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        let names = names();
        for n in &names {
            assert_eq!(find(n).unwrap().name(), *n);
        }
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        let e = find("tidb").err().unwrap();
        assert!(e.contains("unknown system \"tidb\""), "{e}");
    }

    #[test]
    fn all_selects_every_system_and_a_list_selects_those() {
        assert_eq!(select(ALL).unwrap().len(), all().len());
        let first = default_system().name();
        let one = select(&format!("{first},{first}")).unwrap();
        assert_eq!(one.len(), 1);
        let e = select("nosuch").err().unwrap();
        assert!(e.contains("or all"), "{e}");
    }

    #[test]
    fn a_registered_name_is_refused_twice() {
        let e = register(default_system()).unwrap_err();
        assert!(e.contains("already registered"), "{e}");
    }
}
