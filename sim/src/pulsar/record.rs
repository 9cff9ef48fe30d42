//! Records what Pulsar's clients observed as a `percsim-stream-history/1`
//! history: transactions (keyed by their TxnId's sequence, unique in a run
//! with one coordinator), sends, receipts and acks in time order, and at
//! the end the brokers' durable logs and acknowledgments.

use crate::pulsar::store::{Durable, acked_positions, partition_name};
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

/// Where in its log entry an op's message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Within {
    /// At this index of the entry (0 for a message sent alone).
    Index(u32),
    /// Every message of the entry (an ack of the whole entry; a cumulative
    /// one: up to its last).
    Whole,
}

/// A consumer session as the history names it.
struct Session {
    name: u64,
    replay: bool,
    last: Option<(u64, u32)>,
}

/// The stream history being recorded.
#[derive(Default)]
pub(crate) struct StreamRecorder {
    txns: BTreeMap<TxnId, StreamTxn>,
    /// Each op as recorded, with its offset an entry's offset, and where
    /// in the entry it is ([`Within`]): [`StreamRecorder::history`] numbers
    /// the messages of batch entries apart.
    ops: Vec<(StreamOp, Within)>,
    /// Which input each output payload was made from.
    sources: BTreeMap<String, Source>,
    /// The message at each (partition, offset, batch index) a consumer
    /// received.
    received: BTreeMap<(Partition, u64, u32), String>,
    /// Each (reporter, subscription key)'s current consumer session.
    sessions: BTreeMap<(Reporter, String), Session>,
    next_session: u64,
    /// Transactions begun and not finished, with their client.
    live: BTreeMap<TxnId, usize>,
    /// When the coordinator opened each transaction its client has not
    /// begun yet.
    opened_ns: BTreeMap<TxnId, u64>,
}

fn label(txn: TxnId) -> String {
    txn.to_string()
}

impl StreamRecorder {
    fn push(&mut self, within: Within, op: StreamOp) {
        self.ops.push((op, within));
    }

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
                if let Some(o) = self.txns.remove(&txn) {
                    // Read once: a client begins a transaction once.
                    let opened_ns = self.opened_ns.remove(&txn);
                    keep_coordinator_record(&mut t, o, opened_ns);
                }
                self.txns.insert(txn, t);
                self.live.insert(txn, r.client);
            }
            ClientEvent::Sent {
                txn,
                partition,
                payload,
                offset,
                index,
            } => {
                let source = self.sources.get(&payload).cloned();
                let within = Within::Index(index);
                self.push(
                    within,
                    StreamOp::Send(SendOp {
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
                    }),
                );
            }
            ClientEvent::Received {
                subscription,
                offset,
                index,
                message,
                replay,
            } => {
                let at = (offset, index);
                let consumer = self.session(r, &subscription.to_string(), at, replay);
                self.received.insert(
                    (subscription.partition.clone(), offset, index),
                    message.payload.clone(),
                );
                self.push(
                    Within::Index(index),
                    StreamOp::Receive(ReceiveOp {
                        client,
                        consumer,
                        subscription: subscription.name.clone(),
                        partition: partition_name(&subscription.partition),
                        offset,
                        message: message.payload,
                        t_ns: now_ns,
                        isolation: Default::default(),
                    }),
                );
            }
            ClientEvent::Acked {
                subscription,
                offset,
                index,
                cumulative,
                txn,
            } => {
                let within = index.map_or(Within::Whole, Within::Index);
                let key = (subscription.partition.clone(), offset, index.unwrap_or(0));
                let message = self.received.get(&key).cloned().unwrap_or_default();
                self.push(
                    within,
                    StreamOp::Ack(AckOp {
                        client,
                        subscription: subscription.name.clone(),
                        partition: partition_name(&subscription.partition),
                        offset,
                        message,
                        t_ns: now_ns,
                        txn: txn.map(|t| t.seq),
                        result: OpResult::Ok,
                        cumulative,
                    }),
                );
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
    fn session(&mut self, r: Reporter, sub: &str, offset: (u64, u32), replay: bool) -> String {
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

    /// The coordinator opened `txn` at `now_ns` with a timeout of
    /// `timeout_ms`, as its client asked (the client's `Begun` follows and
    /// keeps it).
    pub(crate) fn opened(&mut self, txn: TxnId, timeout_ms: u64, now_ns: u64) {
        self.opened_ns.insert(txn, now_ns);
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
        let ops = self.numbered_ops(durable);
        let mut transactions: Vec<StreamTxn> = txns.into_values().collect();
        transactions.sort_by_key(|t| (t.invoke_ns, t.id));
        StreamHistory {
            format: STREAM_FORMAT.to_string(),
            seed: run.seed,
            scenario: run.scenario,
            subscriptions,
            transactions,
            ops,
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

/// Keep in `t`, a transaction its client has just begun, what the
/// coordinator recorded of it before: the timeout it opened it with and,
/// when the answer reached the client late (a frozen or slow client), its
/// decisions since (a timeout's abort, the logged ABORTING). The client
/// asked for the transaction before the coordinator opened it
/// (`opened_ns`): when the coordinator decided before the client heard
/// back, the transaction began no later than that opening.
fn keep_coordinator_record(t: &mut StreamTxn, earlier: StreamTxn, opened_ns: Option<u64>) {
    t.timeout_ms = earlier.timeout_ms;
    t.coordinator = earlier.coordinator;
    t.commit_logged_ns = earlier.commit_logged_ns;
    t.abort_logged_ns = earlier.abort_logged_ns;
    let decided_ns = [t.commit_logged_ns, t.abort_logged_ns]
        .into_iter()
        .chain([t.coordinator.as_ref().map(|d| d.t_ns)])
        .flatten()
        .min();
    if let Some(decided_ns) = decided_ns.filter(|&d| d < t.invoke_ns) {
        t.invoke_ns = opened_ns.map_or(decided_ns, |o| o.min(decided_ns));
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

/// How a partition's log numbers its messages in the history: each
/// message of a batch entry has an offset of its own, so an entry's first
/// message is at the number of messages and markers before it.
struct Numbering {
    /// Each entry's first history offset, and how many messages it holds
    /// (1 for a marker).
    entries: Vec<(u64, u32)>,
}

impl Numbering {
    fn of(log: &[Entry]) -> Numbering {
        let mut next = 0;
        let entries = log
            .iter()
            .map(|e| {
                let size = match e {
                    Entry::Message(m) => m.batch_size(),
                    Entry::Marker { .. } => 1,
                };
                let at = (next, size);
                next += u64::from(size);
                at
            })
            .collect();
        Numbering { entries }
    }

    /// The history offset of message `index` of the entry at `offset`. An
    /// offset past the log's end (a reply naming an entry the log does not
    /// hold) keeps its distance from the end.
    fn at(&self, offset: u64, index: u32) -> u64 {
        match self.entries.get(offset as usize) {
            Some((first, _)) => first + u64::from(index),
            None => {
                let end = self.entries.last().map_or(0, |(f, n)| f + u64::from(*n));
                end + (offset - self.entries.len() as u64) + u64::from(index)
            }
        }
    }

    /// How many messages the entry at `offset` holds (1 if unknown).
    fn size(&self, offset: u64) -> u32 {
        self.entries.get(offset as usize).map_or(1, |(_, n)| *n)
    }
}

impl StreamRecorder {
    /// The ops with their offsets numbered as the history numbers messages
    /// ([`Numbering`]); an ack of a whole batch entry becomes an ack of
    /// each of its messages, a cumulative one an ack up to its last.
    fn numbered_ops(&self, durable: &Durable) -> Vec<StreamOp> {
        let numbering: BTreeMap<String, Numbering> = durable
            .partitions
            .iter()
            .map(|(p, store)| (partition_name(p), Numbering::of(&store.log)))
            .collect();
        let mut out = Vec::with_capacity(self.ops.len());
        for (op, within) in &self.ops {
            let mut op = op.clone();
            let (partition, entry) = match &op {
                StreamOp::Send(s) => (&s.partition, s.offset),
                StreamOp::Receive(r) => (&r.partition, Some(r.offset)),
                StreamOp::Ack(a) => (&a.partition, Some(a.offset)),
            };
            let (Some(n), Some(entry)) = (numbering.get(partition.as_str()), entry) else {
                out.push(op);
                continue;
            };
            let size = n.size(entry);
            if let (Within::Whole, StreamOp::Ack(a)) = (*within, &mut op) {
                if !a.cumulative && size > 1 {
                    for index in 0..size {
                        let mut each = a.clone();
                        each.offset = n.at(entry, index);
                        each.message = self.message_at(a, entry, index);
                        out.push(StreamOp::Ack(each));
                    }
                    continue;
                }
                a.message = self.message_at(a, entry, size - 1);
            }
            let numbered = match *within {
                Within::Whole => n.at(entry, size - 1),
                Within::Index(i) => n.at(entry, i),
            };
            match &mut op {
                StreamOp::Send(s) => s.offset = Some(numbered),
                StreamOp::Receive(r) => r.offset = numbered,
                StreamOp::Ack(a) => a.offset = numbered,
            }
            out.push(op);
        }
        out
    }

    /// The message a consumer received at message `index` of the entry at
    /// `entry` of `a`'s partition (empty if none did).
    fn message_at(&self, a: &AckOp, entry: u64, index: u32) -> String {
        self.received
            .iter()
            .find(|((p, o, i), _)| partition_name(p) == a.partition && *o == entry && *i == index)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }
}

/// The brokers' durable state as the history has it, each message of a
/// batch entry at an offset of its own ([`Numbering`]). A transaction the
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
        let numbering = Numbering::of(&store.log);
        let mut entries = Vec::new();
        for (offset, e) in store.log.iter().enumerate() {
            match e {
                Entry::Message(m) => {
                    let txn = m.txn.map(&mut known);
                    for index in 0..m.batch_size() {
                        entries.push(LogEntry {
                            offset: numbering.at(offset as u64, index),
                            message: m.payload_at(index).map(str::to_string),
                            marker: None,
                            txn,
                        });
                    }
                }
                Entry::Marker { txn, action } => entries.push(LogEntry {
                    offset: numbering.at(offset as u64, 0),
                    message: None,
                    marker: Some(match action {
                        TxnAction::Commit => MarkerKind::Commit,
                        TxnAction::Abort => MarkerKind::Abort,
                    }),
                    txn: Some(known(*txn)),
                }),
            }
        }
        state.partitions.push(PartitionLog {
            name: name.clone(),
            topic: p.topic.clone(),
            entries,
        });
        for (sub, logs) in &store.subs {
            let acked = acked_positions(logs, &store.log);
            state.acks.push(AckedPositions {
                subscription: sub.clone(),
                partition: name.clone(),
                acked_below: 0,
                offsets: acked.iter().map(|(o, i)| numbering.at(*o, *i)).collect(),
            });
        }
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Coordinator 0's transaction `seq`.
    fn txn(seq: u64) -> TxnId {
        TxnId {
            coordinator: 0,
            seq,
        }
    }

    fn begun(rec: &mut StreamRecorder, txn: TxnId, client: usize, now_ns: u64) {
        let r = Reporter {
            client,
            incarnation: 0,
            worker: 0,
        };
        rec.event(r, ClientEvent::Begun { txn }, now_ns);
    }

    #[test]
    fn a_late_begun_keeps_the_coordinators_timeout_abort() {
        let txn = txn(10);
        let mut rec = StreamRecorder::default();
        rec.opened(txn, 446, 3_300 * MS);
        // The coordinator times the transaction out while the answer to
        // its open is still on its way to a frozen client.
        rec.abort_logged(txn, 3_800 * MS);
        rec.timed_out(txn, 3_800 * MS);
        begun(&mut rec, txn, 1, 5_551 * MS);
        let t = &rec.txns[&txn];
        // It began when the coordinator opened it, before the abort.
        assert_eq!((t.client, t.invoke_ns), (1, 3_300 * MS));
        assert_eq!(t.timeout_ms, Some(446));
        assert_eq!(t.abort_logged_ns, Some(3_800 * MS));
        let decision = t.coordinator.as_ref().expect("the timeout's decision");
        assert_eq!(
            (decision.outcome, decision.t_ns),
            (Outcome::Aborted, 3_800 * MS)
        );
        assert_eq!(rec.running(), 1);
    }

    #[test]
    fn a_begun_transaction_the_coordinator_has_not_ended_is_open() {
        let txn = txn(3);
        let mut rec = StreamRecorder::default();
        rec.opened(txn, 1_000, 5 * MS);
        begun(&mut rec, txn, 2, 7 * MS);
        let t = &rec.txns[&txn];
        assert_eq!(
            (t.client, t.timeout_ms, t.invoke_ns),
            (2, Some(1_000), 7 * MS)
        );
        assert_eq!((t.abort_logged_ns, t.commit_logged_ns), (None, None));
        assert!(t.coordinator.is_none());
    }
}
