//! Running one actor: its steps in order on its client's node, each
//! judged against its expectation as it returns.

use super::{Answered, PulsarScript, PulsarScriptFile, PulsarVerb, RecvExpect, Told, lock};
use crate::script::{Step, SystemVerb, Thread, judge};
use percsim_protocol::pulsar::client::{
    AbortReason, ClientError, Consumer, PulsarTxn, TxnOutcome, ack_target, send, send_batch,
};
use percsim_protocol::pulsar::subscription::AckTarget;
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
    /// Whether it is closed (until a reopen).
    closed: bool,
    /// Why the broker refused its last read, if it did.
    refused: Option<ClientError>,
    /// Where each value it received is: its subscription, its entry's
    /// offset and its index in the entry.
    received: BTreeMap<String, (SubscriptionKey, u64, u32)>,
}

/// One actor while it runs: its connection, its consumer (if it is one)
/// and the transactions it has open.
struct Actor<'c> {
    script: PulsarScriptFile,
    conn: &'c Conn,
    index: usize,
    reader: Option<Reader>,
    txns: BTreeMap<String, PulsarTxn<'c, Conn>>,
}

/// Run one actor's steps on its client.
pub(super) async fn run_actor(mut thread: Thread<PulsarScript>, first: Arc<Conn>) {
    let script = thread.script().clone();
    let index = actor_index(&script, thread.name());
    let conn = first.sibling(index);
    let mut actor = Actor {
        script: script.clone(),
        conn: &conn,
        index,
        reader: None,
        txns: BTreeMap::new(),
    };
    while let Some(i) = thread.next().await {
        if let Some(verb) = script.steps[i].verb().cloned() {
            actor.step(i, verb).await;
        }
    }
}

impl<'c> Actor<'c> {
    fn partition(&self, k: u32) -> Partition {
        Partition::new(&self.script.system.topic, k)
    }

    /// Run step `i`, `verb`, and record what it did not meet.
    async fn step(&mut self, i: usize, verb: PulsarVerb) {
        let failed = match verb {
            PulsarVerb::Consumer {
                partition,
                subscription,
                subscription_type,
                receiver_queue,
                ..
            } => {
                let sub = SubscriptionKey::new(self.partition(partition), &subscription);
                let kind = subscription_type.modelled().unwrap_or_default();
                self.reader = Some(Reader {
                    conn: self.conn.sibling(self.index),
                    consumer: Consumer::of_type(sub, kind),
                    queue: receiver_queue.unwrap_or(DEFAULT_RECEIVER_QUEUE),
                    closed: false,
                    refused: None,
                    received: BTreeMap::new(),
                });
                None
            }
            PulsarVerb::Begin {
                txn, timeout_ms, ..
            } => self.begin(txn, timeout_ms).await,
            PulsarVerb::Send {
                partition,
                value,
                batch,
                txn,
                expect,
                expect_offset,
                ..
            } => {
                let p = self.partition(partition);
                let mut values = vec![value.as_str()];
                values.extend(batch.iter().map(String::as_str));
                self.send(&p, &values, txn, expect, expect_offset).await
            }
            PulsarVerb::Recv {
                expect,
                quiet_ms,
                within_ms,
                ..
            } => match self.reader.as_mut() {
                Some(r) if r.closed => Some(("an open consumer".into(), "it is closed".into())),
                Some(r) => receive(r, &expect, quiet_ms, within_ms).await,
                None => None,
            },
            PulsarVerb::Ack {
                value,
                txn,
                cumulative,
                expect,
                ..
            } => self.ack(&value, txn, cumulative, expect).await,
            PulsarVerb::Redeliver { .. } => {
                if let Some(r) = self.reader.as_mut() {
                    r.consumer.redeliver_later();
                }
                None
            }
            PulsarVerb::Reopen { .. } => {
                if let Some(r) = self.reader.as_mut() {
                    r.conn = r.conn.reopened();
                    let sub = r.consumer.subscription().clone();
                    r.consumer = Consumer::of_type(sub, r.consumer.kind());
                    r.closed = false;
                }
                None
            }
            PulsarVerb::Close { .. } => match self.reader.as_mut() {
                Some(r) => {
                    r.closed = true;
                    let closed = r.consumer.close(&r.conn).await;
                    closed
                        .err()
                        .map(|e| ("closed".into(), format!("failed: {e}")))
                }
                None => None,
            },
            PulsarVerb::Commit {
                txn,
                expect,
                reason,
                ..
            } => self.end(txn, Some((expect, reason))).await,
            PulsarVerb::Abort { txn, .. } => self.end(txn, None).await,
            _ => None,
        };
        if let Some((want, got)) = failed {
            self.script.fail(i, want, got);
        }
    }

    async fn begin(&mut self, txn: String, timeout_ms: Option<u64>) -> Option<(String, String)> {
        let begun = match timeout_ms {
            Some(ms) => PulsarTxn::begin_with_timeout(self.conn, ms).await,
            None => PulsarTxn::begin(self.conn).await,
        };
        match begun {
            Ok(t) => {
                let names = self.script.with_state(|s| s.txns.clone());
                lock(&names).insert(txn.clone(), t.id());
                self.txns.insert(txn, t);
                None
            }
            Err(e) => Some((format!("{txn} to begin"), format!("it failed: {e}"))),
        }
    }

    async fn send(
        &mut self,
        p: &Partition,
        values: &[&str],
        txn: Option<String>,
        expect: Answered,
        offset: Option<u64>,
    ) -> Option<(String, String)> {
        let sent = match (&txn, values) {
            (Some(name), _) => match self.txns.get_mut(name) {
                Some(t) if values.len() > 1 => t.send_batch(p, values).await,
                Some(t) => t.send(p, values[0]).await,
                None => return Some((format!("{name} open"), "it is not open".into())),
            },
            (None, [value]) => send(self.conn, p, value).await,
            (None, _) => send_batch(self.conn, p, values).await,
        };
        judge_answer(expect, offset, sent)
    }

    async fn ack(
        &mut self,
        value: &str,
        txn: Option<String>,
        cumulative: bool,
        expect: Answered,
    ) -> Option<(String, String)> {
        let r = self.reader.as_ref()?;
        let Some((sub, offset, index)) = r.received.get(value).cloned() else {
            let want = format!("a received message {value:?}");
            return Some((want, "none was received".into()));
        };
        let target = AckTarget {
            offset,
            index: Some(index),
            cumulative,
            kind: r.consumer.kind(),
        };
        let acked = match &txn {
            Some(name) => match self.txns.get_mut(name) {
                Some(t) => t.ack_target(&sub, target).await,
                None => return Some((format!("{name} open"), "it is not open".into())),
            },
            None => ack_target(&r.conn, &sub, target).await,
        };
        judge_answer(expect, None, acked.map(|()| offset))
    }

    /// Commit (with what the step expects) or abort `txn`.
    async fn end(
        &mut self,
        txn: String,
        commit: Option<(Option<Told>, Option<AbortReason>)>,
    ) -> Option<(String, String)> {
        let Some(t) = self.txns.remove(&txn) else {
            return Some((format!("{txn} open"), "it is not open".into()));
        };
        let told = match commit {
            Some(_) => t.commit().await,
            None => t.abort(AbortReason::User).await,
        };
        self.script.with_state(|s| s.told.insert(txn, told));
        let (expect, reason) = commit?;
        judge_told(expect, reason, told)
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
    let meets = |want: &Told, got: &TxnOutcome| match (want, got) {
        (Told::Committed, TxnOutcome::Committed) | (Told::Unknown, TxnOutcome::Unknown) => true,
        (Told::Aborted, TxnOutcome::Aborted { reason: r }) => reason.is_none_or(|w| w == *r),
        _ => false,
    };
    let words = |want: &Told, got: &TxnOutcome| {
        let want = match (want, reason) {
            (Told::Aborted, Some(r)) => told_word(TxnOutcome::Aborted { reason: r }),
            (w, _) => w.word().to_string(),
        };
        (want, told_word(*got))
    };
    judge(expect, &got, meets, words).map(|m| (m.expected, m.happened))
}

/// One read; the values received, recorded for later acks (a refused
/// read receives nothing, and is remembered).
async fn poll(r: &mut Reader) -> Vec<String> {
    let got = match r.consumer.receive(&r.conn, r.queue).await {
        Ok(got) => got,
        Err(e) => {
            if matches!(e, ClientError::Subscribe(_)) {
                r.refused = Some(e);
            }
            Vec::new()
        }
    };
    let sub = r.consumer.subscription().clone();
    got.into_iter()
        .map(|m| {
            let v = m.message.payload;
            r.received
                .insert(v.clone(), (sub.clone(), m.offset, m.index));
            v
        })
        .collect()
}

/// Read until `until` holds of what came or `ms` passed; what came.
async fn read_for(
    r: &mut Reader,
    ms: u64,
    got: &mut Vec<String>,
    until: impl Fn(&[String]) -> bool,
) {
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
    r.refused = None;
    if expect.expect_refused {
        read_for(r, quiet_ms, &mut got, |_| false).await;
        return match (&r.refused, got.is_empty()) {
            (Some(_), true) => None,
            (Some(e), false) => Some(("refused".into(), format!("refused ({e}) after {got:?}"))),
            (None, _) => Some(("refused".into(), format!("received {got:?}"))),
        };
    }
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
