//! What a run recorded, in the terms both systems share, and the metrics
//! computed from it. A system's extractor (`percolator.rs`) turns its
//! history into [`RunFacts`]; everything after that is system-neutral, so
//! both systems are measured by one piece of code.

use percsim_checker::{Event, Outcome};
use percsim_sim::EventKind;
use serde::Serialize;
use std::collections::BTreeMap;

/// How a transaction ended, as its client was told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Committed.
    Committed,
    /// Aborted.
    Aborted,
    /// The client never learnt (it died, or the reply was lost).
    Unknown,
}

impl From<Outcome> for Ending {
    fn from(outcome: Outcome) -> Ending {
        match outcome {
            Outcome::Committed => Ending::Committed,
            Outcome::Aborted => Ending::Aborted,
            Outcome::Unknown => Ending::Unknown,
        }
    }
}

/// When a run's workload phase ended, by its events: the healed phase's
/// start, or its last event when the run has no healed phase.
pub fn workload_end_ns(events: &[Event]) -> u64 {
    let healed = EventKind::PhaseHealed.name();
    events
        .iter()
        .find(|e| e.kind == healed)
        .map_or_else(|| events.last().map_or(0, |e| e.t_ns), |e| e.t_ns)
}

/// One transaction: when it began and ended (simulated ns from the start
/// of the run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnFact {
    /// When the client began it.
    pub invoke_ns: u64,
    /// When the client learnt the outcome (None: never).
    pub complete_ns: Option<u64>,
    /// The outcome.
    pub ending: Ending,
    /// Why it aborted, as the history records it (None: not aborted, or
    /// no reason recorded).
    pub abort_reason: Option<String>,
}

impl From<&percsim_checker::Transaction> for TxnFact {
    /// A transaction of a transaction history, as its client saw it.
    fn from(t: &percsim_checker::Transaction) -> TxnFact {
        TxnFact {
            invoke_ns: t.invoke_ns,
            complete_ns: t.complete_ns,
            ending: t.outcome.into(),
            abort_reason: t.abort_reason.clone(),
        }
    }
}

impl From<&percsim_checker::stream::StreamTxn> for TxnFact {
    /// A transaction of a stream history, as its client saw it.
    fn from(t: &percsim_checker::stream::StreamTxn) -> TxnFact {
        TxnFact {
            invoke_ns: t.invoke_ns,
            complete_ns: t.complete_ns,
            ending: t.outcome.into(),
            abort_reason: t.abort_reason.clone(),
        }
    }
}

/// One document of the pipeline job: when its load was acknowledged and
/// when its processing completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocFact {
    /// When the loader learnt that the load committed.
    pub loaded_ns: u64,
    /// When the last stage of its processing committed (None: never).
    pub processed_ns: Option<u64>,
}

/// A node's death and the work it left behind that blocks others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeathFact {
    /// When the node was killed.
    pub t_ns: u64,
    /// The dead node's name.
    pub node: String,
    /// For each piece of dead work (a lock of a transaction the dead
    /// client had in flight; a transaction open at the coordinator's
    /// death), when it was resolved (None: never).
    pub resolved_ns: Vec<Option<u64>>,
}

/// Everything the metrics are computed from, for one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFacts {
    /// When the workload phase ended (faults healed), ns from the start.
    pub workload_end_ns: u64,
    /// Every transaction any client began.
    pub txns: Vec<TxnFact>,
    /// Every committed document load.
    pub docs: Vec<DocFact>,
    /// Every death of a client or coordinator node in the workload phase.
    pub deaths: Vec<DeathFact>,
}

/// The samples of many runs of one (system, fault mix) cell of the table.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    runs: u64,
    workload_ns: u64,
    loaded: u64,
    processed: u64,
    doc_ms: Vec<f64>,
    commit_ms: Vec<f64>,
    begun: u64,
    aborted: u64,
    causes: BTreeMap<String, u64>,
    blocked_ms: Vec<f64>,
    never_resolved: u64,
    recovery_ms: Vec<f64>,
    never_recovered: u64,
    unmeasured: u64,
    deaths: u64,
}

/// The metrics of one cell of the table (see docs/compare.md for each
/// definition). `None` where there was nothing to measure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    /// Runs (seeds) measured.
    pub runs: u64,
    /// Documents loaded (committed) in the workload phase, per simulated
    /// second of workload phase: the offered load.
    pub docs_loaded_per_sim_s: f64,
    /// Documents fully processed by the end of the workload phase, per
    /// simulated second of workload phase.
    pub docs_per_sim_s: f64,
    /// Load-to-processed delay of the documents loaded in the workload
    /// phase and processed at any time in the run, median (simulated ms).
    pub doc_latency_p50_ms: Option<f64>,
    /// Commit latency, begin to outcome, committed transactions, median.
    pub commit_p50_ms: Option<f64>,
    /// The same, 99th percentile.
    pub commit_p99_ms: Option<f64>,
    /// Aborted transactions among all begun in the workload phase.
    pub abort_rate: Option<f64>,
    /// The aborts by cause (the history's abort reason; `unnamed` when
    /// none is recorded), each as a share of all begun in the workload
    /// phase, most frequent first (ties by name).
    pub abort_causes: Vec<(String, f64)>,
    /// Deaths of clients or coordinators in the workload phase.
    pub deaths: u64,
    /// Time a piece of dead work blocked others (death to resolution), median.
    pub blocked_p50_ms: Option<f64>,
    /// The same, maximum.
    pub blocked_max_ms: Option<f64>,
    /// Pieces of dead work never resolved.
    pub never_resolved: u64,
    /// Time from a death until the system recovered, median.
    pub recovery_p50_ms: Option<f64>,
    /// The same, maximum.
    pub recovery_max_ms: Option<f64>,
    /// Deaths after which the system never recovered within the run: some
    /// dead work was never resolved, or transactions were begun after the
    /// death and none of them committed.
    pub never_recovered: u64,
    /// Deaths whose dead work was all resolved but after which no
    /// transaction began at all (the job had no work left), so recovery
    /// could not be measured: neither recovered nor stuck.
    pub unmeasured: u64,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// The value at rank `q` (nearest rank) of a sorted list.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(i).copied()
}

impl Samples {
    /// Add one run's facts.
    pub fn add(&mut self, f: &RunFacts) {
        let end = f.workload_end_ns;
        self.runs += 1;
        self.workload_ns += end;
        for d in f.docs.iter().filter(|d| d.loaded_ns <= end) {
            self.loaded += 1;
            let Some(p) = d.processed_ns else { continue };
            self.doc_ms.push(ms(p.saturating_sub(d.loaded_ns)));
            if p <= end {
                self.processed += 1;
            }
        }
        for t in f.txns.iter().filter(|t| t.invoke_ns <= end) {
            self.begun += 1;
            match (t.ending, t.complete_ns) {
                (Ending::Committed, Some(c)) => self.commit_ms.push(ms(c - t.invoke_ns)),
                (Ending::Aborted, _) => {
                    self.aborted += 1;
                    let cause = t.abort_reason.as_deref().unwrap_or("unnamed");
                    *self.causes.entry(cause.to_string()).or_default() += 1;
                }
                _ => {}
            }
        }
        for d in f.deaths.iter().filter(|d| d.t_ns <= end) {
            self.add_death(d, &f.txns);
        }
    }

    fn add_death(&mut self, d: &DeathFact, txns: &[TxnFact]) {
        self.deaths += 1;
        let mut last = d.t_ns;
        let mut all = true;
        for r in &d.resolved_ns {
            match r {
                Some(r) => {
                    self.blocked_ms.push(ms(r.saturating_sub(d.t_ns)));
                    last = last.max(*r);
                }
                None => {
                    self.never_resolved += 1;
                    all = false;
                }
            }
        }
        // The first commit of a transaction begun after the death.
        let again = txns
            .iter()
            .filter(|t| t.ending == Ending::Committed && t.invoke_ns >= d.t_ns)
            .filter_map(|t| t.complete_ns)
            .min();
        let begun_after = txns.iter().any(|t| t.invoke_ns >= d.t_ns);
        match (all, again) {
            (true, Some(a)) => self.recovery_ms.push(ms(last.max(a) - d.t_ns)),
            (true, None) if !begun_after => self.unmeasured += 1,
            _ => self.never_recovered += 1,
        }
    }

    /// The aborts by cause, as shares of the transactions begun, most
    /// frequent first.
    fn causes(&self) -> Vec<(String, f64)> {
        let mut causes: Vec<(String, u64)> =
            self.causes.iter().map(|(c, n)| (c.clone(), *n)).collect();
        causes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        causes
            .into_iter()
            .map(|(c, n)| (c, n as f64 / self.begun.max(1) as f64))
            .collect()
    }

    /// The metrics of everything added so far.
    pub fn metrics(&self) -> Metrics {
        let sorted = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            v
        };
        let (doc, commit) = (sorted(&self.doc_ms), sorted(&self.commit_ms));
        let (blocked, recovery) = (sorted(&self.blocked_ms), sorted(&self.recovery_ms));
        let secs = self.workload_ns as f64 / 1e9;
        let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        Metrics {
            runs: self.runs,
            docs_loaded_per_sim_s: per_s(self.loaded),
            docs_per_sim_s: per_s(self.processed),
            doc_latency_p50_ms: quantile(&doc, 0.5),
            commit_p50_ms: quantile(&commit, 0.5),
            commit_p99_ms: quantile(&commit, 0.99),
            abort_rate: (self.begun > 0).then(|| self.aborted as f64 / self.begun as f64),
            abort_causes: self.causes(),
            deaths: self.deaths,
            blocked_p50_ms: quantile(&blocked, 0.5),
            blocked_max_ms: blocked.last().copied(),
            never_resolved: self.never_resolved,
            recovery_p50_ms: quantile(&recovery, 0.5),
            recovery_max_ms: recovery.last().copied(),
            never_recovered: self.never_recovered,
            unmeasured: self.unmeasured,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn txn(invoke_ms: u64, complete_ms: Option<u64>, ending: Ending) -> TxnFact {
        TxnFact {
            invoke_ns: invoke_ms * MS,
            complete_ns: complete_ms.map(|c| c * MS),
            ending,
            abort_reason: None,
        }
    }

    fn metrics(f: &RunFacts) -> Metrics {
        let mut s = Samples::default();
        s.add(f);
        s.metrics()
    }

    #[test]
    fn throughput_counts_documents_processed_by_the_end_of_the_workload_phase() {
        let doc = |l: u64, p: Option<u64>| DocFact {
            loaded_ns: l * MS,
            processed_ns: p.map(|p| p * MS),
        };
        let f = RunFacts {
            workload_end_ns: 2_000 * MS,
            docs: vec![
                doc(100, Some(400)),
                doc(200, Some(1_900)),
                doc(300, Some(2_500)), // processed, but after the faults healed
                doc(400, None),
                doc(2_100, Some(2_200)), // loaded in the healed phase: not counted
            ],
            ..RunFacts::default()
        };
        let m = metrics(&f);
        assert_eq!(m.docs_loaded_per_sim_s, 2.0);
        assert_eq!(m.docs_per_sim_s, 1.0);
        // Delays 300, 1700, 2200: the median is 1700.
        assert_eq!(m.doc_latency_p50_ms, Some(1_700.0));
    }

    #[test]
    fn commit_latency_and_abort_rate_come_from_the_transactions_of_the_workload_phase() {
        let f = RunFacts {
            workload_end_ns: 1_000 * MS,
            txns: vec![
                txn(0, Some(10), Ending::Committed),
                txn(100, Some(130), Ending::Committed),
                txn(200, Some(220), Ending::Committed),
                txn(300, Some(900), Ending::Aborted),
                txn(400, None, Ending::Unknown),
                txn(1_100, Some(1_900), Ending::Committed), // after the phase
            ],
            ..RunFacts::default()
        };
        let m = metrics(&f);
        assert_eq!(m.commit_p50_ms, Some(20.0));
        assert_eq!(m.commit_p99_ms, Some(30.0));
        assert_eq!(m.abort_rate, Some(0.2));
        assert_eq!(m.abort_causes, vec![("unnamed".to_string(), 0.2)]);
    }

    #[test]
    fn aborts_are_counted_by_cause_most_frequent_first() {
        let aborted = |ms: u64, reason: &str| TxnFact {
            abort_reason: Some(reason.to_string()),
            ..txn(ms, Some(ms + 1), Ending::Aborted)
        };
        let f = RunFacts {
            workload_end_ns: 1_000 * MS,
            txns: vec![
                aborted(10, "invalidated"),
                aborted(20, "conflict"),
                aborted(30, "invalidated"),
                txn(40, Some(50), Ending::Committed),
                aborted(2_000, "conflict"), // after the phase
            ],
            ..RunFacts::default()
        };
        let causes = metrics(&f).abort_causes;
        assert_eq!(
            causes,
            vec![
                ("invalidated".to_string(), 0.5),
                ("conflict".to_string(), 0.25)
            ]
        );
    }

    #[test]
    fn dead_work_blocks_until_resolved_and_recovery_waits_for_a_new_commit() {
        let f = RunFacts {
            workload_end_ns: 5_000 * MS,
            txns: vec![
                txn(900, Some(1_100), Ending::Committed), // began before the death
                txn(1_200, Some(1_300), Ending::Committed),
                txn(4_000, Some(4_700), Ending::Committed),
            ],
            deaths: vec![
                DeathFact {
                    t_ns: 1_000 * MS,
                    node: "client-1".into(),
                    resolved_ns: vec![Some(1_500 * MS), Some(2_000 * MS), Some(3_000 * MS)],
                },
                DeathFact {
                    t_ns: 3_500 * MS,
                    node: "oracle".into(),
                    resolved_ns: vec![],
                },
                DeathFact {
                    t_ns: 4_800 * MS,
                    node: "client-2".into(),
                    resolved_ns: vec![None],
                },
                // Its lock resolved, and no transaction begins after it:
                // nothing to recover for, so nothing measured.
                DeathFact {
                    t_ns: 4_850 * MS,
                    node: "client-3".into(),
                    resolved_ns: vec![Some(4_900 * MS)],
                },
            ],
            ..RunFacts::default()
        };
        let m = metrics(&f);
        assert_eq!(m.deaths, 4);
        assert_eq!(m.blocked_p50_ms, Some(1_000.0));
        assert_eq!(m.blocked_max_ms, Some(2_000.0));
        assert_eq!(m.never_resolved, 1);
        // client-1: its last lock at 3000 ms (a new commit came at 1300);
        // oracle: the first commit begun after it, at 4700 ms.
        assert_eq!(m.recovery_p50_ms, Some(2_000.0));
        assert_eq!(m.recovery_max_ms, Some(2_000.0));
        assert_eq!(m.never_recovered, 1);
        assert_eq!(m.unmeasured, 1);
        // A transaction begun after client-3's death that never commits:
        // now it is stuck, not unmeasured.
        let mut stuck = f.clone();
        stuck.txns.push(txn(4_860, None, Ending::Unknown));
        let m = metrics(&stuck);
        assert_eq!((m.never_recovered, m.unmeasured), (2, 0));
        let mut oracle = f.clone();
        oracle.deaths = vec![f.deaths[1].clone()];
        let m = metrics(&oracle);
        assert_eq!((m.recovery_p50_ms, m.blocked_max_ms), (Some(1_200.0), None));
    }

    #[test]
    fn empty_samples_measure_nothing() {
        let m = Samples::default().metrics();
        assert_eq!(m.docs_per_sim_s, 0.0);
        assert_eq!(
            (m.commit_p50_ms, m.abort_rate, m.recovery_max_ms),
            (None, None, None)
        );
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.5), Some(3.0));
    }
}
