//! `script`: a user-written interleaving. A global sequence of steps, each
//! naming a transaction (owned by one client), a node action, a wait
//! condition or an assertion, with optional expectations. Step `i` starts
//! only after step `i - 1` finished (or was issued, for `no_wait` steps).
//! A failed expectation fails the run with the step, what was expected
//! and what happened.

mod builder;
mod expect;
mod intercept;
mod observe;
mod run;

pub use builder::ScriptBuilder;
pub use expect::{
    AckExpect, CellAssert, CellRef, CountAssert, Counted, ErrorClass, LockExpect, RecordKind,
    Stored, WaitFor, WriteExpect,
};
pub use intercept::{Call, MessageRule, MsgFate, MsgLeg, Target};
pub use observe::ScriptObserver;

use percsim_protocol::percolator::CellKey;
use percsim_protocol::percolator::client::{
    ObserverBody, ObserverSpec, Point, PointNode, StepPoint,
};
use percsim_sim::{BoxFuture, Client, Controller, PointAction, Worker, Workload};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// Deserialize a present field (even `null`) as `Some`, so a missing
/// expectation and an expected missing value differ.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

fn default_wait_timeout_ms() -> u64 {
    10_000
}

/// The outcome a commit step expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpectOutcome {
    /// The client reports committed.
    Committed,
    /// The client reports aborted.
    Aborted,
    /// The client cannot tell.
    Unknown,
}

/// One step of a script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
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
    /// Kill or freeze `node` the next time it reaches the named `point`
    /// (any transaction): a server's points (`tablet_after_apply`,
    /// `oracle_after_persist`) or a client's.
    StopAt {
        /// The point.
        point: Point,
        /// The node (`tablet-N` for `tablet_after_apply`, `oracle` for
        /// `oracle_after_persist`, `client-N` for a client's point).
        node: String,
        /// What happens there.
        fault: PointAction,
    },
    /// Kill a node (`oracle`, `liveness`, `master`, `tablet-N`, `client-N`).
    Kill {
        /// The node.
        node: String,
    },
    /// Restart a killed node.
    Restart {
        /// The node.
        node: String,
    },
    /// Freeze a client's node.
    Pause {
        /// The client.
        client: usize,
    },
    /// Unfreeze a client's node.
    Resume {
        /// The client.
        client: usize,
    },
    /// Expire a client's liveness session (it stays alive).
    ExpireSession {
        /// The client.
        client: usize,
    },
    /// Cut the links between two groups of nodes until a `heal` step (or
    /// the healed phase).
    Partition {
        /// One side.
        a: Vec<String>,
        /// The other side.
        b: Vec<String>,
        /// Only messages from `a` to `b` are lost.
        #[serde(default, skip_serializing_if = "is_false")]
        one_way: bool,
    },
    /// Heal every partition in force.
    Heal,
    /// Install a named targeted message fault (until its `release` step
    /// or the healed phase).
    Intercept(MessageRule),
    /// Lift the named message fault and deliver every message it holds.
    Release {
        /// The rule's name.
        name: String,
    },
    /// Wait this long.
    Sleep {
        /// Simulated milliseconds.
        ms: u64,
    },
    /// Wait until a condition holds; fails after `timeout_ms`.
    Wait {
        /// The condition.
        until: WaitFor,
        /// How long to wait at most (simulated ms).
        #[serde(default = "default_wait_timeout_ms")]
        timeout_ms: u64,
    },
    /// Check one cell of the store now.
    AssertCell(CellAssert),
    /// Check how often something happened.
    AssertCount(CountAssert),
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
    match point.node() {
        PointNode::Client => node.starts_with("client-"),
        PointNode::TabletServer => node.starts_with("tablet-"),
        PointNode::Oracle => node == "oracle",
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Step {
    /// The transaction a client runs this step for (assertions and waits
    /// naming a transaction run on the driver, not on its client).
    fn txn(&self) -> Option<&str> {
        match self {
            Step::Begin { txn, .. }
            | Step::Get { txn, .. }
            | Step::Scan { txn, .. }
            | Step::Set { txn, .. }
            | Step::Delete { txn, .. }
            | Step::Commit { txn, .. }
            | Step::Abort { txn }
            | Step::CrashAt { txn, .. }
            | Step::PauseAt { txn, .. } => Some(txn),
            _ => None,
        }
    }

    /// Whether this step is an assertion (allowed in `at_end`).
    fn is_assertion(&self) -> bool {
        matches!(
            self,
            Step::AssertCell(_) | Step::AssertCount(_) | Step::AssertStored { .. }
        )
    }

    fn describe(&self, i: usize) -> String {
        let mut s = serde_json::to_string(self).unwrap_or_default();
        if s.len() > 200 {
            let mut cut = 200;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
            s.push_str("...");
        }
        format!("step {i} {s}")
    }
}

/// Parameters of the script workload.
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Cells committed before the script starts.
    #[serde(default)]
    pub initial: Vec<InitialCell>,
    /// Observers: each copies a changed cell to another column in a
    /// transaction of its own (their notify and acknowledgment entries can
    /// be asserted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observers: Vec<ScriptObserver>,
    /// The steps, in global order.
    pub steps: Vec<Step>,
    /// Assertions checked after the healed phase and the sweep (the
    /// store's final contents, counts over the whole run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub at_end: Vec<Step>,
    /// A step that has not finished after this long fails the script.
    #[serde(default = "default_step_timeout_ms")]
    pub step_timeout_ms: u64,
    /// Run state shared by the driver and the clients (not part of the file).
    #[serde(skip)]
    state: Arc<Mutex<run::State>>,
}

fn default_step_timeout_ms() -> u64 {
    30_000
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

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script")
            .field("steps", &self.steps.len())
            .finish()
    }
}

impl Script {
    /// A copy with fresh run state, for one run.
    pub fn fresh(&self) -> Script {
        Script {
            state: Arc::default(),
            ..self.clone()
        }
    }

    fn state(&self) -> MutexGuard<'_, run::State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cells transaction `txn` writes (its `set` and `delete` steps).
    fn cells_of(&self, txn: &str) -> Vec<CellRef> {
        let mut cells: Vec<CellRef> = Vec::new();
        for s in &self.steps {
            if let Step::Set {
                txn: t, row, col, ..
            }
            | Step::Delete { txn: t, row, col } = s
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

    /// Check the script: clients and nodes exist, every transaction is
    /// begun once before use and by one client, expectations agree.
    pub fn validate(&self, clients: usize, nodes: &[String]) -> Result<(), String> {
        observe::validate(&self.observers)?;
        let mut begun: BTreeMap<&str, usize> = BTreeMap::new();
        let mut finished: BTreeSet<&str> = BTreeSet::new();
        let mut rules: BTreeMap<&str, bool> = BTreeMap::new();
        for (i, step) in self.steps.iter().enumerate() {
            let at = format!("workload.steps[{i}]");
            self.validate_step(&at, i, step, clients, nodes, &begun)?;
            Self::validate_rule_names(&at, step, &mut rules)?;
            if let Step::Begin { client, txn, .. } = step
                && begun.insert(txn, *client).is_some()
            {
                return Err(format!("{at}.txn: transaction {txn:?} is begun twice"));
            }
            if let Some(txn) = step.txn() {
                if !begun.contains_key(txn) {
                    return Err(format!(
                        "{at}.txn: transaction {txn:?} is used before it is begun"
                    ));
                }
                if finished.contains(txn) {
                    return Err(format!(
                        "{at}.txn: transaction {txn:?} is used after its commit or abort"
                    ));
                }
                if matches!(step, Step::Commit { .. } | Step::Abort { .. }) {
                    finished.insert(txn);
                }
            }
        }
        for (i, step) in self.at_end.iter().enumerate() {
            let at = format!("workload.at_end[{i}]");
            if !step.is_assertion() {
                return Err(format!("{at}: only assert_* steps may run at the end"));
            }
            self.validate_step(&at, self.steps.len(), step, clients, nodes, &begun)?;
        }
        Ok(())
    }

    /// Intercept rules have unique names; a release names a rule in force.
    fn validate_rule_names<'s>(
        at: &str,
        step: &'s Step,
        rules: &mut BTreeMap<&'s str, bool>,
    ) -> Result<(), String> {
        match step {
            Step::Intercept(r) if rules.insert(&r.name, true).is_some() => Err(format!(
                "{at}.name: a message rule named {:?} is installed twice",
                r.name
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

    /// Check one step's own fields; `begun` holds the transactions begun before it.
    fn validate_step(
        &self,
        at: &str,
        i: usize,
        step: &Step,
        clients: usize,
        nodes: &[String],
        begun: &BTreeMap<&str, usize>,
    ) -> Result<(), String> {
        let no_client =
            |c: &usize| format!("{at}.client: client {c} does not exist ({clients} clients)");
        let no_node =
            |n: &String| format!("{at}: no node named {n:?} (nodes: {})", nodes.join(", "));
        let not_begun = |t: &str| format!("{at}: transaction {t:?} is not begun before this step");
        match step {
            Step::Begin { client, .. }
            | Step::Pause { client }
            | Step::Resume { client }
            | Step::ExpireSession { client }
                if *client >= clients =>
            {
                Err(no_client(client))
            }
            Step::Kill { node } | Step::Restart { node } if !nodes.contains(node) => {
                Err(no_node(node))
            }
            Step::StopAt { node, .. } if !nodes.contains(node) => Err(no_node(node)),
            Step::StopAt { point, node, .. } if !reaches(*point, node) => Err(format!(
                "{at}: node {node:?} never reaches point {}",
                point.name()
            )),
            Step::Partition { a, b, .. } => match a.iter().chain(b).find(|n| !nodes.contains(n)) {
                Some(n) => Err(no_node(n)),
                None => Ok(()),
            },
            Step::Intercept(r) => {
                if let Some(t) = &r.txn
                    && !begun.contains_key(t.as_str())
                {
                    return Err(not_begun(t));
                }
                if let Some(c) = r.client.filter(|c| *c >= clients) {
                    return Err(no_client(&c));
                }
                let writes = r.txn.as_ref().map(|t| self.cells_of(t).len());
                r.validate(writes).map_err(|e| format!("{at}{e}"))
            }
            Step::AssertCell(CellAssert {
                col, ack: Some(a), ..
            }) if !self
                .observers
                .iter()
                .any(|o| o.name == a.observer && o.col == *col) =>
            {
                Err(format!(
                    "{at}.ack.observer: no observer named {:?} observes column {col:?}",
                    a.observer
                ))
            }
            Step::Sleep { ms } | Step::Wait { timeout_ms: ms, .. } if *ms > 3_600_000 => {
                Err(format!("{at}: {ms} ms is more than an hour"))
            }
            Step::Wait {
                until: WaitFor::NodeUp(n),
                ..
            } if !nodes.contains(n) => Err(no_node(n)),
            Step::Wait {
                until: WaitFor::TxnFinished(t),
                ..
            }
            | Step::AssertStored { txn: t, .. }
                if !begun.contains_key(t.as_str()) =>
            {
                Err(not_begun(t))
            }
            Step::AssertCount(CountAssert {
                since_step: Some(s),
                ..
            }) if *s >= i => Err(format!(
                "{at}.since_step: step {s} does not come before this step"
            )),
            Step::Get {
                expect: Some(_),
                fails: Some(_),
                ..
            }
            | Step::Scan {
                expect: Some(_),
                fails: Some(_),
                ..
            }
            | Step::Commit {
                expect: Some(_),
                fails: Some(_),
                ..
            } => Err(format!(
                "{at}: a step expects either a result (expect) or a failure (fails), not both"
            )),
            Step::Commit {
                fails: Some(ErrorClass::TimedOut),
                ..
            } => Err(format!(
                "{at}.fails: a commit does not time out; a commit cut short reports \"expect\": \"unknown\""
            )),
            _ => Ok(()),
        }
    }
}

impl Workload for Script {
    fn initial_data(&self) -> Vec<(CellKey, String)> {
        self.initial
            .iter()
            .map(|c| (CellKey::new(c.row.clone(), c.col.clone()), c.value.clone()))
            .collect()
    }

    fn split_points(&self, tablets: usize) -> Vec<String> {
        let mut keys: Vec<String> = self.initial.iter().map(|c| c.row.clone()).collect();
        for s in &self.steps {
            if let Step::Get { row, .. } | Step::Set { row, .. } | Step::Delete { row, .. } = s {
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
            let client = w.client.index();
            // One task per transaction this client runs, each waiting for its turns.
            let names: Vec<String> = me
                .steps
                .iter()
                .filter_map(|s| match s {
                    Step::Begin { client: c, txn, .. } if *c == client => Some(txn.clone()),
                    _ => None,
                })
                .collect();
            let tasks: Vec<_> = names
                .into_iter()
                .map(|name| madsim::task::spawn(me.clone().run_txn(w.client.clone(), name)))
                .collect();
            for t in tasks {
                let _ = t.await;
            }
        })
    }

    fn observers(&self) -> Vec<(ObserverSpec, Arc<dyn ObserverBody<Client>>)> {
        self.observers.iter().map(ScriptObserver::build).collect()
    }

    fn driver(&self, control: Controller) -> Option<BoxFuture<()>> {
        let control = Arc::new(control);
        self.state().control = Some(control.clone());
        let me = self.clone();
        Some(Box::pin(async move { me.drive(control).await }))
    }

    fn final_check(&self, _client: Arc<Client>) -> BoxFuture<Vec<String>> {
        let mut failures = self.state().failures.clone();
        let (aborted, cursor) = {
            let s = self.state();
            (s.aborted, s.cursor)
        };
        if !aborted && cursor < self.steps.len() {
            failures.push(format!(
                "the script stopped at step {cursor} of {}: expected every step to run; happened: the workload phase (run_ms) ended first",
                self.steps.len()
            ));
        }
        failures.extend(self.check_at_end());
        Box::pin(async move { failures })
    }
}
