//! Running a script: one task per transaction on its client, the node
//! actions, waits and assertions on the driver, all in step order.

use super::expect::{Counted, ErrorClass, TxnTs, View};
use super::intercept::{MessageRule, Target};
use super::{ExpectOutcome, Script, Step};
use percsim_protocol::percolator::client::{AbortReason, CommitOutcome, Transaction, TxnError};
use percsim_protocol::percolator::{CellKey, Ts};
use percsim_sim::{Armed, Client, Controller, Fault, MessageFault, RuleId};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

#[derive(Default)]
pub(super) struct State {
    /// The step that may start next.
    pub cursor: usize,
    /// The script gave up (a step timed out).
    pub aborted: bool,
    pub failures: Vec<String>,
    /// Commits armed with a crash or pause: they finish, for the script,
    /// when the client reaches the armed step.
    watch: BTreeMap<usize, (Arc<Client>, u64)>,
    /// The driver's view of the world (set before anything runs).
    pub control: Option<Arc<Controller>>,
    /// Timestamps by transaction name.
    names: BTreeMap<String, TxnTs>,
    /// Transactions whose commit or abort returned, or that failed.
    finished: BTreeSet<String>,
    /// Counter values when a step named by a `since_step` started.
    marks: BTreeMap<(usize, Counted), u64>,
    /// Message rules in force, by name.
    rules: BTreeMap<String, RuleId>,
}

type Txn<'a> = Option<Transaction<'a, Client>>;

impl Script {
    /// Step `i` starts now: keep the counters a later `since_step` needs.
    fn mark(&self, i: usize) {
        let wanted: Vec<Counted> = self
            .steps
            .iter()
            .chain(&self.at_end)
            .filter_map(|s| match s {
                Step::AssertCount(a) if a.since_step == Some(i) => Some(a.count),
                _ => None,
            })
            .collect();
        let mut s = self.state();
        for counted in wanted {
            let name = counted.counter();
            let n = s.control.as_ref().map(|c| c.counter(&name)).unwrap_or(0);
            s.marks.entry((i, counted)).or_insert(n);
        }
    }

    /// Wait until step `i` may start; false if the script gave up.
    async fn wait_turn(&self, client: &Client, i: usize) -> bool {
        loop {
            {
                let s = self.state();
                if s.aborted || s.cursor > i {
                    return false;
                }
            }
            if self.state().cursor == i {
                self.mark(i);
                return true;
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

    /// Record that step `i` did not meet its expectation.
    fn fail(&self, i: usize, expected: impl std::fmt::Display, happened: impl std::fmt::Display) {
        let what = match i.checked_sub(self.steps.len()) {
            Some(k) => self.at_end[k].describe(k).replacen("step", "at_end", 1),
            None => self.steps[i].describe(i),
        };
        self.state()
            .failures
            .push(format!("{what}: expected {expected}; happened {happened}"));
    }

    fn finished(&self, name: &str) {
        self.state().finished.insert(name.to_string());
    }

    /// A step of a transaction that already failed: record it, move on.
    fn already_failed(&self, i: usize, expects: bool) {
        if expects {
            self.fail(i, "a result", "nothing: the transaction had already failed");
        }
        self.advance(i);
    }

    /// Judge a read against its expectation; a failed read ends its transaction.
    fn judge_read<V: PartialEq + std::fmt::Debug>(
        &self,
        i: usize,
        name: &str,
        (expect, fails): (Option<&V>, Option<ErrorClass>),
        got: Result<V, TxnError>,
        txn: &mut Txn<'_>,
    ) {
        match got {
            Ok(v) => {
                if let Some(class) = fails {
                    self.fail(i, format!("a failure ({})", class.name()), format!("{v:?}"));
                } else if let Some(e) = expect.filter(|e| **e != v) {
                    self.fail(i, format!("{e:?}"), format!("{v:?}"));
                }
            }
            Err(e) => {
                let class = ErrorClass::of_error(&e);
                if fails.is_some_and(|f| f != class) || (fails.is_none() && expect.is_some()) {
                    let wanted = match fails {
                        Some(f) => format!("a failure ({})", f.name()),
                        None => format!("{:?}", expect.expect("checked above")),
                    };
                    self.fail(i, wanted, format!("error ({}): {e}", class.name()));
                }
                if let Some(t) = txn.take() {
                    t.abort((&e).into());
                }
                self.finished(name);
            }
        }
    }

    /// Run every step of transaction `name` on `client`.
    pub(super) async fn run_txn(self, client: Arc<Client>, name: String) {
        let mine: Vec<usize> = (0..self.steps.len())
            .filter(|&i| self.steps[i].txn() == Some(name.as_str()))
            .collect();
        let mut txn: Txn<'_> = None;
        for i in mine {
            if !self.wait_turn(&client, i).await {
                return;
            }
            let step = &self.steps[i];
            match step {
                Step::Begin { fails, no_wait, .. } => {
                    if *no_wait {
                        self.advance(i);
                    }
                    txn = self.begin(i, &name, &client, *fails).await;
                }
                Step::Get { .. } | Step::Scan { .. } => {
                    if txn.is_none() {
                        self.already_failed(i, true);
                        continue;
                    }
                    self.read(i, &name, step, &mut txn).await;
                }
                Step::Commit { .. } => {
                    self.commit(i, &name, &client, step, txn.take()).await;
                }
                _ => self.buffer(step, &client, &mut txn),
            }
            self.advance(i);
        }
    }

    async fn begin<'c>(
        &self,
        i: usize,
        name: &str,
        client: &'c Client,
        fails: Option<ErrorClass>,
    ) -> Txn<'c> {
        match Transaction::begin(client).await {
            Ok(t) => {
                let ts = TxnTs {
                    start_ts: t.start_ts().0,
                    commit_ts: None,
                };
                self.state().names.insert(name.to_string(), ts);
                if let Some(f) = fails {
                    let got = format!("began at start_ts {}", t.start_ts().0);
                    self.fail(i, format!("a failure ({})", f.name()), got);
                }
                Some(t)
            }
            Err(e) => {
                let class = ErrorClass::of_error(&e);
                if fails != Some(class) {
                    let wanted = fails.map_or("a start timestamp".into(), |f| {
                        format!("a failure ({})", f.name())
                    });
                    self.fail(i, wanted, format!("error ({}): {e}", class.name()));
                }
                self.finished(name);
                None
            }
        }
    }

    async fn read(&self, i: usize, name: &str, step: &Step, txn: &mut Txn<'_>) {
        let Some(t) = txn.as_mut() else { return };
        match step {
            Step::Get {
                row,
                col,
                expect,
                fails,
                no_wait,
                ..
            } => {
                if *no_wait {
                    self.advance(i);
                }
                let got = t.get(row, col).await;
                self.judge_read(i, name, (expect.as_ref(), *fails), got, txn);
            }
            Step::Scan {
                start_row,
                end_row,
                col,
                expect,
                fails,
                no_wait,
                ..
            } => {
                if *no_wait {
                    self.advance(i);
                }
                let got = t
                    .scan(start_row, end_row, std::slice::from_ref(col))
                    .await
                    .map(|cells| {
                        cells
                            .iter()
                            .map(|(c, v)| format!("{}={v}", c.row))
                            .collect::<Vec<String>>()
                    });
                self.judge_read(i, name, (expect.as_ref(), *fails), got, txn);
            }
            _ => {}
        }
    }

    /// The steps that act at once: buffer a write, arm a fault, abort.
    fn buffer(&self, step: &Step, client: &Arc<Client>, txn: &mut Txn<'_>) {
        match step {
            Step::Set {
                row, col, value, ..
            } => {
                if let Some(t) = txn.as_mut() {
                    t.set(row, col, value.clone());
                }
            }
            Step::Delete { row, col, .. } => {
                if let Some(t) = txn.as_mut() {
                    t.delete(row, col);
                }
            }
            Step::CrashAt {
                step,
                restart_after_ms,
                ..
            } => {
                if let Some(t) = txn.as_ref() {
                    let restart_after_ms = *restart_after_ms;
                    client.arm(t.id(), *step, Armed::Crash { restart_after_ms });
                }
            }
            Step::PauseAt { step, .. } => {
                if let Some(t) = txn.as_ref() {
                    client.arm(t.id(), *step, Armed::Pause);
                }
            }
            Step::Abort { txn: name } => {
                if let Some(t) = txn.take() {
                    t.abort(AbortReason::User);
                }
                self.finished(name);
            }
            _ => {}
        }
    }

    async fn commit(&self, i: usize, name: &str, client: &Arc<Client>, step: &Step, txn: Txn<'_>) {
        let Step::Commit {
            expect,
            fails,
            no_wait,
            ..
        } = step
        else {
            return;
        };
        let Some(t) = txn else {
            self.already_failed(i, expect.is_some() || fails.is_some());
            return;
        };
        if *no_wait {
            self.advance(i);
        } else if client.armed(t.id()) {
            self.state().watch.insert(i, (client.clone(), t.id()));
        }
        let outcome = t.commit().await;
        let (got, class) = match &outcome {
            CommitOutcome::Committed { commit_ts } => {
                if let Some(ts) = self.state().names.get_mut(name) {
                    ts.commit_ts = commit_ts.map(|c| c.0);
                }
                (ExpectOutcome::Committed, None)
            }
            CommitOutcome::Aborted { reason } => {
                (ExpectOutcome::Aborted, ErrorClass::of_abort(reason))
            }
            CommitOutcome::Unknown => (ExpectOutcome::Unknown, None),
        };
        self.finished(name);
        if let Some(e) = expect.filter(|e| *e != got) {
            self.fail(i, format!("{e:?}"), format!("{outcome:?}"));
        }
        if let Some(f) = fails.filter(|f| class != Some(*f)) {
            self.fail(
                i,
                format!("a failure ({})", f.name()),
                format!("{outcome:?}"),
            );
        }
    }

    /// The driver: runs node actions, waits and assertions at their turn,
    /// and lets armed commits count as finished when they reach their step.
    pub(super) async fn drive(self, control: Arc<Controller>) {
        let timeout = Duration::from_millis(self.step_timeout_ms.max(1));
        for (i, step) in self.steps.iter().enumerate() {
            let started = madsim::time::Instant::now();
            loop {
                let cursor = self.state().cursor;
                if cursor > i {
                    break;
                }
                let fired = self
                    .state()
                    .watch
                    .get(&i)
                    .is_some_and(|(c, t)| c.armed_fired(*t));
                if cursor == i && fired {
                    self.advance(i);
                    break;
                }
                if cursor == i && step.txn().is_none() {
                    self.mark(i);
                    self.driver_step(i, step, &control).await;
                    self.advance(i);
                    break;
                }
                if started.elapsed() > timeout {
                    let ms = self.step_timeout_ms;
                    self.fail(i, format!("to finish within {ms} ms"), "it did not finish");
                    self.state().aborted = true;
                    return;
                }
                madsim::time::sleep(Duration::from_millis(1)).await;
            }
        }
        // Let no_wait steps finish before the workload phase ends.
        madsim::time::sleep(Duration::from_millis(1)).await;
        // Rules the script did not release end with it (they hold messages).
        let left = std::mem::take(&mut self.state().rules);
        for id in left.into_values() {
            control.release(id);
        }
    }

    async fn driver_step(&self, i: usize, step: &Step, control: &Controller) {
        let node = |c: &usize| format!("client-{c}");
        let fault = match step {
            Step::Pause { client } => Fault::Pause {
                node: node(client),
                duration_ms: 3_600_000,
            },
            Step::Resume { client } => Fault::Resume { node: node(client) },
            Step::ExpireSession { client } => Fault::ExpireSession { client: *client },
            Step::Kill { node } => Fault::Kill {
                node: node.clone(),
                restart_after_ms: None,
            },
            Step::Restart { node } => Fault::Restart { node: node.clone() },
            Step::Partition { a, b, one_way } => Fault::Partition {
                a: a.clone(),
                b: b.clone(),
                one_way: *one_way,
                duration_ms: 3_600_000,
            },
            Step::Heal => return control.heal_partitions(),
            Step::StopAt { point, node, fault } => {
                if let Err(e) = control.arm_point(*point, node, *fault) {
                    self.fail(i, json(step), &e);
                }
                return;
            }
            Step::Intercept(rule) => return self.install(i, rule, control),
            Step::Release { name } => {
                if let Some(id) = self.state().rules.remove(name) {
                    control.release(id);
                }
                return;
            }
            Step::Sleep { ms } => {
                return madsim::time::sleep(Duration::from_millis(*ms)).await;
            }
            Step::Wait { until, timeout_ms } => {
                let deadline = madsim::time::Instant::now() + Duration::from_millis(*timeout_ms);
                while !self.holds(until, control) {
                    if madsim::time::Instant::now() >= deadline {
                        let what = format!("{} within {timeout_ms} ms", json(until));
                        return self.fail(i, what, "it did not hold");
                    }
                    madsim::time::sleep(Duration::from_millis(1)).await;
                }
                return;
            }
            _ => return self.assert(i, step, control),
        };
        control.inject(&fault);
    }

    /// Install a message rule: its transaction by start_ts, its cells.
    fn install(&self, i: usize, rule: &MessageRule, control: &Controller) {
        let txn = match &rule.txn {
            None => None,
            Some(t) => match self.state().names.get(t) {
                Some(ts) => Some(Ts(ts.start_ts)),
                None => {
                    let why = format!("{t} has no start_ts (its begin failed or has not returned)");
                    return self.fail(i, "a rule installed", why);
                }
            },
        };
        let writes: Vec<CellKey> = match &rule.txn {
            Some(t) => self
                .cells_of(t)
                .into_iter()
                .map(|c| CellKey::new(c.row, c.col))
                .collect(),
            None => Vec::new(),
        };
        let cells = rule.on.as_ref().map(|on| match on {
            Target::Primary => writes[..1].to_vec(),
            Target::Secondaries => writes[1..].to_vec(),
            Target::Cell(c) => vec![CellKey::new(c.row.clone(), c.col.clone())],
        });
        let (leg, fate) = rule.leg_and_fate();
        let fault = MessageFault {
            call: rule.call.0,
            txn,
            cells,
            client: rule.client,
            leg,
            fate,
            times: rule.times,
        };
        let id = control.intercept(&fault);
        self.state().rules.insert(rule.name.clone(), id);
    }

    fn holds(&self, until: &super::WaitFor, control: &Controller) -> bool {
        let s = self.state();
        let view = View {
            control,
            names: &s.names,
        };
        view.holds(until, &s.finished)
    }

    /// Check an assertion step (`i` counts on past the steps for `at_end`).
    fn assert(&self, i: usize, step: &Step, control: &Controller) {
        let mismatch = {
            let s = self.state();
            let view = View {
                control,
                names: &s.names,
            };
            match step {
                Step::AssertCell(a) => view.check_cell(a),
                Step::AssertCount(a) => {
                    let since = a
                        .since_step
                        .map_or(0, |k| s.marks.get(&(k, a.count)).copied().unwrap_or(0));
                    view.check_count(a, since)
                }
                Step::AssertStored { txn, store } => {
                    view.check_stored(txn, &self.cells_of(txn), *store)
                }
                _ => None,
            }
        };
        if let Some((expected, happened)) = mismatch {
            self.fail(i, expected, happened);
        }
    }

    /// Check the `at_end` assertions; returns the new failures.
    pub(super) fn check_at_end(&self) -> Vec<String> {
        let Some(control) = self.state().control.clone() else {
            return Vec::new();
        };
        let before = self.state().failures.len();
        for (i, step) in self.steps.iter().enumerate() {
            if let Step::Commit {
                txn,
                store: Some(store),
                ..
            } = step
            {
                let at_end = Step::AssertStored {
                    txn: txn.clone(),
                    store: *store,
                };
                self.assert(i, &at_end, &control);
            }
        }
        for (k, step) in self.at_end.iter().enumerate() {
            self.assert(self.steps.len() + k, step, &control);
        }
        self.state().failures.split_off(before)
    }
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}
