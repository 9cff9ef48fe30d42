//! A Pulsar cluster installed in a world: what its nodes share (the
//! durable state, the history being recorded, the planned crashes) and
//! where its nodes listen. It knows no workload: the workload reaches the
//! clients through [`crate::pulsar::nodes::client::Program`].

use crate::pulsar::config::{PulsarConfig, UnloadAt, UnloadTarget};
use crate::pulsar::control::{ArmedPoint, At, PointAction};
use crate::pulsar::ids::{self, PulsarCounter, PulsarEvent};
use crate::pulsar::invariants::Watch;
use crate::pulsar::record::StreamRecorder;
use crate::pulsar::store::{self, Durable};
use crate::world::explore::ExploreStop;
use crate::world::ids::FaultKind;
use crate::world::net::PORT;
use crate::world::{Control, World};
use madsim::time::{Duration, sleep};
use percsim_protocol::pulsar::ownership::{self, Resource, SessionId};
use percsim_protocol::pulsar::points::ServerPoint;
use percsim_protocol::pulsar::types::Partition;
use serde_json::json;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};

/// The metadata service's address.
pub(crate) fn metadata_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 3, 0, 1)), PORT)
}
/// Broker `i`'s address.
pub(crate) fn broker_addr(i: usize) -> SocketAddr {
    SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(10, 4, (i / 250) as u8, (i % 250 + 1) as u8)),
        PORT,
    )
}
/// Client `i`'s address.
pub(crate) fn client_addr(i: usize) -> SocketAddr {
    SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(10, 5, (i / 250) as u8, (i % 250 + 1) as u8)),
        PORT,
    )
}

/// Points only scripts arm, added after exploration's choice points were
/// set: an exploration offers no stop at them, so its schedules (and their
/// fingerprints) stay as they were.
const NOT_EXPLORED: [ServerPoint; 6] = [
    ServerPoint::BeforeMarkerApplied,
    ServerPoint::AppendInFlight,
    ServerPoint::AfterEndSent,
    ServerPoint::AfterSnapshotWritten,
    ServerPoint::DuringRecovery,
    ServerPoint::EndingInFlight,
];

/// A Pulsar cluster installed in a world: what its nodes share. Only
/// `durable` is the servers' state; the rest is the world's (the history
/// being recorded, how often each point was reached).
pub(crate) struct Cluster {
    pub world: Arc<World>,
    pub cfg: PulsarConfig,
    pub clients: usize,
    pub durable: Mutex<Durable>,
    /// Every partition of every topic.
    pub partitions: Vec<Partition>,
    /// How many metadata sessions each broker has opened.
    pub sessions: Mutex<Vec<u32>>,
    pub stream: Mutex<StreamRecorder>,
    /// How many times each server point was reached.
    pub points: Mutex<BTreeMap<ServerPoint, u64>>,
    /// How many lives each client has started.
    pub incarnations: Mutex<Vec<u32>>,
    /// What the assertions remember of the durable logs.
    pub watch: Mutex<Watch>,
    /// Points a workload's driver armed, in the order it armed them.
    pub armed: Mutex<Vec<ArmedPoint>>,
    /// How many of the planned unloads (`cfg.unloads`, by time) are done.
    pub unloads_done: Mutex<usize>,
}

impl Cluster {
    pub(crate) fn durable(&self) -> MutexGuard<'_, Durable> {
        crate::world::lock(&self.durable)
    }

    pub(crate) fn watch(&self) -> MutexGuard<'_, Watch> {
        crate::world::lock(&self.watch)
    }

    pub(crate) fn stream(&self) -> MutexGuard<'_, StreamRecorder> {
        crate::world::lock(&self.stream)
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.world.now_ns() / 1_000_000
    }

    /// Record one of Pulsar's events.
    pub(crate) fn event(&self, kind: PulsarEvent, fields: serde_json::Value) {
        self.world.event(kind.name(), fields);
    }

    /// Bump one of Pulsar's counters.
    pub(crate) fn bump(&self, counter: ids::PulsarCounter) {
        self.world.recorder().bump(counter.name());
    }

    /// The simulated time a recovery that replays `entries` log entries
    /// takes (`recovery_us_per_entry` each); the entries are counted
    /// (`pulsar.recovery_replayed`).
    pub(crate) fn recovery_time(&self, entries: u64) -> Duration {
        let name = ids::PulsarCounter::RecoveryReplayed.name();
        self.world.recorder().add(name, entries);
        Duration::from_micros(entries.saturating_mul(self.cfg.recovery_us_per_entry))
    }

    /// `node`'s append to `resource`'s logs was refused by the fence: it
    /// stops serving the resource.
    pub(crate) fn fenced(&self, node: &str, resource: &Resource, f: ownership::Fenced) {
        self.event(
            PulsarEvent::StaleOwnerFenced,
            json!({"node": node, "resource": resource.to_string(), "log_epoch": f.log, "epoch": f.writer}),
        );
    }

    /// Unload `resource` from the broker that owns it, with no process
    /// dying (Pulsar's topic unload): the metadata service places it again
    /// at its next scan, at the next epoch. Returns the broker that owned
    /// it; an error if nobody owns it now.
    pub(crate) fn unload(&self, resource: &Resource) -> Result<usize, String> {
        let from = {
            let mut d = self.durable();
            let from = d.meta.owner(resource).and_then(|a| a.session);
            let plan = ownership::unload(&d.meta, resource);
            for r in &plan {
                d.meta.apply(r);
            }
            from.filter(|_| !plan.is_empty())
                .ok_or_else(|| format!("{resource} has no owner to unload it from"))?
        };
        self.bump(ids::PulsarCounter::Unload);
        self.event(
            PulsarEvent::Unloaded,
            json!({"resource": resource.to_string(), "from": from.broker}),
        );
        Ok(from.broker)
    }

    /// The load manager's planned unloads due by now (`cfg.unloads`, each
    /// once): every one whose target has an owner is unloaded; one whose
    /// target has none now (its broker died) has nothing to shed.
    pub(crate) fn unload_due(&self) {
        let now_ms = self.now_ms();
        let due: Vec<UnloadAt> = {
            let mut done = crate::world::lock(&self.unloads_done);
            let mut plan: Vec<UnloadAt> = self.cfg.unloads.clone();
            plan.sort_by_key(|u| u.at_ms);
            let due: Vec<UnloadAt> = plan
                .iter()
                .skip(*done)
                .take_while(|u| u.at_ms <= now_ms)
                .copied()
                .collect();
            *done += due.len();
            due
        };
        for u in due {
            let resources: Vec<Resource> = match u.target {
                UnloadTarget::Coordinator => vec![Resource::Coordinator(store::COORDINATOR)],
                UnloadTarget::Partition(i) => self
                    .partitions
                    .iter()
                    .filter(|p| p.index == i)
                    .map(|p| Resource::Partition(p.clone()))
                    .collect(),
            };
            for r in resources {
                let _ = self.unload(&r);
            }
        }
    }

    /// Broker `broker` opens a new metadata session: its generation.
    pub(crate) fn next_session(&self, broker: usize) -> SessionId {
        let mut s = crate::world::lock(&self.sessions);
        s[broker] += 1;
        SessionId {
            broker,
            generation: s[broker],
        }
    }

    /// The broker the metadata store names as the coordinator's owner.
    pub(crate) fn coordinator_owner(&self) -> Option<usize> {
        let d = self.durable();
        ownership::lookup(&d.meta, &Resource::Coordinator(store::COORDINATOR))
    }

    /// Server `node` reached `point` while handling what `at` says: count
    /// it (`pulsar.reached.<name>`), and kill the server (or freeze it) if
    /// that is planned for this time or a driver armed the point for it
    /// (counted too: `pulsar.stopped.<name>`).
    pub(crate) async fn reached(&self, node: &str, point: ServerPoint, at: At) {
        let n = {
            let mut points = crate::world::lock(&self.points);
            let n = points.entry(point).or_default();
            *n += 1;
            *n
        };
        let reached = ids::point_reached_counter(point.name());
        self.world.recorder().bump(&reached);
        let planned = self
            .cfg
            .crashes
            .iter()
            .find(|c| c.point == point && c.nth == n)
            .map(|c| match c.pause_ms {
                Some(pause_ms) => PointAction::Pause { pause_ms },
                None => PointAction::Kill {
                    restart_after_ms: Some(c.restart_after_ms),
                },
            });
        let explored = || {
            let stop = self.world.explore_stop(node, point.name())?;
            Some(match stop {
                ExploreStop::Crash { restart_after_ms } => PointAction::Kill {
                    restart_after_ms: Some(restart_after_ms),
                },
                ExploreStop::Pause { duration_ms } => PointAction::Pause {
                    pause_ms: duration_ms,
                },
            })
        };
        let planned = planned.or_else(|| self.armed_action(node, point, &at));
        let explorable = !NOT_EXPLORED.contains(&point);
        let Some(action) = planned.or_else(|| explorable.then(explored).flatten()) else {
            return;
        };
        let pause_ms = match action {
            PointAction::Pause { pause_ms } => Some(pause_ms),
            PointAction::Kill { .. } => None,
        };
        self.event(
            PulsarEvent::CrashAtPoint,
            json!({"node": node, "point": point.name(), "nth": n, "pause_ms": pause_ms}),
        );
        // Counted as the stop it is: a kill or a pause at a named point.
        let (class, counter) = match action {
            PointAction::Pause { .. } => {
                (FaultKind::PauseAtStep, PulsarCounter::BrokerPausedAtPoint)
            }
            PointAction::Kill { .. } => {
                (FaultKind::CrashAtStep, PulsarCounter::BrokerKilledAtPoint)
            }
        };
        self.world.recorder().bump(&class.counter());
        let stopped = ids::point_stopped_counter(point.name());
        self.world.recorder().bump(&stopped);
        if !point.on_client() {
            self.bump(counter);
        }
        self.world.request(match action {
            PointAction::Pause { pause_ms } => Control::Pause {
                node: node.to_string(),
                duration_ms: Some(pause_ms),
            },
            PointAction::Kill { restart_after_ms } => Control::Kill {
                node: node.to_string(),
                restart_after_ms,
            },
        });
        // The kill takes effect when the world's control task runs.
        sleep(Duration::from_millis(1)).await;
    }

    /// Whether a driver armed `point` on `node` for what `at` says (it
    /// stays armed).
    pub(crate) fn armed_on(&self, node: &str, point: ServerPoint, at: &At) -> bool {
        let armed = crate::world::lock(&self.armed);
        armed.iter().any(|a| a.matches(node, point, at))
    }

    /// The action of the first point a driver armed that this reach
    /// matches (disarmed now).
    fn armed_action(&self, node: &str, point: ServerPoint, at: &At) -> Option<PointAction> {
        let mut armed = crate::world::lock(&self.armed);
        let i = armed.iter().position(|a| a.matches(node, point, at))?;
        Some(armed.remove(i).action)
    }
}
