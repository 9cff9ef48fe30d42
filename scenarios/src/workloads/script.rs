//! `script`: a user-written interleaving. A global sequence of steps, each
//! naming a transaction (owned by one client) or a node action, with
//! optional expectations. Step `i` starts only after step `i - 1` finished
//! (or was issued, for `no_wait` steps). A failed expectation fails the
//! run with the step named.

use percsim_protocol::CellKey;
use percsim_protocol::client::{AbortReason, CommitOutcome, StepPoint, Transaction, TxnError};
use percsim_sim::{Armed, BoxFuture, Client, Controller, Fault, Worker, Workload};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Deserialize a present field (even `null`) as `Some`, so a missing
/// expectation and an expected missing value differ.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
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
    /// Wait this long.
    Sleep {
        /// Simulated milliseconds.
        ms: u64,
    },
}

impl Step {
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

    fn describe(&self, i: usize) -> String {
        let mut s = serde_json::to_string(self).unwrap_or_default();
        s.truncate(160);
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
    /// The steps, in global order.
    pub steps: Vec<Step>,
    /// A step that has not finished after this long fails the script.
    #[serde(default = "default_step_timeout_ms")]
    pub step_timeout_ms: u64,
    /// Run state shared by the driver and the clients (not part of the file).
    #[serde(skip)]
    state: Arc<Mutex<State>>,
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

#[derive(Default)]
struct State {
    /// The step that may start next.
    cursor: usize,
    /// The script gave up (a step timed out).
    aborted: bool,
    failures: Vec<String>,
    /// Results per step, for the report.
    results: BTreeMap<usize, String>,
    /// Commits armed with a crash or pause: they finish, for the script,
    /// when the client reaches the armed step.
    watch: BTreeMap<usize, (Arc<Client>, u64)>,
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

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Check the script: clients exist, every transaction is begun once
    /// before use and by one client.
    pub fn validate(&self, clients: usize, nodes: &[String]) -> Result<(), String> {
        let mut begun: BTreeMap<&str, usize> = BTreeMap::new();
        let mut finished: BTreeSet<&str> = BTreeSet::new();
        for (i, step) in self.steps.iter().enumerate() {
            let at = format!("workload.steps[{i}]");
            match step {
                Step::Begin { client, txn } => {
                    if *client >= clients {
                        return Err(format!(
                            "{at}.client: client {client} does not exist ({clients} clients)"
                        ));
                    }
                    if begun.insert(txn, *client).is_some() {
                        return Err(format!("{at}.txn: transaction {txn:?} is begun twice"));
                    }
                }
                Step::Pause { client }
                | Step::Resume { client }
                | Step::ExpireSession { client }
                    if *client >= clients =>
                {
                    return Err(format!(
                        "{at}.client: client {client} does not exist ({clients} clients)"
                    ));
                }
                Step::Kill { node } | Step::Restart { node } if !nodes.contains(node) => {
                    return Err(format!(
                        "{at}.node: no node named {node:?} (nodes: {})",
                        nodes.join(", ")
                    ));
                }
                Step::Sleep { ms } if *ms > 3_600_000 => {
                    return Err(format!("{at}.ms: {ms} ms is more than an hour"));
                }
                _ => {}
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
        Ok(())
    }

    /// Wait until step `i` may start; false if the script gave up.
    async fn wait_turn(&self, client: &Client, i: usize) -> bool {
        loop {
            {
                let s = self.state();
                if s.aborted || s.cursor > i {
                    return false;
                }
                if s.cursor == i {
                    return true;
                }
            }
            madsim::time::sleep(Duration::from_millis(1)).await;
            if client.stopping() && self.state().aborted {
                return false;
            }
        }
    }

    fn advance(&self, i: usize) {
        let mut s = self.state();
        if s.cursor == i {
            s.cursor = i + 1;
        }
    }

    fn result(&self, i: usize, result: String, failure: Option<String>) {
        let mut s = self.state();
        s.results.insert(i, result);
        if let Some(f) = failure {
            s.failures.push(f);
        }
    }

    /// A step of a transaction that already failed: record it, move on.
    fn already_failed(&self, i: usize, what: &str) {
        let failure = format!("{what}: the transaction had already failed");
        self.result(
            i,
            "no transaction (it failed earlier)".into(),
            Some(failure),
        );
        self.advance(i);
    }

    /// Record a read step's result against its expectation; a read that
    /// failed aborts its transaction.
    fn judge_read<V: PartialEq + std::fmt::Debug>(
        &self,
        i: usize,
        what: &str,
        expect: Option<&V>,
        got: Result<V, TxnError>,
        txn: &mut Option<Transaction<'_, Client>>,
    ) {
        match got {
            Ok(v) => {
                let failure = expect
                    .filter(|e| **e != v)
                    .map(|e| format!("{what}: expected {e:?}, got {v:?}"));
                self.result(i, format!("{v:?}"), failure);
            }
            Err(e) => {
                let failure = expect.map(|e2| format!("{what}: expected {e2:?}, got error {e}"));
                self.result(i, format!("error: {e}"), failure);
                if let Some(t) = txn.take() {
                    t.abort((&e).into());
                }
            }
        }
    }

    /// Run every step of transaction `name` on `client`.
    async fn run_txn(self, client: Arc<Client>, name: String) {
        let mine: Vec<usize> = (0..self.steps.len())
            .filter(|&i| self.steps[i].txn() == Some(name.as_str()))
            .collect();
        let mut txn: Option<Transaction<'_, Client>> = None;
        for i in mine {
            if !self.wait_turn(&client, i).await {
                return;
            }
            let step = &self.steps[i];
            let what = step.describe(i);
            match step {
                Step::Begin { .. } => match Transaction::begin(client.as_ref()).await {
                    Ok(t) => {
                        self.result(i, format!("start_ts {}", t.start_ts()), None);
                        txn = Some(t);
                    }
                    Err(e) => {
                        self.result(
                            i,
                            format!("error: {e}"),
                            Some(format!("{what}: begin failed: {e}")),
                        );
                        // Its later steps record that it failed and move on.
                        self.advance(i);
                        continue;
                    }
                },
                Step::Get {
                    row,
                    col,
                    expect,
                    no_wait,
                    ..
                } => {
                    let Some(t) = txn.as_mut() else {
                        self.already_failed(i, &what);
                        continue;
                    };
                    if *no_wait {
                        self.advance(i);
                    }
                    let got = t.get(row, col).await;
                    self.judge_read(i, &what, expect.as_ref(), got, &mut txn);
                }
                Step::Scan {
                    start_row,
                    end_row,
                    col,
                    expect,
                    ..
                } => {
                    let Some(t) = txn.as_mut() else {
                        self.already_failed(i, &what);
                        continue;
                    };
                    let got = t
                        .scan(start_row, end_row, std::slice::from_ref(col))
                        .await
                        .map(|cells| {
                            cells
                                .iter()
                                .map(|(c, v)| format!("{}={v}", c.row))
                                .collect::<Vec<String>>()
                        });
                    self.judge_read(i, &what, expect.as_ref(), got, &mut txn);
                }
                Step::Set {
                    row, col, value, ..
                } => {
                    if let Some(t) = txn.as_mut() {
                        t.set(row, col, value.clone());
                    }
                    self.result(i, "buffered".into(), None);
                }
                Step::Delete { row, col, .. } => {
                    if let Some(t) = txn.as_mut() {
                        t.delete(row, col);
                    }
                    self.result(i, "buffered".into(), None);
                }
                Step::CrashAt {
                    step,
                    restart_after_ms,
                    ..
                } => {
                    if let Some(t) = txn.as_ref() {
                        client.arm(
                            t.id(),
                            *step,
                            Armed::Crash {
                                restart_after_ms: *restart_after_ms,
                            },
                        );
                    }
                    self.result(i, "armed".into(), None);
                }
                Step::PauseAt { step, .. } => {
                    if let Some(t) = txn.as_ref() {
                        client.arm(t.id(), *step, Armed::Pause);
                    }
                    self.result(i, "armed".into(), None);
                }
                Step::Commit {
                    expect, no_wait, ..
                } => {
                    let Some(t) = txn.take() else {
                        self.result(
                            i,
                            "no transaction (it failed earlier)".into(),
                            expect.map(|e| {
                                format!(
                                    "{what}: expected {e:?}, but the transaction had already failed"
                                )
                            }),
                        );
                        self.advance(i);
                        continue;
                    };
                    if *no_wait {
                        self.advance(i);
                    } else if client.armed(t.id()) {
                        self.state().watch.insert(i, (client.clone(), t.id()));
                    }
                    let outcome = t.commit().await;
                    let got = match outcome {
                        CommitOutcome::Committed { .. } => ExpectOutcome::Committed,
                        CommitOutcome::Aborted { .. } => ExpectOutcome::Aborted,
                        CommitOutcome::Unknown => ExpectOutcome::Unknown,
                    };
                    let failure = match expect {
                        Some(e) if *e != got => {
                            Some(format!("{what}: expected {e:?}, got {outcome:?}"))
                        }
                        _ => None,
                    };
                    self.result(i, format!("{outcome:?}"), failure);
                }
                Step::Abort { .. } => {
                    if let Some(t) = txn.take() {
                        t.abort(AbortReason::User);
                    }
                    self.result(i, "aborted".into(), None);
                }
                _ => {}
            }
            self.advance(i);
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
                    Step::Begin { client: c, txn } if *c == client => Some(txn.clone()),
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

    fn driver(&self, control: Controller) -> Option<BoxFuture<()>> {
        let me = self.clone();
        Some(Box::pin(async move {
            let timeout = Duration::from_millis(me.step_timeout_ms.max(1));
            for (i, step) in me.steps.iter().enumerate() {
                let started = madsim::time::Instant::now();
                loop {
                    let cursor = me.state().cursor;
                    if cursor > i {
                        break;
                    }
                    let fired = me
                        .state()
                        .watch
                        .get(&i)
                        .is_some_and(|(c, t)| c.armed_fired(*t));
                    if cursor == i && fired {
                        me.advance(i);
                        break;
                    }
                    if cursor == i && step.txn().is_none() {
                        let node = |c: &usize| format!("client-{c}");
                        match step {
                            Step::Pause { client } => control.inject(&Fault::Pause {
                                node: node(client),
                                duration_ms: 3_600_000,
                            }),
                            Step::Resume { client } => {
                                control.inject(&Fault::Resume { node: node(client) })
                            }
                            Step::ExpireSession { client } => {
                                control.inject(&Fault::ExpireSession { client: *client })
                            }
                            Step::Sleep { ms } => {
                                madsim::time::sleep(Duration::from_millis(*ms)).await
                            }
                            Step::Kill { node } => control.inject(&Fault::Kill {
                                node: node.clone(),
                                restart_after_ms: None,
                            }),
                            Step::Restart { node } => {
                                control.inject(&Fault::Restart { node: node.clone() })
                            }
                            _ => {}
                        }
                        me.result(i, "done".into(), None);
                        me.advance(i);
                        break;
                    }
                    if started.elapsed() > timeout {
                        let mut s = me.state();
                        s.failures.push(format!(
                            "{}: did not finish within {} ms",
                            step.describe(i),
                            me.step_timeout_ms
                        ));
                        s.aborted = true;
                        return;
                    }
                    madsim::time::sleep(Duration::from_millis(1)).await;
                }
            }
            // Let no_wait steps finish before the workload phase ends.
            madsim::time::sleep(Duration::from_millis(1)).await;
        }))
    }

    fn final_check(&self, _client: Arc<Client>) -> BoxFuture<Vec<String>> {
        let s = self.state();
        let mut failures = s.failures.clone();
        if !s.aborted && s.cursor < self.steps.len() {
            failures.push(format!(
                "the script stopped at step {} of {}",
                s.cursor,
                self.steps.len()
            ));
        }
        Box::pin(async move { failures })
    }
}
