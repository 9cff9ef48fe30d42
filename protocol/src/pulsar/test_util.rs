//! Trace-test helpers in the style of TiKV's `must_*`: an in-memory
//! coordinator and an in-memory broker of one partition, every step run the
//! way a server runs it (log the durable part, then apply).

use super::ablation::{PulsarAblation, PulsarAblations};
use super::broker::{self, BrokerWrite};
use super::buffer::{self, AppendError, Entry, ReadMode, TbSnapshot, TbState};
use super::client::{BrokerReply, BrokerRequest};
use super::coordinator::{self, LogRecord, TcAction, TcError, TcState, TxnState};
use super::dedup::ProducerDedup;
use super::subscription::{self, AckError, AckTarget, Subscription};
use super::types::*;
use std::collections::BTreeMap;

pub const PRODUCER: ProducerRef = ProducerRef {
    producer_id: 1,
    epoch: 0,
};

/// Consumer `name` on session `session`.
pub fn consumer(name: &str, session: u64) -> ConsumerRef {
    ConsumerRef {
        name: name.to_string(),
        session,
    }
}

pub fn txn(seq: u64) -> TxnId {
    TxnId {
        coordinator: 0,
        seq,
    }
}

pub fn part(index: u32) -> Participant {
    Participant::Partition(Partition::new("t", index))
}

pub fn sub(index: u32, name: &str) -> Participant {
    Participant::Subscription(SubscriptionKey::new(Partition::new("t", index), name))
}

/// A coordinator with its durable log.
pub struct Tc {
    pub state: TcState,
    pub log: Vec<LogRecord>,
    pub ablations: PulsarAblations,
}

impl Tc {
    pub fn new(id: u16) -> Self {
        Tc {
            state: TcState::new(id),
            log: Vec::new(),
            ablations: PulsarAblations::NONE,
        }
    }

    pub fn ablated(id: u16, a: PulsarAblation) -> Self {
        Tc {
            ablations: PulsarAblations::only(a),
            ..Tc::new(id)
        }
    }

    pub fn log(&mut self, r: LogRecord) {
        self.state.apply(&r);
        self.log.push(r);
    }

    /// Carry out `actions` up to the markers (logging as it goes); returns
    /// the replies given.
    pub fn run(&mut self, actions: &[TcAction]) -> Vec<TxnAction> {
        let mut replies = Vec::new();
        for a in actions {
            match a {
                TcAction::Log(r) => self.log(r.clone()),
                TcAction::Reply(x) => replies.push(*x),
                TcAction::SendMarkers(_) => {}
            }
        }
        replies
    }

    pub fn state_of(&self, t: TxnId) -> Option<TxnState> {
        self.state.txn(t).map(|m| m.state)
    }

    pub fn must_open(&mut self, now_ms: u64, timeout_ms: u64) -> TxnId {
        let (t, r) = coordinator::open(&self.state, PRODUCER, now_ms + timeout_ms);
        self.log(r);
        t
    }

    /// Register `p`; whether a record was logged.
    pub fn add(&mut self, t: TxnId, p: &Participant) -> Result<bool, TcError> {
        let r = coordinator::add_participant(&self.state, t, p)?;
        let logged = r.is_some();
        if let Some(r) = r {
            self.log(r);
        }
        Ok(logged)
    }

    pub fn end_plan(&mut self, t: TxnId, a: TxnAction) -> Result<Vec<TcAction>, TcError> {
        let plan = coordinator::end(&self.state, t, a, self.ablations)?;
        // Stop before any log write if the plan replies first (crash point
        // "after the reply, before COMMITTING is durable").
        if !matches!(plan.first(), Some(TcAction::Reply(_))) {
            self.run(&plan);
        }
        Ok(plan)
    }

    pub fn end(&mut self, t: TxnId, a: TxnAction) -> Result<Vec<TcAction>, TcError> {
        let plan = coordinator::end(&self.state, t, a, self.ablations)?;
        self.run(&plan);
        Ok(plan)
    }

    pub fn must_end(&mut self, t: TxnId, a: TxnAction) -> Vec<TcAction> {
        self.end(t, a).expect("end")
    }

    pub fn finish(&mut self, t: TxnId) -> Result<Vec<TxnAction>, TcError> {
        let plan = coordinator::finish(&self.state, t)?;
        Ok(self.run(&plan))
    }

    pub fn must_finish(&mut self, t: TxnId) -> Vec<TxnAction> {
        self.finish(t).expect("finish")
    }

    pub fn timeout(&mut self, t: TxnId, now_ms: u64) -> Result<Vec<TcAction>, TcError> {
        let plan = coordinator::timeout(&self.state, t, now_ms, self.ablations)?;
        self.run(&plan);
        Ok(plan)
    }

    /// Lose memory; replay the log. Returns the recovery's follow-ups.
    pub fn crash_and_recover(&mut self) -> Vec<Vec<TcAction>> {
        let (state, follow_ups) = coordinator::recover(self.state.coordinator(), &self.log);
        self.state = state;
        follow_ups
    }
}

/// A broker owning one partition and its subscriptions, with their durable
/// logs.
#[derive(Default)]
pub struct Broker {
    pub log: Vec<Entry>,
    pub tb: TbState,
    pub sub_logs: BTreeMap<String, subscription::SubLogs>,
    pub subs: BTreeMap<String, Subscription>,
    pub ablations: PulsarAblations,
    /// The producer deduplication table (kept whether or not it is used).
    pub dedup: ProducerDedup,
    /// Producer deduplication switched off.
    pub no_dedup: bool,
    /// The sequence id [`Broker::send`] gives its next message.
    pub next_sequence: u64,
    /// The latest snapshot of the transaction buffer (durable).
    pub snapshot: Option<TbSnapshot>,
}

impl Broker {
    pub fn ablated(a: PulsarAblation) -> Self {
        Broker {
            ablations: PulsarAblations::only(a),
            ..Broker::default()
        }
    }

    pub fn send(&mut self, t: Option<TxnId>, payload: &str) -> Result<u64, AppendError> {
        self.send_entry(t, &[payload])
    }

    /// Send `payloads` as one entry (a batch when more than one), with the
    /// next sequence id.
    fn send_entry(&mut self, t: Option<TxnId>, payloads: &[&str]) -> Result<u64, AppendError> {
        let sequence_id = self.next_sequence;
        self.next_sequence += 1;
        self.append(&Message {
            txn: t,
            producer: PRODUCER,
            sequence_id,
            payload: payloads[0].to_string(),
            batch: payloads[1..].iter().map(|p| p.to_string()).collect(),
        })
    }

    pub fn append(&mut self, m: &Message) -> Result<u64, AppendError> {
        match self.execute(&BrokerRequest::Send(m.clone())) {
            BrokerReply::Sent(offset) => Ok(offset),
            BrokerReply::SendRefused(e) => Err(e),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    fn view(&self) -> broker::PartitionView<'_> {
        broker::PartitionView {
            log: &self.log,
            tb: &self.tb,
            subs: &self.subs,
            dedup: (!self.no_dedup).then_some(&self.dedup),
        }
    }

    /// Run a request the way a broker does: write, apply, reply.
    pub fn execute(&mut self, req: &BrokerRequest) -> BrokerReply {
        let (reply, write) = broker::execute(self.view(), req, self.ablations);
        self.write(write);
        reply
    }

    /// Make `w` durable and apply it; whether anything was written.
    fn write(&mut self, w: BrokerWrite) -> bool {
        match w {
            BrokerWrite::Nothing => false,
            BrokerWrite::Partition(e) => {
                self.dedup.record(&e, self.log.len() as u64);
                self.tb.apply(&e);
                self.log.push(e);
                true
            }
            BrokerWrite::Subscription { name, mutation } => {
                let written = !mutation.is_empty();
                self.apply_sub(&name, &mutation);
                written
            }
            BrokerWrite::Dispatch { name, dispatch } => {
                self.subs.entry(name).or_default().dispatch(&dispatch);
                false
            }
            BrokerWrite::Close { name, consumer } => {
                self.subs.entry(name).or_default().close(&consumer);
                false
            }
        }
    }

    pub fn must_send(&mut self, t: Option<TxnId>, payload: &str) -> u64 {
        self.send(t, payload).expect("send")
    }

    /// Deliver a marker for `t`; whether an entry was written.
    pub fn mark(&mut self, t: TxnId, action: TxnAction) -> bool {
        self.deliver(&Marker {
            txn: t,
            producer: PRODUCER,
            action,
            to: part(0),
        })
    }

    /// Deliver `m` (to the partition or one of its subscriptions); whether
    /// anything was written.
    pub fn deliver(&mut self, m: &Marker) -> bool {
        let w = broker::deliver_marker(self.view(), m, self.ablations);
        self.write(w)
    }

    pub fn must_mark(&mut self, t: TxnId, action: TxnAction) {
        assert!(self.mark(t, action), "marker for {t} not written");
    }

    pub fn sub(&self, name: &str) -> &Subscription {
        static EMPTY: std::sync::OnceLock<Subscription> = std::sync::OnceLock::new();
        self.subs
            .get(name)
            .unwrap_or_else(|| EMPTY.get_or_init(Subscription::default))
    }

    fn read_mode(&self, name: &str, from: u64, mode: ReadMode, max: usize) -> Vec<(u64, String)> {
        let d = buffer::read(
            &self.log,
            &self.tb,
            self.sub(name),
            &consumer("reader", 1),
            from,
            mode,
            max,
            self.ablations,
        );
        d.messages
            .into_iter()
            .map(|m| (m.offset, m.message.payload))
            .collect()
    }

    pub fn must_read(&self, name: &str, from: u64, max: usize) -> Vec<(u64, String)> {
        self.read_mode(name, from, ReadMode::Dispatch, max)
    }

    /// A dispatch read by `reader`, as a broker runs it (the dispatcher
    /// remembers what it handed out); the offsets handed out.
    pub fn must_read_as(
        &mut self,
        name: &str,
        reader: &ConsumerRef,
        from: u64,
        max: usize,
    ) -> Vec<u64> {
        self.read_as(name, reader, from, max, SubscriptionType::Shared)
            .expect("a shared read")
    }

    /// A dispatch read by `reader` sharing the subscription as `kind`: the
    /// offsets handed out, or why the reader may not attach.
    pub fn read_as(
        &mut self,
        name: &str,
        reader: &ConsumerRef,
        from: u64,
        max: usize,
        kind: SubscriptionType,
    ) -> Result<Vec<u64>, subscription::SubscribeError> {
        let req = BrokerRequest::Read {
            subscription: name.to_string(),
            consumer: reader.clone(),
            from,
            mode: ReadMode::Dispatch,
            max,
            kind,
        };
        match self.execute(&req) {
            BrokerReply::Delivery(d) => Ok(d.messages.iter().map(|m| m.offset).collect()),
            BrokerReply::ReadRefused(e) => Err(e),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    /// `reader` closes its consumer of subscription `name`.
    pub fn close(&mut self, name: &str, reader: &ConsumerRef) {
        let req = BrokerRequest::Close {
            subscription: name.to_string(),
            consumer: reader.clone(),
        };
        assert_eq!(self.execute(&req), BrokerReply::Closed);
    }

    pub fn must_replay(&self, name: &str, until: u64) -> Vec<(u64, String)> {
        self.read_mode(name, 0, ReadMode::Replay { until }, usize::MAX)
    }

    fn apply_sub(&mut self, name: &str, m: &subscription::SubMutation) {
        let logs = self.sub_logs.entry(name.to_string()).or_default();
        for r in &m.durable {
            logs.append(r.clone());
        }
        self.subs.entry(name.to_string()).or_default().apply(m);
    }

    pub fn ack(&mut self, name: &str, offset: u64, t: Option<TxnId>) -> Result<(), AckError> {
        self.ack_at(name, AckTarget::entry(offset), t)
    }

    /// Send `payloads` as one batch entry; its offset.
    pub fn must_send_batch(&mut self, t: Option<TxnId>, payloads: &[&str]) -> u64 {
        self.send_entry(t, payloads).expect("appended")
    }

    /// Acknowledge what `target` names on subscription `name`.
    pub fn ack_at(
        &mut self,
        name: &str,
        target: AckTarget,
        t: Option<TxnId>,
    ) -> Result<(), AckError> {
        let req = BrokerRequest::Ack {
            subscription: name.to_string(),
            offset: target.offset,
            txn: t,
            index: target.index,
            cumulative: target.cumulative,
            kind: target.kind,
        };
        match self.execute(&req) {
            BrokerReply::Acked => Ok(()),
            BrokerReply::AckRefused(e) => Err(e),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    /// Deliver a subscription marker; whether a record was written.
    pub fn end_sub(&mut self, name: &str, t: TxnId, action: TxnAction) -> bool {
        self.deliver(&Marker {
            txn: t,
            producer: PRODUCER,
            action,
            to: sub(0, name),
        })
    }

    /// Take a snapshot of the transaction buffer now.
    pub fn take_snapshot(&mut self) {
        let last = self.snapshot.as_ref().map_or(0, |s| s.taken_at);
        self.snapshot = buffer::snapshot(&self.tb, last, 1).or(self.snapshot.take());
    }

    /// Lose memory; rebuild from the durable logs (the buffer from the
    /// latest snapshot and the log after it).
    pub fn restart(&mut self) {
        self.tb = buffer::recover_from_snapshot(self.snapshot.as_ref(), &self.log).tb;
        self.dedup = ProducerDedup::recover(&self.log);
        self.subs = self
            .sub_logs
            .iter()
            .map(|(n, l)| (n.clone(), subscription::recover(l)))
            .collect();
    }
}
