//! Running Percolator's steps: a transaction's steps in its thread on its
//! client, its driver steps, assertions, wait conditions and rules.

use super::expect::{ErrorClass, TxnTs, View};
use super::intercept::{MessageRule, Target};
use super::{ExpectOutcome, PercolatorVerb, Script, WaitFor, cells_of};
use crate::script::{Mismatch, RuleWords, Thread, judge, judge_eq};
use percsim_protocol::percolator::client::{AbortReason, CommitOutcome, Transaction, TxnError};
use percsim_protocol::percolator::{CellKey, Ts};
use percsim_sim::{Armed, Client, Controller, Fault, MessageFault, RuleId};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Percolator's state of one script run.
#[derive(Debug, Default)]
pub struct RunState {
    /// Timestamps by transaction name.
    names: BTreeMap<String, TxnTs>,
    /// Transactions whose commit or abort returned, or that failed.
    finished: BTreeSet<String>,
}

type Txn<'a> = Option<Transaction<'a, Client>>;

fn finished(script: &Script, name: &str) {
    script.with_state(|s| s.finished.insert(name.to_string()));
}

/// A step of a transaction that already failed: recorded if it expects something.
fn already_failed(script: &Script, i: usize, expects: bool) {
    if expects {
        script.fail(i, "a result", "nothing: the transaction had already failed");
    }
}

/// Judge a read against its expectation; a failed read ends its transaction.
fn judge_read<V: PartialEq + std::fmt::Debug>(
    script: &Script,
    i: usize,
    name: &str,
    (expect, fails): (Option<&V>, Option<ErrorClass>),
    got: Result<V, TxnError>,
    txn: &mut Txn<'_>,
) {
    match got {
        Ok(v) => {
            if let Some(class) = fails {
                script.fail(i, format!("a failure ({})", class.name()), format!("{v:?}"));
            } else {
                script.fail_on(i, judge_eq(expect, &&v, |x| format!("{x:?}")));
            }
        }
        Err(e) => {
            let class = ErrorClass::of_error(&e);
            if fails.is_some_and(|f| f != class) || (fails.is_none() && expect.is_some()) {
                let wanted = match fails {
                    Some(f) => format!("a failure ({})", f.name()),
                    None => format!("{:?}", expect.expect("checked above")),
                };
                script.fail(i, wanted, format!("error ({}): {e}", class.name()));
            }
            if let Some(t) = txn.take() {
                t.abort((&e).into());
            }
            finished(script, name);
        }
    }
}

/// Run every step of a transaction on its client.
pub(super) async fn run_txn(mut thread: Thread<super::PercolatorScript>, client: Arc<Client>) {
    let script = thread.script().clone();
    let name = thread.name().to_string();
    let mut txn: Txn<'_> = None;
    while let Some(i) = thread.next().await {
        let Some(step) = script.steps[i].verb() else {
            continue;
        };
        match step {
            PercolatorVerb::Begin { fails, .. } => {
                txn = begin(&script, i, &name, &client, *fails).await;
            }
            PercolatorVerb::Get { .. } | PercolatorVerb::Scan { .. } => {
                if txn.is_none() {
                    already_failed(&script, i, true);
                    continue;
                }
                read(&script, i, &name, step, &mut txn).await;
            }
            PercolatorVerb::Commit { .. } => {
                commit(&script, i, &name, &client, step, txn.take()).await;
            }
            _ => buffer(&script, i, step, &client, &mut txn),
        }
    }
    // A transaction left open (no commit or abort step) never reached its stop.
    if let Some(t) = txn
        && client.armed(t.id())
        && !client.armed_fired(t.id())
    {
        never_fired(&script, &name, script.steps.len(), "the script ended first");
    }
}

/// The `crash_at` or `pause_at` step of transaction `name` before step
/// `before`, if any.
fn stop_step(script: &Script, name: &str, before: usize) -> Option<(usize, String)> {
    script.steps[..before.min(script.steps.len())]
        .iter()
        .enumerate()
        .rev()
        .find_map(|(k, s)| match s.verb() {
            Some(PercolatorVerb::CrashAt { txn, step, .. }) if txn == name => {
                Some((k, format!("its client to crash at {}", json(step))))
            }
            Some(PercolatorVerb::PauseAt { txn, step }) if txn == name => {
                Some((k, format!("its client to freeze at {}", json(step))))
            }
            _ => None,
        })
}

/// The stop armed for transaction `name` never happened: fail its step.
fn never_fired(script: &Script, name: &str, before: usize, why: &str) {
    if let Some((k, expected)) = stop_step(script, name, before) {
        script.fail(k, expected, format!("the stop never happened: {why}"));
    }
}

async fn begin<'c>(
    script: &Script,
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
            script.with_state(|s| s.names.insert(name.to_string(), ts));
            if let Some(f) = fails {
                let got = format!("began at start_ts {}", t.start_ts().0);
                script.fail(i, format!("a failure ({})", f.name()), got);
            }
            Some(t)
        }
        Err(e) => {
            let class = ErrorClass::of_error(&e);
            if fails != Some(class) {
                let wanted = fails.map_or("a start timestamp".into(), |f| {
                    format!("a failure ({})", f.name())
                });
                script.fail(i, wanted, format!("error ({}): {e}", class.name()));
            }
            finished(script, name);
            None
        }
    }
}

async fn read(script: &Script, i: usize, name: &str, step: &PercolatorVerb, txn: &mut Txn<'_>) {
    let Some(t) = txn.as_mut() else { return };
    match step {
        PercolatorVerb::Get {
            row,
            col,
            expect,
            fails,
            ..
        } => {
            let got = t.get(row, col).await;
            judge_read(script, i, name, (expect.as_ref(), *fails), got, txn);
        }
        PercolatorVerb::Scan {
            start_row,
            end_row,
            col,
            expect,
            fails,
            ..
        } => {
            let got = t
                .scan(start_row, end_row, std::slice::from_ref(col))
                .await
                .map(|cells| {
                    cells
                        .iter()
                        .map(|(c, v)| format!("{}={v}", c.row))
                        .collect::<Vec<String>>()
                });
            judge_read(script, i, name, (expect.as_ref(), *fails), got, txn);
        }
        _ => {}
    }
}

/// A `crash_at` or `pause_at` step of a transaction that already failed:
/// its stop can never happen.
fn not_armed(script: &Script, i: usize) {
    script.fail(
        i,
        "the stop armed",
        "nothing: the transaction had already failed, so its commit never runs",
    );
}

/// The steps that act at once: buffer a write, arm a fault, abort.
fn buffer(
    script: &Script,
    i: usize,
    step: &PercolatorVerb,
    client: &Arc<Client>,
    txn: &mut Txn<'_>,
) {
    match step {
        PercolatorVerb::Set {
            row, col, value, ..
        } => {
            if let Some(t) = txn.as_mut() {
                t.set(row, col, value.clone());
            }
        }
        PercolatorVerb::Delete { row, col, .. } => {
            if let Some(t) = txn.as_mut() {
                t.delete(row, col);
            }
        }
        PercolatorVerb::CrashAt {
            step,
            restart_after_ms,
            ..
        } => match txn.as_ref() {
            Some(t) => {
                let restart_after_ms = *restart_after_ms;
                client.arm(t.id(), *step, Armed::Crash { restart_after_ms });
            }
            None => not_armed(script, i),
        },
        PercolatorVerb::PauseAt { step, .. } => match txn.as_ref() {
            Some(t) => client.arm(t.id(), *step, Armed::Pause),
            None => not_armed(script, i),
        },
        PercolatorVerb::Abort { txn: name } => {
            if let Some(t) = txn.take() {
                if client.armed(t.id()) && !client.armed_fired(t.id()) {
                    never_fired(
                        script,
                        name,
                        i,
                        "the transaction was aborted before its commit",
                    );
                }
                t.abort(AbortReason::User);
            }
            finished(script, name);
        }
        _ => {}
    }
}

async fn commit(
    script: &Script,
    i: usize,
    name: &str,
    client: &Arc<Client>,
    step: &PercolatorVerb,
    txn: Txn<'_>,
) {
    let PercolatorVerb::Commit {
        expect,
        fails,
        no_wait,
        ..
    } = step
    else {
        return;
    };
    let Some(t) = txn else {
        already_failed(script, i, expect.is_some() || fails.is_some());
        return;
    };
    if !*no_wait && client.armed(t.id()) {
        let (client, id) = (client.clone(), t.id());
        script.finish_when(i, move || client.armed_fired(id));
    }
    let t_id = t.id();
    let outcome = t.commit().await;
    let (got, class) = match &outcome {
        CommitOutcome::Committed { commit_ts } => {
            script.with_state(|s| {
                if let Some(ts) = s.names.get_mut(name) {
                    ts.commit_ts = commit_ts.map(|c| c.0);
                }
            });
            (ExpectOutcome::Committed, None)
        }
        CommitOutcome::Aborted { reason } => (ExpectOutcome::Aborted, ErrorClass::of_abort(reason)),
        CommitOutcome::Unknown => (ExpectOutcome::Unknown, None),
    };
    finished(script, name);
    if client.armed(t_id) && !client.armed_fired(t_id) {
        let why = format!("the commit ended ({outcome:?}) before reaching it");
        never_fired(script, name, i, &why);
    }
    let words = |e: &ExpectOutcome, _: &ExpectOutcome| (format!("{e:?}"), format!("{outcome:?}"));
    script.fail_on(i, judge(*expect, &got, |e, g| e == g, words));
    if let Some(f) = fails.filter(|f| class != Some(*f)) {
        script.fail(
            i,
            format!("a failure ({})", f.name()),
            format!("{outcome:?}"),
        );
    }
}

/// Run one of Percolator's driver steps that is not an assertion.
pub(super) fn driver_step(verb: &PercolatorVerb, control: &Controller) {
    if let PercolatorVerb::ExpireSession { client } = verb {
        control.inject(&Fault::ExpireSession { client: *client });
    }
}

/// Install a message rule: its transaction by start_ts, its cells.
pub(super) fn install(
    script: &Script,
    rule: &MessageRule,
    words: RuleWords,
    control: &Controller,
) -> Result<RuleId, Mismatch> {
    let txn = match &rule.txn {
        None => None,
        Some(t) => match script.with_state(|s| s.names.get(t).copied()) {
            Some(ts) => Some(Ts(ts.start_ts)),
            None => {
                let why = format!("{t} has no start_ts (its begin failed or has not returned)");
                return Err(Mismatch::new("a rule installed", why));
            }
        },
    };
    let writes: Vec<CellKey> = match &rule.txn {
        Some(t) => cells_of(script, t)
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
    let fault = MessageFault {
        call: rule.call.0,
        txn,
        cells,
        client: rule.client,
        leg: words.leg,
        fate: words.fate,
        times: words.times,
    };
    Ok(control.intercept(&fault))
}

/// Whether a wait condition holds now.
pub(super) fn holds(script: &Script, until: &WaitFor, control: &Controller) -> bool {
    script.with_state(|s| {
        let view = View {
            control,
            names: &s.names,
        };
        view.holds(until, &s.finished)
    })
}

/// Check one of Percolator's assertions now.
pub(super) fn assert(
    script: &Script,
    step: &PercolatorVerb,
    control: &Controller,
) -> Option<Mismatch> {
    let found = script.with_state(|s| {
        let view = View {
            control,
            names: &s.names,
        };
        match step {
            PercolatorVerb::AssertCell(a) => view.check_cell(a),
            PercolatorVerb::AssertStored { txn, store } => {
                view.check_stored(txn, &cells_of(script, txn), *store)
            }
            _ => None,
        }
    });
    found.map(|(expected, happened)| Mismatch { expected, happened })
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}
