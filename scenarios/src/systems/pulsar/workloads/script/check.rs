//! A Pulsar script's checks: its steps before the run (actors, names,
//! what the model cannot do, refused by name) and its assertions on the
//! durable logs while it runs.

use super::{PulsarRule, PulsarScriptFile, PulsarVerb, ScriptControlOf, TxnRecord};
use crate::script::{Env, Mismatch, Step};
use percsim_protocol::pulsar::buffer::Entry;
use percsim_protocol::pulsar::coordinator::{LogRecord, TxnState};
use percsim_protocol::pulsar::subscription::{self, SubLogs};
use percsim_protocol::pulsar::types::{TxnAction, TxnId};
use std::collections::{BTreeMap, BTreeSet};

/// The step that declares actor `actor`, if any before `before`.
fn declaration<'a>(s: &'a PulsarScriptFile, actor: &str, before: usize) -> Option<&'a PulsarVerb> {
    s.steps[..before.min(s.steps.len())]
        .iter()
        .filter_map(Step::verb)
        .find(|v| {
            matches!(v, PulsarVerb::Producer { .. } | PulsarVerb::Consumer { .. })
                && v.actor() == Some(actor)
        })
}

/// Check that transaction `txn` is begun by a step before this one.
pub(super) fn txn_begun(s: &PulsarScriptFile, txn: &str, env: &Env<'_>) -> Result<(), String> {
    let begun = s.steps[..env.index().min(s.steps.len())]
        .iter()
        .filter_map(Step::verb)
        .any(|v| matches!(v, PulsarVerb::Begin { txn: t, .. } if t == txn));
    match begun {
        true => Ok(()),
        false => Err(format!(
            "{}.txn: transaction {txn:?} is not begun before this step",
            env.at()
        )),
    }
}

/// Check that `actor` is a consumer.
fn consumer(s: &PulsarScriptFile, actor: &str, env: &Env<'_>) -> Result<(), String> {
    match declaration(s, actor, env.index()) {
        Some(PulsarVerb::Consumer { .. }) => Ok(()),
        _ => Err(format!(
            "{}.actor: {actor:?} is not a consumer (only a consumer receives, acknowledges, redelivers, closes or reopens)",
            env.at()
        )),
    }
}

/// Check one of Pulsar's steps.
pub(super) fn validate_verb(
    s: &PulsarScriptFile,
    verb: &PulsarVerb,
    env: &Env<'_>,
) -> Result<(), String> {
    let at = env.at();
    match verb {
        PulsarVerb::Producer { client, .. } => env.client(*client),
        PulsarVerb::Consumer {
            client,
            subscription_type,
            receiver_queue,
            ..
        } => {
            env.client(*client)?;
            if subscription_type.modelled().is_none() {
                return Err(format!(
                    "{at}.subscription_type: consumer: {subscription_type:?} is not modelled (the model has shared, exclusive and failover)"
                ));
            }
            match receiver_queue {
                Some(0) => Err(format!("{at}.receiver_queue: must be at least 1")),
                _ => Ok(()),
            }
        }
        PulsarVerb::Begin { txn, .. } => unique_txn(s, txn, env),
        PulsarVerb::Send { txn, .. } => txn.as_ref().map_or(Ok(()), |t| txn_begun(s, t, env)),
        PulsarVerb::Recv { actor, expect, .. } => {
            consumer(s, actor, env)?;
            let given = usize::from(expect.expect.is_some())
                + usize::from(expect.expect_set.is_some())
                + usize::from(expect.expect_none)
                + usize::from(expect.expect_refused);
            match given {
                0 | 1 => Ok(()),
                _ => Err(format!(
                    "{at}: recv: give at most one of expect, expect_set, expect_none, expect_refused"
                )),
            }
        }
        PulsarVerb::Ack { actor, txn, .. } => {
            consumer(s, actor, env)?;
            txn.as_ref().map_or(Ok(()), |t| txn_begun(s, t, env))
        }
        PulsarVerb::Redeliver { actor }
        | PulsarVerb::Reopen { actor }
        | PulsarVerb::Close { actor } => consumer(s, actor, env),
        PulsarVerb::Commit { txn, .. } | PulsarVerb::Abort { txn, .. } => txn_begun(s, txn, env),
        PulsarVerb::AssertTxn { txn, .. } => txn_begun(s, txn, env),
        PulsarVerb::AssertSubscription { pending, .. } => pending
            .iter()
            .flat_map(|p| p.keys())
            .try_for_each(|t| txn_begun(s, t, env)),
        PulsarVerb::AssertLog { .. } => Ok(()),
        PulsarVerb::Unload {
            partition,
            coordinator,
        } => match (partition, coordinator) {
            (Some(_), false) | (None, true) => Ok(()),
            _ => Err(format!(
                "{at}: unload: give either partition or coordinator: true"
            )),
        },
    }
}

/// A transaction's name is begun once.
fn unique_txn(s: &PulsarScriptFile, txn: &str, env: &Env<'_>) -> Result<(), String> {
    match txn_begun(s, txn, env) {
        Ok(()) => Err(format!(
            "{}.txn: transaction {txn:?} is begun twice",
            env.at()
        )),
        Err(_) => Ok(()),
    }
}

/// Check a message rule's targets.
pub(super) fn validate_rule(
    s: &PulsarScriptFile,
    rule: &PulsarRule,
    env: &Env<'_>,
) -> Result<(), String> {
    if let Some(t) = &rule.txn {
        txn_begun(s, t, env)?;
    }
    match (rule.call, rule.client) {
        (super::PulsarCall::Marker, Some(_)) => Err(format!(
            "{}.client: the coordinator sends markers, not a client",
            env.at()
        )),
        (_, Some(c)) => env.client(c),
        _ => Ok(()),
    }
}

/// The name a script gave `txn`, else its id.
fn name_of(names: &BTreeMap<String, TxnId>, txn: TxnId) -> String {
    names
        .iter()
        .find(|(_, t)| **t == txn)
        .map_or_else(|| txn.to_string(), |(n, _)| n.clone())
}

/// A log entry as `assert_log` spells it.
fn entry_word(e: &Entry, names: &BTreeMap<String, TxnId>) -> String {
    match e {
        Entry::Message(m) => m.payload.clone(),
        Entry::Marker { txn, action } => {
            let a = match action {
                TxnAction::Commit => "commit",
                TxnAction::Abort => "abort",
            };
            format!("<{a} {}>", name_of(names, *txn))
        }
    }
}

/// The coordinator's durable record of the transaction named `txn`.
pub(super) fn txn_record(control: &ScriptControlOf, txn: &str) -> TxnRecord {
    let Some(id) = control.txn(txn) else {
        return TxnRecord::Absent;
    };
    let mut record = TxnRecord::Absent;
    for r in control.control.coordinator_log() {
        match r {
            LogRecord::Open { txn, .. } if txn == id => record = TxnRecord::Open,
            LogRecord::State { txn, state } if txn == id => {
                record = match state {
                    TxnState::Open => TxnRecord::Open,
                    TxnState::Committing => TxnRecord::Committing,
                    TxnState::Aborting => TxnRecord::Aborting,
                    TxnState::Committed => TxnRecord::Committed,
                    TxnState::Aborted => TxnRecord::Aborted,
                }
            }
            _ => {}
        }
    }
    record
}

/// Check one of Pulsar's assertions now.
pub(super) fn assert(
    _s: &PulsarScriptFile,
    verb: &PulsarVerb,
    control: &ScriptControlOf,
) -> Option<Mismatch> {
    let names = super::lock(&control.txns).clone();
    match verb {
        PulsarVerb::AssertLog { partition, entries } => {
            let p = control.partition(*partition);
            let log = control.control.partition_log(&p);
            let now: Vec<String> = log.iter().map(|e| entry_word(e, &names)).collect();
            (now != *entries).then(|| {
                Mismatch::new(
                    format!("{p} to hold {entries:?}"),
                    format!("it holds {now:?}"),
                )
            })
        }
        PulsarVerb::AssertSubscription {
            partition,
            subscription,
            mark_delete,
            acked,
            pending,
        } => {
            let p = control.partition(*partition);
            let log = control.control.subscription_log(&p, subscription);
            let view = SubView::of(&log, &names);
            view.differs(mark_delete, acked, pending)
                .map(|(want, got)| Mismatch::new(format!("{p}/{subscription}: {want}"), got))
        }
        PulsarVerb::AssertTxn { txn, state } => {
            let now = txn_record(control, txn);
            (now != *state).then(|| {
                Mismatch::new(
                    format!("the coordinator's record of {txn} to be {state:?}"),
                    format!("it is {now:?}"),
                )
            })
        }
        _ => None,
    }
}

/// A subscription's durable state, as `assert_subscription` reads it.
struct SubView {
    acked: BTreeSet<u64>,
    pending: BTreeMap<String, Vec<u64>>,
}

impl SubView {
    fn of(logs: &SubLogs, names: &BTreeMap<String, TxnId>) -> SubView {
        let sub = subscription::recover(logs);
        let acked = sub.acked_entries().collect();
        let mut pending: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for (pos, txn) in sub.pending_acks() {
            let offsets = pending.entry(name_of(names, txn)).or_default();
            if offsets.last() != Some(&pos.offset) {
                offsets.push(pos.offset);
            }
        }
        SubView { acked, pending }
    }

    /// The first offset not acknowledged.
    fn mark_delete(&self) -> u64 {
        (0..).find(|o| !self.acked.contains(o)).unwrap_or(0)
    }

    fn differs(
        &self,
        mark_delete: &Option<u64>,
        acked: &Option<Vec<u64>>,
        pending: &Option<BTreeMap<String, Vec<u64>>>,
    ) -> Option<(String, String)> {
        if let Some(m) = mark_delete.filter(|m| *m != self.mark_delete()) {
            return Some((
                format!("mark-delete position {m}"),
                format!("it is {}", self.mark_delete()),
            ));
        }
        let now: Vec<u64> = self.acked.iter().copied().collect();
        if let Some(a) = acked.as_ref().filter(|a| **a != now) {
            return Some((format!("acked {a:?}"), format!("acked {now:?}")));
        }
        if let Some(p) = pending.as_ref().filter(|p| **p != self.pending) {
            return Some((
                format!("pending acks {p:?}"),
                format!("pending acks {:?}", self.pending),
            ));
        }
        None
    }
}
