//! Reading and writing scripts: a step by its `"do"` word (the engine's
//! verbs, else the system's), errors naming the step's index and verb, and
//! the file's shape (the system's fields beside `steps`, `at_end` and
//! `step_timeout_ms`).

use super::{CountAssert, FIELDS, Script, ScriptSystem, Step, Until, VERBS};
use serde::de::{DeserializeOwned, Error as _};
use serde::ser::{Error as _, SerializeMap};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The engine's verbs as read from a file (the system's are its own).
#[derive(Deserialize)]
#[serde(
    tag = "do",
    rename_all = "snake_case",
    deny_unknown_fields,
    bound(
        deserialize = "R: DeserializeOwned, C: DeserializeOwned, W: DeserializeOwned, P: DeserializeOwned, F: DeserializeOwned"
    )
)]
enum CoreStep<R, C, W, P, F> {
    StopAt {
        point: P,
        node: String,
        fault: F,
    },
    Kill {
        node: String,
    },
    Restart {
        node: String,
    },
    Pause {
        client: usize,
    },
    Resume {
        client: usize,
    },
    Partition {
        a: Vec<String>,
        b: Vec<String>,
        #[serde(default)]
        one_way: bool,
    },
    Heal,
    Intercept(R),
    Release {
        name: String,
    },
    Sleep {
        ms: u64,
    },
    Wait {
        until: Until<W>,
        #[serde(default = "super::default_wait_timeout_ms")]
        timeout_ms: u64,
    },
    AssertCount(CountAssert<C>),
}

/// The engine's verbs of a script of `S`, as read.
type CoreOf<S> = CoreStep<
    <S as ScriptSystem>::Rule,
    <S as ScriptSystem>::Count,
    <S as ScriptSystem>::Wait,
    <S as ScriptSystem>::Point,
    <S as ScriptSystem>::PointFault,
>;

impl<S: ScriptSystem> From<CoreOf<S>> for Step<S> {
    fn from(c: CoreOf<S>) -> Self {
        match c {
            CoreStep::StopAt { point, node, fault } => Step::StopAt { point, node, fault },
            CoreStep::Kill { node } => Step::Kill { node },
            CoreStep::Restart { node } => Step::Restart { node },
            CoreStep::Pause { client } => Step::Pause { client },
            CoreStep::Resume { client } => Step::Resume { client },
            CoreStep::Partition { a, b, one_way } => Step::Partition { a, b, one_way },
            CoreStep::Heal => Step::Heal,
            CoreStep::Intercept(r) => Step::Intercept(r),
            CoreStep::Release { name } => Step::Release { name },
            CoreStep::Sleep { ms } => Step::Sleep { ms },
            CoreStep::Wait { until, timeout_ms } => Step::Wait { until, timeout_ms },
            CoreStep::AssertCount(a) => Step::AssertCount(a),
        }
    }
}

/// Every verb a script of `S` knows, the engine's first.
pub(super) fn all_verbs<S: ScriptSystem>() -> String {
    VERBS
        .iter()
        .chain(S::VERBS)
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}

impl<S: ScriptSystem> Step<S> {
    /// Read a step from its JSON object; the error names its verb (the
    /// caller adds where the step is).
    pub fn from_value(value: Value) -> Result<Self, String> {
        read(value).map_err(|(verb, e)| match verb {
            Some(verb) => format!("(do {verb:?}): {e}"),
            None => e,
        })
    }
}

/// Read a step; an error comes with the verb when it is a known one.
fn read<S: ScriptSystem>(value: Value) -> Result<Step<S>, (Option<String>, String)> {
    let Some(verb) = value.get("do").and_then(Value::as_str).map(str::to_string) else {
        let e = format!("a step needs a \"do\" word, one of: {}", all_verbs::<S>());
        return Err((None, e));
    };
    let parsed = if VERBS.contains(&verb.as_str()) {
        CoreOf::<S>::deserialize(value).map(Step::from)
    } else if S::VERBS.contains(&verb.as_str()) {
        S::Verb::deserialize(value).map(Step::System)
    } else {
        let e = format!("unknown verb {verb:?} (verbs: {})", all_verbs::<S>());
        return Err((None, e));
    };
    parsed.map_err(|e| (Some(verb), e.to_string()))
}

impl<'de, S: ScriptSystem> Deserialize<'de> for Step<S> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Step::from_value(Value::deserialize(d)?).map_err(D::Error::custom)
    }
}

impl<W: Serialize> Serialize for Until<W> {
    fn serialize<Z: Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        match self {
            Until::NodeUp(n) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("node_up", n)?;
                m.end()
            }
            Until::System(w) => w.serialize(s),
        }
    }
}

impl<'de, W: DeserializeOwned> Deserialize<'de> for Until<W> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        if let Some(Value::String(n)) = v.get("node_up")
            && v.as_object().is_some_and(|o| o.len() == 1)
        {
            return Ok(Until::NodeUp(n.clone()));
        }
        W::deserialize(v).map(Until::System).map_err(|e| {
            let e = e.to_string();
            match e.contains("unknown variant") {
                true => D::Error::custom(format!("{e}, or the world's `node_up`")),
                false => D::Error::custom(e),
            }
        })
    }
}

/// Read a list of steps (`field` names it in errors). An error names the
/// step by its path in the file, then its verb when it is a known one,
/// then the problem, as a check of a step does
/// (`workload.steps[3] (do "commit"): unknown field ...`).
fn steps<S: ScriptSystem>(field: &str, v: Value) -> Result<Vec<Step<S>>, String> {
    let Value::Array(items) = v else {
        return Err(format!("workload.{field}: expected a list of steps"));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let at = format!("workload.{field}[{i}]");
            read(item).map_err(|(verb, e)| match verb {
                Some(verb) => format!("{at} (do {verb:?}): {e}"),
                None => format!("{at}: {e}"),
            })
        })
        .collect()
}

impl<S: ScriptSystem> Script<S> {
    /// Read a script from its JSON object.
    pub fn from_value(v: Value) -> Result<Self, String> {
        let Value::Object(mut map) = v else {
            return Err("a script is an object".into());
        };
        let known: Vec<&str> = S::FIELDS.iter().chain(FIELDS).copied().collect();
        if let Some(k) = map.keys().find(|k| !known.contains(&k.as_str())) {
            let list: Vec<String> = known.iter().map(|f| format!("`{f}`")).collect();
            return Err(format!(
                "unknown field `{k}`, expected one of {}",
                list.join(", ")
            ));
        }
        let steps = match map.remove("steps") {
            Some(v) => steps(FIELDS[0], v)?,
            None => return Err("missing field `steps`".into()),
        };
        let at_end = match map.remove("at_end") {
            Some(v) => self::steps(FIELDS[1], v)?,
            None => Vec::new(),
        };
        let step_timeout_ms = match map.remove("step_timeout_ms") {
            Some(v) => u64::deserialize(v).map_err(|e| format!("step_timeout_ms: {e}"))?,
            None => super::DEFAULT_STEP_TIMEOUT_MS,
        };
        let system = S::deserialize(Value::Object(map)).map_err(|e| e.to_string())?;
        Ok(Script {
            system,
            steps: Arc::new(steps),
            at_end: Arc::new(at_end),
            step_timeout_ms,
            state: Default::default(),
        })
    }
}

impl<'de, S: ScriptSystem> Deserialize<'de> for Script<S> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Script::from_value(Value::deserialize(d)?).map_err(D::Error::custom)
    }
}

impl<S: ScriptSystem> Serialize for Script<S> {
    fn serialize<Z: Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        let own: Map<String, Value> = match serde_json::to_value(&self.system) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(Z::Error::custom("a script system's fields form an object")),
            Err(e) => return Err(Z::Error::custom(e)),
        };
        let mut m = s.serialize_map(None)?;
        for (k, v) in &own {
            m.serialize_entry(k, v)?;
        }
        m.serialize_entry("steps", &*self.steps)?;
        if !self.at_end.is_empty() {
            m.serialize_entry("at_end", &*self.at_end)?;
        }
        m.serialize_entry("step_timeout_ms", &self.step_timeout_ms)?;
        m.end()
    }
}
