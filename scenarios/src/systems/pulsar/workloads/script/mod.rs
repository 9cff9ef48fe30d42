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
mod system;
mod verbs;

pub use verbs::*;

use crate::script::{
    Env, Mismatch, RuleWords, Script, ScriptControl, ScriptSystem, StepFuture, SystemVerb, Thread,
    ThreadWords, begun_for_point, begun_for_rule,
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
