//! The Pulsar part of a campaign: each Pulsar seed generates a whole
//! scenario (cluster size, workload, which fault classes are on and how
//! hard, crashes at the servers' named points), as the Percolator campaign
//! does. Pulsar seeds live at [`PULSAR_SEED_BASE`] and above, so a seed
//! names its system and Percolator's seeds stay what they were.

use crate::faultmix;
use crate::scenario::Scenario;
use crate::workloads::{Stream, StreamPipeline, WorkloadSpec};
use percsim_protocol::pulsar::PulsarAblations;
use percsim_protocol::pulsar::points::ServerPoint;
use percsim_sim::{PulsarConfig, ServerCrashAt, SimConfig, SystemKind};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// The first Pulsar seed: seed `PULSAR_SEED_BASE + i` is the `i`-th Pulsar
/// scenario.
pub const PULSAR_SEED_BASE: u64 = 1 << 40;

/// The Pulsar workloads of the default mix.
pub const PULSAR_WORKLOADS: &[&str] = &["stream", "stream-pipeline"];

/// The world's fault classes that apply to Pulsar (it has no liveness
/// service, master or sessions); `crash_at_step` kills a server at one of
/// its named points.
pub const PULSAR_CLASSES: &[&str] = &[
    "kill_client",
    "kill_tablet_server",
    "kill_oracle",
    "pause",
    "stall",
    "partition",
    "packet_loss",
    "latency",
    "duplicate",
    "clock_skew",
    "crash_at_step",
];

/// Whether `seed` is a Pulsar seed.
pub fn is_pulsar_seed(seed: u64) -> bool {
    seed >= PULSAR_SEED_BASE
}

/// The Pulsar scenario of `seed` (`seed` at or above [`PULSAR_SEED_BASE`]),
/// with `ablations` switched off.
pub fn generate(seed: u64, ablations: PulsarAblations) -> Scenario {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7075_6c73_6172);
    let mut cluster = SimConfig {
        clients: rng.random_range(2..=6),
        run_ms: rng.random_range(1_000..=5_000),
        quiesce_ms: 30_000,
        ..SimConfig::default()
    };
    let mut pulsar = PulsarConfig {
        brokers: rng.random_range(1..=4),
        partitions: rng.random_range(1..=4),
        ablations,
        ..PulsarConfig::default()
    };
    pulsar.client.txn_timeout_ms = rng.random_range(300..=2_000);
    // Storage latency varies (a BookKeeper append under load).
    pulsar.log_write_ms = rng.random_range(1..=10);
    for class in PULSAR_CLASSES {
        if !rng.random_bool(0.5) {
            continue;
        }
        let intensity = rng.random_range(0.0..1.0);
        if *class == "crash_at_step" {
            server_crashes(&mut pulsar, intensity, &mut rng);
        } else {
            // Every name in the list is a class of the mix.
            let _ = faultmix::enable(&mut cluster, class, intensity, &mut rng);
        }
    }
    let workload = if rng.random_bool(0.5) {
        WorkloadSpec::Stream(Stream {
            subscriptions: rng.random_range(1..=3),
            max_batch: rng.random_range(1..=4),
            ..Stream::default()
        })
    } else {
        WorkloadSpec::StreamPipeline(StreamPipeline {
            documents: rng.random_range(10..=80),
            crash_rate: rng.random_range(0.0..0.05),
            ..StreamPipeline::default()
        })
    };
    let mut s = Scenario::new(seed, cluster, workload);
    s.system = SystemKind::Pulsar;
    s.pulsar = Some(pulsar);
    s
}

/// Kill the coordinator's broker or a broker at some of their named
/// points, or (one in three) freeze it there: a pause longer than the
/// session timeout makes a stale owner that wakes up after its resources
/// moved, in the middle of a step.
fn server_crashes(pulsar: &mut PulsarConfig, intensity: f64, rng: &mut ChaCha8Rng) {
    let n = 1 + (intensity * 3.0) as usize;
    for _ in 0..n {
        let point = ServerPoint::ALL[rng.random_range(0..ServerPoint::ALL.len())];
        let nth = rng.random_range(1..=20);
        let restart_after_ms = rng.random_range(50..=1_000);
        let pause_ms = rng
            .random_bool(1.0 / 3.0)
            .then(|| rng.random_range(200..=1_500));
        pulsar.crashes.push(ServerCrashAt {
            point,
            nth,
            restart_after_ms,
            pause_ms,
        });
    }
}
