//! The checks every script gets, whatever its system: clients and nodes
//! exist, every thread is opened once before use and not used after it is
//! closed, rule names are unique and released once, waits are bounded,
//! `since_step` looks back, `at_end` holds only assertions.

use super::{Env, InterceptRule, MsgFate, MsgLeg, Script, ScriptSystem, Step, SystemVerb, Until};
use std::collections::{BTreeMap, BTreeSet};

impl Env<'_> {
    /// How errors name the step: `workload.steps[3]`, `workload.at_end[0]`.
    pub fn at(&self) -> &str {
        self.at
    }

    /// The step's index (for `at_end`: the number of steps).
    pub fn index(&self) -> usize {
        self.index
    }

    /// How many clients the run has.
    pub fn clients(&self) -> usize {
        self.clients
    }

    /// Whether thread `name` was opened by an earlier step (or this one).
    pub fn opened(&self, name: &str) -> bool {
        self.opened.contains_key(name)
    }

    /// Check that client `c` exists.
    pub fn client(&self, c: usize) -> Result<(), String> {
        if c < self.clients {
            return Ok(());
        }
        Err(format!(
            "{}.client: client {c} does not exist ({} clients)",
            self.at, self.clients
        ))
    }

    /// Check that a node named `n` exists.
    pub fn node(&self, n: &str) -> Result<(), String> {
        if self.nodes.iter().any(|m| m == n) {
            return Ok(());
        }
        Err(format!(
            "{}: no node named {n:?} (nodes: {})",
            self.at,
            self.nodes.join(", ")
        ))
    }

    /// Check that thread `name` was opened before this step.
    pub fn thread(&self, name: &str) -> Result<(), String> {
        if self.opened(name) {
            return Ok(());
        }
        let w = self.words;
        Err(format!(
            "{}: {} {name:?} is not {} before this step",
            self.at, w.noun, w.opened
        ))
    }
}

/// What the checks of a script's steps have seen so far, in file order.
#[derive(Default)]
struct Seen<'s> {
    /// Threads opened, with their client.
    opened: BTreeMap<&'s str, usize>,
    /// Threads closed.
    closed: BTreeSet<&'s str>,
    /// Intercept rules installed, and whether each is still in force.
    rules: BTreeMap<&'s str, bool>,
}

impl<S: ScriptSystem> Script<S> {
    /// Check the script against a run of `clients` clients and these
    /// nodes. An error names the step by its path in the file, then its
    /// verb, then the problem in the system's own words, as an error
    /// reading the step does: Percolator says `workload.steps[3] (do
    /// "commit"): txn: transaction "T9" is used before it is begun`.
    pub fn validate(&self, clients: usize, nodes: &[String]) -> Result<(), String> {
        self.system.validate_setup()?;
        let mut seen = Seen::default();
        for (i, step) in self.steps.iter().enumerate() {
            let at = format!("workload.steps[{i}]");
            self.validate_in_order(&at, i, step, clients, nodes, &mut seen)
                .map_err(|e| named(&at, step, e))?;
        }
        for (i, step) in self.at_end.iter().enumerate() {
            let at = format!("workload.at_end[{i}]");
            let checked = match step.is_assertion() {
                true => {
                    let i = self.steps.len();
                    self.validate_step(&at, i, step, clients, nodes, &seen.opened)
                }
                false => Err(format!("{at}: only assert_* steps may run at the end")),
            };
            checked.map_err(|e| named(&at, step, e))?;
        }
        Ok(())
    }

    /// Check step `i` (at `at`) and what it opens, uses, closes, installs
    /// and releases against the steps before it (`seen`), then add it.
    fn validate_in_order<'s>(
        &'s self,
        at: &str,
        i: usize,
        step: &'s Step<S>,
        clients: usize,
        nodes: &[String],
        seen: &mut Seen<'s>,
    ) -> Result<(), String> {
        let w = S::THREAD;
        self.validate_step(at, i, step, clients, nodes, &seen.opened)?;
        validate_rule_names(at, step, &mut seen.rules)?;
        let Some(verb) = step.verb() else {
            return Ok(());
        };
        let at = format!("{at}.{}", w.field);
        if let (Some(client), Some(t)) = (verb.opens(), verb.thread())
            && seen.opened.insert(t, client).is_some()
        {
            return Err(format!("{at}: {} {t:?} is {} twice", w.noun, w.opened));
        }
        let Some(t) = verb.thread() else {
            return Ok(());
        };
        if !seen.opened.contains_key(t) {
            return Err(format!(
                "{at}: {} {t:?} is used before it is {}",
                w.noun, w.opened
            ));
        }
        if seen.closed.contains(t) {
            return Err(format!("{at}: {} {t:?} is used after {}", w.noun, w.closed));
        }
        if verb.closes() {
            seen.closed.insert(t);
        }
        Ok(())
    }

    /// Check one step's own fields; `opened` holds the threads opened before it.
    fn validate_step(
        &self,
        at: &str,
        i: usize,
        step: &Step<S>,
        clients: usize,
        nodes: &[String],
        opened: &BTreeMap<&str, usize>,
    ) -> Result<(), String> {
        let env = Env {
            at,
            index: i,
            clients,
            nodes,
            opened,
            words: S::THREAD,
        };
        match step {
            Step::Pause { client } | Step::Resume { client } => env.client(*client),
            Step::StopAt { point, node, .. } => {
                env.node(node)?;
                S::validate_point(point, node, &env)
            }
            Step::Kill { node } | Step::Restart { node } => env.node(node),
            Step::Partition { a, b, .. } => a.iter().chain(b).try_for_each(|n| env.node(n)),
            Step::Intercept(r) => {
                validate_rule_words(r).map_err(|e| format!("{at}{e}"))?;
                S::validate_rule(self, r, &env)
            }
            Step::Sleep { ms } | Step::Wait { timeout_ms: ms, .. } if *ms > 3_600_000 => {
                Err(format!("{at}: {ms} ms is more than an hour"))
            }
            Step::Wait {
                until: Until::NodeUp(n),
                ..
            } => env.node(n),
            Step::Wait {
                until: Until::System(w),
                ..
            } => S::validate_wait(self, w, &env),
            Step::AssertCount(a) => match a.since_step {
                Some(s) if s >= i => Err(format!(
                    "{at}.since_step: step {s} does not come before this step"
                )),
                _ => Ok(()),
            },
            Step::System(v) => S::validate_verb(self, v, &env),
            Step::Heal | Step::Release { .. } | Step::Sleep { .. } => Ok(()),
        }
    }
}

/// `e`, an error about the step at `at` (`workload.steps[3]`), as every
/// error about a step reads: `workload.steps[3] (do "commit"): PROBLEM`.
/// A check names the step as `{at}: PROBLEM`, or a field of it as
/// `{at}.txn: PROBLEM`, which reads `... (do "commit"): txn: PROBLEM`.
fn named<S: ScriptSystem>(at: &str, step: &Step<S>, e: String) -> String {
    let json = serde_json::to_value(step).unwrap_or_default();
    let verb = json.get("do").and_then(|v| v.as_str()).unwrap_or("?");
    let problem = match e.strip_prefix(at) {
        Some(rest) => rest
            .strip_prefix(": ")
            .or_else(|| rest.strip_prefix('.'))
            .unwrap_or(rest),
        None => &e,
    };
    format!("{at} (do {verb:?}): {problem}")
}

/// A rule's times, leg and fate agree; the error is a field path's tail.
fn validate_rule_words<R: InterceptRule>(r: &R) -> Result<(), String> {
    if r.times() == Some(0) {
        return Err(".times: must be at least 1".into());
    }
    if r.leg() == MsgLeg::Reply && matches!(r.fate(), MsgFate::Duplicate { .. }) {
        return Err(".fate: only requests can be duplicated (a reply is matched to its call, so a second copy would be discarded on arrival)".into());
    }
    Ok(())
}

/// Intercept rules have unique names; a release names a rule in force.
fn validate_rule_names<'s, S: ScriptSystem>(
    at: &str,
    step: &'s Step<S>,
    rules: &mut BTreeMap<&'s str, bool>,
) -> Result<(), String> {
    match step {
        Step::Intercept(r) if rules.insert(r.name(), true).is_some() => Err(format!(
            "{at}.name: a message rule named {:?} is installed twice",
            r.name()
        )),
        Step::Release { name } => match rules.get_mut(name.as_str()) {
            Some(live @ true) => {
                *live = false;
                Ok(())
            }
            Some(false) => Err(format!("{at}.name: rule {name:?} is already released")),
            None => Err(format!(
                "{at}.name: no intercept step before this one installs a rule named {name:?}"
            )),
        },
        _ => Ok(()),
    }
}
