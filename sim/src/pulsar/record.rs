//! Records what Pulsar's clients observed as a `percsim-stream-history/1`
//! history: transactions (keyed by their TxnId's sequence, unique in a run
//! with one coordinator), sends, receipts and acks in time order, and at
//! the end the brokers' durable logs and acknowledgments.

use crate::pulsar::store::{Durable, acked_offsets, partition_name};
use percsim_checker::Outcome;
use percsim_checker::stream::{
    AckOp, AckedPositions, CoordinatorDecision, LogEntry, MarkerKind, OpResult, PartitionLog,
    ReceiveOp, STREAM_FORMAT, SendOp, Source, StreamFinalState, StreamHistory, StreamOp, StreamTxn,
    SubscriptionDecl,
};
use percsim_protocol::pulsar::buffer::Entry;
use percsim_protocol::pulsar::client::{ClientEvent, TxnOutcome};
use percsim_protocol::pulsar::types::{Partition, TxnAction, TxnId};
use std::collections::BTreeMap;

/// The client id a stream history records a transaction under when no
/// client is known to have begun it: the coordinator's own decision (a
/// timeout of a transaction whose open was never answered).
pub const COORDINATOR_CLIENT: u64 = u64::MAX;

/// Who reported an event: a client, its incarnation and its worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Reporter {
    pub client: usize,
    pub incarnation: u32,
    pub worker: usize,
}

/// What the world gives a run's history: its seed, its description, and
/// its events in time order.
pub(crate) struct RunInfo {
    pub seed: u64,
    pub scenario: serde_json::Value,
    pub events: Vec<percsim_checker::Event>,
}

/// A consumer session as the history names it.
struct Session {
    name: u64,
    replay: bool,
    last: Option<u64>,
}

/// The stream history being recorded.
#[derive(Default)]
pub(crate) struct StreamRecorder {
    txns: BTreeMap<TxnId, StreamTxn>,
    ops: Vec<StreamOp>,
    /// Which input each output payload was made from.
    sources: BTreeMap<String, Source>,
    /// The message at each (partition, offset) a consumer received.
    received: BTreeMap<(Partition, u64), String>,
    /// Each (reporter, subscription key)'s current consumer session.
    sessions: BTreeMap<(Reporter, String), Session>,
    next_session: u64,
    /// Transactions begun and not finished, with their client.
    live: BTreeMap<TxnId, usize>,
}

fn label(txn: TxnId) -> String {
    txn.to_string()
}

impl StreamRecorder {
    /// Output `payload` is made from `source`.
    pub(crate) fn source(&mut self, payload: &str, source: Source) {
        self.sources.insert(payload.to_string(), source);
    }

    /// Client `r` asked to commit `txn` at `now_ns`.
    pub(crate) fn commit_requested(&mut self, txn: TxnId, now_ns: u64) {
        if let Some(t) = self.txns.get_mut(&txn) {
            t.commit_request_ns.get_or_insert(now_ns);
        }
    }

    /// Record one client event at `now_ns`.
    pub(crate) fn event(&mut self, r: Reporter, e: ClientEvent, now_ns: u64) {
        let client = r.client as u64;
        match e {
            ClientEvent::Begun { txn } => {
                let mut t = new_txn(txn, client, now_ns);
                // The coordinator recorded the timeout when it opened it.
                t.timeout_ms = self.txns.get(&txn).and_then(|o| o.timeout_ms);
                self.txns.insert(txn, t);
                self.live.insert(txn, r.client);
            }
            ClientEvent::Sent {
                txn,
                partition,
                payload,
                offset,
            } => {
                let source = self.sources.get(&payload).cloned();
                self.ops.push(StreamOp::Send(SendOp {
                    client,
                    t_ns: now_ns,
                    txn: txn.map(|t| t.seq),
                    partition: partition_name(&partition),
                    message: payload,
                    result: if offset.is_some() {
                        OpResult::Ok
                    } else {
                        OpResult::Unknown
                    },
                    offset,
                    source,
                    producer: None,
                }));
            }
            ClientEvent::Received {
                subscription,
                offset,
                message,
                replay,
            } => {
                let consumer = self.session(r, &subscription.to_string(), offset, replay);
                self.received.insert(
                    (subscription.partition.clone(), offset),
                    message.payload.clone(),
                );
                self.ops.push(StreamOp::Receive(ReceiveOp {
                    client,
                    consumer,
                    subscription: subscription.name.clone(),
                    partition: partition_name(&subscription.partition),
                    offset,
                    message: message.payload,
                    t_ns: now_ns,
                    isolation: Default::default(),
                }));
            }
            ClientEvent::Acked {
                subscription,
                offset,
                txn,
            } => {
                let key = (subscription.partition.clone(), offset);
                let message = self.received.get(&key).cloned().unwrap_or_default();
                self.ops.push(StreamOp::Ack(AckOp {
                    client,
                    subscription: subscription.name.clone(),
                    partition: partition_name(&subscription.partition),
                    offset,
                    message,
                    t_ns: now_ns,
                    txn: txn.map(|t| t.seq),
                    result: OpResult::Ok,
                    cumulative: false,
                }));
            }
            ClientEvent::Finished { txn, outcome } => {
                self.live.remove(&txn);
                if let Some(t) = self.txns.get_mut(&txn) {
                    finish(t, outcome, now_ns);
                }
            }
        }
    }

    /// The consumer session of `r` on `sub` for a receipt at `offset`: a
    /// new one when the consumer starts a replay (redelivery) or goes back
    /// to dispatching after one, as the format asks.
    fn session(&mut self, r: Reporter, sub: &str, offset: u64, replay: bool) -> String {
        let key = (r, sub.to_string());
        let fresh = match self.sessions.get(&key) {
            None => true,
            Some(s) => s.replay != replay || (replay && s.last.is_some_and(|l| offset <= l)),
        };
        if fresh {
            self.next_session += 1;
            let name = self.next_session;
            self.sessions.insert(
                key.clone(),
                Session {
                    name,
                    replay,
                    last: None,
                },
            );
        }
        let s = self.sessions.get_mut(&key).expect("inserted above");
        s.last = Some(offset);
        format!("c{}.{}.{}#{}", r.client, r.incarnation, r.worker, s.name)
    }

    /// The coordinator aborted `txn` on its timeout at `now_ns` (ABORTING is
    /// durable): recorded as observed at the coordinator, apart from what
    /// the client was told. A transaction no client heard of (its open's
    /// answer was lost) is added with an unknown outcome.
    pub(crate) fn timed_out(&mut self, txn: TxnId, now_ns: u64) {
        let t = self
            .txns
            .entry(txn)
            .or_insert_with(|| new_txn(txn, COORDINATOR_CLIENT, 0));
        t.coordinator = Some(CoordinatorDecision {
            outcome: Outcome::Aborted,
            t_ns: now_ns,
            reason: Some("timeout".to_string()),
        });
    }

    /// The coordinator's log durably holds COMMITTING for `txn` at
    /// `now_ns`: from then on it must commit (recorded once, the first
    /// time). A transaction no client heard of is added with an unknown
    /// outcome.
    pub(crate) fn commit_logged(&mut self, txn: TxnId, now_ns: u64) {
        let t = self
            .txns
            .entry(txn)
            .or_insert_with(|| new_txn(txn, COORDINATOR_CLIENT, 0));
        t.commit_logged_ns.get_or_insert(now_ns);
    }

    /// The coordinator opened `txn` with a timeout of `timeout_ms`, as its
    /// client asked (the client's `Begun` follows and keeps it).
    pub(crate) fn opened(&mut self, txn: TxnId, timeout_ms: u64) {
        let t = self
            .txns
            .entry(txn)
            .or_insert_with(|| new_txn(txn, COORDINATOR_CLIENT, 0));
        t.timeout_ms = Some(timeout_ms);
    }

    /// The coordinator's log durably holds ABORTING for `txn` at `now_ns`
    /// (recorded once, the first time).
    pub(crate) fn abort_logged(&mut self, txn: TxnId, now_ns: u64) {
        let t = self
            .txns
            .entry(txn)
            .or_insert_with(|| new_txn(txn, COORDINATOR_CLIENT, 0));
        t.abort_logged_ns.get_or_insert(now_ns);
    }

    /// Client `client` restarted: the transactions its earlier life ran
    /// will never finish (their outcome stays unknown).
    pub(crate) fn orphan(&mut self, client: usize) {
        self.live.retain(|_, c| *c != client);
    }

    /// Transactions still running at a live client.
    pub(crate) fn running(&self) -> u64 {
        self.live.len() as u64
    }

    /// The finished history of `run`: `subscriptions` declared, `durable`
    /// dumped, the world's events kept.
    pub(crate) fn history(
        &self,
        run: RunInfo,
        subscriptions: Vec<SubscriptionDecl>,
        durable: &Durable,
    ) -> StreamHistory {
        let mut txns = self.txns.clone();
        let final_state = dump(durable, &mut txns);
        let mut transactions: Vec<StreamTxn> = txns.into_values().collect();
        transactions.sort_by_key(|t| (t.invoke_ns, t.id));
        StreamHistory {
            format: STREAM_FORMAT.to_string(),
            seed: run.seed,
            scenario: run.scenario,
            subscriptions,
            transactions,
            ops: self.ops.clone(),
            final_state,
            events: run.events,
        }
    }
}

fn new_txn(txn: TxnId, client: u64, now_ns: u64) -> StreamTxn {
    StreamTxn {
        id: txn.seq,
        label: Some(label(txn)),
        client,
        invoke_ns: now_ns,
        commit_request_ns: None,
        complete_ns: None,
        outcome: Outcome::Unknown,
        abort_reason: None,
        coordinator: None,
        commit_logged_ns: None,
        abort_logged_ns: None,
        timeout_ms: None,
    }
}

fn finish(t: &mut StreamTxn, outcome: TxnOutcome, now_ns: u64) {
    match outcome {
        TxnOutcome::Committed => {
            t.outcome = Outcome::Committed;
            t.complete_ns = Some(now_ns);
        }
        TxnOutcome::Aborted { reason } => {
            t.outcome = Outcome::Aborted;
            t.complete_ns = Some(now_ns);
            t.abort_reason = serde_json::to_value(reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string));
        }
        TxnOutcome::Unknown => t.outcome = Outcome::Unknown,
    }
}

/// The brokers' durable state as the history has it. A transaction the
/// logs name that no client heard of (its open's answer was lost) is added
/// with an unknown outcome.
fn dump(durable: &Durable, txns: &mut BTreeMap<TxnId, StreamTxn>) -> StreamFinalState {
    let mut known = |txn: TxnId| {
        txns.entry(txn)
            .or_insert_with(|| new_txn(txn, COORDINATOR_CLIENT, 0))
            .id
    };
    let mut state = StreamFinalState {
        partitions: Vec::new(),
        acks: Vec::new(),
    };
    for (p, store) in &durable.partitions {
        let name = partition_name(p);
        let entries = store
            .log
            .iter()
            .enumerate()
            .map(|(offset, e)| match e {
                Entry::Message(m) => LogEntry {
                    offset: offset as u64,
                    message: Some(m.payload.clone()),
                    marker: None,
                    txn: m.txn.map(&mut known),
                },
                Entry::Marker { txn, action } => LogEntry {
                    offset: offset as u64,
                    message: None,
                    marker: Some(match action {
                        TxnAction::Commit => MarkerKind::Commit,
                        TxnAction::Abort => MarkerKind::Abort,
                    }),
                    txn: Some(known(*txn)),
                },
            })
            .collect();
        state.partitions.push(PartitionLog {
            name: name.clone(),
            topic: p.topic.clone(),
            entries,
        });
        for (sub, log) in &store.subs {
            state.acks.push(AckedPositions {
                subscription: sub.clone(),
                partition: name.clone(),
                acked_below: 0,
                offsets: acked_offsets(log).into_iter().collect(),
            });
        }
    }
    state
}
