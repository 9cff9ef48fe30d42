//! Fault classes by name, and how each turns into cluster settings. The
//! fuzz generator switches classes on and off per seed (swarm testing);
//! the tests run every workload under every class.

use percsim_protocol::client::StepPoint;
use percsim_sim::{ClockSkew, CrashAt, FaultClass, PauseAt, SimConfig};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

/// Every fault class percsim injects, by name.
pub const CLASSES: &[&str] = &[
    "kill_client",
    "kill_tablet_server",
    "kill_oracle",
    "kill_liveness",
    "kill_master",
    "pause",
    "stall",
    "partition",
    "packet_loss",
    "latency",
    "duplicate",
    "session_expiry",
    "clock_skew",
    "crash_at_step",
    "pause_at_step",
];

/// The history event (kind) that shows a class really fired, and for kills
/// the node-name prefix it must name.
pub fn evidence(class: &str) -> (&'static str, Option<&'static str>) {
    match class {
        "kill_client" => ("kill", Some("client-")),
        "kill_tablet_server" => ("kill", Some("tablet-")),
        "kill_oracle" => ("kill", Some("oracle")),
        "kill_liveness" => ("kill", Some("liveness")),
        "kill_master" => ("kill", Some("master")),
        "pause" => ("pause", None),
        "stall" => ("stall", None),
        "partition" => ("partition", None),
        "packet_loss" => ("packet_loss", None),
        "latency" => ("latency", None),
        "duplicate" => ("duplicate", None),
        "session_expiry" => ("session_expired", None),
        "clock_skew" => ("clock_skew", None),
        "pause_at_step" => ("pause_at_step", None),
        _ => ("crash_at_step", None),
    }
}

/// Switch fault class `class` on in `cluster` with an intensity in (0, 1].
pub fn enable(
    cluster: &mut SimConfig,
    class: &str,
    intensity: f64,
    rng: &mut ChaCha8Rng,
) -> Result<(), String> {
    let p = (0.05 + 0.25 * intensity).min(1.0);
    let class_of = |min, max| FaultClass {
        probability: p,
        min_duration_ms: min,
        max_duration_ms: max,
        rate: 0.0,
    };
    let r = &mut cluster.faults.random;
    match class {
        "kill_client" => r.kill_client = Some(class_of(100, 1_500)),
        "kill_tablet_server" => r.kill_tablet_server = Some(class_of(100, 1_500)),
        "kill_oracle" => r.kill_oracle = Some(class_of(50, 800)),
        "kill_liveness" => r.kill_liveness = Some(class_of(50, 800)),
        "kill_master" => r.kill_master = Some(class_of(100, 1_500)),
        "pause" => r.pause = Some(class_of(100, 2_500)),
        "stall" => r.stall = Some(class_of(500, 5_000)),
        "partition" => r.partition = Some(class_of(100, 1_500)),
        "packet_loss" => {
            r.packet_loss = Some(FaultClass {
                rate: 0.05 + 0.25 * intensity,
                ..class_of(100, 1_000)
            })
        }
        // Copies arrive up to seconds late: long enough to land after a
        // cleanup has rolled their transaction back.
        "latency" => {
            r.latency = Some(FaultClass {
                rate: 0.05 + 0.5 * intensity,
                ..class_of(200, 3_000)
            })
        }
        "duplicate" => {
            r.duplicate = Some(FaultClass {
                rate: 0.2 + 0.6 * intensity,
                ..class_of(200, 4_000)
            })
        }
        "session_expiry" => r.session_expiry = Some(class_of(0, 0)),
        "clock_skew" => {
            let spread = (500.0 + 4_000.0 * intensity) as i64;
            cluster.clocks = (0..cluster.clients)
                .map(|_| ClockSkew {
                    offset_ms: rng.random_range(-spread..=spread),
                    drift_ppm: rng.random_range(-50_000..=50_000),
                })
                .collect();
        }
        "crash_at_step" => {
            let n = 1 + (intensity * 3.0) as usize;
            for _ in 0..n {
                let step = match rng.random_range(0..6) {
                    0 => StepPoint::BeforePrewrite,
                    1 => StepPoint::AfterPrewritePrimary,
                    2 => StepPoint::AfterPrewriteSecondary(1),
                    3 => StepPoint::BeforeCommitPrimary,
                    4 => StepPoint::AfterCommitPrimary,
                    _ => StepPoint::AfterCommitSecondary(1),
                };
                cluster.crashes.push(CrashAt {
                    client: rng.random_range(0..cluster.clients),
                    txn: rng.random_range(1..=8),
                    step,
                    restart_after_ms: rng.random_bool(0.7).then(|| rng.random_range(100..=2_000)),
                });
            }
        }
        // A live owner frozen mid-commit (after it locked cells or took its
        // commit timestamp) while its locks age: readers clean them up,
        // and late messages from before the pause may still arrive.
        "pause_at_step" => {
            let n = 1 + (intensity * 4.0) as usize;
            for _ in 0..n {
                let step = match rng.random_range(0..3) {
                    0 => StepPoint::AfterPrewritePrimary,
                    1 => StepPoint::AfterPrewriteSecondary(1),
                    _ => StepPoint::BeforeCommitPrimary,
                };
                cluster.pauses.push(PauseAt {
                    client: rng.random_range(0..cluster.clients),
                    txn: rng.random_range(1..=8),
                    step,
                    duration_ms: rng.random_range(300..=4_000),
                });
            }
        }
        other => {
            return Err(format!(
                "unknown fault class {other:?} (classes: {})",
                CLASSES.join(", ")
            ));
        }
    }
    Ok(())
}
