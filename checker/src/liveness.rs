//! Liveness rules of a `percsim-history/1` history: locks must not be taken
//! from owners that are alive, and must not outlast owners that are dead.
//!
//! The safety rules judge only what clients observed and what the store
//! holds. These rules need time: they read the events a producer records
//! from the world it ran (when the store wrote a primary lock, when a
//! session ended, when a reader backed off from a lock, which nodes were
//! killed, paused or cut off), never the protocol's own claims about
//! liveness. A history without a `liveness_thresholds` event is not judged
//! (the report says so).
//!
//! | id | what must hold |
//! |----|----------------|
//! | `live_owner_rolled_back` | no other client rolls back the primary of a live owner (process running, session valid, transaction not finished) whose wall time, as the store holds it, was stamped less than `lock_ttl_ms - bound_ms` before, nor, when no fault touched the owner's refresh path, one the owner let go stale (the store held it unrefreshed for at least `lock_ttl_ms - bound_ms`) |
//! | `dead_owner_blocks` | no reader backs off from a lock whose owner died (killed, session expired or forgotten) more than `session_ttl_ms + bound_ms` before, unless a fault touched the reader's path to the liveness service (a network fault, a freeze, or the liveness service's death: the reader then waits out the lock's own TTL) |
//! | `notification_pending` | a change to an observed cell is processed by a committed run of each of its observers within `scan_interval_ms + observer_run_ms + notify_bound_ms` of the heal, of the end of the last fault in force after it, or of its commit, whichever is latest (see `pending.rs`) |
//!
//! A primary's freshness is the wall time its owner stamped into the lock
//! (`stamped_ms` of `primary_refreshed`), not when the store wrote it: a
//! reader sees only the stamp, and a prewrite or refresh that was delayed
//! or retried lands with an old one. Such a lock may land already stale:
//! its owner is judged to have let it go stale only for the time the store
//! held it, since no owner can refresh a lock before it is written (TiKV's
//! client starts its TTL manager once the primary's prewrite succeeded).
//! An owner's session is dated from when
//! the liveness service opened it (`session_opened`): a fault that ended
//! the client's sessions before then did not end this one.

use crate::history::{Event, History, Outcome};
pub use crate::pending::NotifyThresholds;
use serde::Serialize;
use std::collections::BTreeMap;

/// The liveness rules, by stable id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LivenessRule {
    /// A live owner's primary lock was rolled back by another client.
    LiveOwnerRolledBack,
    /// A dead owner's lock kept a reader waiting past the session TTL.
    DeadOwnerBlocks,
    /// A dead client's stream transaction stayed open past its timeout.
    DeadClientTxnOpen,
    /// A notification stayed pending past a bound after the heal.
    NotificationPending,
}

impl LivenessRule {
    /// Every rule, in report order.
    pub const ALL: [LivenessRule; 4] = [
        LivenessRule::LiveOwnerRolledBack,
        LivenessRule::DeadOwnerBlocks,
        LivenessRule::DeadClientTxnOpen,
        LivenessRule::NotificationPending,
    ];

    /// The rule's stable snake_case id.
    pub fn name(self) -> &'static str {
        match self {
            LivenessRule::LiveOwnerRolledBack => "live_owner_rolled_back",
            LivenessRule::DeadOwnerBlocks => "dead_owner_blocks",
            LivenessRule::DeadClientTxnOpen => "dead_client_txn_open",
            LivenessRule::NotificationPending => "notification_pending",
        }
    }

    /// What the rule demands, in plain words.
    pub fn description(self) -> &'static str {
        match self {
            LivenessRule::LiveOwnerRolledBack => {
                "a live owner's refreshed primary lock is never rolled back by another client"
            }
            LivenessRule::DeadOwnerBlocks => {
                "a dead owner's lock blocks readers no longer than the session TTL plus a bound"
            }
            LivenessRule::DeadClientTxnOpen => {
                "a dead client's transaction is ended by its coordinator within its timeout plus a bound"
            }
            LivenessRule::NotificationPending => {
                "a change to an observed cell is processed by its observers within a bound of the heal"
            }
        }
    }
}

/// The thresholds of the stream liveness rule, as the producer recorded
/// them in its `liveness_thresholds` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TxnThresholds {
    /// A transaction's timeout when it records none of its own.
    pub txn_timeout_ms: u64,
    /// How often the coordinator looks for transactions past their timeout.
    pub timeout_scan_ms: u64,
    /// How long a dead broker's resources take to move (its metadata
    /// session's timeout): a coordinator may be recovering that long after
    /// the heal.
    pub session_timeout_ms: u64,
    /// Slack on top: the log's appends, the round trips, the time to act.
    pub bound_ms: u64,
}

impl TxnThresholds {
    /// The thresholds in one line, as printed under the seed.
    pub fn line(&self) -> String {
        format!(
            "liveness thresholds: txn_timeout {} ms, timeout_scan {} ms, session_timeout {} ms, \
             bound {} ms (a dead client's transaction is ended within its timeout + {} ms of \
             its beginning, or within {} ms of the end of the last fault on the cluster \
             while it was open)",
            self.txn_timeout_ms,
            self.timeout_scan_ms,
            self.session_timeout_ms,
            self.bound_ms,
            self.timeout_scan_ms + self.bound_ms,
            self.session_timeout_ms + self.timeout_scan_ms + self.bound_ms
        )
    }
}

/// The thresholds the liveness rules judge a history by, as its producer
/// recorded them in its `liveness_thresholds` event: a lock-based system's
/// (Percolator) or a transaction coordinator's (Pulsar).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum LivenessThresholds {
    /// Percolator's locks and sessions.
    Locks(LockThresholds),
    /// A stream coordinator's transaction timeouts.
    Transactions(TxnThresholds),
}

impl LivenessThresholds {
    /// The thresholds in one line, as printed under the seed.
    pub fn line(&self) -> String {
        match self {
            LivenessThresholds::Locks(t) => t.line(),
            LivenessThresholds::Transactions(t) => t.line(),
        }
    }
}

/// The thresholds of the lock rules, as the producer recorded them in its
/// `liveness_thresholds` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LockThresholds {
    /// A lock whose primary is older than this may be cleaned up.
    pub lock_ttl_ms: u64,
    /// A dead owner's session ends at most this long after its death.
    pub session_ttl_ms: u64,
    /// Slack on top of either TTL: network delay and the time to act.
    pub bound_ms: u64,
    /// The thresholds of `notification_pending`, when the producer
    /// recorded them (else that rule is not judged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notify: Option<NotifyThresholds>,
}

impl LockThresholds {
    /// The thresholds in one line, as printed under the seed.
    pub fn line(&self) -> String {
        let notify = self.notify.map_or_else(
            || "notifications not judged (no thresholds recorded)".to_string(),
            |n| format!("notifications: {}", n.line()),
        );
        format!(
            "liveness thresholds: lock_ttl {} ms, session_ttl {} ms, bound {} ms \
             (a live owner's primary refreshed within {} ms is not rolled back; \
             a dead owner's lock blocks no reader more than {} ms after its death); {notify}",
            self.lock_ttl_ms,
            self.session_ttl_ms,
            self.bound_ms,
            self.lock_ttl_ms.saturating_sub(self.bound_ms),
            self.session_ttl_ms + self.bound_ms
        )
    }
}

/// One liveness violation, explained.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LivenessFinding {
    /// The rule it breaks.
    pub rule: LivenessRule,
    /// One sentence naming the transaction, the lock, the times and the threshold.
    pub summary: String,
    /// The transactions involved (the owner first).
    pub txns: Vec<u64>,
}

/// The liveness verdict on one history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LivenessReport {
    /// The thresholds judged by; `None` when the history records none (then
    /// nothing was judged).
    pub thresholds: Option<LivenessThresholds>,
    /// Every violation found, in time order within each rule.
    pub findings: Vec<LivenessFinding>,
}

impl LivenessReport {
    /// True when no rule was broken.
    pub fn passed(&self) -> bool {
        self.findings.is_empty()
    }

    /// The report as text: the thresholds line, then each finding.
    pub fn render_text(&self) -> String {
        let Some(t) = &self.thresholds else {
            return "liveness: not judged (the history records no liveness_thresholds)\n".into();
        };
        let mut out = format!("{}\n", t.line());
        for f in &self.findings {
            out.push_str(&format!("liveness {}: {}\n", f.rule.name(), f.summary));
        }
        out
    }
}

/// Judges `history` by the liveness rules.
pub fn check_liveness(history: &History) -> LivenessReport {
    let owners = history.transactions.iter().map(|t| {
        let o = Owner {
            id: t.id,
            client: t.client,
            complete_ns: t.complete_ns,
            unknown: t.outcome == Outcome::Unknown,
        };
        (t.start_ts, o)
    });
    let mut report = judge(owners.collect(), &history.events);
    // Only a history with observers has notifications to judge.
    if history.observers.iter().any(|d| !d.weak) {
        notifications(&mut report, &crate::compact::Compact::from_history(history));
    }
    report
}

/// Judges the history read into `c` by the liveness rules (the same
/// verdict as [`check_liveness`] on the history it was read from).
pub(crate) fn check_liveness_compact(c: &crate::compact::Compact) -> LivenessReport {
    let owners = c.txns.iter().map(|t| {
        let o = Owner {
            id: t.id,
            client: t.client,
            complete_ns: t.complete_ns(),
            unknown: t.outcome == Outcome::Unknown,
        };
        (t.start_ts, o)
    });
    let mut report = judge(owners.collect(), &c.events);
    notifications(&mut report, c);
    report
}

/// Adds the findings of `notification_pending` on the history read into
/// `c` to `report`, when the history records the rule's thresholds and
/// the heal.
fn notifications(report: &mut LivenessReport, c: &crate::compact::Compact) {
    let Some(LivenessThresholds::Locks(LockThresholds {
        notify: Some(t), ..
    })) = report.thresholds
    else {
        return;
    };
    let Some(healed) = c.events.iter().find(|e| e.kind == "phase_healed") else {
        return;
    };
    // A stall or a pause may outlast the heal: the cluster is whole only
    // once the last fault ended (a fault with no recorded end: never).
    let whole_ns = disturbances(&c.events)
        .iter()
        .filter(|d| !d.skew)
        .map(|d| d.to_ns)
        .fold(healed.t_ns, u64::max);
    if whole_ns == u64::MAX {
        return;
    }
    let healed = crate::pending::Healed {
        healed_ns: healed.t_ns,
        whole_ns,
    };
    let pending = crate::pending::judge(c, healed, &t);
    report
        .findings
        .extend(pending.into_iter().map(|p| LivenessFinding {
            rule: LivenessRule::NotificationPending,
            summary: p.summary,
            txns: p.txns,
        }));
}

/// Judges the transactions `owners` (by start_ts) and `events` by the rules.
fn judge(owners: BTreeMap<u64, Owner>, events: &[Event]) -> LivenessReport {
    let Some(thresholds) = thresholds(events) else {
        return LivenessReport {
            thresholds: None,
            findings: Vec::new(),
        };
    };
    let world = World::build(owners, events);
    let mut findings = live_owner_rolled_back(&world, &thresholds);
    findings.extend(dead_owner_blocks(&world, &thresholds));
    LivenessReport {
        thresholds: Some(LivenessThresholds::Locks(thresholds)),
        findings,
    }
}

/// The thresholds of the first `liveness_thresholds` event.
fn thresholds(events: &[Event]) -> Option<LockThresholds> {
    let e = events.iter().find(|e| e.kind == "liveness_thresholds")?;
    Some(LockThresholds {
        lock_ttl_ms: u(e, "lock_ttl_ms")?,
        session_ttl_ms: u(e, "session_ttl_ms")?,
        bound_ms: u(e, "bound_ms")?,
        notify: NotifyThresholds::of(e),
    })
}

/// Field `name` of `e` as an unsigned integer.
fn u(e: &Event, name: &str) -> Option<u64> {
    e.fields.get(name)?.as_u64()
}

/// Field `name` of `e` as a string.
fn s<'e>(e: &'e Event, name: &str) -> Option<&'e str> {
    e.fields.get(name)?.as_str()
}

const MS: u64 = 1_000_000;

/// What a fault touched, for the time it lasted.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Scope {
    /// One node, by name (`client-2`, `tablet-0`, `liveness`).
    Node(String),
    /// Every node in the list (the two sides of a partition).
    Nodes(Vec<String>),
    /// The whole network (loss, latency, duplicates, targeted rules).
    Network,
}

/// A fault and the time it was in force, `[from_ns, to_ns]`.
#[derive(Debug, Clone)]
struct Disturbance {
    from_ns: u64,
    to_ns: u64,
    scope: Scope,
    /// The node was killed, or its client's session expired: an owner
    /// touched by it is dead from `from_ns` on.
    deadly: bool,
    /// The node was frozen or stalled: alive, but unable to act.
    freezes: bool,
    /// A clock set off for the whole run, not a fault that ends.
    skew: bool,
}

/// One write of a primary lock's wall time: when the store wrote it, and
/// when its owner stamped it (what a reader judges the lock by; a delayed
/// or retried request lands with an old stamp). Histories that record no
/// stamp give the write time for both.
#[derive(Debug, Clone, Copy)]
struct Refresh {
    written_ns: u64,
    stamped_ns: u64,
}

/// A transaction whose primary the store locked: who owns it and when the
/// store wrote its wall time.
#[derive(Debug, Clone, Default)]
struct Primary {
    row: String,
    col: String,
    session: Option<u64>,
    refreshes: Vec<Refresh>,
    servers: Vec<String>,
}

/// The owner of the transaction at a start_ts, as its client saw it.
#[derive(Debug, Clone, Copy)]
struct Owner {
    id: u64,
    client: u64,
    complete_ns: Option<u64>,
    unknown: bool,
}

/// The history indexed for the rules.
struct World<'h> {
    events: &'h [Event],
    owners: BTreeMap<u64, Owner>,
    primaries: BTreeMap<u64, Primary>,
    disturbances: Vec<Disturbance>,
    /// When each session ended, by session id.
    sessions_ended: BTreeMap<u64, u64>,
    /// When the liveness service opened each session, by session id.
    sessions_opened: BTreeMap<u64, u64>,
    /// Clients whose clock was ever skewed.
    skewed: Vec<u64>,
}

impl<'h> World<'h> {
    fn build(owners: BTreeMap<u64, Owner>, events: &'h [Event]) -> Self {
        let mut w = World {
            events,
            owners,
            primaries: BTreeMap::new(),
            disturbances: disturbances(events),
            sessions_ended: BTreeMap::new(),
            sessions_opened: BTreeMap::new(),
            skewed: Vec::new(),
        };
        for e in events {
            w.note(e);
        }
        w
    }

    /// Index one event of the kinds the rules read.
    fn note(&mut self, e: &Event) {
        match e.kind.as_str() {
            "primary_refreshed" => {
                let (Some(ts), Some(row), Some(col)) = (u(e, "start_ts"), s(e, "row"), s(e, "col"))
                else {
                    return;
                };
                let p = self.primaries.entry(ts).or_default();
                (p.row, p.col) = (row.to_string(), col.to_string());
                p.session = p.session.or(u(e, "session"));
                let stamped_ns = u(e, "stamped_ms").map_or(e.t_ns, |ms| (ms * MS).min(e.t_ns));
                p.refreshes.push(Refresh {
                    written_ns: e.t_ns,
                    stamped_ns,
                });
                if let Some(server) = s(e, "server")
                    && !p.servers.iter().any(|x| x == server)
                {
                    p.servers.push(server.to_string());
                }
            }
            "session_ended" => {
                if let Some(session) = u(e, "session") {
                    self.sessions_ended.entry(session).or_insert(e.t_ns);
                }
            }
            "session_opened" => {
                if let Some(session) = u(e, "session") {
                    self.sessions_opened.entry(session).or_insert(e.t_ns);
                }
            }
            "clock_skew" => self.skewed.extend(u(e, "client")),
            _ => {}
        }
    }

    /// When the owner of the transaction at `start_ts` died, if it did
    /// before `until_ns`: the session its lock names ended, or, after the
    /// liveness service opened that session (when the history records it;
    /// else after the owner's last new session or restart before the lock
    /// was written), its process was killed, its session expired or the
    /// liveness service was killed.
    fn death_ns(&self, start_ts: u64, until_ns: u64) -> Option<(u64, &'static str)> {
        let owner = self.owners.get(&start_ts)?;
        let node = client_node(owner.client);
        let primary = self.primaries.get(&start_ts);
        let ended = primary
            .and_then(|p| p.session)
            .and_then(|s| self.sessions_ended.get(&s).copied())
            .map(|t| (t, "its session ended"));
        let opened = primary
            .and_then(|p| p.session)
            .and_then(|s| self.sessions_opened.get(&s).copied());
        let locked_ns = primary.and_then(|p| p.refreshes.first().map(|r| r.written_ns));
        let since = opened.unwrap_or_else(|| self.session_taken_ns(owner, locked_ns));
        let fault = self
            .disturbances
            .iter()
            .filter(|d| d.deadly && d.from_ns >= since)
            .filter(|d| matches!(&d.scope, Scope::Node(n) if *n == node || n == "liveness"))
            .map(|d| (d.from_ns, "it was killed or lost its session"))
            .min();
        [ended, fault]
            .into_iter()
            .flatten()
            .filter(|(t, _)| *t <= until_ns)
            .min()
    }

    /// When `owner`'s client took the session its lock (written at
    /// `locked_ns`) names, at the latest: its last new session or restart
    /// before then, or the start of the run.
    fn session_taken_ns(&self, owner: &Owner, locked_ns: Option<u64>) -> u64 {
        let until = locked_ns.unwrap_or(u64::MAX);
        let node = client_node(owner.client);
        self.events
            .iter()
            .filter(|e| match e.kind.as_str() {
                "session_reopened" => u(e, "client") == Some(owner.client),
                "restart" => s(e, "node") == Some(node.as_str()),
                _ => false,
            })
            .map(|e| e.t_ns)
            .filter(|&t| t <= until)
            .max()
            .unwrap_or(0)
    }

    /// Whether a fault in force at some time in `[from_ns, to_ns]` touched
    /// one of `nodes` (or the whole network), keeping those `keep` selects.
    fn touched(
        &self,
        nodes: &[String],
        (from_ns, to_ns): (u64, u64),
        keep: fn(&Disturbance) -> bool,
    ) -> bool {
        self.disturbances
            .iter()
            .filter(|d| d.from_ns <= to_ns && d.to_ns >= from_ns && keep(d))
            .any(|d| match &d.scope {
                Scope::Network => true,
                Scope::Node(n) => nodes.contains(n),
                Scope::Nodes(ns) => ns.iter().any(|n| nodes.contains(n)),
            })
    }
}

/// The node name of client `client`.
pub(crate) fn client_node(client: u64) -> String {
    format!("client-{client}")
}

/// Whether `node` is named as [`client_node`] names a client.
pub(crate) fn is_client_node(node: &str) -> bool {
    let digits = node.trim_start_matches(|c: char| !c.is_ascii_digit());
    digits.parse::<u64>().is_ok_and(|c| client_node(c) == node)
}

/// Every fault of the history with the time it was in force.
fn disturbances(events: &[Event]) -> Vec<Disturbance> {
    let mut out: Vec<Disturbance> = Vec::new();
    let heals = partition_heals(events);
    for (i, e) in events.iter().enumerate() {
        let lasting = |scope: Scope| Disturbance {
            from_ns: e.t_ns,
            to_ns: e
                .t_ns
                .saturating_add(u(e, "duration_ms").map_or(u64::MAX, |d| d * MS)),
            scope,
            deadly: false,
            freezes: false,
            skew: false,
        };
        let node = |name: &str| Scope::Node(name.to_string());
        // A stop at a named point names its node, or its client.
        let named = s(e, "node")
            .map(str::to_string)
            .or_else(|| u(e, "client").map(client_node));
        let d = match e.kind.as_str() {
            "kill" | "crash_at_step" => named.map(|n| Disturbance {
                deadly: true,
                ..lasting(node(&n))
            }),
            "pause" | "pause_at_step" => named.map(|n| Disturbance {
                freezes: true,
                ..lasting(node(&n))
            }),
            "stall" => u(e, "client").map(|c| Disturbance {
                freezes: true,
                ..lasting(node(&client_node(c)))
            }),
            "session_expired" => u(e, "client").map(|c| Disturbance {
                to_ns: e.t_ns,
                deadly: true,
                ..lasting(node(&client_node(c)))
            }),
            "clock_skew" => u(e, "client").map(|c| Disturbance {
                skew: true,
                ..lasting(node(&client_node(c)))
            }),
            // A partition lasts to its own heal (or its planned end).
            "partition" => Some(Disturbance {
                to_ns: heals.get(&i).copied().unwrap_or(e.t_ns.saturating_add(
                    u(e, "duration_ms").map_or(u64::MAX, |d| d.saturating_mul(MS)),
                )),
                ..lasting(Scope::Nodes(partition_nodes(e)))
            }),
            "packet_loss" | "latency" | "duplicate" => Some(Disturbance {
                to_ns: late_until_ns(&lasting(Scope::Network), e),
                ..lasting(Scope::Network)
            }),
            "intercepted" => Some(Disturbance {
                to_ns: e.t_ns,
                ..lasting(Scope::Network)
            }),
            "restart" | "resume" => {
                end_on(&mut out, e);
                None
            }
            _ => None,
        };
        out.extend(d);
    }
    out
}

/// The end of a network fault `d` (recorded by `e`) counting its late
/// messages: a copy held back by `max_delay_ms` (duplicates) or `max_ms`
/// (latency) lands that long after the fault's last moment.
fn late_until_ns(d: &Disturbance, e: &Event) -> u64 {
    let delay_ms = u(e, "max_delay_ms").or_else(|| u(e, "max_ms")).unwrap_or(0);
    d.to_ns.saturating_add(delay_ms * MS)
}

/// Both sides of a partition event.
fn partition_nodes(e: &Event) -> Vec<String> {
    ["a", "b"]
        .iter()
        .filter_map(|side| e.fields.get(*side)?.as_array())
        .flatten()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect()
}

/// A restart or resume of `e`'s node ends the kill or pause still in force.
fn end_on(out: &mut [Disturbance], e: &Event) {
    let Some(n) = s(e, "node") else { return };
    let open = out
        .iter_mut()
        .rev()
        .find(|d| d.to_ns > e.t_ns && d.scope == Scope::Node(n.to_string()));
    if let Some(d) = open {
        d.to_ns = e.t_ns;
    }
}

/// When each partition of `events` healed, by the index of its
/// `partition` event. A `partition_healed` event ends one partition in
/// force: the one planned to end first (its start plus its `duration_ms`;
/// one without a duration is planned to last for ever), the earliest begun
/// among equals. The simulator heals partitions in that order, and a heal
/// of every partition at once records one event for each, so overlapping
/// partitions each end at their own heal. A partition no heal ends is
/// absent.
pub(crate) fn partition_heals(events: &[Event]) -> BTreeMap<usize, u64> {
    let mut open: Vec<(u64, usize)> = Vec::new();
    let mut out = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        match e.kind.as_str() {
            "partition" => {
                let planned_ns = u(e, "duration_ms")
                    .map_or(u64::MAX, |d| e.t_ns.saturating_add(d.saturating_mul(MS)));
                open.push((planned_ns, i));
            }
            "partition_healed" => {
                let first = (0..open.len()).min_by_key(|&k| open[k]);
                if let Some(k) = first {
                    out.insert(open.remove(k).1, e.t_ns);
                }
            }
            _ => {}
        }
    }
    out
}

/// `live_owner_rolled_back`: every rollback of a live owner's primary by
/// another client, judged at the time it was recorded.
fn live_owner_rolled_back(w: &World<'_>, t: &LockThresholds) -> Vec<LivenessFinding> {
    let mut out = Vec::new();
    for e in w.events.iter().filter(|e| e.kind == "roll_back") {
        if s(e, "suspicion") == Some("own_abort") {
            continue;
        }
        let Some(ts) = u(e, "start_ts") else { continue };
        let Some(p) = w.primaries.get(&ts) else {
            continue;
        };
        if s(e, "row") != Some(&p.row) || s(e, "col") != Some(&p.col) {
            continue;
        }
        out.extend(judge_rollback(w, t, e, ts, p));
    }
    out
}

/// Judge one rollback `e` of the primary `p` of the transaction at `ts`.
fn judge_rollback(
    w: &World<'_>,
    t: &LockThresholds,
    e: &Event,
    ts: u64,
    p: &Primary,
) -> Option<LivenessFinding> {
    let owner = w.owners.get(&ts)?;
    let (first_ns, last_ns, held_ns) = refreshed_before(p, e.t_ns)?;
    let reader = u(e, "by_client");
    // An owner that finished, or whose commit stays unknown, no longer refreshes.
    let finished = owner.unknown || owner.complete_ns.is_some_and(|c| c <= e.t_ns);
    let skewed = w.skewed.contains(&owner.client) || reader.is_some_and(|r| w.skewed.contains(&r));
    let owner_node = [client_node(owner.client)];
    // A partition may cost the owner its session without a word, up to a
    // session TTL after it healed.
    let since_ns = first_ns.saturating_sub(t.session_ttl_ms * MS);
    let not_live = w.death_ns(ts, e.t_ns).is_some()
        || w.touched(&owner_node, (since_ns, e.t_ns), |d| {
            d.deadly || d.freezes || matches!(d.scope, Scope::Nodes(_))
        });
    if finished || skewed || not_live {
        return None;
    }
    let age_ms = (e.t_ns - last_ns) / MS;
    // The owner can refresh only a lock the store holds: the time its
    // request spent on the way (held by a server that never wrote it, or
    // retried after its tablet moved) is the path's, not the owner's.
    let held_ms = (e.t_ns - held_ns) / MS;
    let fresh_ms = t.lock_ttl_ms.saturating_sub(t.bound_ms);
    // The refresh path: the primary's servers, the owner, and the master,
    // which a client asks where a tablet is when its cached location is
    // gone (a refresh waits out a dead master's time-out).
    let mut path = p.servers.clone();
    path.extend(owner_node);
    path.push("master".to_string());
    // A late copy of a refresh lands after it was stamped: only a network
    // without loss, delay or duplicates gives the refresh times.
    let network = w.touched(&[], (first_ns, e.t_ns), |d| d.scope == Scope::Network);
    let quiet = !w.touched(&path, (first_ns, e.t_ns), |_| true);
    let why = if network {
        return None;
    } else if age_ms < fresh_ms {
        format!(
            "its primary was refreshed {age_ms} ms before, within lock_ttl - bound = {fresh_ms} ms"
        )
    } else if quiet && held_ms >= fresh_ms {
        format!(
            "its primary went {age_ms} ms without a refresh (lock_ttl {} ms), the store holding \
             it for {held_ms} ms of them (at least lock_ttl - bound = {fresh_ms} ms), while no \
             fault touched the owner, the primary's server or the master",
            t.lock_ttl_ms
        )
    } else {
        return None;
    };
    Some(LivenessFinding {
        rule: LivenessRule::LiveOwnerRolledBack,
        summary: format!(
            "T{} (start_ts {ts}, client {}) was rolled back at {} ms by client {}: lock {}/{} \
             of a live owner (process running, session valid, transaction unfinished); {why}",
            owner.id,
            owner.client,
            e.t_ns / MS,
            reader.map_or("?".into(), |r| r.to_string()),
            p.row,
            p.col,
        ),
        txns: vec![owner.id],
    })
}

/// When the owner stamped the primary `p` first, and last among the
/// stamps the store had written by `t_ns`, and when the store last wrote
/// it by then.
fn refreshed_before(p: &Primary, t_ns: u64) -> Option<(u64, u64, u64)> {
    let first = p.refreshes.iter().map(|r| r.stamped_ns).min()?;
    let written = p.refreshes.iter().filter(|r| r.written_ns <= t_ns);
    let last = written.clone().map(|r| r.stamped_ns).max()?;
    let held = written.map(|r| r.written_ns).max()?;
    Some((first, last, held))
}

/// `dead_owner_blocks`: every back-off of a reader from a lock whose owner
/// had been dead longer than the session TTL plus the bound.
fn dead_owner_blocks(w: &World<'_>, t: &LockThresholds) -> Vec<LivenessFinding> {
    let limit_ns = (t.session_ttl_ms + t.bound_ms) * MS;
    let mut out = Vec::new();
    // One finding per reader and lock: its first back-off past the threshold.
    let mut seen = std::collections::BTreeSet::new();
    for e in w.events.iter().filter(|e| e.kind == "lock_wait") {
        let (Some(ts), Some(reader)) = (u(e, "start_ts"), u(e, "by_client")) else {
            continue;
        };
        if seen.contains(&(reader, ts)) {
            continue;
        }
        let Some(owner) = w.owners.get(&ts) else {
            continue;
        };
        let Some((dead_ns, how)) = w.death_ns(ts, e.t_ns) else {
            continue;
        };
        // A frozen reader, a cut or slow network may deliver an old answer;
        // a killed liveness service gives none (the reader then waits out the
        // lock's own TTL). The reader's own death is no such fault.
        let path = [client_node(reader), "liveness".to_string()];
        let noisy = w.touched(&path, (dead_ns, e.t_ns), |d| {
            !d.deadly || matches!(&d.scope, Scope::Node(n) if n == "liveness")
        });
        if e.t_ns - dead_ns <= limit_ns || noisy {
            continue;
        }
        seen.insert((reader, ts));
        out.push(LivenessFinding {
            rule: LivenessRule::DeadOwnerBlocks,
            summary: format!(
                "client {reader} backed off at {} ms from lock {}/{} of T{} (start_ts {ts}, \
                 client {}), whose owner died at {} ms ({how}): {} ms later, past \
                 session_ttl + bound = {} ms",
                e.t_ns / MS,
                s(e, "row").unwrap_or("?"),
                s(e, "col").unwrap_or("?"),
                owner.id,
                owner.client,
                dead_ns / MS,
                (e.t_ns - dead_ns) / MS,
                limit_ns / MS
            ),
            txns: vec![owner.id],
        });
    }
    out
}
