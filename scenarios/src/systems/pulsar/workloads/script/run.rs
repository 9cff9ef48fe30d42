//! Running one actor: its steps in order on its client's node, each
//! judged against its expectation as it returns.

use super::{Answered, PulsarScript, PulsarScriptFile, PulsarVerb, RecvExpect, Told, lock};
use crate::script::{Step, SystemVerb, Thread};
use percsim_protocol::pulsar::client::{
    AbortReason, ClientError, Consumer, PulsarTxn, TxnOutcome, ack, send,
};
use percsim_protocol::pulsar::types::{Partition, SubscriptionKey};
use percsim_sim::Conn;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How many messages a read fetches by default.
const DEFAULT_RECEIVER_QUEUE: usize = 1000;

/// How long a consumer waits between two reads that found nothing.
const POLL_MS: u64 = 10;

/// The index of `actor` among the actors of its client (its task there).
fn actor_index(script: &PulsarScriptFile, actor: &str) -> usize {
    let verbs = || script.steps.iter().filter_map(Step::verb);
    let client = verbs()
        .find(|v| v.thread() == Some(actor) && v.opens().is_some())
        .and_then(|v| v.opens());
    verbs()
        .filter(|v| v.opens().is_some() && v.opens() == client)
        .position(|v| v.thread() == Some(actor))
        .unwrap_or(0)
}

/// What a consumer actor holds.
struct Reader {
    /// Its connection (a reopen moves it to a new session).
    conn: Conn,
    consumer: Consumer,
    /// How many messages one read fetches at most.
    queue: usize,
    /// Where each value it received is: its subscription and offset.
    received: BTreeMap<String, (SubscriptionKey, u64)>,
}

/// Run one actor's steps on its client.
pub(super) async fn run_actor(mut thread: Thread<PulsarScript>, first: Arc<Conn>) {
    let script = thread.script().clone();
    let conn = first.sibling(actor_index(&script, thread.name()));
    let names = script.with_state(|s| s.txns.clone());
    let topic = script.system.topic.clone();
    let mut reader: Option<Reader> = None;
    let mut txns: BTreeMap<String, PulsarTxn<'_, Conn>> = BTreeMap::new();
    while let Some(i) = thread.next().await {
        let Some(verb) = script.steps[i].verb().cloned() else {
            continue;
        };
        let part = |k: u32| Partition::new(&topic, k);
        match verb {
            PulsarVerb::Consumer {
                partition,
                subscription,
                receiver_queue,
                ..
            } => {
                let sub = SubscriptionKey::new(part(partition), &subscription);
                reader = Some(Reader {
                    conn: conn.sibling(actor_index(&script, thread.name())),
                    consumer: Consumer::new(sub),
                    queue: receiver_queue.unwrap_or(DEFAULT_RECEIVER_QUEUE),
                    received: BTreeMap::new(),
                });
            }
            PulsarVerb::Begin {
                txn, timeout_ms, ..
            } => {
                let begun = match timeout_ms {
                    Some(ms) => PulsarTxn::begin_with_timeout(&conn, ms).await,
                    None => PulsarTxn::begin(&conn).await,
                };
                match begun {
                    Ok(t) => {
                        lock(&names).insert(txn.clone(), t.id());
                        txns.insert(txn, t);
                    }
                    Err(e) => script.fail(i, format!("{txn} to begin"), format!("it failed: {e}")),
                }
            }
            PulsarVerb::Send {
                partition,
                value,
                txn,
                expect,
                expect_offset,
                ..
            } => {
                let p = part(partition);
                let sent = match &txn {
                    Some(name) => match txns.get_mut(name) {
                        Some(t) => t.send(&p, &value).await,
                        None => {
                            script.fail(i, format!("{name} open"), "it is not open");
                            continue;
                        }
                    },
                    None => send(&conn, &p, &value).await,
                };
                if let Some((want, got)) = judge_answer(expect, expect_offset, sent) {
                    script.fail(i, want, got);
                }
            }
            PulsarVerb::Recv {
                expect,
                quiet_ms,
                within_ms,
                ..
            } => {
                if let Some(r) = reader.as_mut()
                    && let Some((want, got)) = receive(r, &expect, quiet_ms, within_ms).await
                {
                    script.fail(i, want, got);
                }
            }
            PulsarVerb::Ack {
                value, txn, expect, ..
            } => {
                let Some(r) = reader.as_ref() else { continue };
                let Some((sub, offset)) = r.received.get(&value).cloned() else {
                    script.fail(i, format!("a received message {value:?}"), "none was received");
                    continue;
                };
                let acked = match &txn {
                    Some(name) => match txns.get_mut(name) {
                        Some(t) => t.ack(&sub, offset).await,
                        None => {
                            script.fail(i, format!("{name} open"), "it is not open");
                            continue;
                        }
                    },
                    None => ack(&r.conn, &sub, offset).await,
                };
                if let Some((want, got)) = judge_answer(expect, None, acked.map(|()| offset)) {
                    script.fail(i, want, got);
                }
            }
            PulsarVerb::Redeliver { .. } => {
                if let Some(r) = reader.as_mut() {
                    r.consumer.redeliver_later();
                }
            }
            PulsarVerb::Reopen { .. } => {
                if let Some(r) = reader.as_mut() {
                    r.conn = r.conn.reopened();
                    r.consumer = Consumer::new(r.consumer.subscription().clone());
                }
            }
            PulsarVerb::Commit {
                txn,
                expect,
                reason,
                ..
            } => {
                let Some(t) = txns.remove(&txn) else {
                    script.fail(i, format!("{txn} open"), "it is not open");
                    continue;
                };
                let told = t.commit().await;
                script.with_state(|s| s.told.insert(txn, told));
                if let Some((want, got)) = judge_told(expect, reason, told) {
                    script.fail(i, want, got);
                }
            }
            PulsarVerb::Abort { txn, .. } => {
                let Some(t) = txns.remove(&txn) else {
                    script.fail(i, format!("{txn} open"), "it is not open");
                    continue;
                };
                let told = t.abort(AbortReason::User).await;
                script.with_state(|s| s.told.insert(txn, told));
            }
            _ => {}
        }
    }
}

/// A send's or ack's answer against what the step expects.
fn judge_answer(
    expect: Answered,
    offset: Option<u64>,
    got: Result<u64, ClientError>,
) -> Option<(String, String)> {
    match (expect, got) {
        (Answered::Accepted, Ok(o)) => offset
            .filter(|want| *want != o)
            .map(|want| (format!("offset {want}"), format!("offset {o}"))),
        (Answered::Accepted, Err(e)) => Some(("accepted".into(), format!("failed: {e}"))),
        (Answered::Failed, Ok(o)) => Some(("failed".into(), format!("accepted (offset {o})"))),
        (Answered::Failed, Err(_)) => None,
    }
}

/// How a script spells what a client was told.
fn told_word(t: TxnOutcome) -> String {
    match t {
        TxnOutcome::Committed => "committed".into(),
        TxnOutcome::Aborted { reason } => {
            let r = serde_json::to_string(&reason).unwrap_or_default();
            format!("aborted ({})", r.trim_matches('"'))
        }
        TxnOutcome::Unknown => "unknown".into(),
    }
}

/// What a commit was told against what the step expects.
fn judge_told(
    expect: Option<Told>,
    reason: Option<AbortReason>,
    got: TxnOutcome,
) -> Option<(String, String)> {
    let want = expect?;
    let ok = match (want, got) {
        (Told::Committed, TxnOutcome::Committed) | (Told::Unknown, TxnOutcome::Unknown) => true,
        (Told::Aborted, TxnOutcome::Aborted { reason: r }) => reason.is_none_or(|w| w == r),
        _ => false,
    };
    let want = match (want, reason) {
        (Told::Aborted, Some(r)) => told_word(TxnOutcome::Aborted { reason: r }),
        (w, _) => serde_json::to_string(&w)
            .unwrap_or_default()
            .trim_matches('"')
            .to_string(),
    };
    (!ok).then(|| (want, told_word(got)))
}

/// One read; the values received, recorded for later acks.
async fn poll(r: &mut Reader) -> Vec<String> {
    let got = r
        .consumer
        .receive(&r.conn, r.queue)
        .await
        .unwrap_or_default();
    let sub = r.consumer.subscription().clone();
    got.into_iter()
        .map(|m| {
            let v = m.message.payload;
            r.received.insert(v.clone(), (sub.clone(), m.offset));
            v
        })
        .collect()
}

/// Read until `until` holds of what came or `ms` passed; what came.
async fn read_for(r: &mut Reader, ms: u64, got: &mut Vec<String>, until: impl Fn(&[String]) -> bool) {
    let deadline = madsim::time::Instant::now() + Duration::from_millis(ms);
    while !until(got) && madsim::time::Instant::now() < deadline {
        let more = poll(r).await;
        if more.is_empty() {
            madsim::time::sleep(Duration::from_millis(POLL_MS)).await;
        }
        got.extend(more);
    }
}

/// Receive as `expect` says; a mismatch as (expected, happened).
async fn receive(
    r: &mut Reader,
    expect: &RecvExpect,
    quiet_ms: u64,
    within_ms: u64,
) -> Option<(String, String)> {
    let mut got = Vec::new();
    if let Some(want) = &expect.expect {
        read_for(r, within_ms, &mut got, |g| g.len() >= want.len()).await;
        read_for(r, quiet_ms, &mut got, |_| false).await;
        return (got != *want).then(|| {
            (
                format!("{want:?} then nothing for {quiet_ms} ms"),
                format!("received {got:?}"),
            )
        });
    }
    if let Some(want) = &expect.expect_set {
        let all = |g: &[String]| want.iter().all(|w| g.contains(w));
        read_for(r, within_ms, &mut got, all).await;
        let stray = got.iter().any(|g| !want.contains(g));
        return (stray || !all(&got)).then(|| {
            (
                format!("{want:?} in any order within {within_ms} ms"),
                format!("received {got:?}"),
            )
        });
    }
    read_for(r, quiet_ms, &mut got, |_| false).await;
    (expect.expect_none && !got.is_empty()).then(|| {
        (
            format!("nothing for {quiet_ms} ms"),
            format!("received {got:?}"),
        )
    })
}
