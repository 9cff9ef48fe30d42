//! `script`: a Pulsar workload written step by step with expectations,
//! on the engine of `crate::script`. Producers and consumers are named
//! actors (the engine's threads) on client nodes; transactions are named
//! and begun by an actor; the driver arms broker points for one
//! transaction or partition, installs message rules for one call kind,
//! transaction and partition, and asserts the durable logs (a partition's
//! entries with markers, a subscription's acks and pending acks, the
//! coordinator's record of a transaction). The stream history and checker
//! judge the run afterwards, as for campaigns. See `docs/pulsar.md`.
//!
//! ```json
//! {"name": "script", "steps": [
//!   {"do": "producer", "actor": "p", "client": 0},
//!   {"do": "consumer", "actor": "c", "client": 1, "partition": 0, "subscription": "s"},
//!   {"do": "begin", "actor": "p", "txn": "T1"},
//!   {"do": "send", "actor": "p", "txn": "T1", "partition": 0, "value": "a"},
//!   {"do": "recv", "actor": "c", "expect_none": true},
//!   {"do": "commit", "actor": "p", "txn": "T1", "expect": "committed"},
//!   {"do": "recv", "actor": "c", "expect": ["a"]},
//!   {"do": "assert_log", "partition": 0, "entries": ["a", "<commit T1>"]}
//! ]}
//! ```

mod check;
mod run;
mod verbs;

pub use verbs::*;

use crate::script::{
    Env, Mismatch, RuleWords, Script, ScriptControl, ScriptSystem, StepFuture, SystemVerb, Thread,
    ThreadWords,
};
use percsim_checker::stream::SubscriptionDecl;
use percsim_protocol::pulsar::client::TxnOutcome;
use percsim_protocol::pulsar::ownership::Resource;
use percsim_protocol::pulsar::types::{Partition, TxnId};

/// The id of the cluster's one transaction coordinator.
const COORDINATOR_ID: u16 = 0;
use percsim_sim::world::intercept::{Rule, RuleId};
use percsim_sim::{
    ArmedPoint, BoxFuture, Conn, Fault, NodeName, PulsarControl, PulsarPointAction, PulsarTask,
    PulsarWorkload, pulsar_kinds,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// A Pulsar script: the engine's script with Pulsar's verbs.
pub type PulsarScriptFile = Script<PulsarScript>;

fn default_topic() -> String {
    "events".to_string()
}

/// Pulsar's fields of a script file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PulsarScript {
    /// The one topic the script uses (default `events`); its partition
    /// count is the cluster's.
    #[serde(default = "default_topic")]
    pub topic: String,
    /// Subscriptions the history declares exactly-once (each message
    /// acknowledged by at most one committed transaction, judged by the
    /// stream checker's `duplicate` and `exactly_once` rules).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exactly_once: Vec<String>,
}

impl Default for PulsarScript {
    fn default() -> Self {
        PulsarScript {
            topic: default_topic(),
            exactly_once: Vec::new(),
        }
    }
}

/// The transactions begun so far, by name, shared by the actors and the
/// driver (which resolves the names of rules and points).
pub type TxnNames = Arc<Mutex<BTreeMap<String, TxnId>>>;

/// A Pulsar script's run state.
#[derive(Default)]
pub struct PulsarState {
    /// The transactions begun, by name.
    pub txns: TxnNames,
    /// What each transaction's client was told, by name.
    pub told: BTreeMap<String, TxnOutcome>,
}

/// The driver's view while a Pulsar script runs: the cluster's control and
/// the names of the transactions begun.
pub struct ScriptControlOf {
    /// The cluster's control.
    pub control: PulsarControl,
    /// The transactions begun, by name.
    pub txns: TxnNames,
    /// The script's topic.
    pub topic: String,
}

impl ScriptControlOf {
    /// The id of the transaction named `name`, if it was begun.
    pub fn txn(&self, name: &str) -> Option<TxnId> {
        lock(&self.txns).get(name).copied()
    }

    /// The script's partition `index`.
    pub fn partition(&self, index: u32) -> Partition {
        Partition::new(&self.topic, index)
    }
}

impl ScriptControl for ScriptControlOf {
    type RuleId = RuleId;
    fn inject(&self, fault: &Fault) {
        self.control.inject(fault);
    }
    fn heal_partitions(&self) {
        self.control.heal_partitions();
    }
    fn node_up(&self, node: &str) -> bool {
        self.control.node_up(node)
    }
    fn counter(&self, name: &str) -> u64 {
        self.control.counter(name)
    }
    fn release(&self, rule: RuleId) {
        self.control.release(rule);
    }
}

impl ScriptSystem for PulsarScript {
    type Verb = PulsarVerb;
    type Count = PulsarCount;
    type Wait = PulsarWait;
    type Rule = PulsarRule;
    type Point = PulsarPoint;
    type PointFault = PulsarPointFault;
    type State = PulsarState;
    type Control = ScriptControlOf;
    type Client = Arc<Conn>;
    const FIELDS: &'static [&'static str] = &["topic", "exactly_once"];
    const VERBS: &'static [&'static str] = VERBS;
    const THREAD: ThreadWords = ThreadWords {
        field: "actor",
        noun: "actor",
        opened: "declared",
        closed: "its end",
    };

    fn validate_setup(&self) -> Result<(), String> {
        match self.topic.is_empty() {
            true => Err("workload.topic: must not be empty".into()),
            false => Ok(()),
        }
    }

    fn client_node(client: usize) -> String {
        // Pulsar's client processes, as the world names them (`client-N`).
        pulsar_kinds::CLIENT.nth(client).to_string()
    }

    fn validate_verb(s: &PulsarScriptFile, verb: &PulsarVerb, env: &Env<'_>) -> Result<(), String> {
        check::validate_verb(s, verb, env)
    }

    fn validate_wait(s: &PulsarScriptFile, wait: &PulsarWait, env: &Env<'_>) -> Result<(), String> {
        let txn = match wait {
            PulsarWait::TxnFinished(t) | PulsarWait::TxnState { txn: t, .. } => t,
        };
        check::txn_begun(s, txn, env)
    }

    fn validate_point(point: &PulsarPoint, node: &str, env: &Env<'_>) -> Result<(), String> {
        let at = point.parts().0;
        let (kind, label) = match at.on_client() {
            true => (pulsar_kinds::CLIENT, "client"),
            false => (pulsar_kinds::BROKER, "broker"),
        };
        let name = NodeName::parse(node, &pulsar_kinds::ALL);
        match name.is_ok_and(|n| n.kind() == kind) {
            true => Ok(()),
            false => Err(format!(
                "{}: node {node:?} never reaches point {} (only {label}s do)",
                env.at(),
                at.name()
            )),
        }
    }

    fn validate_rule(s: &PulsarScriptFile, rule: &PulsarRule, env: &Env<'_>) -> Result<(), String> {
        check::validate_rule(s, rule, env)
    }

    fn run_thread(thread: Thread<Self>, client: Arc<Conn>) -> BoxFuture<()> {
        Box::pin(run::run_actor(thread, client))
    }

    fn arm_point(
        control: &ScriptControlOf,
        point: &PulsarPoint,
        node: &str,
        fault: &PulsarPointFault,
    ) -> Result<(), String> {
        let (at, txn, partition) = point.parts();
        let txn = match txn {
            Some(name) => Some(
                control
                    .txn(name)
                    .ok_or_else(|| format!("transaction {name:?} is not begun yet"))?,
            ),
            None => None,
        };
        let action = match fault {
            PulsarPointFault::Kill { restart_after_ms } => PulsarPointAction::Kill {
                restart_after_ms: *restart_after_ms,
            },
            PulsarPointFault::Pause { ms } => PulsarPointAction::Pause { pause_ms: *ms },
        };
        control.control.arm(ArmedPoint {
            point: at,
            node: node.to_string(),
            txn,
            partition: partition.map(|p| control.partition(p)),
            action,
        })
    }

    fn stops_left(control: &ScriptControlOf) -> Option<Vec<String>> {
        Some(control.control.armed_left())
    }

    fn driver_step<'a>(
        s: &'a PulsarScriptFile,
        i: usize,
        verb: &'a PulsarVerb,
        control: &'a ScriptControlOf,
    ) -> StepFuture<'a> {
        // Every other driver verb is an assertion, checked through `assert`.
        if let PulsarVerb::Unload { partition, .. } = verb {
            let resource = match partition {
                Some(p) => Resource::Partition(control.partition(*p)),
                None => Resource::Coordinator(COORDINATOR_ID),
            };
            if let Err(e) = control.control.unload(&resource) {
                s.fail(i, format!("{resource} unloaded"), e);
            }
        }
        Box::pin(std::future::ready(()))
    }

    fn assert(
        s: &PulsarScriptFile,
        _: usize,
        verb: &PulsarVerb,
        control: &ScriptControlOf,
    ) -> Option<Mismatch> {
        check::assert(s, verb, control)
    }

    fn holds(s: &PulsarScriptFile, wait: &PulsarWait, control: &ScriptControlOf) -> bool {
        match wait {
            PulsarWait::TxnFinished(t) => s.with_state(|st| st.told.contains_key(t)),
            PulsarWait::TxnState { txn, state } => check::txn_record(control, txn) == *state,
        }
    }

    fn install(
        _: &PulsarScriptFile,
        rule: &PulsarRule,
        words: RuleWords,
        control: &ScriptControlOf,
    ) -> Result<RuleId, Mismatch> {
        let txn = match &rule.txn {
            Some(name) => Some(control.txn(name).ok_or_else(|| {
                Mismatch::new(
                    format!("transaction {name:?} begun before the rule"),
                    "it is not begun yet",
                )
            })?),
            None => None,
        };
        Ok(control.control.intercept(Rule {
            call: rule.call.tag(),
            txn: txn.map(|t| t.seq),
            items: rule
                .partition
                .map(|p| vec![control.partition(p).to_string()]),
            from: rule.client.map(|c| pulsar_kinds::CLIENT.nth(c).to_string()),
            leg: words.leg,
            fate: words.fate,
            times: words.times,
        }))
    }
}

/// The `script` workload as the cluster runs it: one task on each client
/// that runs actors, which runs them; the driver and the final check are
/// the script's.
#[derive(Debug, Clone)]
pub struct ScriptWorkload(pub PulsarScriptFile);

impl ScriptWorkload {
    /// The subscriptions the script's consumers use, in order of first use.
    fn subscription_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for v in self.0.steps.iter().filter_map(|s| s.verb()) {
            if let PulsarVerb::Consumer { subscription, .. } = v
                && !names.contains(subscription)
            {
                names.push(subscription.clone());
            }
        }
        names
    }
}

impl PulsarWorkload for ScriptWorkload {
    fn topics(&self) -> Vec<String> {
        vec![self.0.system.topic.clone()]
    }

    fn subscriptions(&self) -> Vec<SubscriptionDecl> {
        self.subscription_names()
            .into_iter()
            .map(|name| SubscriptionDecl {
                topic: self.0.system.topic.clone(),
                exactly_once: self.0.system.exactly_once.contains(&name),
                name,
                drained: false,
            })
            .collect()
    }

    fn tasks(&self, client: usize, _clients: usize) -> usize {
        let runs = self.0.steps.iter().filter_map(|s| s.verb());
        usize::from(runs.filter_map(|v| v.opens()).any(|c| c == client))
    }

    fn task(&self, task: PulsarTask) -> BoxFuture<()> {
        let script = self.0.clone();
        Box::pin(async move {
            let client = task.conn.client();
            script.run_client(client, Arc::new(task.conn)).await;
        })
    }

    fn driver(&self, control: PulsarControl) -> Option<BoxFuture<()>> {
        let control = ScriptControlOf {
            control,
            txns: self.0.with_state(|s| s.txns.clone()),
            topic: self.0.system.topic.clone(),
        };
        Some(self.0.start_driver(control))
    }

    fn final_check(&self) -> BoxFuture<Vec<String>> {
        let failures = self.0.final_failures();
        Box::pin(async move { failures })
    }
}

/// Lock a mutex, whatever a panicked holder left.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
