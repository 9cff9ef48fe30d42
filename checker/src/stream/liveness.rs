//! The liveness rule of a stream history, `dead_client_txn_open`: a
//! transaction whose client died is ended by its coordinator within its
//! timeout plus a bound (Pulsar's coordinator aborts a transaction past its
//! timeout whoever holds it: `TransactionMetadataStoreService`'s timeout
//! tracker).
//!
//! The rule reads what the history recorded at the coordinator, never the
//! client's word: when the coordinator opened a transaction with the
//! timeout its client asked for (`timeout_ms`), when its log durably held
//! the decision to commit or abort (`commit_logged_ns`, `abort_logged_ns`,
//! or a timeout's `coordinator` decision), the clients' deaths (`kill`
//! events) and the faults that could keep the coordinator from acting.
//! A history without a `liveness_thresholds` event is not judged.
//!
//! A transaction is judged when its client was killed after it began and
//! before it heard the outcome. It must be ended within its timeout plus
//! `timeout_scan_ms` plus `bound_ms` of its beginning. When a fault touched
//! the cluster while it was open (a broker or the metadata service killed
//! or frozen, a partition, a network fault, a targeted message rule, an
//! unload), its coordinator may have been down or cut off: it must then be
//! ended within `session_timeout_ms` plus `timeout_scan_ms` plus
//! `bound_ms` of the end of the last such fault, if that is later (a
//! recovered coordinator keeps each transaction's deadline, which is in its
//! log). A fault whose end the history does not record ends at the heal,
//! or never when it began after the heal (the transaction is then not
//! judged).

use super::StreamHistory;
use crate::history::Event;
use crate::liveness::{
    LivenessFinding, LivenessReport, LivenessRule, LivenessThresholds, TxnThresholds, client_node,
    is_client_node, partition_heals,
};

const MS: u64 = 1_000_000;

/// The client id a stream history gives a transaction no client is known
/// to have begun (the coordinator's own record of it).
const NO_CLIENT: u64 = u64::MAX;

impl TxnThresholds {
    /// The thresholds of the first `liveness_thresholds` event.
    fn of(events: &[Event]) -> Option<TxnThresholds> {
        let e = events.iter().find(|e| e.kind == "liveness_thresholds")?;
        let u = |name: &str| e.fields.get(name)?.as_u64();
        Some(TxnThresholds {
            txn_timeout_ms: u("txn_timeout_ms")?,
            timeout_scan_ms: u("timeout_scan_ms")?,
            session_timeout_ms: u("session_timeout_ms")?,
            bound_ms: u("bound_ms")?,
        })
    }
}

/// Judges the stream history `h` by the stream liveness rule. A history
/// whose events record no thresholds is not judged.
pub fn check_stream_liveness(h: &StreamHistory) -> LivenessReport {
    let Some(t) = TxnThresholds::of(&h.events) else {
        return LivenessReport {
            thresholds: None,
            findings: Vec::new(),
        };
    };
    let faults = cluster_faults(h);
    let world = Judged {
        t,
        faults,
        end_ns: run_end_ns(h),
    };
    let findings = h
        .transactions
        .iter()
        .filter_map(|txn| world.judge(h, txn))
        .collect();
    LivenessReport {
        thresholds: Some(LivenessThresholds::Transactions(t)),
        findings,
    }
}

/// What the rule judges each transaction against.
struct Judged {
    t: TxnThresholds,
    /// Faults that may keep a coordinator from acting, `[from_ns, to_ns]`.
    faults: Vec<(u64, u64)>,
    /// The last moment the history records.
    end_ns: u64,
}

impl Judged {
    /// The finding on `txn` of `h`, if its client died and the coordinator
    /// left it open past its deadline.
    fn judge(&self, h: &StreamHistory, txn: &super::StreamTxn) -> Option<LivenessFinding> {
        if txn.client == NO_CLIENT {
            return None;
        }
        let node = client_node(txn.client);
        let heard_ns = txn.complete_ns.unwrap_or(u64::MAX);
        let died_ns = h
            .events
            .iter()
            .filter(|e| {
                e.kind == "kill" && e.fields.get("node").and_then(|n| n.as_str()) == Some(&node)
            })
            .map(|e| e.t_ns)
            .find(|&d| d >= txn.invoke_ns && d < heard_ns)?;
        let timeout_ms = txn.timeout_ms.unwrap_or(self.t.txn_timeout_ms);
        let t = &self.t;
        let mut deadline_ns = txn.invoke_ns + (timeout_ms + t.timeout_scan_ms + t.bound_ms) * MS;
        let mut why = format!(
            "its timeout {timeout_ms} ms + timeout_scan {} ms + bound {} ms after it began",
            t.timeout_scan_ms, t.bound_ms
        );
        // A fault on the cluster while the transaction was open may have
        // kept its coordinator down or cut off: the deadline is then
        // counted from the end of the last such fault (whose own window may
        // reach further faults); a fault that never ended is not judged.
        let recovery_ns = (t.session_timeout_ms + t.timeout_scan_ms + t.bound_ms) * MS;
        let mut last_end = None;
        while let Some(end) = self
            .faults
            .iter()
            .filter(|&&(from, to)| from <= deadline_ns && to >= txn.invoke_ns)
            .map(|&(_, to)| to)
            .max()
            .filter(|&end| end.saturating_add(recovery_ns) > deadline_ns)
        {
            if end == u64::MAX {
                return None;
            }
            deadline_ns = end + recovery_ns;
            last_end = Some(end);
        }
        if let Some(end) = last_end {
            why = format!(
                "session_timeout {} ms + timeout_scan {} ms + bound {} ms after the last fault on \
                 the cluster while it was open ended, at {} ms",
                t.session_timeout_ms,
                t.timeout_scan_ms,
                t.bound_ms,
                end / MS
            );
        }
        let ended_ns = [txn.commit_logged_ns, txn.abort_logged_ns]
            .into_iter()
            .chain([txn.coordinator.as_ref().map(|d| d.t_ns)])
            .flatten()
            .min();
        let open_until_ns = ended_ns.unwrap_or(self.end_ns);
        if open_until_ns <= deadline_ns {
            return None;
        }
        let ended = match ended_ns {
            Some(e) => format!("its coordinator ended it only at {} ms", e / MS),
            None => format!(
                "its coordinator never ended it (the history ends at {} ms)",
                self.end_ns / MS
            ),
        };
        let label = txn
            .label
            .as_deref()
            .map_or(String::new(), |l| format!(" {l}"));
        Some(LivenessFinding {
            rule: LivenessRule::DeadClientTxnOpen,
            summary: format!(
                "T{}{label} (client {}) began at {} ms; its client was killed at {} ms before it \
                 heard the outcome; {ended}, past {} ms: {why}",
                txn.id,
                txn.client,
                txn.invoke_ns / MS,
                died_ns / MS,
                deadline_ns / MS,
            ),
            txns: vec![txn.id],
        })
    }
}

/// The last moment `h` records: its last event, op, or transaction time.
fn run_end_ns(h: &StreamHistory) -> u64 {
    let events = h.events.iter().map(|e| e.t_ns);
    let ops = h.ops.iter().map(|o| match o {
        super::StreamOp::Send(s) => s.t_ns,
        super::StreamOp::Receive(r) => r.t_ns,
        super::StreamOp::Ack(a) => a.t_ns,
    });
    let txns = h.transactions.iter().flat_map(|t| {
        [t.complete_ns, t.commit_logged_ns, t.abort_logged_ns]
            .into_iter()
            .flatten()
            .chain([t.invoke_ns])
    });
    events.chain(ops).chain(txns).max().unwrap_or(0)
}

/// Every fault that may keep a coordinator from acting, with the time it
/// was in force: a server (any node not named as the format names a
/// client, `client-<n>`, whether or not that client began a transaction:
/// a consumer that began none is no server) killed or frozen until
/// it restarted or resumed, a partition until its own heal, a network fault
/// for its duration and its late copies, a targeted message rule or an
/// unload until the heal. A fault whose end the history does not record
/// lasts to the end.
fn cluster_faults(h: &StreamHistory) -> Vec<(u64, u64)> {
    let events = &h.events;
    let healed = events
        .iter()
        .find(|e| e.kind == "phase_healed")
        .map_or(u64::MAX, |e| e.t_ns);
    let node = |e: &Event| {
        e.fields
            .get("node")
            .and_then(|n| n.as_str().map(str::to_string))
    };
    let server = |e: &Event| node(e).is_some_and(|n| !is_client_node(&n));
    // A fault's end when none is recorded: the heal if it began before,
    // else never (`u64::MAX`).
    let or_heal = |t_ns: u64| if t_ns <= healed { healed } else { u64::MAX };
    let until = |i: usize, end: &str| {
        events[i + 1..]
            .iter()
            .find(|x| x.kind == end && node(x) == node(&events[i]))
            .map_or(or_heal(events[i].t_ns), |x| x.t_ns)
    };
    // Each partition ends at its own heal, not at the first heal of any.
    let heals = partition_heals(events);
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let u = |name: &str| e.fields.get(name).and_then(|v| v.as_u64());
        let to = match e.kind.as_str() {
            "kill" if server(e) => until(i, "restart"),
            "pause" if server(e) => until(i, "resume"),
            "partition" => heals.get(&i).copied().unwrap_or(or_heal(e.t_ns)),
            "packet_loss" | "latency" | "duplicate" => {
                let late_ms = u("max_delay_ms").or_else(|| u("max_ms")).unwrap_or(0);
                u("duration_ms").map_or(or_heal(e.t_ns), |d| e.t_ns + (d + late_ms) * MS)
            }
            "intercepted" | "resource_unloaded" => or_heal(e.t_ns),
            _ => continue,
        };
        out.push((e.t_ns, to));
    }
    out
}
