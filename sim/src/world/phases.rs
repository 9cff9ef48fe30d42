//! The phases of a run: build the world in a seeded madsim runtime, install
//! the system and start its nodes, run the workload phase with faults, then
//! the healed phase (faults removed, dead nodes back; the system must
//! settle within `quiesce_ms`, else a liveness failure), the system's
//! final check, and the system's history of the run.

use crate::world::driver::{
    self, FaultControl, Faults, Known, Registry, SharedFaults, lock_faults,
};
use crate::world::faults::Fault;
use crate::world::ids::{EventKind, FaultKind, Role};
use crate::world::net::{Wire, wire_addr, wire_late_addr};
use crate::world::port::Port;
use crate::world::system_history::SystemHistory;
use crate::world::{Control, System, Tenant, Unsettled, World};
use futures::StreamExt;
use futures::channel::mpsc::UnboundedReceiver;
use madsim::runtime::{Handle, Runtime};
use madsim::time::{Duration, Instant, sleep};
use percsim_checker as history;
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The network's own node, which carries late and duplicated copies.
const WIRE_NODE: &str = "wire";
/// The node of the world's own helper tasks (crash-point kills, the workload's driver).
const CONTROL_NODE: &str = "harness-control";

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// The system's history, in its own format (see [`crate::Tenant::history`]).
    pub history: SystemHistory,
    /// Counts and failures for summaries.
    pub summary: RunSummary,
}

impl RunOutput {
    /// The `percsim-history/1` history, if the system writes that format.
    pub fn transactions(&self) -> Option<&history::History> {
        self.history.transactions()
    }

    /// The `percsim-stream-history/1` history, if the system writes that format.
    pub fn stream(&self) -> Option<&history::stream::StreamHistory> {
        self.history.stream()
    }
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
    /// Transactions clients began that the system's history format could
    /// not hold (a `percsim-history/1` transaction that never took a start
    /// timestamp), so left out of the history and of the three counts
    /// above: counted here rather than lost. Left out of the summary's
    /// JSON, whose counts are those of the history the checker judges.
    #[serde(skip)]
    pub unwritten: u64,
    /// Named counters: events, cleanups, aborts by reason, RPCs.
    pub counters: BTreeMap<String, u64>,
    /// Simulated time the run took, in ns.
    pub sim_ns: u64,
    /// Why the cluster failed to converge in the healed phase, if it did.
    pub liveness_failure: Option<String>,
    /// Violations of the workload's own invariants.
    pub workload_violations: Vec<String>,
    /// Messages the network carried over the whole run, on the world's
    /// transport and any madsim endpoint (requests and replies, late and
    /// duplicated copies included; lost ones not), for
    /// `percsim bench`'s RPCs per commit. Left out of the summary's JSON:
    /// it describes the simulator's work, not the system's behaviour.
    #[serde(skip)]
    pub messages: u64,
    /// The choice points the run reached, with the option taken at each,
    /// when an exploration schedule steered it (see
    /// [`crate::world::explore`]); empty otherwise. Left out of the JSON.
    #[serde(skip)]
    pub choices: Vec<crate::world::explore::Choice>,
}

/// Run `system` in a fresh world seeded with `seed`. `scenario` is stored in
/// the history as the description of the run.
pub fn run_system(system: &dyn System, seed: u64, scenario: serde_json::Value) -> RunOutput {
    let mut rt = Runtime::with_seed_and_config(seed, madsim::Config::default());
    let cfg = system.world_config();
    rt.set_time_limit(Duration::from_millis(
        crate::world::watchdog::time_limit_ms(cfg.run_ms.saturating_add(cfg.quiesce_ms)),
    ));
    rt.block_on(simulate(system, seed, scenario))
}

async fn simulate(system: &dyn System, seed: u64, scenario: serde_json::Value) -> RunOutput {
    let (control_tx, control_rx) = futures::channel::mpsc::unbounded();
    let world = Arc::new(World::new(system.world_config(), control_tx));
    let tenant = system.install(&world);
    world.set_state_source(&tenant);
    start_wire(&world).await;
    let registry = start_nodes(&world, tenant.as_ref()).await;
    // Every node the run creates, killed at the end (see `release`).
    let mut nodes: Vec<String> = registry.names().to_vec();
    let faults = Faults::new(world.clone(), tenant.clone(), registry);
    // The world's own helper tasks run on a node of their own, so that
    // killing it at the end frees them (tasks of madsim's main node cannot be killed).
    let control = Handle::current().create_node().name(CONTROL_NODE).build();
    record_clock_skew(&world);
    control.spawn(serve_control(faults.clone(), world.clone(), control_rx));
    if let Some(fut) = tenant.driver(FaultControl::new(faults.clone())) {
        let w = world.clone();
        control.spawn(async move {
            fut.await;
            w.set_workload_done();
        });
    }

    // Workload phase, with faults.
    let run_until = world.start() + Duration::from_millis(world.config().run_ms);
    driver::drive(faults.clone(), world.clone(), seed, run_until).await;
    world.set_stopping();
    lock_faults(&faults).heal();
    world.world_event(EventKind::PhaseHealed, json!({}));

    // Healed phase: the system settles, then checks its own invariants.
    let deadline = Instant::now() + Duration::from_millis(world.config().quiesce_ms);
    tenant.begin_healed().await;
    let liveness_failure = settle(&world, tenant.as_ref(), deadline).await;
    let workload_violations = if liveness_failure.is_none() {
        tenant.final_check().await
    } else {
        Vec::new()
    };
    for v in &workload_violations {
        world.world_event(EventKind::WorkloadViolation, json!({"what": v}));
    }
    let output = collect(
        &world,
        tenant.as_ref(),
        seed,
        scenario,
        liveness_failure,
        workload_violations,
    );
    nodes.extend([CONTROL_NODE.to_string(), WIRE_NODE.to_string()]);
    nodes.extend(tenant.helper_nodes());
    release(&nodes).await;
    output
}

/// Create the tenant's nodes (clients one millisecond after the others, so
/// servers bind first); returns the registry the fault driver uses.
pub(crate) async fn start_nodes(world: &Arc<World>, tenant: &dyn Tenant) -> Registry {
    let handle = Handle::current();
    let mut registry = Registry::default();
    let mut waited = false;
    for spec in tenant.nodes() {
        if spec.name.role() == Role::Client && !waited {
            sleep(Duration::from_millis(1)).await;
            waited = true;
        }
        let label = spec.name.to_string();
        let (w, name, init) = (world.clone(), label.clone(), spec.init.clone());
        let node = handle
            .create_node()
            .name(label.clone())
            .ip(spec.ip)
            .init(move || {
                w.node_started(&name);
                init()
            })
            .build();
        let known = Known {
            id: node.id(),
            name: spec.name,
        };
        world.register_node(&label, node.id());
        registry.add(label, known);
        world.register_ip(spec.ip, node.id());
    }
    registry
}

/// Record the clocks that are off.
fn record_clock_skew(world: &World) {
    for (i, c) in world.config().clocks.iter().enumerate() {
        if c.is_skewed() {
            world.recorder().bump(&FaultKind::ClockSkew.counter());
            world.world_event(EventKind::ClockSkew, c.event_fields(i));
        }
    }
}

/// Kills and pauses requested from inside nodes that reached a crash or
/// pause point of their system.
async fn serve_control(
    faults: SharedFaults,
    world: Arc<World>,
    mut rx: UnboundedReceiver<Control>,
) {
    while let Some(c) = rx.next().await {
        let mut guard = lock_faults(&faults);
        match c {
            Control::Kill {
                node,
                restart_after_ms,
            } => {
                guard.kill_at_point(&node, restart_after_ms);
                if world.stopping() {
                    // Healed phase: no fault driver runs restarts any
                    // more, and the cluster must converge: bring it back.
                    let delay = restart_after_ms.unwrap_or(100);
                    later(&faults, delay, Fault::Restart { node });
                }
            }
            Control::Pause { node, duration_ms } => {
                guard.pause_at_point(&node, duration_ms.unwrap_or(3_600_000));
                if let (Some(ms), true) = (duration_ms, world.stopping()) {
                    // Healed phase: the fault driver no longer resumes.
                    later(&faults, ms, Fault::Resume { node });
                }
            }
        }
    }
}

/// Apply `fault` after `ms`.
fn later(faults: &SharedFaults, ms: u64, fault: Fault) {
    let f = faults.clone();
    madsim::task::spawn(async move {
        sleep(Duration::from_millis(ms)).await;
        lock_faults(&f).apply(&fault);
    });
}

/// The healed phase's loop: until the system and the network have settled
/// or `quiesce_ms` has passed (a liveness failure, returned).
async fn settle(world: &World, tenant: &dyn Tenant, deadline: Instant) -> Option<String> {
    let quiesce_ms = world.config().quiesce_ms;
    loop {
        let mut left = tenant.unsettled();
        // A copy still in flight may yet change the system's state.
        left.push(Unsettled {
            count: world.in_flight(),
            what: Unsettled::IN_FLIGHT,
        });
        if left.iter().all(|u| u.count == 0) {
            return None;
        }
        if Instant::now() >= deadline {
            let what: Vec<String> = left
                .iter()
                .map(|u| format!("{} {}", u.count, u.what))
                .collect();
            return Some(format!(
                "not converged after {quiesce_ms} ms of healed phase: {}",
                what.join(", ")
            ));
        }
        tenant.settle(&left).await;
        let _ = Handle::current().metrics().num_tasks();
    }
}

/// The history and summary of a finished run.
fn collect(
    world: &World,
    tenant: &dyn Tenant,
    seed: u64,
    scenario: serde_json::Value,
    liveness_failure: Option<String>,
    workload_violations: Vec<String>,
) -> RunOutput {
    let sim_ns = world.now_ns();
    let events = world.recorder().events().to_vec();
    let mut summary = RunSummary {
        liveness_failure,
        workload_violations,
        messages: madsim::net::NetSim::current().stat().msg_count + world.messages(),
        sim_ns,
        choices: world.take_choices(),
        ..Default::default()
    };
    // Violations the workload recorded during the run (e.g. a bad snapshot sum).
    let recorded = EventKind::WorkloadViolation.name();
    for e in events.iter().filter(|e| e.kind == recorded) {
        if let Some(what) = e.fields.get("what").and_then(|v| v.as_str())
            && !summary.workload_violations.iter().any(|v| v == what)
        {
            summary.workload_violations.push(what.to_string());
        }
    }
    let history = tenant.history(seed, scenario, events);
    // Read after the history is written: writing it counts what it left out.
    (summary.counters, summary.unwritten) = {
        let rec = world.recorder();
        (rec.counters().clone(), rec.unwritten())
    };
    let tally = history.tally();
    (summary.committed, summary.aborted, summary.unknown) =
        (tally.committed, tally.aborted, tally.unknown);
    RunOutput { history, summary }
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

/// Start the network's own node (see `World::wire`): it is never killed,
/// paused or partitioned, and carries the late and duplicated copies of messages.
pub(crate) async fn start_wire(world: &Arc<World>) {
    let node = Handle::current()
        .create_node()
        .name(WIRE_NODE)
        .ip(wire_addr().ip())
        .build();
    let w = world.clone();
    let (copies, late) = node
        .spawn(async move {
            let copies = Port::bind(&w, wire_addr());
            let late = Port::bind(&w, wire_late_addr());
            (copies, late)
        })
        .await
        .expect("wire: start");
    world.set_wire(Wire { node, copies, late });
}

#[cfg(test)]
#[path = "phases_tests.rs"]
mod tests;
