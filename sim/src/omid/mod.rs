//! Apache Omid's transaction manager in the simulated world ("Omid,
//! Reloaded", FAST 2017; "Taking Omid to the Clouds", PVLDB 2018; see
//! `docs/omid.md`).
//!
//! Nodes: the `tso` and its backup `tso-backup` (role coordinator): the
//! one holding the lease in the `liveness` service hands out timestamps
//! and decides commits; tablet servers `tablet-N` (role data server) hold the data
//! cells with their shadow cells and the commit table; clients `client-N`
//! run the workload's transactions. The steps themselves are
//! `percsim_protocol::omid`'s; this module moves them over the network,
//! keeps durable state in the tenant (it survives every crash: the store,
//! the TSO's persisted ceiling, the lease record) and memory in each incarnation (the TSO's
//! conflict map and low watermark), and records the history.

mod client;
pub mod config;
mod liveness;
pub mod program;
mod rpc;
mod store;
mod tpce;
mod tso;
mod types;

use crate::world::explore::ExploreStop;
use crate::world::system_history::SystemHistory;
use crate::world::{
    BoxFuture, Control, NodeName, NodeNames, NodeSpec, Tenant, Unsettled, World, lock,
};
use crate::{ConfigError, FaultControl, FaultKind, Role, RunOutput, System, WorldConfig};
use config::{CrashAt, OmidConfig, OmidWorkload, PauseAt};
use percsim_checker as history;
use percsim_protocol::omid::{OmidAblations, OmidPoint};
use std::sync::{Arc, Mutex};

pub use program::OmidTxn;
pub use rpc::{CLIENT_KIND, NODE_KINDS, OmidCounter, OmidEvent};
use types::{Job, Shared};
pub use types::{OmidClient, OmidControl, OmidOutcome, OmidProgram, Stop};

/// Check an Omid run's settings: the section, the workload, and the
/// world's settings against its nodes (errors name `world.<field>`,
/// `workload` or the section's field).
pub fn validate(
    world: &WorldConfig,
    cfg: &OmidConfig,
    workload: &OmidWorkload,
) -> Result<(), ConfigError> {
    cfg.validate()?;
    workload.validate().map_err(|problem| ConfigError {
        field: "workload".into(),
        problem,
    })?;
    validate_cluster(world, cfg)
}

/// Check an Omid cluster's section and the world's settings against its
/// nodes (errors name `world.<field>` or the section's field).
pub fn validate_cluster(world: &WorldConfig, cfg: &OmidConfig) -> Result<(), ConfigError> {
    cfg.validate()?;
    let names = rpc::node_names(sizes(cfg));
    world
        .validate(NodeNames { nodes: &names })
        .map_err(|e| ConfigError {
            field: format!("world.{}", e.field),
            problem: e.problem,
        })
}

/// How many nodes of each kind cluster `cfg` has.
fn sizes(cfg: &OmidConfig) -> rpc::Sizes {
    rpc::Sizes {
        tablets: cfg.tablets,
        clients: cfg.clients,
        backup: cfg.backup_tso,
    }
}

/// Every node's name of cluster `cfg`.
pub fn node_names(cfg: &OmidConfig) -> Vec<String> {
    rpc::node_names(sizes(cfg))
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Validate, then run `workload` on the Omid cluster `cfg` in a world set
/// up by `world`, with `seed`; `scenario` is stored in the history.
pub fn run(
    world: &WorldConfig,
    cfg: &OmidConfig,
    workload: &OmidWorkload,
    seed: u64,
    scenario: serde_json::Value,
) -> Result<RunOutput, ConfigError> {
    validate(world, cfg, workload)?;
    let system = Omid {
        world: world.clone(),
        cfg: cfg.clone(),
        job: Job::Workload(workload.clone()),
    };
    Ok(crate::run_system(&system, seed, scenario))
}

/// Validate, then run `program` (a script) on the Omid cluster `cfg` in a
/// world set up by `world`, with `seed`; `scenario` is stored in the history.
pub fn run_program(
    world: &WorldConfig,
    cfg: &OmidConfig,
    program: Arc<dyn OmidProgram>,
    seed: u64,
    scenario: serde_json::Value,
) -> Result<RunOutput, ConfigError> {
    validate_cluster(world, cfg)?;
    let system = Omid {
        world: world.clone(),
        cfg: cfg.clone(),
        job: Job::Program(program),
    };
    Ok(crate::run_system(&system, seed, scenario))
}

/// Omid before it runs.
pub struct Omid {
    world: WorldConfig,
    cfg: OmidConfig,
    job: Job,
}

impl System for Omid {
    fn world_config(&self) -> WorldConfig {
        self.world.clone()
    }

    fn install(&self, world: &Arc<World>) -> Arc<dyn Tenant> {
        let shared = Shared {
            world: world.clone(),
            cfg: self.cfg.clone(),
            job: self.job.clone(),
            ablations: OmidAblations::of(&self.cfg.ablations),
            store: Mutex::default(),
            tso_disk: Mutex::new(types::TsoDisk {
                ceiling: 1,
                epoch: 0,
            }),
            lease: Mutex::default(),
            clients: (0..self.cfg.clients).map(|_| Mutex::default()).collect(),
            reached: Mutex::default(),
            stop_counts: Mutex::new(types::StopCounts {
                crashes: vec![0; self.cfg.crashes.len()],
                pauses: vec![0; self.cfg.pauses.len()],
            }),
            appended: Mutex::default(),
            armed: Mutex::default(),
            txns: Mutex::default(),
        };
        client::load(&shared);
        Arc::new(OmidTenant(Arc::new(shared)))
    }
}

impl Shared {
    fn bump(&self, counter: &str) {
        self.world.recorder().bump(counter);
    }

    /// `node` reached `point` (about the transaction of `start_ts`, if
    /// any): if a program armed a stop there, or a crash is set for this
    /// time, ask the world to kill it and never go on; if a pause is,
    /// freeze it there.
    async fn point(&self, point: OmidPoint, node: &NodeName, start_ts: Option<u64>) {
        if let Some(stop) = self.take_armed(point, &node.to_string(), start_ts) {
            return self.stop_armed(point, node, stop).await;
        }
        let (nth, pause, crash) = self.count_reach(point);
        let fields =
            serde_json::json!({"node": node.to_string(), "point": point.name(), "nth": nth});
        if let Some(p) = pause {
            self.bump(&FaultKind::PauseAtStep.counter());
            self.world
                .event(OmidEvent::PauseAtPoint.name(), fields.clone());
            self.world.request(Control::Pause {
                node: node.to_string(),
                duration_ms: Some(p.pause_ms),
            });
            // The pause takes effect when the harness runs; yield until it does.
            madsim::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let Some(crash) = crash else {
            return self.explored_stop(point, node).await;
        };
        self.bump(&FaultKind::CrashAtStep.counter());
        self.world.event(OmidEvent::CrashAtPoint.name(), fields);
        self.world.request(Control::Kill {
            node: node.to_string(),
            restart_after_ms: Some(crash.restart_after_ms),
        });
        std::future::pending::<()>().await
    }
}

impl Shared {
    /// Count a reach of `point`: the time it is reached over the run, and
    /// the pause and the crash of the section whose count (from its
    /// `after_ms` on) it completes, if any.
    fn count_reach(&self, point: OmidPoint) -> (u64, Option<&PauseAt>, Option<&CrashAt>) {
        let nth = {
            let mut reached = lock(&self.reached);
            let n = reached.entry(point).or_default();
            *n += 1;
            *n
        };
        let now_ms = self.world.now_ns() / 1_000_000;
        let mut counts = lock(&self.stop_counts);
        let pause = due(
            &self.cfg.pauses,
            &mut counts.pauses,
            |p| (p.point, p.after_ms, p.nth),
            point,
            now_ms,
        );
        let crash = due(
            &self.cfg.crashes,
            &mut counts.crashes,
            |c| (c.point, c.after_ms, c.nth),
            point,
            now_ms,
        );
        (nth, pause, crash)
    }
}

/// Count a reach of `point` at `now_ms` for each stop of `stops` at it
/// whose `after_ms` has come (`key` gives a stop's point, `after_ms` and
/// `nth`); the first stop whose count it completes.
fn due<'a, T>(
    stops: &'a [T],
    counts: &mut [u64],
    key: impl Fn(&T) -> (OmidPoint, u64, u64),
    point: OmidPoint,
    now_ms: u64,
) -> Option<&'a T> {
    let mut hit = None;
    for (stop, count) in stops.iter().zip(counts.iter_mut()) {
        let (at, after_ms, nth) = key(stop);
        if at != point || now_ms < after_ms {
            continue;
        }
        *count += 1;
        if *count == nth && hit.is_none() {
            hit = Some(stop);
        }
    }
    hit
}

impl Shared {
    /// Stop `node` at `point` as a program armed it.
    async fn stop_armed(&self, point: OmidPoint, node: &NodeName, stop: Stop) {
        let fields = serde_json::json!({"node": node.to_string(), "point": point.name()});
        match stop {
            Stop::Pause { pause_ms } => {
                self.bump(&FaultKind::PauseAtStep.counter());
                self.world.event(OmidEvent::PauseAtPoint.name(), fields);
                self.world.request(Control::Pause {
                    node: node.to_string(),
                    duration_ms: Some(pause_ms),
                });
                madsim::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            Stop::Kill { restart_after_ms } => {
                self.bump(&FaultKind::CrashAtStep.counter());
                self.world.event(OmidEvent::CrashAtPoint.name(), fields);
                self.world.request(Control::Kill {
                    node: node.to_string(),
                    restart_after_ms,
                });
                std::future::pending::<()>().await
            }
        }
    }

    /// `node` reached `point` with no crash set there: crash or freeze it
    /// if an exploration chooses so.
    async fn explored_stop(&self, point: OmidPoint, node: &NodeName) {
        let name = node.to_string();
        match self.world.explore_stop(&name, point.name()) {
            None => {}
            Some(ExploreStop::Crash { restart_after_ms }) => {
                self.bump(&FaultKind::CrashAtStep.counter());
                self.world.request(Control::Kill {
                    node: name,
                    restart_after_ms: Some(restart_after_ms),
                });
                std::future::pending::<()>().await
            }
            Some(ExploreStop::Pause { duration_ms }) => {
                self.bump(&FaultKind::PauseAtStep.counter());
                self.world.request(Control::Pause {
                    node: name,
                    duration_ms: Some(duration_ms),
                });
                madsim::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        }
    }
}

/// Omid installed in a world.
struct OmidTenant(Arc<Shared>);

impl Tenant for OmidTenant {
    fn state_hash(&self) -> Option<u64> {
        let store = self.0.store.try_lock().ok()?;
        let tso = *self.0.tso_disk.try_lock().ok()?;
        Some(crate::world::explore::hash_of_debug(&(&*store, tso)))
    }

    fn nodes(&self) -> Vec<NodeSpec> {
        let mut tsos = vec![(rpc::TSO_KIND.single(), rpc::tso_addr())];
        if self.0.cfg.backup_tso {
            tsos.push((rpc::BACKUP_KIND.single(), rpc::backup_addr()));
        }
        let mut nodes: Vec<NodeSpec> = tsos
            .into_iter()
            .map(|(name, addr)| {
                let s = self.0.clone();
                NodeSpec {
                    name,
                    ip: addr.ip(),
                    init: Arc::new(move || Box::pin(tso::run(s.clone(), name))),
                }
            })
            .collect();
        let s = self.0.clone();
        nodes.push(NodeSpec {
            name: rpc::LIVENESS_KIND.single(),
            ip: rpc::liveness_addr().ip(),
            init: Arc::new(move || Box::pin(liveness::run(s.clone()))),
        });
        for i in 0..self.0.cfg.tablets {
            let s = self.0.clone();
            nodes.push(NodeSpec {
                name: rpc::TABLET_KIND.nth(i),
                ip: rpc::tablet_addr(i).ip(),
                init: Arc::new(move || Box::pin(store::run(s.clone(), i))),
            });
        }
        for i in 0..self.0.cfg.clients {
            let s = self.0.clone();
            nodes.push(NodeSpec {
                name: rpc::CLIENT_KIND.nth(i),
                ip: rpc::client_addr(i).ip(),
                init: Arc::new(move || Box::pin(client::run(s.clone(), i))),
            });
        }
        nodes
    }

    /// The coordinator role is the TSO holding the lease now (the last
    /// holder, if it ran out).
    fn holder(&self, role: Role) -> Option<NodeName> {
        if role != Role::Coordinator {
            return None;
        }
        let lease = lock(&self.0.lease);
        match lease.holder.as_deref() {
            Some(h) if h == rpc::BACKUP_KIND.label => Some(rpc::BACKUP_KIND.single()),
            Some(_) => Some(rpc::TSO_KIND.single()),
            None => None,
        }
    }

    fn expire_session(&self, _client: usize) {}

    fn driver(&self, control: FaultControl) -> Option<BoxFuture<()>> {
        let Job::Program(program) = &self.0.job else {
            return None;
        };
        program.driver(OmidControl {
            faults: control,
            shared: self.0.clone(),
        })
    }

    fn begin_healed(&self) -> BoxFuture<()> {
        Box::pin(async {})
    }

    fn unsettled(&self) -> Vec<Unsettled> {
        let busy = self.0.clients.iter().filter(|c| !lock(c).done).count();
        vec![Unsettled {
            count: busy as u64,
            what: "clients with a transaction unfinished",
        }]
    }

    fn settle(&self, _unsettled: &[Unsettled]) -> BoxFuture<()> {
        Box::pin(madsim::time::sleep(std::time::Duration::from_millis(50)))
    }

    fn final_check(&self) -> BoxFuture<Vec<String>> {
        let mut violations = client::final_check(&self.0);
        if let Job::Program(program) = &self.0.job {
            violations.extend(program.final_check());
        }
        Box::pin(async move { violations })
    }

    fn history(
        &self,
        seed: u64,
        scenario: serde_json::Value,
        events: Vec<history::Event>,
    ) -> SystemHistory {
        let built = lock(&self.0.txns).build(&mut self.0.world.recorder());
        SystemHistory::Transactions(history::History {
            format: history::FORMAT.to_string(),
            // Omid's promise: snapshot isolation.
            model: Some(history::Model::SnapshotIsolation),
            seed,
            scenario,
            transactions: built.transactions,
            events,
            final_state: lock(&self.0.store).final_state(),
            observers: Vec::new(),
        })
    }

    fn helper_nodes(&self) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pause(point: OmidPoint, nth: u64, after_ms: u64) -> PauseAt {
        PauseAt {
            point,
            nth,
            after_ms,
            pause_ms: 10,
        }
    }

    /// A stop counts the reaches of its point from its `after_ms` on: one
    /// from the start fires at the run's `nth` reach, one from later at
    /// the `nth` reach after it, and a reach of another point counts for
    /// neither.
    #[test]
    fn a_stop_counts_the_reaches_of_its_point_from_its_after_ms_on() {
        let d = OmidPoint::TsoAfterDecision;
        let stops = [pause(d, 2, 0), pause(d, 2, 100)];
        let mut counts = vec![0; 2];
        let key = |p: &PauseAt| (p.point, p.after_ms, p.nth);
        let mut reach = |point, now_ms| due(&stops, &mut counts, key, point, now_ms);
        assert_eq!(reach(d, 10), None);
        assert_eq!(reach(OmidPoint::TabletAfterApply, 20), None);
        assert_eq!(reach(d, 30), Some(&stops[0]));
        assert_eq!(reach(d, 120), None, "the later stop's first reach");
        assert_eq!(reach(d, 130), Some(&stops[1]));
        assert_eq!(reach(d, 140), None, "each fires once");
    }
}
