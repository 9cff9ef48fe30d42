//! Percolator's fault classes: the world's classes, plus kills and pauses
//! at Percolator's named protocol steps and points.

use crate::faultmix;
use percsim_protocol::percolator::client::{Point, PointNode, StepPoint};
use percsim_sim::{
    CrashAt, EventKind, FaultKind, PauseAt, PercolatorConfig, PercolatorEvent, PointAction,
    PointFault, Role, WorldConfig,
};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

/// Switch fault class `class` on for a Percolator run (`world` and
/// `cluster`) with an intensity in (0, 1].
pub fn enable(
    world: &mut WorldConfig,
    cluster: &mut PercolatorConfig,
    class: &str,
    intensity: f64,
    rng: &mut ChaCha8Rng,
) -> Result<(), String> {
    match FaultKind::from_name(faultmix::canonical(class)) {
        Some(FaultKind::CrashAtStep) => crash_at_steps(cluster, intensity, rng),
        Some(FaultKind::PauseAtStep) => pause_at_steps(cluster, intensity, rng),
        _ => return faultmix::enable_world(world, cluster.clients, class, intensity, rng),
    }
    Ok(())
}

/// The history event (kind) that shows a class really fired, and for kills
/// the role of the node it must name.
pub fn evidence(class: &str) -> (&'static str, Option<Role>) {
    let Some(kind) = FaultKind::from_name(faultmix::canonical(class)) else {
        return (EventKind::Kill.name(), None);
    };
    let event = match kind {
        FaultKind::KillClient
        | FaultKind::KillDataServer
        | FaultKind::KillCoordinator
        | FaultKind::KillLiveness
        | FaultKind::KillMaster => EventKind::Kill,
        FaultKind::Pause => EventKind::Pause,
        FaultKind::Stall => EventKind::Stall,
        FaultKind::Partition => EventKind::Partition,
        FaultKind::PacketLoss => EventKind::PacketLoss,
        FaultKind::Latency => EventKind::Latency,
        FaultKind::Duplicate => EventKind::Duplicate,
        FaultKind::SessionExpiry => EventKind::SessionExpired,
        FaultKind::ClockSkew => EventKind::ClockSkew,
        // Percolator's own events at its named protocol steps.
        FaultKind::PauseAtStep => return (PercolatorEvent::PauseAtStep.name(), None),
        FaultKind::CrashAtStep => return (PercolatorEvent::CrashAtStep.name(), None),
    };
    (event.name(), kind.killed_role())
}

/// A client's commit step, the k-th secondary's for k up to 3. The two
/// "sent" steps stop the client while its request is the network's: a
/// prewrite or commit of the primary that may land after the client died.
fn commit_step(rng: &mut ChaCha8Rng) -> StepPoint {
    let k = rng.random_range(1..=3);
    match rng.random_range(0..8) {
        0 => StepPoint::BeforePrewrite,
        1 => StepPoint::PrewritePrimarySent,
        2 => StepPoint::AfterPrewritePrimary,
        3 => StepPoint::AfterPrewriteSecondary(k),
        4 => StepPoint::BeforeCommitPrimary,
        5 => StepPoint::CommitPrimarySent,
        6 => StepPoint::AfterCommitPrimary,
        _ => StepPoint::AfterCommitSecondary(k),
    }
}

/// A point outside a client's commit (a cleaning reader, an observer, the
/// oracle, a tablet server), with a node that reaches it and an occurrence
/// early enough to come in most runs.
fn other_point(cluster: &PercolatorConfig, rng: &mut ChaCha8Rng) -> (Point, usize, u64) {
    let points = [
        Point::RollForwardBetweenCells,
        Point::RollBackBetweenCells,
        Point::ObserverAfterWrites,
        Point::ObserverBeforeClear,
        Point::OracleAfterPersist,
        Point::TabletAfterApply,
    ];
    let point = points[rng.random_range(0..points.len())];
    let (node, nth) = match point.node() {
        PointNode::Client => (
            rng.random_range(0..cluster.clients),
            rng.random_range(1..=3),
        ),
        PointNode::Oracle => (0, rng.random_range(1..=2)),
        PointNode::TabletServer => (
            rng.random_range(0..cluster.tablet_servers),
            rng.random_range(1..=100),
        ),
    };
    (point, node, nth)
}

/// Kill nodes at named points: half at a client's commit step (by
/// transaction number), half at any other point (by occurrence).
fn crash_at_steps(cluster: &mut PercolatorConfig, intensity: f64, rng: &mut ChaCha8Rng) {
    let n = 1 + (intensity * 3.0) as usize;
    for _ in 0..n {
        if rng.random_bool(0.5) {
            let step = commit_step(rng);
            cluster.crashes.push(CrashAt {
                client: rng.random_range(0..cluster.clients),
                txn: rng.random_range(1..=8),
                step,
                restart_after_ms: rng.random_bool(0.7).then(|| rng.random_range(100..=2_000)),
            });
        } else {
            let (point, node, nth) = other_point(cluster, rng);
            let restart_after_ms = rng.random_bool(0.7).then(|| rng.random_range(100..=2_000));
            cluster.point_faults.push(PointFault {
                point,
                node,
                nth,
                fault: PointAction::Crash { restart_after_ms },
            });
        }
    }
}

/// A live node frozen at a named point while its locks age (a client
/// mid-commit or mid-cleanup) or its reply waits (a server): readers clean
/// up, and late messages from before the pause may still arrive.
fn pause_at_steps(cluster: &mut PercolatorConfig, intensity: f64, rng: &mut ChaCha8Rng) {
    let n = 1 + (intensity * 4.0) as usize;
    for _ in 0..n {
        let duration_ms = rng.random_range(300..=4_000);
        if rng.random_bool(0.5) {
            let step = commit_step(rng);
            cluster.pauses.push(PauseAt {
                client: rng.random_range(0..cluster.clients),
                txn: rng.random_range(1..=8),
                step,
                duration_ms,
            });
        } else {
            let (point, node, nth) = other_point(cluster, rng);
            cluster.point_faults.push(PointFault {
                point,
                node,
                nth,
                fault: PointAction::Pause { duration_ms },
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The crash and pause classes target every named point: each commit
    /// step (secondaries past the first too) and each other point.
    #[test]
    fn the_step_classes_pick_every_point() {
        let mut c = PercolatorConfig::default();
        let mut w = WorldConfig::default();
        let mut rng = rand_core::SeedableRng::seed_from_u64(7);
        for _ in 0..200 {
            enable(&mut w, &mut c, "crash_at_step", 1.0, &mut rng).unwrap();
            enable(&mut w, &mut c, "pause_at_step", 1.0, &mut rng).unwrap();
        }
        let steps = c
            .crashes
            .iter()
            .map(|x| x.step)
            .chain(c.pauses.iter().map(|x| x.step));
        let mut hit: Vec<Point> = steps.clone().map(|s| s.point()).collect();
        hit.extend(c.point_faults.iter().map(|f| f.point));
        for p in Point::ALL {
            assert!(hit.contains(&p), "{} never picked", p.name());
        }
        assert!(
            steps
                .clone()
                .any(|s| s == StepPoint::AfterPrewriteSecondary(3))
        );
        assert!(
            steps
                .clone()
                .any(|s| s == StepPoint::AfterCommitSecondary(2))
        );
        let crash = |f: &&PointFault| matches!(f.fault, PointAction::Crash { .. });
        assert!(c.point_faults.iter().any(|f| crash(&f)));
        assert!(c.point_faults.iter().any(|f| !crash(&f)));
        c.validate(&w).unwrap();
    }

    #[test]
    fn an_unknown_class_is_refused() {
        let mut c = PercolatorConfig::default();
        let mut w = WorldConfig::default();
        let mut rng = rand_core::SeedableRng::seed_from_u64(1);
        let e = enable(&mut w, &mut c, "kill_everything", 0.5, &mut rng).unwrap_err();
        assert!(e.contains("unknown fault class \"kill_everything\""), "{e}");
        enable(&mut w, &mut c, "kill_coordinator", 0.5, &mut rng).unwrap();
        assert!(w.faults.random.kill_coordinator.is_some());
    }
}
