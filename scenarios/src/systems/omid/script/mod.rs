//! `script`: an Omid workload written step by step with expectations, on
//! the engine of `crate::script`. Transactions are the engine's threads:
//! `begin` opens one on a client, `get` and `put` run in its snapshot,
//! `commit` (through the TSO) or `abort` closes it. The driver stops a
//! node (client, TSO, backup, tablet server) at one of Omid's named points
//! for one transaction, installs message rules for one call kind, and
//! asserts the store (a transaction's commit-table entry, its data cell
//! and shadow cell). The checker judges the history afterwards, as for
//! campaigns. See `docs/omid.md`.
//!
//! ```json
//! {"name": "script", "steps": [
//!   {"do": "begin", "client": 0, "txn": "T1"},
//!   {"do": "put", "txn": "T1", "row": "x", "value": "1"},
//!   {"do": "stop_at", "point": {"at": "client_before_shadow_cells", "txn": "T1"},
//!    "node": "client-0", "fault": {"pause": {"ms": 500}}},
//!   {"do": "commit", "txn": "T1", "no_wait": true},
//!   {"do": "sleep", "ms": 100},
//!   {"do": "assert_commit_table", "txn": "T1", "entry": "committed"},
//!   {"do": "begin", "client": 1, "txn": "T2"},
//!   {"do": "get", "txn": "T2", "row": "x", "expect": "1"},
//!   {"do": "commit", "txn": "T2", "expect": "committed"}
//! ]}
//! ```

mod run;
mod system;
mod verbs;

pub use run::ScriptProgram;
pub use verbs::*;

use crate::script::{
    Env, Mismatch, RuleWords, Script, ScriptControl, ScriptSystem, StepFuture, Thread, ThreadWords,
    begun_for_point, begun_for_rule,
};
use percsim_protocol::omid::OmidPointOwner;
use percsim_sim::Role;
use percsim_sim::omid::{NODE_KINDS, OmidClient, OmidControl, OmidOutcome, Stop};
use percsim_sim::world::NodeName;
use percsim_sim::world::intercept::{Rule, RuleId};
use percsim_sim::{BoxFuture, Fault};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// An Omid script: the engine's script with Omid's verbs.
pub type OmidScriptFile = Script<OmidScript>;

/// Omid's fields of a script file: none (the store starts empty).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OmidScript {}

/// A transaction a script began: its history id and start timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Begun {
    /// Its id in the history.
    pub id: u64,
    /// Its start timestamp.
    pub start_ts: u64,
}

/// The transactions begun so far, by name, shared by the transactions'
/// tasks and the driver (which resolves the names of rules, points and
/// assertions).
pub type TxnNames = Arc<Mutex<BTreeMap<String, Begun>>>;

/// An Omid script's run state.
#[derive(Default)]
pub struct OmidState {
    /// The transactions begun, by name.
    pub txns: TxnNames,
    /// What each transaction's client was told, by name.
    pub told: BTreeMap<String, OmidOutcome>,
}

/// The driver's view while an Omid script runs: the cluster's control and
/// the names of the transactions begun.
pub struct ScriptControlOf {
    /// The cluster's control.
    pub control: OmidControl,
    /// The transactions begun, by name.
    pub txns: TxnNames,
}

impl ScriptControlOf {
    /// The transaction named `name`, if it was begun.
    pub fn txn(&self, name: &str) -> Option<Begun> {
        lock(&self.txns).get(name).copied()
    }
}

impl ScriptControl for ScriptControlOf {
    type RuleId = RuleId;
    fn inject(&self, fault: &Fault) {
        self.control.faults().inject(fault);
    }
    fn heal_partitions(&self) {
        self.control.faults().heal_partitions();
    }
    fn node_up(&self, node: &str) -> bool {
        self.control.faults().node_up(node)
    }
    fn counter(&self, name: &str) -> u64 {
        self.control.faults().counter(name)
    }
    fn release(&self, rule: RuleId) {
        self.control.release(rule);
    }
}

/// The kind of node `node` is, as the point owners name them.
fn owner_of(node: &str) -> Option<OmidPointOwner> {
    let name = NodeName::parse(node, &NODE_KINDS).ok()?;
    match name.role() {
        Role::Coordinator => Some(OmidPointOwner::Tso),
        Role::Client => Some(OmidPointOwner::Client),
        Role::DataServer => Some(OmidPointOwner::Tablet),
        _ => None,
    }
}

/// `txn` is begun by a step before the current one.
fn txn_begun(s: &OmidScriptFile, txn: &str, env: &Env<'_>) -> Result<(), String> {
    let begun = s
        .steps
        .iter()
        .take(env.index())
        .filter_map(|st| st.verb())
        .any(|v| matches!(v, OmidVerb::Begin { txn: t, .. } if t == txn));
    match begun {
        true => Ok(()),
        false => Err(format!(
            "{}: transaction {txn:?} is not begun by an earlier step",
            env.at()
        )),
    }
}

/// Lock a mutex, whatever a panicked holder left.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
