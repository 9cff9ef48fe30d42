//! `script` for Percolator: the engine ([`crate::script`]) runs the steps;
//! Percolator brings its verbs (transactions by name, each owned by one
//! client: `begin`, `get`, `scan`, `set`, `delete`, `commit`, `abort`,
//! crashes and pauses at commit steps, `expire_session`), its named points
//! for `stop_at`, its store assertions (`assert_cell`,
//! `assert_stored`), its wait conditions, its observers and how its
//! intercept rules name calls, transactions and cells.

mod builder;
mod expect;
mod intercept;
mod observe;
mod run;
mod system;

pub use builder::ScriptBuilder;
pub use expect::{
    AckExpect, CellAssert, CellRef, Counted, ErrorClass, LockExpect, RecordKind, Stored, WaitFor,
    WriteExpect,
};
pub use intercept::{Call, MessageRule, Target};
pub use observe::ScriptObserver;

pub use crate::script::{MsgFate, MsgLeg, Until};
/// The named points `stop_at` stops a node at, and what it does there.
pub use percsim_protocol::percolator::client::Point;
/// The protocol steps a commit can be stopped at (`crash_at`, `pause_at`).
pub use percsim_protocol::percolator::client::StepPoint;
/// The kinds of call an intercept rule names ([`MessageRule::new`]).
pub use percsim_sim::CallKind;
pub use percsim_sim::PointAction;

use crate::script::{Env, ScriptControl, ScriptSystem, SystemVerb, ThreadWords};
use percsim_protocol::percolator::CellKey;
use percsim_protocol::percolator::client::{ObserverBody, ObserverSpec, PointNode};
use percsim_sim::{
    BoxFuture, Client, Controller, Fault, NodeName, Worker, Workload, percolator_kinds,
};
use serde::{Deserialize, Deserializer, Serialize};
use std::sync::Arc;

/// A Percolator script: the engine's script with Percolator's fields and verbs.
pub type Script = crate::script::Script<PercolatorScript>;

/// One step of a Percolator script: the engine's or Percolator's.
pub type Step = crate::script::Step<PercolatorScript>;

/// An assertion on how often something happened, in Percolator's counts.
pub type CountAssert = crate::script::CountAssert<Counted>;

/// Deserialize a present field (even `null`) as `Some`, so a missing
/// expectation and an expected missing value differ.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// The outcome a commit step expects: the engine's
/// ([`crate::script::Outcome`]).
pub use crate::script::Outcome as ExpectOutcome;

/// Percolator's verbs of a script (the engine's verbs are in
/// [`crate::script::Step`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case", deny_unknown_fields)]
pub enum PercolatorVerb {
    /// Begin transaction `txn` on `client`.
    Begin {
        /// The client that runs the transaction.
        client: usize,
        /// The transaction's name in the script.
        txn: String,
        /// The begin must fail with this class.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fails: Option<ErrorClass>,
        /// Go on with the next step without waiting for this one.
        #[serde(default, skip_serializing_if = "is_false")]
        no_wait: bool,
    },
    /// Read a cell; `expect` (a string, or null for no value) is checked.
    Get {
        /// The transaction.
        txn: String,
        /// Row key.
        row: String,
        /// Column.
        col: String,
        /// The value the read must return (null: none).
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        expect: Option<Option<String>>,
        /// The read must fail with this class.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fails: Option<ErrorClass>,
        /// Go on with the next step without waiting for this one.
        #[serde(default)]
        no_wait: bool,
    },
    /// Read column `col` of every row in `[start_row, end_row)`; `expect`
    /// lists the `row=value` pairs the scan must return, in order.
    Scan {
        /// The transaction.
        txn: String,
        /// First row.
        start_row: String,
        /// Row past the last.
        end_row: String,
        /// Column.
        col: String,
        /// The `row=value` pairs expected.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect: Option<Vec<String>>,
        /// The scan must fail with this class.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fails: Option<ErrorClass>,
        /// Go on with the next step without waiting for this one.
        #[serde(default, skip_serializing_if = "is_false")]
        no_wait: bool,
    },
    /// Buffer a write.
    Set {
        /// The transaction.
        txn: String,
        /// Row key.
        row: String,
        /// Column.
        col: String,
        /// Value.
        value: String,
    },
    /// Buffer a delete.
    Delete {
        /// The transaction.
        txn: String,
        /// Row key.
        row: String,
        /// Column.
        col: String,
    },
    /// Commit; `expect` is checked against the reported outcome.
    Commit {
        /// The transaction.
        txn: String,
        /// The outcome the client must report.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect: Option<ExpectOutcome>,
        /// The commit must abort with this class.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fails: Option<ErrorClass>,
        /// How the transaction must have ended in the store once the run
        /// is over (after the healed phase and the sweep), whatever its
        /// client was told: for a commit cut short by a crash or a lost
        /// message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        store: Option<Stored>,
        /// Go on with the next step without waiting for this one (implied
        /// when a crash is armed for the transaction).
        #[serde(default)]
        no_wait: bool,
    },
    /// Abort without committing.
    Abort {
        /// The transaction.
        txn: String,
    },
    /// Kill the transaction's client when its commit reaches `step`.
    CrashAt {
        /// The transaction.
        txn: String,
        /// The protocol step.
        step: StepPoint,
        /// Restart the client this long after (else at the healed phase).
        #[serde(default)]
        restart_after_ms: Option<u64>,
    },
    /// Freeze the transaction's client when its commit reaches `step`.
    PauseAt {
        /// The transaction.
        txn: String,
        /// The protocol step.
        step: StepPoint,
    },
    /// Expire a client's liveness session (it stays alive).
    ExpireSession {
        /// The client.
        client: usize,
    },
    /// Check one cell of the store now.
    AssertCell(CellAssert),
    /// Check how a transaction ended in the store, whatever its client was told.
    AssertStored {
        /// The transaction.
        txn: String,
        /// Committed or rolled back.
        store: Stored,
    },
}

/// Whether a node named `node` is of the kind that reaches `point`.
fn reaches(point: Point, node: &str) -> bool {
    let kind = match point.node() {
        PointNode::Client => percolator_kinds::CLIENT,
        PointNode::TabletServer => percolator_kinds::TABLET,
        PointNode::Oracle => percolator_kinds::ORACLE,
    };
    NodeName::parse(node, &percolator_kinds::ALL).is_ok_and(|n| n.kind() == kind)
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl SystemVerb for PercolatorVerb {
    fn thread(&self) -> Option<&str> {
        match self {
            PercolatorVerb::Begin { txn, .. }
            | PercolatorVerb::Get { txn, .. }
            | PercolatorVerb::Scan { txn, .. }
            | PercolatorVerb::Set { txn, .. }
            | PercolatorVerb::Delete { txn, .. }
            | PercolatorVerb::Commit { txn, .. }
            | PercolatorVerb::Abort { txn }
            | PercolatorVerb::CrashAt { txn, .. }
            | PercolatorVerb::PauseAt { txn, .. } => Some(txn),
            _ => None,
        }
    }

    fn opens(&self) -> Option<usize> {
        match self {
            PercolatorVerb::Begin { client, .. } => Some(*client),
            _ => None,
        }
    }

    fn closes(&self) -> bool {
        matches!(
            self,
            PercolatorVerb::Commit { .. } | PercolatorVerb::Abort { .. }
        )
    }

    fn no_wait(&self) -> bool {
        match self {
            PercolatorVerb::Begin { no_wait, .. }
            | PercolatorVerb::Get { no_wait, .. }
            | PercolatorVerb::Scan { no_wait, .. }
            | PercolatorVerb::Commit { no_wait, .. } => *no_wait,
            _ => false,
        }
    }

    fn is_assertion(&self) -> bool {
        matches!(
            self,
            PercolatorVerb::AssertCell(_) | PercolatorVerb::AssertStored { .. }
        )
    }
}

/// Percolator's fields of a script file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PercolatorScript {
    /// Cells committed before the script starts.
    #[serde(default)]
    pub initial: Vec<InitialCell>,
    /// Observers: each copies a changed cell to another column in a
    /// transaction of its own (their notify and acknowledgment entries can
    /// be asserted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observers: Vec<ScriptObserver>,
}

/// A cell of the initial data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitialCell {
    /// Row key.
    pub row: String,
    /// Column.
    pub col: String,
    /// Value.
    pub value: String,
}

/// The do-words of [`PercolatorVerb`].
const VERBS: &[&str] = &[
    "begin",
    "get",
    "scan",
    "set",
    "delete",
    "commit",
    "abort",
    "crash_at",
    "pause_at",
    "expire_session",
    "assert_cell",
    "assert_stored",
];

/// The driver of a Percolator script acts through the cluster's [`Controller`].
impl ScriptControl for Controller {
    type RuleId = percsim_sim::RuleId;
    fn inject(&self, fault: &Fault) {
        percsim_sim::Controller::inject(self, fault);
    }
    fn heal_partitions(&self) {
        percsim_sim::Controller::heal_partitions(self);
    }
    fn node_up(&self, node: &str) -> bool {
        percsim_sim::Controller::node_up(self, node)
    }
    fn counter(&self, name: &str) -> u64 {
        percsim_sim::Controller::counter(self, name)
    }
    fn release(&self, rule: Self::RuleId) {
        percsim_sim::Controller::release(self, rule);
    }
}

/// The cells transaction `txn` writes (its `set` and `delete` steps).
fn cells_of(script: &Script, txn: &str) -> Vec<CellRef> {
    let mut cells: Vec<CellRef> = Vec::new();
    for s in script.steps.iter().filter_map(Step::verb) {
        if let PercolatorVerb::Set {
            txn: t, row, col, ..
        }
        | PercolatorVerb::Delete { txn: t, row, col } = s
            && t == txn
        {
            let c = CellRef {
                row: row.clone(),
                col: col.clone(),
            };
            if !cells.contains(&c) {
                cells.push(c);
            }
        }
    }
    cells
}

/// Whether a `crash_at` step of transaction `txn` comes before step `i`.
fn crash_armed(script: &Script, txn: &str, i: usize) -> bool {
    script.steps[..i.min(script.steps.len())]
        .iter()
        .filter_map(Step::verb)
        .any(|v| matches!(v, PercolatorVerb::CrashAt { txn: t, .. } if t == txn))
}

/// Check one of Percolator's steps.
fn validate_verb(script: &Script, verb: &PercolatorVerb, env: &Env<'_>) -> Result<(), String> {
    let at = env.at();
    match verb {
        PercolatorVerb::Begin { client, .. } | PercolatorVerb::ExpireSession { client } => {
            env.client(*client)
        }
        PercolatorVerb::AssertCell(CellAssert {
            col, ack: Some(a), ..
        }) if !script
            .system
            .observers
            .iter()
            .any(|o| o.name == a.observer && o.col == *col) =>
        {
            Err(format!(
                "{at}.ack.observer: no observer named {:?} observes column {col:?}",
                a.observer
            ))
        }
        PercolatorVerb::AssertStored { txn, .. } => env.thread(txn),
        PercolatorVerb::Get {
            expect: Some(_),
            fails: Some(_),
            ..
        }
        | PercolatorVerb::Scan {
            expect: Some(_),
            fails: Some(_),
            ..
        }
        | PercolatorVerb::Commit {
            expect: Some(_),
            fails: Some(_),
            ..
        } => Err(format!(
            "{at}: a step expects either a result (expect) or a failure (fails), not both"
        )),
        PercolatorVerb::Commit {
            txn, expect, fails, ..
        } if (expect.is_some() || fails.is_some()) && crash_armed(script, txn, env.index()) => {
            let field = if expect.is_some() { "expect" } else { "fails" };
            Err(format!(
                "{at}.{field}: the commit of {txn:?} is armed to crash (crash_at), so its client dies before it can report and the {field} could never be checked; drop it (\"store\" on the commit or an assert_stored step checks how the transaction ended in the store)"
            ))
        }
        PercolatorVerb::Commit {
            fails: Some(ErrorClass::TimedOut),
            ..
        } => Err(format!(
            "{at}.fails: a commit does not time out; a commit cut short reports \"expect\": \"unknown\""
        )),
        _ => Ok(()),
    }
}

impl Workload for Script {
    fn initial_data(&self) -> Vec<(CellKey, String)> {
        self.system
            .initial
            .iter()
            .map(|c| (CellKey::new(c.row.clone(), c.col.clone()), c.value.clone()))
            .collect()
    }

    fn split_points(&self, tablets: usize) -> Vec<String> {
        let mut keys: Vec<String> = self.system.initial.iter().map(|c| c.row.clone()).collect();
        for s in self.steps.iter().filter_map(Step::verb) {
            if let PercolatorVerb::Get { row, .. }
            | PercolatorVerb::Set { row, .. }
            | PercolatorVerb::Delete { row, .. } = s
            {
                keys.push(row.clone());
            }
        }
        percsim_sim::even_splits(&keys, tablets)
    }

    fn worker(&self, w: Worker) -> BoxFuture<()> {
        let me = self.clone();
        Box::pin(async move {
            if w.index != 0 {
                return;
            }
            me.run_client(w.client.index(), w.client.clone()).await;
        })
    }

    fn observers(&self) -> Vec<(ObserverSpec, Arc<dyn ObserverBody<Client>>)> {
        self.system
            .observers
            .iter()
            .map(ScriptObserver::build)
            .collect()
    }

    fn driver(&self, control: Controller) -> Option<BoxFuture<()>> {
        Some(self.start_driver(control))
    }

    fn final_check(&self, _client: Arc<Client>) -> BoxFuture<Vec<String>> {
        let failures = self.final_failures();
        Box::pin(async move { failures })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_verb_word_names_a_verb() {
        for verb in VERBS {
            let e = Step::from_value(serde_json::json!({"do": verb})).unwrap_err();
            assert!(!e.contains("unknown verb"), "{verb}: {e}");
            assert!(e.contains(&format!("(do {verb:?})")), "{verb}: {e}");
        }
        let e = Step::from_value(serde_json::json!({"do": "gett"})).unwrap_err();
        assert!(
            e.contains("unknown verb \"gett\" (verbs: stop_at, kill,"),
            "{e}"
        );
    }
}
