//! How an Omid script runs: each transaction's steps on its client, the
//! driver's assertions on the store, and the script as the program the
//! cluster runs.

use super::{
    Begun, ExpectEntry, ExpectOutcome, OmidScript, OmidScriptFile, OmidVerb, ScriptControlOf, lock,
};
use crate::script::{Mismatch, Thread, judge};
use percsim_protocol::omid::CtEntry;
use percsim_sim::BoxFuture;
use percsim_sim::omid::{OmidClient, OmidControl, OmidOutcome, OmidProgram, OmidTxn};

/// A value as a script writes it: the string, or `null`.
fn shown(value: &Option<String>) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// What a client was told, in a script's words.
fn told(outcome: &OmidOutcome) -> String {
    match outcome {
        OmidOutcome::Committed { .. } => "committed".into(),
        OmidOutcome::Aborted { reason } => format!("aborted ({reason})"),
    }
}

/// Run one transaction's steps on its client and record what they did not
/// meet.
pub(super) async fn run_txn(mut thread: Thread<OmidScript>, client: OmidClient) {
    let script = thread.script().clone();
    let name = thread.name().to_string();
    let mut txn: Option<OmidTxn> = None;
    while let Some(i) = thread.next().await {
        let Some(verb) = script.steps[i].verb().cloned() else {
            continue;
        };
        if let OmidVerb::Begin { .. } = verb {
            let t = client.begin().await;
            let begun = Begun {
                id: t.id(),
                start_ts: t.start_ts(),
            };
            script.with_state(|s| lock(&s.txns).insert(name.clone(), begun));
            txn = Some(t);
            continue;
        }
        let Some(t) = txn.take() else {
            // The validation lets no step of a transaction come before its
            // begin; a restarted client's task skips the steps already run.
            continue;
        };
        txn = step(&script, i, verb, &client, t).await;
    }
}

/// Run step `i` of a begun transaction; the transaction, unless the step
/// ended it.
async fn step(
    script: &OmidScriptFile,
    i: usize,
    verb: OmidVerb,
    client: &OmidClient,
    mut txn: OmidTxn,
) -> Option<OmidTxn> {
    match verb {
        OmidVerb::Get {
            row, col, expect, ..
        } => {
            let seen = client.get(&txn, &row, &col).await;
            if let Some(e) = expect.filter(|e| *e != seen) {
                script.fail(i, shown(&e), shown(&seen));
            }
        }
        OmidVerb::Put {
            row, col, value, ..
        } => client.put(&mut txn, &row, &col, value).await,
        OmidVerb::Delete { row, col, .. } => client.delete(&mut txn, &row, &col).await,
        OmidVerb::Commit {
            txn: name, expect, ..
        } => {
            let outcome = client.commit(txn).await;
            let met = |e: &ExpectOutcome, o: &OmidOutcome| {
                matches!(
                    (e, o),
                    (ExpectOutcome::Committed, OmidOutcome::Committed { .. })
                        | (ExpectOutcome::Aborted, OmidOutcome::Aborted { .. })
                )
            };
            let word = |e: &ExpectOutcome| match e {
                ExpectOutcome::Committed => "committed",
                ExpectOutcome::Aborted => "aborted",
            };
            let words = |e: &ExpectOutcome, o: &OmidOutcome| (word(e).to_string(), told(o));
            script.fail_on(i, judge(expect, &outcome, met, words));
            script.with_state(|s| s.told.insert(name, outcome));
            return None;
        }
        OmidVerb::Abort { txn: name } => {
            client.abort(txn).await;
            let outcome = OmidOutcome::Aborted {
                reason: "rolled back".into(),
            };
            script.with_state(|s| s.told.insert(name, outcome));
            return None;
        }
        OmidVerb::Begin { .. }
        | OmidVerb::AssertCommitTable { .. }
        | OmidVerb::AssertCell { .. } => {}
    }
    Some(txn)
}

/// An entry in a script's words.
fn entry_word(entry: Option<CtEntry>) -> &'static str {
    match entry {
        None => "none",
        Some(CtEntry::Committed { .. }) => "committed",
        Some(CtEntry::Invalid) => "invalid",
    }
}

/// Check one of the driver's assertions on the store now.
pub(super) fn assert(verb: &OmidVerb, control: &ScriptControlOf) -> Option<Mismatch> {
    let begun = control.txn(verb.txn());
    let Some(begun) = begun else {
        return Some(Mismatch::new(
            format!("transaction {:?} begun", verb.txn()),
            "it is not begun yet",
        ));
    };
    match verb {
        OmidVerb::AssertCommitTable { entry, .. } => {
            let now = entry_word(control.control.commit_table(begun.start_ts));
            let want = match entry {
                ExpectEntry::None => "none",
                ExpectEntry::Committed => "committed",
                ExpectEntry::Invalid => "invalid",
            };
            (now != want).then(|| {
                Mismatch::new(
                    format!("commit-table entry {want}"),
                    format!("the entry is {now}"),
                )
            })
        }
        OmidVerb::AssertCell {
            row,
            col,
            data,
            shadow,
            value,
            ..
        } => {
            let cell = (row.as_str(), col.as_str());
            assert_cell(&control.control, begun, cell, (*data, *shadow, value))
        }
        _ => None,
    }
}

/// Check the data cell of `begun` in (`row`, `col`): present or not, its
/// shadow cell present or not, its value.
fn assert_cell(
    control: &OmidControl,
    begun: Begun,
    (row, col): (&str, &str),
    (data, shadow, value): (Option<bool>, Option<bool>, &Option<String>),
) -> Option<Mismatch> {
    let versions = control.versions(row, col);
    let mine = versions.iter().find(|v| v.start_ts == begun.start_ts);
    let cell = format!("({row}, {col})");
    if let Some(d) = data.filter(|d| *d != mine.is_some()) {
        let say = |b: bool| if b { "present" } else { "absent" };
        return Some(Mismatch::new(
            format!("its data cell in {cell} {}", say(d)),
            format!("it is {}", say(!d)),
        ));
    }
    let has_shadow = mine.is_some_and(|v| v.shadow_ts.is_some());
    if let Some(s) = shadow.filter(|s| *s != has_shadow) {
        let say = |b: bool| if b { "present" } else { "absent" };
        return Some(Mismatch::new(
            format!("its shadow cell in {cell} {}", say(s)),
            format!("it is {}", say(!s)),
        ));
    }
    let stored = mine.and_then(|v| v.value.clone());
    match value {
        Some(want) if stored.as_ref() != Some(want) => Some(Mismatch::new(
            format!("its data cell in {cell} to hold {want:?}"),
            format!("it holds {}", shown(&stored)),
        )),
        _ => None,
    }
}

/// The `script` workload as the cluster runs it: each client runs its
/// transactions, the driver and the final check are the script's.
#[derive(Debug, Clone)]
pub struct ScriptProgram(pub OmidScriptFile);

impl OmidProgram for ScriptProgram {
    fn client(&self, client: OmidClient) -> BoxFuture<()> {
        let script = self.0.clone();
        Box::pin(async move {
            let index = client.index();
            script.run_client(index, client).await;
        })
    }

    fn driver(&self, control: OmidControl) -> Option<BoxFuture<()>> {
        let control = ScriptControlOf {
            control,
            txns: self.0.with_state(|s| s.txns.clone()),
        };
        Some(self.0.start_driver(control))
    }

    fn final_check(&self) -> Vec<String> {
        self.0.final_failures()
    }
}
