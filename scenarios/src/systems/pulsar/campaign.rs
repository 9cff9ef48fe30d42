//! Pulsar's campaign: each seed generates a whole scenario (cluster size,
//! workload, which fault classes are on and how hard, crashes at the
//! servers' named points), as the Percolator campaign does.

use super::workloads::{Stream, StreamPipeline};
use super::{PulsarSpec, PulsarWorkloadSpec};
use crate::campaign::Mix;
use crate::faultmix;
use crate::scenario::Scenario;
use percsim_protocol::pulsar::points::ServerPoint;
use percsim_sim::{PulsarConfig, ServerCrashAt, WorldConfig};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// Where Pulsar's kill table and its behaviour fingerprints take their
/// seeds from (`PULSAR_SEED_BASE + i` is their `i`-th seed): the seeds the
/// kill table's figures were first measured on.
pub const PULSAR_SEED_BASE: u64 = 1 << 40;

/// The Pulsar workloads of the default mix.
pub const PULSAR_WORKLOADS: &[&str] = &["stream", "stream-pipeline"];

/// The world's fault classes that apply to Pulsar (it has no liveness
/// service, master or sessions); `crash_at_step` kills a server at one of
/// its named points.
pub const PULSAR_CLASSES: &[&str] = &[
    "kill_client",
    "kill_data_server",
    "kill_coordinator",
    "pause",
    "stall",
    "partition",
    "packet_loss",
    "latency",
    "duplicate",
    "clock_skew",
    "crash_at_step",
];

/// The Pulsar scenario of `seed`, drawn from `mix`: only its fault classes
/// and workloads (every one of them when it names none), its planted bugs
/// switched off. The draws are the same whichever are named, so a class
/// left out leaves the rest of the scenario as it was.
pub fn generate(seed: u64, mix: &Mix) -> Scenario {
    let ablations = super::ablations_of(&mix.ablations);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7075_6c73_6172);
    let clients = rng.random_range(2..=6);
    let mut world = WorldConfig {
        run_ms: rng.random_range(1_000..=5_000),
        quiesce_ms: 30_000,
        ..WorldConfig::default()
    };
    let mut pulsar = PulsarConfig {
        clients,
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
        if !mix.faults.is_empty() && !mix.faults.iter().any(|f| faultmix::canonical(f) == *class) {
            // Drawn all the same, so the other classes keep their draws.
            continue;
        }
        if *class == "crash_at_step" {
            server_crashes(&mut pulsar, intensity, &mut rng);
        } else {
            // Every name in the list is a world class of the mix.
            let _ = faultmix::enable_world(&mut world, clients, class, intensity, &mut rng);
        }
    }
    let stream = rng.random_bool(0.5);
    let named = |w: &str| mix.workloads.is_empty() || mix.workloads.iter().any(|n| n == w);
    let stream = match (named("stream"), named("stream-pipeline")) {
        (true, false) => true,
        (false, true) => false,
        _ => stream,
    };
    let workload = if stream {
        PulsarWorkloadSpec::Stream(Stream {
            subscriptions: rng.random_range(1..=3),
            max_batch: rng.random_range(1..=4),
            ..Stream::default()
        })
    } else {
        PulsarWorkloadSpec::StreamPipeline(StreamPipeline {
            documents: rng.random_range(10..=80),
            crash_rate: rng.random_range(0.0..0.05),
            ..StreamPipeline::default()
        })
    };
    let spec = PulsarSpec {
        cluster: pulsar,
        workload,
    };
    Scenario::of(seed, world, Box::new(spec))
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
