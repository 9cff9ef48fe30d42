//! Builds a cluster in a seeded madsim runtime, runs a workload through its
//! phases, and returns the recorded history.
//!
//! Phases: the workload phase (faults active), then a healed phase in which
//! the workload stops, dead nodes come back and a sweeper reads every cell
//! until no lock is left (failing to get there in time is a liveness
//! failure), then the workload's final check and a dump of the store.

use crate::config::{ConfigError, SimConfig};
use crate::driver::{self, Faults};
use crate::nodes;
use crate::recorder::Recorder;
use crate::workload::Workload;
use crate::world::{
    Control, Durable, Tablets, World, client_addr, liveness_addr, master_addr, oracle_addr,
    tablet_server_addr,
};
use futures::StreamExt;
use madsim::runtime::{Handle, Runtime};
use madsim::time::{Duration, Instant, sleep};
use percsim_checker as history;
use percsim_protocol::client::{CommitOutcome, Transaction, Transport};
use percsim_protocol::row::{RowMutation, RowOp};
use percsim_protocol::{Ts, Write, WriteKind};
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// The node of the harness's own helper tasks (crash-point kills, the workload's driver).
/// The network's own node, which carries late and duplicated copies.
const WIRE_NODE: &str = "wire";
const CONTROL_NODE: &str = "harness-control";
/// The node of the healed phase's sweeper.
pub(crate) const SWEEPER_NODE: &str = "sweeper";

/// Timestamps of the initial load: it commits before the oracle's first.
const LOAD_START_TS: u64 = 1;
const LOAD_COMMIT_TS: u64 = 2;

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// The recorded history.
    pub history: history::History,
    /// Counts and failures for summaries.
    pub summary: RunSummary,
}

/// Counts of what happened in a run, and the failures seen outside the checker.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunSummary {
    /// Transactions reported committed (the initial load excluded).
    pub committed: u64,
    /// Transactions reported aborted.
    pub aborted: u64,
    /// Transactions whose outcome the client did not learn.
    pub unknown: u64,
    /// Named counters: events, cleanups, aborts by reason, RPCs.
    pub counters: BTreeMap<String, u64>,
    /// Simulated time the run took, in ns.
    pub sim_ns: u64,
    /// Why the cluster failed to converge in the healed phase, if it did.
    pub liveness_failure: Option<String>,
    /// Violations of the workload's own invariants.
    pub workload_violations: Vec<String>,
}

/// Run `workload` on the cluster `cfg` with `seed`. `scenario` is stored in
/// the history as the description of the run.
pub fn run(
    cfg: &SimConfig,
    seed: u64,
    workload: Arc<dyn Workload>,
    scenario: serde_json::Value,
) -> Result<RunOutput, ConfigError> {
    cfg.validate()?;
    let mut rt = Runtime::with_seed_and_config(seed, madsim::Config::default());
    rt.set_time_limit(Duration::from_millis(crate::watchdog::time_limit_ms(
        cfg.run_ms.saturating_add(cfg.quiesce_ms),
    )));
    let cfg = cfg.clone();
    Ok(rt.block_on(simulate(cfg, seed, workload, scenario)))
}

async fn simulate(
    cfg: SimConfig,
    seed: u64,
    workload: Arc<dyn Workload>,
    scenario: serde_json::Value,
) -> RunOutput {
    let handle = Handle::current();
    let (control_tx, mut control_rx) = futures::channel::mpsc::unbounded();
    let tablets = Tablets::new(workload.split_points(cfg.tablets));
    let tablet_count = tablets.count();
    let initial = workload.initial_data();
    let mut durable = Durable {
        rows: BTreeMap::new(),
        oracle_max: LOAD_COMMIT_TS,
        tablet_owner: (0..tablet_count)
            .map(|t| Some(t % cfg.tablet_servers))
            .collect(),
        next_session: 0,
        raw: BTreeMap::new(),
    };
    load(&mut durable, &initial);
    let mut recorder = Recorder::default();
    recorder.bootstrap(LOAD_START_TS, LOAD_COMMIT_TS, &initial);
    let world = Arc::new(World {
        cfg: cfg.clone(),
        durable: Mutex::new(durable),
        recorder: Mutex::new(recorder),
        tablets,
        start: Instant::now(),
        stopping: Default::default(),
        workload: workload.clone(),
        observers: workload.observers(),
        row_locks: Mutex::default(),
        control: control_tx,
        incarnations: Mutex::default(),
        sessions: Mutex::default(),
        net: Mutex::default(),
        stalled: Mutex::default(),
        workload_done: Default::default(),
        wire: Default::default(),
        cut: Mutex::default(),
        node_ips: Mutex::default(),
        in_flight: Default::default(),
        watchdog: crate::watchdog::Watchdog::from_env(),
    });
    start_wire(&handle, &world).await;

    let mut ids = BTreeMap::new();
    let w = world.clone();
    let n = handle
        .create_node()
        .name("oracle")
        .ip(oracle_addr().ip())
        .init(move || nodes::oracle::main(w.clone()))
        .build();
    ids.insert("oracle".to_string(), n.id());
    let w = world.clone();
    let n = handle
        .create_node()
        .name("liveness")
        .ip(liveness_addr().ip())
        .init(move || nodes::liveness::main(w.clone()))
        .build();
    ids.insert("liveness".to_string(), n.id());
    let w = world.clone();
    let n = handle
        .create_node()
        .name("master")
        .ip(master_addr().ip())
        .init(move || nodes::master::main(w.clone()))
        .build();
    ids.insert("master".to_string(), n.id());
    for i in 0..cfg.tablet_servers {
        let w = world.clone();
        let n = handle
            .create_node()
            .name(format!("tablet-{i}"))
            .ip(tablet_server_addr(i).ip())
            .init(move || nodes::tablet::main(w.clone(), i))
            .build();
        ids.insert(format!("tablet-{i}"), n.id());
    }
    // Let the servers bind before clients call them.
    sleep(Duration::from_millis(1)).await;
    for i in 0..cfg.clients {
        let w = world.clone();
        let n = handle
            .create_node()
            .name(format!("client-{i}"))
            .ip(client_addr(i).ip())
            .init(move || nodes::client::main(w.clone(), i))
            .build();
        ids.insert(format!("client-{i}"), n.id());
    }
    for (name, id) in &ids {
        if let Some(addr) = crate::world::addr_of(name) {
            world.lock(&world.node_ips).insert(addr.ip(), *id);
        }
    }
    // Every node the run creates, killed at the end (see `release`).
    let mut nodes: Vec<String> = ids.keys().cloned().collect();
    nodes.extend([
        CONTROL_NODE.to_string(),
        SWEEPER_NODE.to_string(),
        WIRE_NODE.to_string(),
    ]);
    let faults = Faults::new(world.clone(), ids);
    // The harness's own helper tasks run on a node of their own, so that
    // killing it at the end frees them (tasks of madsim's main node cannot be killed).
    let control = handle.create_node().name(CONTROL_NODE).build();
    for (i, c) in cfg.clocks.iter().enumerate() {
        if c.offset_ms != 0 || c.drift_ppm != 0 {
            world.recorder().bump("fault.clock_skew");
            world.event(
                "clock_skew",
                json!({"client": i, "offset_ms": c.offset_ms, "drift_ppm": c.drift_ppm}),
            );
        }
    }

    // Kills requested from inside clients that reached a scheduled crash point.
    let f = faults.clone();
    let w = world.clone();
    control.spawn(async move {
        while let Some(c) = control_rx.next().await {
            let mut guard = f.lock().unwrap_or_else(|e| e.into_inner());
            match c {
                Control::KillClient {
                    client,
                    restart_after_ms,
                } => {
                    let node = format!("client-{client}");
                    guard.kill(&node, restart_after_ms);
                    if w.stopping() {
                        // Healed phase: no fault driver runs restarts any
                        // more, and the cluster must converge: bring it back.
                        let f = f.clone();
                        let delay = restart_after_ms.unwrap_or(100);
                        madsim::task::spawn(async move {
                            sleep(Duration::from_millis(delay)).await;
                            f.lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .apply(&crate::faults::Fault::Restart { node });
                        });
                    }
                }
                Control::PauseClient {
                    client,
                    duration_ms,
                } => {
                    let node = format!("client-{client}");
                    guard.apply(&crate::faults::Fault::Pause {
                        node: node.clone(),
                        duration_ms: duration_ms.unwrap_or(3_600_000),
                    });
                    if let (Some(ms), true) = (duration_ms, w.stopping()) {
                        // Healed phase: the fault driver no longer resumes.
                        let f = f.clone();
                        madsim::task::spawn(async move {
                            sleep(Duration::from_millis(ms)).await;
                            f.lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .apply(&crate::faults::Fault::Resume { node });
                        });
                    }
                }
            }
        }
    });

    if let Some(fut) = workload.driver(driver::Controller::new(faults.clone())) {
        let w = world.clone();
        control.spawn(async move {
            fut.await;
            w.workload_done.store(true, Ordering::Relaxed);
        });
    }

    // Workload phase, with faults.
    let run_until = world.start + Duration::from_millis(cfg.run_ms);
    driver::drive(faults.clone(), world.clone(), seed, run_until).await;
    world.stopping.store(true, Ordering::Relaxed);
    faults.lock().unwrap_or_else(|e| e.into_inner()).heal();
    world.event("phase_healed", json!({}));

    // Healed phase: wait for transactions in progress to finish, then sweep.
    let deadline = Instant::now() + Duration::from_millis(cfg.quiesce_ms);
    let sweeper = nodes::client::start_on_new_node(world.clone(), cfg.clients).await;
    let mut liveness_failure = None;
    loop {
        let locks = lock_count(&world);
        let busy = busy_transactions(&world);
        let dirty = notify_count(&world);
        // A copy still in flight may yet lock a cell or set a notify entry.
        let flying = world.in_flight.load(Ordering::Relaxed);
        if locks == 0 && busy == 0 && dirty == 0 && flying == 0 {
            break;
        }
        if Instant::now() >= deadline {
            liveness_failure = Some(format!(
                "not converged after {} ms of healed phase: {locks} locks left, {busy} transactions still running, {dirty} notifications unprocessed, {flying} late copies in flight",
                cfg.quiesce_ms
            ));
            break;
        }
        // Sweep even while observers still run: their secondaries may sit
        // in cells nobody else reads.
        sweep(&sweeper).await;
        if busy > 0 || flying > 0 {
            sleep(Duration::from_millis(100)).await;
        }
        let _ = Handle::current().metrics().num_tasks();
    }
    let workload_violations = if liveness_failure.is_none() {
        workload.final_check(sweeper.clone()).await
    } else {
        Vec::new()
    };
    for v in &workload_violations {
        world.event("workload_violation", json!({"what": v}));
    }

    let sim_ns = world.now_ns();
    let (transactions, events, counters) = {
        let rec = world.recorder();
        (
            rec.transactions(),
            rec.events().to_vec(),
            rec.counters.clone(),
        )
    };
    let final_state = dump(&world);
    let mut summary = RunSummary {
        counters,
        sim_ns,
        liveness_failure,
        workload_violations,
        ..Default::default()
    };
    for t in transactions
        .iter()
        .filter(|t| t.client != crate::recorder::LOADER_CLIENT)
    {
        match t.outcome {
            history::Outcome::Committed => summary.committed += 1,
            history::Outcome::Aborted => summary.aborted += 1,
            history::Outcome::Unknown => summary.unknown += 1,
        }
    }
    // Violations the workload recorded during the run (e.g. a bad snapshot sum).
    for e in events.iter().filter(|e| e.kind == "workload_violation") {
        if let Some(what) = e.fields.get("what").and_then(|v| v.as_str())
            && !summary.workload_violations.iter().any(|v| v == what)
        {
            summary.workload_violations.push(what.to_string());
        }
    }
    let output = RunOutput {
        history: history::History {
            format: history::FORMAT.to_string(),
            seed,
            scenario,
            transactions,
            events,
            final_state,
            observers: world
                .observers
                .iter()
                .map(|(spec, _)| history::ObserverDecl {
                    name: spec.name.clone(),
                    col: spec.col.clone(),
                    weak: spec.weak,
                })
                .collect(),
        },
        summary,
    };
    release(&nodes).await;
    output
}

/// Kill every node of the run and let the executor drop their tasks. A madsim
/// task holds a waker to itself, so a task still pending when the runtime is
/// dropped is never freed: without this each run leaked its whole cluster
/// (about 400 KB per campaign seed).
async fn release(nodes: &[String]) {
    let handle = Handle::current();
    for name in nodes {
        handle.kill(name.as_str());
    }
    // Killed tasks are dropped when the executor next takes them from its queue.
    sleep(Duration::from_millis(1)).await;
}

/// Write the initial data as one committed transaction.
fn load(d: &mut Durable, initial: &[(percsim_protocol::CellKey, String)]) {
    for (cell, value) in initial {
        let mut m = RowMutation::default();
        m.ops.push(RowOp::PutData {
            col: cell.col.clone(),
            ts: Ts(LOAD_START_TS),
            value: value.clone(),
        });
        m.ops.push(RowOp::PutWrite {
            col: cell.col.clone(),
            commit_ts: Ts(LOAD_COMMIT_TS),
            write: Write {
                start_ts: Ts(LOAD_START_TS),
                kind: WriteKind::Put,
            },
        });
        d.rows.entry(cell.row.clone()).or_default().apply(&m);
    }
}

fn lock_count(world: &World) -> usize {
    world
        .durable()
        .rows
        .values()
        .flat_map(|r| r.cols.values())
        .map(|c| c.lock.len())
        .sum()
}

fn notify_count(world: &World) -> usize {
    world.durable().rows.values().map(|r| r.notify.len()).sum()
}

fn busy_transactions(world: &World) -> usize {
    world.recorder().in_progress()
}

/// Read every cell at a fresh snapshot: a read meeting a lock cleans it up
/// once its owner is dead or the lock is stale.
async fn sweep(sweeper: &Arc<nodes::client::Client>) {
    let Ok(mut txn) = Transaction::begin(sweeper.as_ref()).await else {
        sleep(Duration::from_millis(100)).await;
        return;
    };
    match txn.scan("", "\u{10ffff}", &[]).await {
        Ok(_) => {
            let _: CommitOutcome = txn.commit().await;
        }
        Err(e) => {
            txn.abort((&e).into());
            sweeper.sleep_ms(100).await;
        }
    }
}

/// Every write record and lock in the store.
fn dump(world: &World) -> history::FinalState {
    let d = world.durable();
    let mut state = history::FinalState::default();
    for (key, row) in &d.rows {
        for col in row.notify.keys() {
            state.notify.push(history::CellRef {
                row: key.clone(),
                col: col.clone(),
            });
        }
        for (col, c) in &row.cols {
            let versions: Vec<history::Version> = c
                .write
                .iter()
                .map(|(commit_ts, w)| {
                    let value = match w.kind {
                        WriteKind::Put => c.data.get(&w.start_ts).cloned(),
                        _ => None,
                    };
                    history::Version {
                        start_ts: w.start_ts.0,
                        commit_ts: commit_ts.0,
                        kind: match w.kind {
                            WriteKind::Put => history::VersionKind::Put,
                            WriteKind::Delete => history::VersionKind::Delete,
                            WriteKind::Rollback => history::VersionKind::Rollback,
                        },
                        // A put record whose data is gone (a store bug, under
                        // some ablations) says so, so the file still parses.
                        data_missing: w.kind == WriteKind::Put && value.is_none(),
                        value,
                    }
                })
                .collect();
            if !versions.is_empty() {
                state.cells.push(history::CellState {
                    row: key.clone(),
                    col: col.clone(),
                    versions,
                });
            }
            for (ts, lock) in &c.lock {
                state.locks.push(history::LockState {
                    row: key.clone(),
                    col: col.clone(),
                    start_ts: ts.0,
                    primary: history::CellRef {
                        row: lock.primary.row.clone(),
                        col: lock.primary.col.clone(),
                    },
                });
            }
        }
    }
    state
}

/// Start the network's own node (see `World::wire`): it is never killed,
/// paused or partitioned, and carries the late copies of messages.
async fn start_wire(handle: &madsim::runtime::Handle, world: &Arc<World>) {
    let node = handle
        .create_node()
        .name(WIRE_NODE)
        .ip(crate::world::wire_addr().ip())
        .build();
    let ep = node
        .spawn(async { madsim::net::Endpoint::bind(crate::world::wire_addr()).await })
        .await
        .expect("wire: start")
        .expect("wire: bind");
    let _ = world.wire.set((node, ep));
}
