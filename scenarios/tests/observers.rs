//! Observers and notifications: message collapsing, racing runs, a run
//! killed between its primary and secondary commits, weak notifications,
//! and the scanners' jump rule. Each run must also pass the checker
//! (at most one run per change, no lost notification).

mod common;

use percsim_checker::{History, Outcome};
use percsim_protocol::percolator::CellKey;
use percsim_protocol::percolator::client::{
    BodyFuture, ObserverBody, ObserverSpec, StepPoint, Transaction, run_observer, weak_notify,
};
use percsim_scenarios::systems::percolator;
use percsim_scenarios::workloads::{Pipeline, WorkloadSpec};
use percsim_sim::{
    Armed, BoxFuture, Client, PercolatorConfig, PercolatorCounter, Worker, Workload, WorldConfig,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// The observer body: count runs in `row`/`out`. Optionally arm a crash
/// after the primary commit of its first run.
struct Count {
    crash_first: bool,
    armed: AtomicBool,
}

impl ObserverBody<Client> for Count {
    fn run<'a>(&'a self, txn: &'a mut Transaction<'_, Client>, row: &'a str) -> BodyFuture<'a> {
        Box::pin(async move {
            let n: u64 = txn
                .get(row, "out")
                .await?
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            txn.set(row, "out", (n + 1).to_string());
            if self.crash_first && !self.armed.swap(true, Ordering::SeqCst) {
                let crash = Armed::Crash {
                    restart_after_ms: Some(300),
                };
                txn.transport()
                    .arm(txn.id(), StepPoint::AfterCommitPrimary, crash);
            }
            Ok(())
        })
    }
}

/// A test workload: client 0 writes `x`/`in` (observed by `count`) or weakly
/// notifies `x`/`ping` (observed weakly by `pong`); optionally every client
/// races `run_observer` on the first change itself.
#[derive(Clone)]
struct Harness {
    writes: u64,
    interval_ms: u64,
    weak: bool,
    race: bool,
    body: Arc<Count>,
    /// The first write's start_ts once committed (0 before).
    first: Arc<AtomicU64>,
}

impl Harness {
    fn new(writes: u64, interval_ms: u64) -> Self {
        Harness {
            writes,
            interval_ms,
            weak: false,
            race: false,
            body: Arc::new(Count {
                crash_first: false,
                armed: AtomicBool::new(false),
            }),
            first: Arc::default(),
        }
    }

    fn spec(&self) -> ObserverSpec {
        match self.weak {
            true => ObserverSpec {
                name: "pong".into(),
                col: "ping".into(),
                weak: true,
            },
            false => ObserverSpec {
                name: "count".into(),
                col: "in".into(),
                weak: false,
            },
        }
    }
}

impl Workload for Harness {
    fn initial_data(&self) -> Vec<(CellKey, String)> {
        Vec::new()
    }
    fn split_points(&self, _tablets: usize) -> Vec<String> {
        Vec::new()
    }
    fn worker(&self, w: Worker) -> BoxFuture<()> {
        let me = self.clone();
        Box::pin(async move {
            if w.index != 0 || w.incarnation != 1 {
                return;
            }
            let c = w.client.clone();
            if c.index() == 0 {
                for i in 0..me.writes {
                    if me.weak {
                        let _ = weak_notify(c.as_ref(), "x", "ping").await;
                    } else if let Ok(mut txn) = Transaction::begin(c.as_ref()).await {
                        let start = txn.start_ts().0;
                        txn.set("x", "in", format!("v{i}"));
                        if matches!(
                            txn.commit().await,
                            percsim_protocol::percolator::client::CommitOutcome::Committed { .. }
                        ) && i == 0
                        {
                            me.first.store(start, Ordering::SeqCst);
                        }
                    }
                    madsim::time::sleep(Duration::from_millis(me.interval_ms)).await;
                }
            }
            if me.race {
                while me.first.load(Ordering::SeqCst) == 0 {
                    madsim::time::sleep(Duration::from_millis(1)).await;
                }
                let seen = me.first.load(Ordering::SeqCst);
                run_observer(c.as_ref(), &me.spec(), "x", seen, me.body.as_ref()).await;
            }
        })
    }
    fn observers(&self) -> Vec<(ObserverSpec, Arc<dyn ObserverBody<Client>>)> {
        vec![(self.spec(), self.body.clone())]
    }
    fn final_check(&self, _client: Arc<Client>) -> BoxFuture<Vec<String>> {
        Box::pin(async { Vec::new() })
    }
}

/// The world of [`run`]'s runs: a 2 s workload phase.
fn world() -> WorldConfig {
    WorldConfig {
        run_ms: 2_000,
        ..WorldConfig::default()
    }
}

/// Run `w` and check the history; panics with the explanation on failure.
fn run(w: Harness, cluster: PercolatorConfig, seed: u64) -> History {
    let w = Arc::new(w);
    let out = percsim_sim::run(&world(), &cluster, seed, w, serde_json::Value::Null).expect("run");
    assert_eq!(out.summary.liveness_failure, None);
    let history = out
        .history
        .into_transactions()
        .expect("a transaction history");
    let report = percsim_checker::check(&history);
    assert!(report.passed(), "seed {seed}:\n{}", report.render_text());
    history
}

fn runs(h: &History, committed_only: bool) -> Vec<&percsim_checker::Transaction> {
    h.transactions
        .iter()
        .filter(|t| t.observer.is_some())
        .filter(|t| {
            !committed_only || t.outcome == Outcome::Committed || committed_in_store(h, t.start_ts)
        })
        .collect()
}

fn committed_in_store(h: &History, start_ts: u64) -> bool {
    h.final_state.cells.iter().any(|c| {
        c.versions
            .iter()
            .any(|v| v.start_ts == start_ts && v.kind != percsim_checker::VersionKind::Rollback)
    })
}

fn final_value(h: &History, row: &str, col: &str) -> Option<String> {
    let cell = h
        .final_state
        .cells
        .iter()
        .find(|c| c.row == row && c.col == col)?;
    let v = cell
        .versions
        .iter()
        .filter(|v| v.kind != percsim_checker::VersionKind::Rollback)
        .max_by_key(|v| v.commit_ts)?;
    v.value.clone()
}

fn small() -> PercolatorConfig {
    PercolatorConfig {
        tablet_servers: 1,
        tablets: 1,
        clients: 2,
        workers_per_client: 1,
        scanners_per_client: 1,
        ..PercolatorConfig::default()
    }
}

#[test]
fn message_collapsing() {
    for seed in common::seeds(3) {
        let h = run(Harness::new(40, 2), small(), seed);
        let writes = h
            .transactions
            .iter()
            .filter(|t| t.outcome == Outcome::Committed)
            .filter(|t| t.ops.iter().any(|op| matches!(op, percsim_checker::Op::Write { row, col, .. } if row == "x" && col == "in")))
            .count();
        let done = runs(&h, true).len();
        eprintln!("seed {seed}: {writes} committed writes, {done} committed observer runs");
        assert!(writes >= 20, "seed {seed}: only {writes} writes");
        assert!(
            done >= 1 && done < writes,
            "seed {seed}: {done} runs for {writes} writes"
        );
        // The count equals the committed runs, and the last run saw the last write.
        assert_eq!(final_value(&h, "x", "out"), Some(done.to_string()));
    }
}

#[test]
fn two_workers_race_on_one_notification() {
    for seed in common::seeds(3) {
        let mut w = Harness::new(1, 1);
        w.race = true;
        let cluster = PercolatorConfig {
            clients: 3,
            scanners_per_client: 0,
            ..small()
        };
        let h = run(w, cluster, seed);
        let attempts = runs(&h, false).len();
        let done = runs(&h, true).len();
        assert!(
            attempts >= 2,
            "seed {seed}: the racers did not both run ({attempts})"
        );
        assert_eq!(
            done, 1,
            "seed {seed}: exactly one observer transaction commits"
        );
        assert_eq!(final_value(&h, "x", "out").as_deref(), Some("1"));
    }
}

#[test]
fn observer_killed_between_primary_and_secondary_commit() {
    for seed in common::seeds(3) {
        let mut w = Harness::new(1, 1);
        w.body = Arc::new(Count {
            crash_first: true,
            armed: AtomicBool::new(false),
        });
        let h = run(w, small(), seed);
        assert!(
            h.events.iter().any(|e| e.kind == "crash_at_step"),
            "seed {seed}: the crash did not happen"
        );
        let done = runs(&h, true);
        assert_eq!(
            done.len(),
            1,
            "seed {seed}: the work must not be done twice"
        );
        assert_eq!(
            done[0].outcome,
            Outcome::Unknown,
            "its client died after the commit point"
        );
        assert_eq!(final_value(&h, "x", "out").as_deref(), Some("1"));
        assert!(
            h.final_state.notify.is_empty(),
            "the notification was not lost: it was processed and cleared"
        );
    }
}

#[test]
fn weak_notifications_run_the_observer_without_a_write() {
    for seed in common::seeds(3) {
        let mut w = Harness::new(5, 30);
        w.weak = true;
        let h = run(w, small(), seed);
        let done = runs(&h, true).len();
        assert!(
            done >= 1,
            "seed {seed}: no observer ran for a weak notification"
        );
        assert!(
            h.final_state.cells.iter().all(|c| c.col != "ping"),
            "a weak column is never written"
        );
        assert!(h.final_state.notify.is_empty());
        assert_eq!(final_value(&h, "x", "out"), Some(done.to_string()));
    }
}

#[test]
fn scanners_with_and_without_the_jump_rule() {
    let mut report = Vec::new();
    for jump in [true, false] {
        let (mut collisions, mut jumps, mut rows) = (0, 0, 0);
        for seed in common::seeds(3) {
            let cluster = PercolatorConfig {
                clients: 3,
                scanners_per_client: 4,
                scanner_jump: jump,
                ..PercolatorConfig::default()
            };
            let world = WorldConfig {
                run_ms: 3_000,
                ..WorldConfig::default()
            };
            let pipeline = WorkloadSpec::Pipeline(Pipeline::default());
            let s = percolator::scenario(seed, world, cluster, pipeline);
            let out = common::run_and_check(&s, "observers");
            let c = &out.summary.counters;
            collisions += c
                .get(PercolatorCounter::ScanCollisions.name())
                .copied()
                .unwrap_or(0);
            jumps += c
                .get(PercolatorCounter::ScanJumps.name())
                .copied()
                .unwrap_or(0);
            rows += c
                .get(PercolatorCounter::ScanRows.name())
                .copied()
                .unwrap_or(0);
        }
        if jump {
            assert!(jumps > 0, "the jump rule never fired");
        } else {
            assert_eq!(jumps, 0);
        }
        report.push(format!("jump rule {}: {rows} rows scanned, {collisions} found taken by another scanner, {jumps} jumps", if jump { "on " } else { "off" }));
    }
    eprintln!("{}", report.join("\n"));
}
