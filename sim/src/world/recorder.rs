//! Records what happened in the world: events (the world's and the
//! systems'), named counters for summaries, and the transactions clients
//! began with how each ended, in neutral terms (who ran it, when, and its
//! outcome). The recorder belongs to the world, so a node's crash loses
//! nothing it already recorded. It knows no history format: a system whose
//! history is `percsim-history/1` writes it with
//! [`crate::world::txn_history::TxnHistory`] from these records; a system
//! with a history of its own keeps one beside them.

use crate::world::ids::Counter;
use percsim_checker as history;
use percsim_checker::units::Ms;
use serde_json::Value;
use std::collections::BTreeMap;

/// One transaction a client began (or a load committed outside any
/// client), as the world records it: who ran it, when, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientTxn {
    /// The client that ran it.
    pub client: u64,
    /// When it began, in simulated ns.
    pub invoke_ns: u64,
    /// When its client learnt the outcome; None if it never did.
    pub complete_ns: Option<u64>,
    /// How it ended as its client learnt it; None while it runs, and for
    /// good if its client died first.
    pub outcome: Option<history::Outcome>,
    /// Why it aborted, by the reason's name.
    pub abort_reason: Option<String>,
    /// Its client died while it ran: it will never finish.
    pub orphaned: bool,
}

/// How a transaction ended, as its client learnt it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish<'a> {
    /// Committed.
    Committed,
    /// Aborted for a named reason.
    Aborted {
        /// The reason's name (also the counter `abort.<reason>`).
        reason: &'a str,
    },
    /// The client did not learn the outcome.
    Unknown,
}

/// What was recorded: events, counters, and the clients' transactions.
#[derive(Default)]
pub struct Recorder {
    txns: Vec<ClientTxn>,
    events: Vec<history::Event>,
    /// How many transactions each client has begun (over all incarnations).
    per_client: BTreeMap<u64, u64>,
    /// Named counters (event kinds, abort reasons, ...).
    counters: BTreeMap<String, u64>,
    /// Transactions the system's history could not hold.
    unwritten: u64,
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

    /// Register a transaction of `client` begun at `now_ns`; returns its
    /// id and its 1-based number for its client.
    pub fn begin(&mut self, client: u64, now_ns: u64) -> (u64, u64) {
        let id = self.txns.len() as u64;
        self.txns.push(ClientTxn {
            client,
            invoke_ns: now_ns,
            complete_ns: None,
            outcome: None,
            abort_reason: None,
            orphaned: false,
        });
        let n = self.per_client.entry(client).or_default();
        *n += 1;
        (id, *n)
    }

    /// A transaction committed outside any client's run (an initial load),
    /// recorded under the pseudo-client `client` at time 0; returns its id.
    /// It numbers and counts nowhere.
    pub fn loaded(&mut self, client: u64) -> u64 {
        let id = self.txns.len() as u64;
        self.txns.push(ClientTxn {
            client,
            invoke_ns: 0,
            complete_ns: Some(0),
            outcome: Some(history::Outcome::Committed),
            abort_reason: None,
            orphaned: false,
        });
        id
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

    /// The system's history left out `n` transactions its format cannot
    /// hold: counted for the run's summary rather than lost silently.
    pub fn note_unwritten(&mut self, n: u64) {
        self.unwritten += n;
    }

    /// Transactions the system's history left out (see [`Recorder::note_unwritten`]).
    pub fn unwritten(&self) -> u64 {
        self.unwritten
    }

    /// Every transaction recorded, by id.
    pub fn txns(&self) -> &[ClientTxn] {
        &self.txns
    }

    /// Transaction `id` ended as its client learnt it (counted as
    /// `txn.committed`, `abort.<reason>` or `txn.unknown`). A transaction
    /// never ends before it began: that is a bug of the world's clock, and
    /// the run stops.
    pub fn finish(&mut self, id: u64, finish: Finish<'_>, now_ns: u64) {
        let Some(t) = self.txns.get_mut(id as usize) else {
            return;
        };
        let invoke_ns = t.invoke_ns;
        crate::invariant::check(now_ns >= invoke_ns, || {
            format!(
                "transaction {id} ends at {}, before it began at {}",
                Ms(now_ns),
                Ms(invoke_ns)
            )
        });
        t.complete_ns = Some(now_ns);
        let name = match finish {
            Finish::Committed => {
                t.outcome = Some(history::Outcome::Committed);
                Counter::TxnCommitted.name().to_string()
            }
            Finish::Aborted { reason } => {
                t.outcome = Some(history::Outcome::Aborted);
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
                "event {kind} at {} recorded after event {} at {}",
                Ms(t_ns),
                last.kind,
                Ms(last_ns)
            )
        });
    }

    /// The events recorded, in time order.
    pub fn events(&self) -> &[history::Event] {
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
        expected = "invariant violated: event late at 0.000005 ms recorded after event kill at 0.000010 ms"
    )]
    fn an_event_earlier_than_the_last_trips_the_assertion() {
        let mut r = Recorder::default();
        r.event(10, "kill", json!({}));
        r.event(5, "late", json!({}));
    }

    #[test]
    #[should_panic(
        expected = "invariant violated: event cleanup at 0.000005 ms recorded after event kill at 0.000010 ms"
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
    fn client_transactions_are_numbered_counted_and_orphaned_by_client() {
        let mut r = Recorder::default();
        assert_eq!(r.loaded(LOADER), 0);
        assert_eq!(r.begin(7, 1), (1, 1));
        assert_eq!(r.begin(8, 2), (2, 1));
        assert_eq!(r.begin(7, 3), (3, 2));
        assert_eq!(r.in_progress(), 3, "the load is not running");
        r.finish(1, Finish::Committed, 5);
        r.finish(3, Finish::Aborted { reason: "conflict" }, 6);
        r.orphan(8);
        assert_eq!(r.in_progress(), 0);
        let t = &r.txns()[3];
        assert_eq!(
            (t.outcome, t.complete_ns, t.abort_reason.as_deref()),
            (Some(history::Outcome::Aborted), Some(6), Some("conflict"))
        );
        assert!(r.txns()[2].orphaned && r.txns()[2].outcome.is_none());
        // The load counts nowhere; each outcome once.
        let counted: Vec<(&str, u64)> =
            r.counters().iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(counted, [("abort.conflict", 1), ("txn.committed", 1)]);
    }

    #[test]
    fn an_unknown_outcome_has_no_completion_time() {
        let mut r = Recorder::default();
        let (id, _) = r.begin(0, 1);
        r.finish(id, Finish::Unknown, 4);
        let t = &r.txns()[0];
        assert_eq!(
            (t.outcome, t.complete_ns),
            (Some(history::Outcome::Unknown), None)
        );
        assert_eq!(r.counters().get("txn.unknown"), Some(&1));
    }

    const LOADER: u64 = 1_000_000;

    #[test]
    #[should_panic(
        expected = "invariant violated: transaction 0 ends at 0.000004 ms, before it began at 0.000009 ms"
    )]
    fn a_transaction_ending_before_it_began_trips_the_assertion() {
        let mut r = Recorder::default();
        let (id, _) = r.begin(1, 9);
        r.finish(id, Finish::Unknown, 4);
    }
}
