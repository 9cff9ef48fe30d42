//! Records what clients observed and what happened in the world into a
//! `percsim-history/1` history, plus named counters for summaries. The
//! recorder belongs to the world, so a node's crash loses nothing it
//! already recorded. It knows transactions, operations and events in the
//! history format's terms only; a system translates its own protocol's
//! events into these calls.

use crate::world::ids::Counter;
use percsim_checker as history;
use serde_json::Value;
use std::collections::BTreeMap;

/// The client id the initial load is recorded under.
pub const LOADER_CLIENT: u64 = 1_000_000;

struct TxnRecord {
    client: u64,
    start_ts: Option<u64>,
    commit_ts: Option<u64>,
    invoke_ns: u64,
    complete_ns: Option<u64>,
    outcome: Option<history::Outcome>,
    abort_reason: Option<String>,
    ops: Vec<history::Op>,
    scans: Vec<history::Scan>,
    observer: Option<history::ObserverRun>,
    /// Its client died while it ran: it will never finish.
    orphaned: bool,
}

/// How a transaction ended, as its client learnt it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish<'a> {
    /// Committed (at `commit_ts`, when the client knows it).
    Committed {
        /// The commit timestamp, if known.
        commit_ts: Option<u64>,
    },
    /// Aborted for a named reason.
    Aborted {
        /// The reason's name (also the counter `abort.<reason>`).
        reason: &'a str,
    },
    /// The client did not learn the outcome.
    Unknown,
}

/// The history being recorded, plus counters for summaries.
#[derive(Default)]
pub struct Recorder {
    txns: Vec<TxnRecord>,
    events: Vec<history::Event>,
    /// How many transactions each client has begun (over all incarnations).
    per_client: BTreeMap<u64, u64>,
    /// Named counters (event kinds, abort reasons, ...).
    counters: BTreeMap<String, u64>,
}

impl Recorder {
    /// Add one to the counter `name`.
    pub fn bump(&mut self, name: &str) {
        self.add(name, 1);
    }

    /// Add `n` to the counter `name`.
    pub fn add(&mut self, name: &str, n: u64) {
        // The name is copied only the first time (a lookup by `&str` first).
        match self.counters.get_mut(name) {
            Some(c) => *c += n,
            None => {
                self.counters.insert(name.to_string(), n);
            }
        }
    }

    /// The counters so far.
    pub fn counters(&self) -> &BTreeMap<String, u64> {
        &self.counters
    }

    /// Register a transaction; returns its id and its 1-based number for its client.
    pub fn begin(&mut self, client: u64, now_ns: u64) -> (u64, u64) {
        let id = self.txns.len() as u64;
        self.txns.push(TxnRecord {
            client,
            start_ts: None,
            commit_ts: None,
            invoke_ns: now_ns,
            complete_ns: None,
            outcome: None,
            abort_reason: None,
            ops: Vec::new(),
            scans: Vec::new(),
            observer: None,
            orphaned: false,
        });
        let n = self.per_client.entry(client).or_default();
        *n += 1;
        (id, *n)
    }

    /// A transaction committed outside any client (the initial load).
    pub fn bootstrap(&mut self, start_ts: u64, commit_ts: u64, ops: Vec<history::Op>) {
        self.txns.push(TxnRecord {
            client: LOADER_CLIENT,
            start_ts: Some(start_ts),
            commit_ts: Some(commit_ts),
            invoke_ns: 0,
            complete_ns: Some(0),
            outcome: Some(history::Outcome::Committed),
            abort_reason: None,
            ops,
            scans: Vec::new(),
            observer: None,
            orphaned: false,
        });
    }

    /// Mark the unfinished transactions of a killed client.
    pub fn orphan(&mut self, client: u64) {
        for t in self
            .txns
            .iter_mut()
            .filter(|t| t.client == client && t.outcome.is_none())
        {
            t.orphaned = true;
        }
    }

    /// Transactions still running (a killed client's are orphaned, not running).
    pub fn in_progress(&self) -> usize {
        self.txns
            .iter()
            .filter(|t| t.outcome.is_none() && !t.orphaned)
            .count()
    }

    /// Transaction `id` got its start timestamp.
    pub fn started(&mut self, id: u64, start_ts: u64) {
        if let Some(t) = self.txns.get_mut(id as usize) {
            t.start_ts = Some(start_ts);
        }
    }

    /// The start timestamp of transaction `id`, once it has one.
    pub fn start_ts(&self, id: u64) -> Option<u64> {
        self.txns.get(id as usize)?.start_ts
    }

    /// Transaction `id` is an observer run.
    pub fn observer(&mut self, id: u64, run: history::ObserverRun) {
        if let Some(t) = self.txns.get_mut(id as usize) {
            t.observer = Some(run);
        }
    }

    /// Transaction `id` read or buffered a write.
    pub fn op(&mut self, id: u64, op: history::Op) {
        if let Some(t) = self.txns.get_mut(id as usize) {
            t.ops.push(op);
        }
    }

    /// Transaction `id` scanned a range.
    pub fn scan(&mut self, id: u64, scan: history::Scan) {
        if let Some(t) = self.txns.get_mut(id as usize) {
            t.scans.push(scan);
        }
    }

    /// Transaction `id` took its commit timestamp. Kept if the outcome
    /// stays unknown: the store must then hold the transaction at exactly
    /// this timestamp, or not at all.
    pub fn commit_ts(&mut self, id: u64, commit_ts: u64) {
        if let Some(t) = self.txns.get_mut(id as usize) {
            t.commit_ts = Some(commit_ts);
        }
    }

    /// Transaction `id` ended as its client learnt it. A transaction never
    /// ends before it began: that is a bug of the world's clock, and the
    /// run stops.
    pub fn finish(&mut self, id: u64, finish: Finish<'_>, now_ns: u64) {
        let Some(t) = self.txns.get_mut(id as usize) else {
            return;
        };
        let invoke_ns = t.invoke_ns;
        crate::invariant::check(now_ns >= invoke_ns, || {
            format!("transaction {id} ends at {now_ns} ns, before it began at {invoke_ns} ns")
        });
        t.complete_ns = Some(now_ns);
        let name = match finish {
            Finish::Committed { commit_ts } => {
                t.commit_ts = commit_ts;
                t.outcome = Some(history::Outcome::Committed);
                Counter::TxnCommitted.name().to_string()
            }
            Finish::Aborted { reason } => {
                t.outcome = Some(history::Outcome::Aborted);
                t.commit_ts = None;
                t.abort_reason = Some(reason.to_string());
                format!("abort.{reason}")
            }
            Finish::Unknown => {
                t.outcome = Some(history::Outcome::Unknown);
                t.complete_ns = None;
                Counter::TxnUnknown.name().to_string()
            }
        };
        self.bump(&name);
    }

    /// Record an event without counting it. Events are recorded in time
    /// order (see [`Recorder::event`]).
    pub fn push_event(&mut self, event: history::Event) {
        self.in_time_order(event.t_ns, &event.kind);
        self.events.push(event);
    }

    /// Record a fault or cluster event (counted as `event.<kind>`). Events
    /// are recorded in time order: one earlier than the last recorded is a
    /// bug of the world's clock, and the run stops.
    pub fn event(&mut self, now_ns: u64, kind: &str, fields: Value) {
        self.in_time_order(now_ns, kind);
        self.bump(&format!("event.{kind}"));
        let fields = match fields {
            Value::Object(m) => m.into_iter().collect(),
            _ => BTreeMap::new(),
        };
        self.events.push(history::Event {
            t_ns: now_ns,
            kind: kind.to_string(),
            fields,
        });
    }

    /// Stop the run if an event of `kind` at `t_ns` would come before the
    /// last one recorded.
    fn in_time_order(&self, t_ns: u64, kind: &str) {
        let Some(last) = self.events.last() else {
            return;
        };
        let last_ns = last.t_ns;
        crate::invariant::check(t_ns >= last_ns, || {
            format!(
                "event {kind} at {t_ns} ns recorded after event {} at {last_ns} ns",
                last.kind
            )
        });
    }

    /// The transactions as the history format has them. Transactions that
    /// never got a start timestamp did nothing and are left out; ones that
    /// never learnt an outcome are unknown.
    pub(crate) fn transactions(&self) -> Vec<history::Transaction> {
        self.txns
            .iter()
            .enumerate()
            .filter_map(|(id, t)| {
                Some(history::Transaction {
                    id: id as u64,
                    client: t.client,
                    start_ts: t.start_ts?,
                    commit_ts: t.commit_ts,
                    invoke_ns: t.invoke_ns,
                    complete_ns: t.complete_ns,
                    outcome: t.outcome.unwrap_or(history::Outcome::Unknown),
                    abort_reason: t.abort_reason.clone(),
                    ops: t.ops.clone(),
                    scans: t.scans.clone(),
                    observer: t.observer.clone(),
                })
            })
            .collect()
    }

    pub(crate) fn events(&self) -> &[history::Event] {
        &self.events
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_at_the_same_time_or_later_are_kept_in_order() {
        let mut r = Recorder::default();
        r.event(10, "kill", json!({"node": "client-0"}));
        r.event(10, "pause", json!({}));
        r.push_event(history::Event {
            t_ns: 12,
            kind: "cleanup".into(),
            fields: BTreeMap::new(),
        });
        r.event(30, "kill", json!({}));
        let at: Vec<(u64, &str)> = r
            .events()
            .iter()
            .map(|e| (e.t_ns, e.kind.as_str()))
            .collect();
        assert_eq!(
            at,
            [(10, "kill"), (10, "pause"), (12, "cleanup"), (30, "kill")]
        );
        assert_eq!(r.events()[0].fields["node"], json!("client-0"));
        // `event` counts by kind; `push_event` does not.
        assert_eq!(r.counters().get("event.kill"), Some(&2));
        assert_eq!(r.counters().get("event.cleanup"), None);
    }

    #[test]
    #[should_panic(
        expected = "invariant violated: event late at 5 ns recorded after event kill at 10 ns"
    )]
    fn an_event_earlier_than_the_last_trips_the_assertion() {
        let mut r = Recorder::default();
        r.event(10, "kill", json!({}));
        r.event(5, "late", json!({}));
    }

    #[test]
    #[should_panic(
        expected = "invariant violated: event cleanup at 5 ns recorded after event kill at 10 ns"
    )]
    fn a_pushed_event_earlier_than_the_last_trips_the_assertion() {
        let mut r = Recorder::default();
        r.event(10, "kill", json!({}));
        r.push_event(history::Event {
            t_ns: 5,
            kind: "cleanup".into(),
            fields: BTreeMap::new(),
        });
    }

    #[test]
    #[should_panic(
        expected = "invariant violated: transaction 0 ends at 4 ns, before it began at 9 ns"
    )]
    fn a_transaction_ending_before_it_began_trips_the_assertion() {
        let mut r = Recorder::default();
        let (id, _) = r.begin(1, 9);
        r.finish(id, Finish::Unknown, 4);
    }
}
