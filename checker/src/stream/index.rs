//! Derived views of a stream history that every rule reads: where each
//! message sits in the logs and whether it is visible, who received and
//! acknowledged what, and how to describe transactions and messages.

use super::history::{
    AckOp, LogEntry, MarkerKind, OpResult, PartitionLog, ReceiveOp, SendOp, StreamHistory,
    StreamOp, StreamTxn, SubscriptionDecl,
};
use crate::Outcome;
use crate::units::Ms;
use std::collections::{BTreeMap, BTreeSet};

/// One message entry in a partition's log.
#[derive(Clone, Copy)]
pub(crate) struct Loc<'a> {
    pub partition: &'a str,
    pub offset: u64,
    pub txn: Option<u64>,
    /// A plain message, or one whose transaction has a commit marker after it here.
    pub visible: bool,
}

/// The markers one transaction has in one partition.
#[derive(Default, Clone, Copy)]
pub(crate) struct Markers {
    /// The offset of the last commit marker.
    pub commit: Option<u64>,
    /// The offset of the first abort marker.
    pub abort: Option<u64>,
}

/// The index the rules share.
pub(crate) struct Ix<'a> {
    pub h: &'a StreamHistory,
    pub txns: BTreeMap<u64, &'a StreamTxn>,
    pub subs: BTreeMap<&'a str, &'a SubscriptionDecl>,
    pub parts: BTreeMap<&'a str, &'a PartitionLog>,
    /// (partition, offset) to its entry.
    pub entries: BTreeMap<(&'a str, u64), &'a LogEntry>,
    /// (partition, txn) to its markers there.
    pub markers: BTreeMap<(&'a str, u64), Markers>,
    /// Message to its entries in the logs (normally one).
    pub in_log: BTreeMap<&'a str, Vec<Loc<'a>>>,
    /// Message to the send that produced it.
    pub sends: BTreeMap<&'a str, &'a SendOp>,
    /// (subscription, message) to its receipts, in time order.
    pub receipts: BTreeMap<(&'a str, &'a str), Vec<&'a ReceiveOp>>,
    /// (subscription, partition, offset) to its acknowledgments, in time order.
    pub acks: BTreeMap<(&'a str, &'a str, u64), Vec<&'a AckOp>>,
    /// (subscription, partition) to (acked_below, individually acked offsets).
    pub acked: BTreeMap<(&'a str, &'a str), (u64, BTreeSet<u64>)>,
    /// Transactions with at least one visible message.
    pub visible_txns: BTreeSet<u64>,
}

impl<'a> Ix<'a> {
    pub(crate) fn build(h: &'a StreamHistory) -> Ix<'a> {
        let mut ix = Ix {
            h,
            txns: h.transactions.iter().map(|t| (t.id, t)).collect(),
            subs: h
                .subscriptions
                .iter()
                .map(|s| (s.name.as_str(), s))
                .collect(),
            parts: BTreeMap::new(),
            entries: BTreeMap::new(),
            markers: BTreeMap::new(),
            in_log: BTreeMap::new(),
            sends: BTreeMap::new(),
            receipts: BTreeMap::new(),
            acks: BTreeMap::new(),
            acked: BTreeMap::new(),
            visible_txns: BTreeSet::new(),
        };
        for p in &h.final_state.partitions {
            ix.index_log(p);
        }
        for op in &h.ops {
            match op {
                StreamOp::Send(s) => {
                    ix.sends.entry(s.message.as_str()).or_insert(s);
                }
                StreamOp::Receive(r) => ix
                    .receipts
                    .entry((r.subscription.as_str(), r.message.as_str()))
                    .or_default()
                    .push(r),
                StreamOp::Ack(a) => ix
                    .acks
                    .entry((a.subscription.as_str(), a.partition.as_str(), a.offset))
                    .or_default()
                    .push(a),
            }
        }
        for a in &h.final_state.acks {
            let set = ix
                .acked
                .entry((a.subscription.as_str(), a.partition.as_str()))
                .or_insert_with(|| (a.acked_below, BTreeSet::new()));
            set.1.extend(a.offsets.iter().copied());
        }
        ix
    }

    fn index_log(&mut self, p: &'a PartitionLog) {
        let name = p.name.as_str();
        self.parts.insert(name, p);
        for e in &p.entries {
            self.entries.insert((name, e.offset), e);
            if let (Some(kind), Some(t)) = (e.marker, e.txn) {
                let m = self.markers.entry((name, t)).or_default();
                match kind {
                    MarkerKind::Commit => m.commit = Some(e.offset),
                    MarkerKind::Abort => m.abort = m.abort.or(Some(e.offset)),
                }
            }
        }
        for e in &p.entries {
            let Some(msg) = &e.message else { continue };
            let visible = match e.txn {
                None => true,
                Some(t) => self
                    .markers
                    .get(&(name, t))
                    .and_then(|m| m.commit)
                    .is_some_and(|c| c > e.offset),
            };
            if let (true, Some(t)) = (visible, e.txn) {
                self.visible_txns.insert(t);
            }
            self.in_log.entry(msg.as_str()).or_default().push(Loc {
                partition: name,
                offset: e.offset,
                txn: e.txn,
                visible,
            });
        }
    }

    /// The message's first entry in its partition's log, if any.
    pub(crate) fn loc(&self, message: &str) -> Option<Loc<'a>> {
        self.in_log.get(message).and_then(|v| v.first().copied())
    }

    /// The transaction a message belongs to: the log's word, else the sender's.
    pub(crate) fn txn_of(&self, message: &str) -> Option<u64> {
        match self.loc(message) {
            Some(l) => l.txn,
            None => self.sends.get(message).and_then(|s| s.txn),
        }
    }

    /// Whether the subscription's final state acknowledges this offset.
    pub(crate) fn is_acked(&self, sub: &str, partition: &str, offset: u64) -> bool {
        self.acked
            .get(&(sub, partition))
            .is_some_and(|(below, set)| offset < *below || set.contains(&offset))
    }

    /// Whether an acknowledgment may have taken effect as far as its client
    /// knows: a plain one not refused, or one of a transaction not aborted.
    pub(crate) fn ack_may_apply(&self, a: &AckOp) -> bool {
        a.result != OpResult::Failed
            && a.txn.is_none_or(|t| {
                self.txns
                    .get(&t)
                    .is_some_and(|x| x.outcome != Outcome::Aborted)
            })
    }

    /// Whether the client was told the acknowledgment took effect: a plain
    /// one confirmed, or one of a transaction its client was told committed.
    pub(crate) fn ack_committed(&self, a: &AckOp) -> bool {
        match a.txn {
            None => a.result == OpResult::Ok,
            Some(t) => {
                a.result != OpResult::Failed
                    && self
                        .txns
                        .get(&t)
                        .is_some_and(|x| x.outcome == Outcome::Committed)
            }
        }
    }

    /// "T5 (0,17) (client 2; invoked at 0.100 ms, commit requested at 0.300 ms, told committed at 0.400 ms)".
    pub(crate) fn txn_desc(&self, id: u64) -> String {
        let Some(t) = self.txns.get(&id) else {
            return format!("T{id} (not in the history)");
        };
        let label = t
            .label
            .as_deref()
            .map(|l| format!(" {l}"))
            .unwrap_or_default();
        let commit = match t.commit_request_ns {
            Some(c) => format!("commit requested at {}", Ms(c)),
            None => "commit never requested".to_string(),
        };
        let told = match (t.outcome, t.complete_ns) {
            (Outcome::Unknown, _) => "outcome unknown to its client".to_string(),
            (o, Some(c)) => format!("told {} at {}", outcome_word(o), Ms(c)),
            (o, None) => format!("told {}", outcome_word(o)),
        };
        let reason = t
            .abort_reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        let coordinator = t
            .coordinator
            .as_ref()
            .map(|d| {
                let why = d
                    .reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default();
                format!(
                    "; the coordinator recorded {} at {}{why}",
                    outcome_word(d.outcome),
                    Ms(d.t_ns)
                )
            })
            .unwrap_or_default();
        format!(
            "T{id}{label} (client {}; invoked at {}, {commit}, {told}{reason}{coordinator})",
            t.client,
            Ms(t.invoke_ns)
        )
    }

    /// Where a message sits in the logs and whether it is visible there.
    pub(crate) fn log_desc(&self, message: &str) -> String {
        let Some(locs) = self.in_log.get(message) else {
            return format!("message {message:?} is in no partition's log");
        };
        let parts: Vec<String> = locs
            .iter()
            .map(|l| {
                let state = match l.txn {
                    None => "a plain message, visible".to_string(),
                    Some(t) => format!("{}, of T{t}", self.marker_desc(l.partition, t, l.offset)),
                };
                format!("{}@{} ({state})", l.partition, l.offset)
            })
            .collect();
        format!("message {message:?} is in the log at {}", parts.join(", "))
    }

    /// Whether the transaction's message at `offset` is committed or aborted here, and by which marker.
    pub(crate) fn marker_desc(&self, partition: &str, txn: u64, offset: u64) -> String {
        let m = self
            .markers
            .get(&(partition, txn))
            .copied()
            .unwrap_or_default();
        match (m.commit.filter(|c| *c > offset), m.abort) {
            (Some(c), _) => format!("visible: commit marker at offset {c}"),
            (None, Some(a)) => format!("invisible: abort marker at offset {a}"),
            (None, None) => "invisible: no commit marker after it".to_string(),
        }
    }

    /// "sent by client 2 at 0.120 ms in T5 (...)" for a message.
    pub(crate) fn send_desc(&self, message: &str) -> String {
        match self.sends.get(message) {
            None => format!("message {message:?} was never sent by a recorded client"),
            Some(s) => {
                let txn = match s.txn {
                    Some(t) => format!(" in {}", self.txn_desc(t)),
                    None => " outside any transaction".to_string(),
                };
                format!(
                    "message {message:?} was sent to {} by client {} at {}{txn}; the producer was told {}",
                    s.partition,
                    s.client,
                    Ms(s.t_ns),
                    result_word(s.result)
                )
            }
        }
    }
}

/// The client's word for an outcome.
pub(crate) fn outcome_word(o: Outcome) -> &'static str {
    match o {
        Outcome::Committed => "committed",
        Outcome::Aborted => "aborted",
        Outcome::Unknown => "unknown",
    }
}

/// The client's word for an op's result.
pub(crate) fn result_word(r: OpResult) -> &'static str {
    match r {
        OpResult::Ok => "ok",
        OpResult::Failed => "failed",
        OpResult::Unknown => "nothing (unknown)",
    }
}

/// "consumer c1 (client 3) of subscription S received m (in-0@4) at 0.900 ms".
pub(crate) fn receipt_desc(r: &ReceiveOp) -> String {
    format!(
        "consumer {} (client {}) of subscription {:?} received message {:?} at {}@{} at {}",
        r.consumer,
        r.client,
        r.subscription,
        r.message,
        r.partition,
        r.offset,
        Ms(r.t_ns)
    )
}

/// "client 3 acknowledged m (in-0@4) on subscription S at 0.950 ms in T7; told ok".
pub(crate) fn ack_desc(a: &AckOp) -> String {
    let txn = match a.txn {
        Some(t) => format!("in T{t}"),
        None => "outside any transaction".to_string(),
    };
    format!(
        "client {} acknowledged message {:?} ({}@{}) on subscription {:?} at {} {txn}; told {}",
        a.client,
        a.message,
        a.partition,
        a.offset,
        a.subscription,
        Ms(a.t_ns),
        result_word(a.result)
    )
}
