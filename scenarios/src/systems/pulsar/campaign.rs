//! Pulsar's campaign: each seed generates a whole scenario (cluster size,
//! workload, which fault classes are on and how hard, crashes at the
//! servers' named points, the load manager's unloads), as the Percolator
//! campaign does.

use super::workloads::{Stream, StreamPipeline};
use super::{PulsarSpec, PulsarWorkloadSpec};
use crate::campaign::Mix;
use crate::faultmix;
use crate::scenario::Scenario;
use percsim_protocol::pulsar::points::ServerPoint;
use percsim_sim::{FaultKind, PulsarConfig, ServerCrashAt, UnloadAt, UnloadTarget, WorldConfig};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// Where Pulsar's kill table and its behaviour fingerprints take their
/// seeds from (`PULSAR_SEED_BASE + i` is their `i`-th seed): the seeds the
/// kill table's figures were first measured on.
pub const PULSAR_SEED_BASE: u64 = 1 << 40;

/// The Pulsar workloads of the default mix.
pub const PULSAR_WORKLOADS: &[&str] = &["stream", "stream-pipeline"];

/// The fault classes Pulsar honours: the world's that apply to it (it has
/// no liveness service, master or sessions, and its deadlines run on true
/// simulated time, so skewed clocks would change nothing: `clock_skew` is
/// refused), plus its own stops at its servers' named points, a kill
/// (`crash_at_step`) or a freeze (`pause_at_step`).
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
    "crash_at_step",
    "pause_at_step",
    UNLOAD,
];

/// Pulsar's own fault class: the load manager's unloads of a resource from
/// its live owner (`pulsar.unloads`), no process dying.
pub const UNLOAD: &str = "unload";

/// What a seed draws, slot by slot, in this order: each slot is drawn
/// whichever classes the mix names, so a class left out leaves the rest of
/// the scenario as it was.
const SLOTS: &[&str] = &[
    "kill_client",
    "kill_data_server",
    "kill_coordinator",
    "pause",
    "stall",
    "partition",
    "packet_loss",
    "latency",
    "duplicate",
    // Retired: Pulsar does not honour clock skew; drawn all the same so
    // that every seed keeps the draws after it.
    "clock_skew",
    // The servers' stops at named points: kills and freezes.
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
        run_ms: rng.random_range(RUN_MS.0..=RUN_MS.1),
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
    let named = |class: &str| {
        mix.faults.is_empty() || mix.faults.iter().any(|f| faultmix::canonical(f) == class)
    };
    let stops = Stops {
        kills: named("crash_at_step"),
        pauses: named("pause_at_step"),
    };
    for slot in SLOTS {
        if !rng.random_bool(0.5) {
            continue;
        }
        let intensity = rng.random_range(0.0..1.0);
        match *slot {
            "clock_skew" => {}
            "crash_at_step" => server_stops(&mut pulsar, intensity, stops, &mut rng),
            class if named(class) => {
                // Every slot left is a world class Pulsar honours.
                let _ = faultmix::enable_world(&mut world, clients, class, intensity, &mut rng);
            }
            _ => {}
        }
    }
    calm(&mut world);
    let workload = workload(mix, &mut rng);
    // Drawn whichever classes the mix names, kept only if it names them.
    let unloads = unloads(world.run_ms, pulsar.partitions, &mut rng);
    if named(UNLOAD) {
        pulsar.unloads = unloads;
    }
    aimed_stops(&mut pulsar, stops, &mut rng);
    let spec = PulsarSpec {
        cluster: pulsar,
        workload,
    };
    Scenario::of(seed, world, Box::new(spec))
}

/// The bounds of a seed's workload phase, in ms. A seed's chance to catch
/// a planted bug grows with the transactions it runs (under the default
/// campaign with 1-5 s phases, `pending-ack-not-durable` was caught by 1%
/// of the seeds that ran fewer than 10 transactions and 24% of those that
/// ran more than 40): phases of 2-10 s give each seed about twice as many
/// transactions, each under the same fault rates.
pub const RUN_MS: (u64, u64) = (2_000, 10_000);

/// How often a Pulsar seed's random faults start, beside the world's
/// default mix (`faultmix::enable_world`, which rolls each class every
/// 100 ms with a chance of 5-30%: one to three faults a second per class).
/// At the world's rate a Pulsar cluster spends the run recovering: broker
/// sessions expire after 400 ms and every kill, pause or partition of an
/// owner moves its resources, so a seed committed a handful of
/// transactions (seed `2^40 + 11`, faithful: 3 committed under its
/// faults, 48 with none) and the situations the kill table is about (a marker copy arriving
/// late, a coordinator losing its log append, a timeout while end-txn is
/// in flight) had almost no transaction to happen to. A real cluster
/// commits many transactions between two broker failures: a quarter of
/// the world's rate (one fault every 1.3-8 s per class) keeps every class
/// and its durations and lets the workload run (the same seed: 35
/// committed).
pub const FAULT_RATE_SCALE: f64 = 0.25;

/// Scale every random fault class's chance per tick by
/// [`FAULT_RATE_SCALE`]; durations and intensities stay as drawn.
fn calm(world: &mut WorldConfig) {
    for &kind in FaultKind::ALL {
        if let Some(Some(class)) = world.faults.random.class_mut(kind) {
            class.probability *= FAULT_RATE_SCALE;
        }
    }
}

/// The workload of a seed: one the mix names (either when it names both
/// or neither). The pipeline's processors crash at their named points
/// only when the mix honours `crash_at_step`.
fn workload(mix: &Mix, rng: &mut ChaCha8Rng) -> PulsarWorkloadSpec {
    let stream = rng.random_bool(0.5);
    let named = |w: &str| mix.workloads.is_empty() || mix.workloads.iter().any(|n| n == w);
    let stream = match (named("stream"), named("stream-pipeline")) {
        (true, false) => true,
        (false, true) => false,
        _ => stream,
    };
    if stream {
        return PulsarWorkloadSpec::Stream(Stream {
            subscriptions: rng.random_range(1..=3),
            max_batch: rng.random_range(1..=4),
            ..Stream::default()
        });
    }
    let documents = rng.random_range(10..=80);
    let mut crash_rate = rng.random_range(0.0..0.05);
    let crashes = mix.faults.is_empty()
        || mix
            .faults
            .iter()
            .any(|f| faultmix::canonical(f) == "crash_at_step");
    if !crashes {
        crash_rate = 0.0;
    }
    PulsarWorkloadSpec::StreamPipeline(StreamPipeline {
        documents,
        crash_rate,
        ..StreamPipeline::default()
    })
}

/// The named points a campaign stops servers at: every point of a
/// transaction's life ([`ServerPoint::ALL`]), and the windows a real
/// cluster's crashes and pauses also fall in: the coordinator with an end
/// request in hand and nothing logged, any server with a log append
/// issued and not stored (a kill loses it), and a broker between a
/// marker's append and its callback. The client's `after_end_sent` is
/// left to scripts (the pipeline's processors already die before and
/// after their commit).
pub const CAMPAIGN_POINTS: [ServerPoint; 11] = [
    ServerPoint::AfterOpenLogged,
    ServerPoint::AfterEndingLogged,
    ServerPoint::AfterFirstMarker,
    ServerPoint::AfterAllMarkers,
    ServerPoint::AfterEndLogged,
    ServerPoint::AfterAppendLogged,
    ServerPoint::AfterMarkerLogged,
    ServerPoint::AfterPendingAckLogged,
    ServerPoint::BeforeEndingLogged,
    ServerPoint::BeforeMarkerApplied,
    ServerPoint::AppendInFlight,
];

/// The points of [`CAMPAIGN_POINTS`] on a commit's path, drawn twice as
/// often as the others: the coordinator with the end request in hand, a
/// log append in flight (the coordinator's COMMITTING record among them),
/// the coordinator past COMMITTING, a marker appended and not applied, and
/// a pending ack logged. The planted bugs of the commit path
/// (`commit-before-log-durable`, `timeout-races-commit`,
/// `pending-ack-not-durable`) need a stop there.
pub const COMMIT_PATH_POINTS: [ServerPoint; 5] = [
    ServerPoint::BeforeEndingLogged,
    ServerPoint::AppendInFlight,
    ServerPoint::AfterEndingLogged,
    ServerPoint::BeforeMarkerApplied,
    ServerPoint::AfterPendingAckLogged,
];

/// The load manager's unloads of a seed: none, or up to three, each at a
/// time of the workload phase, of a partition index of every topic or
/// (one in four) of the coordinator. Unloads are the cluster's own
/// operation (a load manager shedding bundles), the fault class
/// [`UNLOAD`]: every seed draws them, and keeps them only when the mix
/// names the class.
fn unloads(run_ms: u64, partitions: u32, rng: &mut ChaCha8Rng) -> Vec<UnloadAt> {
    let n = rng.random_range(0..=3);
    (0..n)
        .map(|_| UnloadAt {
            at_ms: rng.random_range(100..=run_ms),
            target: match rng.random_bool(0.25) {
                true => UnloadTarget::Coordinator,
                false => UnloadTarget::Partition(rng.random_range(0..partitions)),
            },
        })
        .collect()
}

/// The points every seed also plans one stop of the coordinator's broker
/// at (each at its `nth` reach, as the campaign draws its other stops): with a
/// transaction's decision (COMMITTING or ABORTING) issued to its log and
/// not stored, and just after that decision is durable with no marker
/// sent, while every participant still holds the transaction's pending
/// acks. [`CAMPAIGN_POINTS`] reach these windows in few seeds: a stop at
/// `append_in_flight` counts every append of the cluster (about five a
/// transaction), so it rarely lands on a decision.
pub const AIMED_POINTS: [ServerPoint; 2] =
    [ServerPoint::EndingInFlight, ServerPoint::AfterEndingLogged];

/// Every named point a campaign stops servers at: [`CAMPAIGN_POINTS`],
/// then those of [`AIMED_POINTS`] not among them.
pub fn stop_points() -> Vec<ServerPoint> {
    let mut points = CAMPAIGN_POINTS.to_vec();
    let aimed = AIMED_POINTS.iter().filter(|p| !CAMPAIGN_POINTS.contains(p));
    points.extend(aimed);
    points
}

/// A stop at each of [`AIMED_POINTS`], drawn as [`server_stops`] draws
/// one: drawn for every seed, planned as `keep` allows.
fn aimed_stops(pulsar: &mut PulsarConfig, keep: Stops, rng: &mut ChaCha8Rng) {
    for point in AIMED_POINTS {
        pulsar.crashes.extend(stop_at(point, keep, rng));
    }
}

/// A stop at `point`: at its `nth` reach (1-20), a kill or (one in three)
/// a freeze; `None` when `keep` does not allow its kind.
fn stop_at(point: ServerPoint, keep: Stops, rng: &mut ChaCha8Rng) -> Option<ServerCrashAt> {
    let nth = rng.random_range(1..=20);
    let restart_after_ms = rng.random_range(50..=1_000);
    let pause_ms = rng
        .random_bool(1.0 / 3.0)
        .then(|| rng.random_range(200..=1_500));
    let kept = match pause_ms {
        Some(_) => keep.pauses,
        None => keep.kills,
    };
    kept.then_some(ServerCrashAt {
        point,
        nth,
        restart_after_ms,
        pause_ms,
    })
}

/// Which of the stops at named points a seed keeps: kills
/// (`crash_at_step`), freezes (`pause_at_step`).
#[derive(Debug, Clone, Copy)]
struct Stops {
    kills: bool,
    pauses: bool,
}

/// Kill the coordinator's broker or a broker at some of their named
/// points, or (one in three) freeze it there: a pause longer than the
/// session timeout makes a stale owner that wakes up after its resources
/// moved, in the middle of a step. Every stop is drawn; only those `keep`
/// allows are planned.
fn server_stops(pulsar: &mut PulsarConfig, intensity: f64, keep: Stops, rng: &mut ChaCha8Rng) {
    let n = 1 + (intensity * 3.0) as usize;
    for _ in 0..n {
        let i = rng.random_range(0..CAMPAIGN_POINTS.len() + COMMIT_PATH_POINTS.len());
        let point = match i.checked_sub(CAMPAIGN_POINTS.len()) {
            Some(j) => COMMIT_PATH_POINTS[j],
            None => CAMPAIGN_POINTS[i],
        };
        pulsar.crashes.extend(stop_at(point, keep, rng));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(faults: &[&str], workloads: &[&str]) -> Mix {
        Mix {
            faults: faults.iter().map(|s| s.to_string()).collect(),
            workloads: workloads.iter().map(|s| s.to_string()).collect(),
            ..Mix::default()
        }
    }

    fn cluster(s: &Scenario) -> &PulsarConfig {
        &PulsarSpec::of(s).expect("a Pulsar scenario").cluster
    }

    /// A narrowed mix injects only its classes: no random class but its
    /// own, no stop at a point of a class not named, no processor crash
    /// without `crash_at_step`, no unload without `unload` (and with it
    /// the default campaign's), and no clock ever skewed.
    #[test]
    fn only_the_named_classes_are_injected() {
        let mut kills = 0;
        let mut pauses = 0;
        let mut unloads = 0;
        for seed in 0..200 {
            let s = generate(seed, &mix(&["partition"], &["stream-pipeline"]));
            let kinds: Vec<_> = s.world.faults.random.kinds().iter().map(|k| k.0).collect();
            assert!(kinds.iter().all(|k| k.name() == "partition"), "{kinds:?}");
            assert!(cluster(&s).crashes.is_empty());
            assert!(cluster(&s).unloads.is_empty());
            assert!(s.world.clocks.is_empty());
            let Some(PulsarWorkloadSpec::StreamPipeline(p)) =
                PulsarSpec::of(&s).map(|x| &x.workload)
            else {
                panic!("the named workload");
            };
            assert_eq!(p.crash_rate, 0.0);
            let s = generate(seed, &mix(&["pause_at_step"], &[]));
            assert!(s.world.faults.random.kinds().is_empty());
            assert!(cluster(&s).crashes.iter().all(|c| c.pause_ms.is_some()));
            pauses += cluster(&s).crashes.len();
            let s = generate(seed, &mix(&["crash_at_step"], &[]));
            assert!(cluster(&s).crashes.iter().all(|c| c.pause_ms.is_none()));
            kills += cluster(&s).crashes.len();
            assert!(generate(seed, &Mix::default()).world.clocks.is_empty());
            let s = generate(seed, &mix(&[UNLOAD], &[]));
            assert!(s.world.faults.random.kinds().is_empty());
            assert!(cluster(&s).crashes.is_empty());
            let all = generate(seed, &Mix::default());
            assert_eq!(cluster(&s).unloads, cluster(&all).unloads);
            unloads += cluster(&s).unloads.len();
        }
        assert!(kills > 0 && pauses > 0, "{kills} {pauses}");
        assert!(unloads > 0, "{unloads}");
    }

    /// The default campaign stops servers at every one of its points and
    /// plans the load manager's unloads of partitions and of the
    /// coordinator, each inside the workload phase and the cluster.
    #[test]
    fn the_campaign_draws_every_point_and_unloads() {
        let mut points = std::collections::BTreeSet::new();
        let (mut partitions, mut coordinator) = (0, 0);
        for seed in 0..300 {
            let s = generate(seed, &Mix::default());
            let c = cluster(&s);
            points.extend(c.crashes.iter().map(|x| x.point));
            for u in &c.unloads {
                assert!(u.at_ms <= s.world.run_ms, "{u:?}");
                match u.target {
                    UnloadTarget::Partition(p) => {
                        assert!(p < c.partitions, "{u:?}");
                        partitions += 1;
                    }
                    UnloadTarget::Coordinator => coordinator += 1,
                }
            }
        }
        assert_eq!(points.len(), stop_points().len(), "{points:?}");
        assert!(
            partitions > 0 && coordinator > 0,
            "{partitions} {coordinator}"
        );
    }

    /// Every seed of the default campaign stops the coordinator's broker
    /// once at each of [`AIMED_POINTS`], beside its other stops, and a mix
    /// naming neither class of stops plans none of them.
    #[test]
    fn every_seed_stops_at_the_aimed_points() {
        for seed in 0..100 {
            let s = generate(seed, &Mix::default());
            for point in AIMED_POINTS {
                let n = cluster(&s)
                    .crashes
                    .iter()
                    .filter(|c| c.point == point)
                    .count();
                assert!(n >= 1, "seed {seed}: no stop at {}", point.name());
            }
            let last: Vec<_> = cluster(&s)
                .crashes
                .iter()
                .rev()
                .take(2)
                .map(|c| c.point)
                .collect();
            assert_eq!(last, [AIMED_POINTS[1], AIMED_POINTS[0]], "seed {seed}");
            let s = generate(seed, &mix(&["partition"], &[]));
            assert!(cluster(&s).crashes.is_empty(), "seed {seed}");
        }
    }

    /// Among a seed's stops before the aimed ones, each point on a commit's
    /// path is drawn about twice as often as each other point, and every
    /// workload phase is within [`RUN_MS`].
    #[test]
    fn the_commit_path_points_are_drawn_twice_as_often() {
        let mut counts = std::collections::BTreeMap::new();
        for seed in 0..400 {
            let s = generate(seed, &Mix::default());
            assert!((RUN_MS.0..=RUN_MS.1).contains(&s.world.run_ms));
            // The aimed stops come last, one at each aimed point.
            let crashes = &cluster(&s).crashes;
            for c in &crashes[..crashes.len() - AIMED_POINTS.len()] {
                *counts.entry(c.point).or_insert(0u32) += 1;
            }
        }
        let mean = |on_path: bool| {
            let picked: Vec<u32> = CAMPAIGN_POINTS
                .iter()
                .filter(|p| COMMIT_PATH_POINTS.contains(p) == on_path)
                .map(|p| counts.get(p).copied().unwrap_or(0))
                .collect();
            f64::from(picked.iter().sum::<u32>()) / picked.len() as f64
        };
        let ratio = mean(true) / mean(false);
        assert!((1.6..2.5).contains(&ratio), "{ratio}: {counts:?}");
    }

    /// Every random class a seed switches on starts at a quarter of the
    /// world's rate (`faultmix::enable_world`: 5-30% per tick), its
    /// duration and intensity as the world draws them.
    #[test]
    fn random_faults_start_at_a_quarter_of_the_world_rate() {
        let mut classes = 0;
        for seed in 0..100 {
            let s = generate(seed, &Mix::default());
            for (kind, class) in s.world.faults.random.kinds() {
                let p = class.probability;
                assert!(
                    (0.0125..=0.075).contains(&p),
                    "seed {seed}: {} starts with chance {p} per tick",
                    kind.name()
                );
                classes += 1;
            }
        }
        assert!(classes > 100, "{classes}");
    }

    /// Leaving a class out changes nothing else of a seed's scenario.
    #[test]
    fn a_class_left_out_leaves_the_rest_as_it_was() {
        for seed in 0..50 {
            let all = generate(seed, &Mix::default());
            let mut without: Vec<&str> = PULSAR_CLASSES.to_vec();
            without.retain(|c| *c != "latency");
            let some = generate(seed, &mix(&without, &[]));
            assert_eq!(cluster(&all), cluster(&some));
            let mut rest = all.world.faults.random.clone();
            rest.latency = None;
            assert_eq!(rest, some.world.faults.random);
        }
    }
}
