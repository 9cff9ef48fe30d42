//! Apache Omid's transaction manager as a system of the testbed: its
//! section of a scenario file (`"omid": {...}`, an [`OmidConfig`]), its
//! workloads (`omid-bank`, `omid-register`, `omid-list-append`,
//! `omid-tpce`, `script`,
//! and `omid-pipeline`, `percsim compare`'s job), its campaign and its
//! planted bugs. See `docs/omid.md`.

pub mod ablations;
pub mod compare;
mod def;
pub mod script;

use crate::campaign::Mix;
use crate::faultmix;
use crate::planted_bugs;
use crate::scenario::{Scenario, ScenarioError};
use crate::system::{CoverageItem, KillTable, PlantedBug, SystemDef, SystemSpec, config_error};
use crate::typed::{Typed, TypedSystem};
use percsim_protocol::omid::{Granularity, OmidAblation, OmidPoint, OmidPointOwner, PostCommit};
use percsim_sim::omid::config::{
    Bank, CrashAt, ListAppend, MAX_NODES, OmidConfig, OmidCosts, OmidWorkload, PauseAt, Register,
    Tpce,
};
use percsim_sim::{ConfigError, Fault, FaultKind, NodeKind, RunOutput, TimedFault, WorldConfig};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use script::{OmidScriptFile, ScriptProgram};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub use def::{NAME, OMID, OmidDef};

/// The world's fault classes Omid honours, and its own `crash_at_step`
/// and `pause_at_step` (a node killed or frozen at one of its named
/// points; a frozen TSO loses its lease and the backup takes over). It has
/// no master, client sessions or clocks; its liveness service keeps the
/// TSO's lease, and a killed one lets the lease run out.
pub const OMID_CLASSES: &[&str] = &[
    "kill_client",
    "kill_data_server",
    "kill_coordinator",
    "kill_liveness",
    "pause",
    "stall",
    "partition",
    "packet_loss",
    "latency",
    "duplicate",
    "crash_at_step",
    "pause_at_step",
];

/// Omid's workloads, as a scenario file names them: the campaign's three
/// and scripts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case", deny_unknown_fields)]
pub enum OmidWorkloadSpec {
    /// Transfers between accounts and reads of every account.
    #[serde(rename = "omid-bank")]
    Bank(Bank),
    /// Reads and read-modify-writes of registers.
    #[serde(rename = "omid-register")]
    Register(Register),
    /// Appends of unique elements to lists.
    #[serde(rename = "omid-list-append")]
    ListAppend(ListAppend),
    /// TPC-E-lite: trade orders and their results.
    #[serde(rename = "omid-tpce")]
    Tpce(Tpce),
    /// A script: named transactions, steps and expectations.
    Script(OmidScriptFile),
    /// `percsim compare`'s document pipeline.
    #[serde(rename = "omid-pipeline")]
    Pipeline(compare::Pipeline),
}

impl From<OmidWorkload> for OmidWorkloadSpec {
    fn from(w: OmidWorkload) -> Self {
        match w {
            OmidWorkload::Bank(b) => OmidWorkloadSpec::Bank(b),
            OmidWorkload::Register(r) => OmidWorkloadSpec::Register(r),
            OmidWorkload::ListAppend(l) => OmidWorkloadSpec::ListAppend(l),
            OmidWorkload::Tpce(t) => OmidWorkloadSpec::Tpce(t),
        }
    }
}

impl OmidWorkloadSpec {
    /// The workload's name.
    pub fn name(&self) -> &'static str {
        match self {
            OmidWorkloadSpec::Bank(_) => "omid-bank",
            OmidWorkloadSpec::Register(_) => "omid-register",
            OmidWorkloadSpec::ListAppend(_) => "omid-list-append",
            OmidWorkloadSpec::Tpce(_) => "omid-tpce",
            OmidWorkloadSpec::Script(_) => "script",
            OmidWorkloadSpec::Pipeline(_) => "omid-pipeline",
        }
    }

    /// The campaign workload it is (none for a script).
    fn campaign(&self) -> Option<OmidWorkload> {
        match self {
            OmidWorkloadSpec::Bank(b) => Some(OmidWorkload::Bank(b.clone())),
            OmidWorkloadSpec::Register(r) => Some(OmidWorkload::Register(r.clone())),
            OmidWorkloadSpec::ListAppend(l) => Some(OmidWorkload::ListAppend(l.clone())),
            OmidWorkloadSpec::Tpce(t) => Some(OmidWorkload::Tpce(t.clone())),
            OmidWorkloadSpec::Script(_) | OmidWorkloadSpec::Pipeline(_) => None,
        }
    }
}

/// An Omid scenario's own part: the cluster (a scenario file's `omid`
/// section) and the workload.
pub type OmidSpec = Typed<OmidDef>;

planted_bugs!(OmidAblation);

/// What an Omid campaign should exercise of Omid's own: a node killed,
/// and a node frozen, at one of its named points.
fn point_coverage() -> Vec<CoverageItem> {
    vec![
        CoverageItem {
            name: "omid_crash_at_point",
            description: "a node killed at one of Omid's named points",
            counter: FaultKind::CrashAtStep.counter(),
            class: Some(FaultKind::CrashAtStep.name()),
        },
        CoverageItem {
            name: "omid_pause_at_point",
            description: "a node frozen at one of Omid's named points",
            counter: FaultKind::PauseAtStep.counter(),
            class: Some(FaultKind::PauseAtStep.name()),
        },
    ]
}

impl SystemDef for OmidDef {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self) -> &'static str {
        "Apache Omid's transaction manager: a TSO with a bounded conflict map, a commit table, shadow cells and reader invalidation"
    }

    fn parse(
        &self,
        section: Option<serde_json::Value>,
        workload: serde_json::Value,
    ) -> Result<Box<dyn SystemSpec>, ScenarioError> {
        OmidSpec::parse(self, section, workload)
    }

    fn workloads(&self) -> &'static [&'static str] {
        &[
            "omid-bank",
            "omid-register",
            "omid-list-append",
            "omid-tpce",
            "script",
            "omid-pipeline",
        ]
    }

    fn campaign_workloads(&self) -> &'static [&'static str] {
        &["omid-bank", "omid-register", "omid-list-append"]
    }

    fn node_kinds(&self) -> &'static [NodeKind] {
        &percsim_sim::omid::NODE_KINDS
    }

    fn fault_classes(&self) -> &'static [&'static str] {
        OMID_CLASSES
    }

    fn coverage(&self) -> Vec<CoverageItem> {
        point_coverage()
    }

    fn campaign_share(&self) -> (u64, u64) {
        // A tenth, as Pulsar: the default campaign's seeds stay mostly
        // Percolator's, and the main job's length grows by a tenth.
        (1, 10)
    }

    fn ablations(&self) -> Vec<(&'static str, &'static str)> {
        OmidAblation::list()
    }

    fn generate(&self, seed: u64, mix: &Mix) -> Scenario {
        generate(seed, mix)
    }

    fn kill_table(&self, opts: &KillTable) -> Result<i32, String> {
        ablations::kill_table(opts)
    }

    fn compare_scenario(&self, seed: u64, world: WorldConfig) -> Option<Scenario> {
        let job = compare::Pipeline::default();
        let spec = OmidSpec {
            cluster: OmidConfig {
                clients: job.clients(),
                tablets: 3,
                ..OmidConfig::default()
            },
            workload: OmidWorkloadSpec::Pipeline(job),
        };
        Some(spec.scenario(seed, world))
    }

    fn compare_facts(&self, out: &RunOutput) -> Result<crate::compare::RunFacts, String> {
        let history = out
            .transactions()
            .ok_or("the run recorded no transaction history")?;
        Ok(compare::facts(history))
    }

    fn kill_table_ranges(&self) -> bool {
        true
    }

    fn scale_out(&self, point: &crate::compare::ScalePoint) -> Option<crate::compare::ScaleJob> {
        Some(scale_out(point))
    }

    fn script_scenario(
        &self,
        script: serde_json::Value,
        seed: u64,
    ) -> Result<Scenario, ScenarioError> {
        let script: OmidScriptFile = crate::scenario::typed("workload", script)?;
        Ok(script_scenario(script, seed))
    }
}

/// A scenario running `script` on a small cluster (2 tablet servers, the
/// TSO and its backup, as many clients as the script names, a 60 s
/// workload phase), with `seed`.
pub fn script_scenario(script: OmidScriptFile, seed: u64) -> Scenario {
    let cluster = OmidConfig {
        clients: crate::script::clients_needed(&script),
        tablets: 2,
        ..OmidConfig::default()
    };
    let world = crate::script::script_world();
    OmidSpec {
        cluster,
        workload: OmidWorkloadSpec::Script(script),
    }
    .scenario(seed, world)
}

impl TypedSystem for OmidDef {
    type Section = OmidConfig;
    type Workload = OmidWorkloadSpec;
    const NAME: &'static str = NAME;

    fn workload_name(workload: &OmidWorkloadSpec) -> &'static str {
        workload.name()
    }

    fn validate(spec: &OmidSpec, world: &WorldConfig) -> Result<(), ScenarioError> {
        let Some(workload) = spec.workload.campaign() else {
            percsim_sim::omid::validate_cluster(world, &spec.cluster)
                .map_err(|e| config_error(NAME, e))?;
            if let OmidWorkloadSpec::Pipeline(job) = &spec.workload {
                job.validate().map_err(ScenarioError::Invalid)?;
                if spec.cluster.clients < job.clients() {
                    return Err(ScenarioError::Invalid(format!(
                        "omid.clients: the pipeline needs {} ({} loaders and as many processors), found {}",
                        job.clients(),
                        job.loaders,
                        spec.cluster.clients
                    )));
                }
            }
            let OmidWorkloadSpec::Script(s) = &spec.workload else {
                return Ok(());
            };
            let nodes = percsim_sim::omid::node_names(&spec.cluster);
            return s
                .validate(spec.cluster.clients, &nodes)
                .map_err(ScenarioError::Invalid);
        };
        workload.validate().map_err(ScenarioError::Invalid)?;
        percsim_sim::omid::validate(world, &spec.cluster, &workload)
            .map_err(|e| config_error(NAME, e))
    }

    fn run(
        spec: &OmidSpec,
        world: &WorldConfig,
        seed: u64,
        description: serde_json::Value,
    ) -> Result<RunOutput, ConfigError> {
        let workload = match &spec.workload {
            OmidWorkloadSpec::Bank(b) => OmidWorkload::Bank(b.clone()),
            OmidWorkloadSpec::Register(r) => OmidWorkload::Register(r.clone()),
            OmidWorkloadSpec::ListAppend(l) => OmidWorkload::ListAppend(l.clone()),
            OmidWorkloadSpec::Tpce(t) => OmidWorkload::Tpce(t.clone()),
            OmidWorkloadSpec::Pipeline(job) => {
                let program = Arc::new(compare::PipelineProgram(job.clone()));
                return percsim_sim::omid::run_program(
                    world,
                    &spec.cluster,
                    program,
                    seed,
                    description,
                );
            }
            OmidWorkloadSpec::Script(s) => {
                let program = Arc::new(ScriptProgram(s.fresh()));
                return percsim_sim::omid::run_program(
                    world,
                    &spec.cluster,
                    program,
                    seed,
                    description,
                );
            }
        };
        percsim_sim::omid::run(world, &spec.cluster, &workload, seed, description)
    }

    fn expectations(spec: &OmidSpec) -> bool {
        matches!(spec.workload, OmidWorkloadSpec::Script(_))
    }
}

/// The Omid scenario of `seed`, drawn from `mix`: 3-8 clients, 1-3 tablet
/// servers, a conflict map of 1-3 keys at cell or row granularity (small,
/// so that evictions raise the low watermark), a TSO and its backup with
/// a lease of 50-150 ms whose commit-table writer flushes every 0-20 ms,
/// the clients' post-commit mode (sync, or one seed in two async with a
/// post-commit queue of 1-150 ms), a workload phase of 3-8 s; one to
/// three TSO-store partitions three seeds in four (and whenever the
/// `partition` class is drawn); Omid's stops at named points (which every
/// cluster meets), each class on three times in four, at moments drawn
/// over the whole phase; and one or two of the world's fault classes the
/// mix lets on (every one of [`OMID_CLASSES`] when it names none), each on
/// three times in four; the mix's planted bugs of Omid switched on.
pub fn generate(seed: u64, mix: &Mix) -> Scenario {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6f6d_6964);
    let clients = rng.random_range(3..=8);
    let mut world = WorldConfig {
        run_ms: rng.random_range(3_000..=8_000),
        quiesce_ms: 10_000,
        ..WorldConfig::default()
    };
    let mut cluster = OmidConfig {
        clients,
        tablets: rng.random_range(1..=3),
        conflict_map_size: rng.random_range(1..=3),
        granularity: if rng.random_bool(0.5) {
            Granularity::Cell
        } else {
            Granularity::Row
        },
        timestamp_batch: rng.random_range(1..=100),
        persist_ms: rng.random_range(1..=5),
        store_ms: rng.random_range(1..=8),
        lease_ms: rng.random_range(50..=150),
        ablations: OmidAblation::chosen(&mix.ablations),
        ..OmidConfig::default()
    };
    if rng.random_bool(0.5) {
        cluster.post_commit = PostCommit::Async;
        cluster.post_commit_queue_ms = rng.random_range(1..=150);
    }
    let cuts = rng.random_range(1..=3);
    let mut cut: Vec<TimedFault> = (0..cuts)
        .map(|_| store_partition(&cluster, world.run_ms, &mut rng))
        .collect();
    let cut_alone = rng.random_bool(0.75);
    cluster.ct_flush_ms = rng.random_range(0..=20);
    let world_on = few_world_classes(mix, &mut rng);
    for class in OMID_CLASSES {
        let stop = matches!(*class, "crash_at_step" | "pause_at_step");
        let on = rng.random_bool(0.75) && (stop || world_on.contains(class));
        let intensity = rng.random_range(0.0..1.0);
        let timeout_ms = world.rpc_timeout_ms;
        let span = Span {
            run_ms: world.run_ms,
            lease_ms: cluster.lease_ms,
            timeout_ms,
        };
        let points = match *class {
            "crash_at_step" => crashes(intensity, span, &mut rng),
            "pause_at_step" => pauses(intensity, span, &mut rng),
            _ => Vec::new(),
        };
        if !on || !named(mix, class) {
            continue;
        }
        match *class {
            "crash_at_step" => cluster.crashes = points.into_iter().map(|p| p.crash()).collect(),
            "pause_at_step" => cluster.pauses = points.into_iter().map(|p| p.pause()).collect(),
            _ => {
                if *class == "partition" {
                    world.faults.schedule.append(&mut cut);
                }
                // Every other class of the list is one of the world's.
                let _ = faultmix::enable_world(&mut world, clients, class, intensity, &mut rng);
            }
        }
    }
    if cut_alone && named(mix, "partition") {
        // Empty when the `partition` class took them already.
        world.faults.schedule.append(&mut cut);
    }
    let workload = workload(seed, mix, &mut rng);
    OmidSpec {
        cluster,
        workload: workload.into(),
    }
    .scenario(seed, world)
}

/// A partition between the TSOs and the tablet servers, 50-400 ms long at
/// a random time of the workload phase: the TSO can hand out timestamps
/// and answer clients, but its commit-table writes wait (the campaign
/// draws one to three of them; they apply three seeds in four, and with
/// the `partition` class, when the mix lets `partition` on).
fn store_partition(cluster: &OmidConfig, run_ms: u64, rng: &mut ChaCha8Rng) -> TimedFault {
    let tsos: Vec<String> = ["tso", "tso-backup"].map(String::from).to_vec();
    let tablets = (0..cluster.tablets)
        .map(|i| format!("tablet-{i}"))
        .collect();
    TimedFault {
        at_ms: rng.random_range(100..run_ms.max(101)),
        fault: Fault::Partition {
            a: tsos,
            b: tablets,
            one_way: false,
            duration_ms: rng.random_range(50..=400),
        },
    }
}

/// The world's fault classes on in a seed: one or two of those `mix`
/// lets on (of [`OMID_CLASSES`] without Omid's own stops), each class
/// ranked by a draw made whichever classes are named. A real cluster
/// meets a few faults at a time; every class at once (each on in one seed
/// of two, as before) left about 10 commits a seed, and a planted bug
/// little traffic to show in.
fn few_world_classes(mix: &Mix, rng: &mut ChaCha8Rng) -> Vec<&'static str> {
    let mut ranked: Vec<(u64, &'static str)> = OMID_CLASSES
        .iter()
        .map(|c| (rng.random::<u64>(), *c))
        .filter(|(_, c)| !matches!(*c, "crash_at_step" | "pause_at_step"))
        .collect();
    let how_many = rng.random_range(1..=2);
    ranked.retain(|(_, c)| named(mix, c));
    ranked.sort_unstable();
    ranked.into_iter().take(how_many).map(|(_, c)| c).collect()
}

/// Whether `mix` lets fault class `class` on (a mix that names no class
/// lets every one on).
fn named(mix: &Mix, class: &str) -> bool {
    mix.faults.is_empty() || mix.faults.iter().any(|f| faultmix::canonical(f) == class)
}

/// The workload of a campaign seed: the mix's workloads (Omid's three
/// when it names none) taken in turn by seed.
fn workload(seed: u64, mix: &Mix, rng: &mut ChaCha8Rng) -> OmidWorkload {
    let names: Vec<&str> = if mix.workloads.is_empty() {
        OMID.campaign_workloads().to_vec()
    } else {
        mix.workloads.iter().map(String::as_str).collect()
    };
    let think_ms = rng.random_range(0..=5);
    let fraction = rng.random_range(0.2..0.8);
    let keys = rng.random_range(2..=6);
    match names[(seed % names.len() as u64) as usize] {
        "omid-register" => OmidWorkload::Register(Register {
            keys,
            write_fraction: fraction,
            think_ms,
        }),
        "omid-list-append" => OmidWorkload::ListAppend(ListAppend {
            keys,
            max_ops: rng.random_range(1..=4),
            append_fraction: fraction,
            think_ms,
        }),
        _ => OmidWorkload::Bank(Bank {
            accounts: keys,
            read_all_fraction: fraction / 2.0,
            think_ms,
            ..Bank::default()
        }),
    }
}

/// A node stopped at one of Omid's named points: killed (restarted after
/// `ms`) or frozen (for `ms`).
struct PointStop {
    point: OmidPoint,
    nth: u64,
    after_ms: u64,
    ms: u64,
}

/// What a stop's draws depend on: the workload phase's length, the
/// TSO's lease and the clients' call timeout, in ms.
#[derive(Clone, Copy)]
struct Span {
    run_ms: u64,
    lease_ms: u64,
    timeout_ms: u64,
}

impl PointStop {
    fn crash(self) -> CrashAt {
        CrashAt {
            point: self.point,
            nth: self.nth,
            after_ms: self.after_ms,
            restart_after_ms: self.ms,
        }
    }

    fn pause(self) -> PauseAt {
        PauseAt {
            point: self.point,
            nth: self.nth,
            after_ms: self.after_ms,
            pause_ms: self.ms,
        }
    }
}

/// A named point of `owner`, drawn evenly.
fn point_of(owner: OmidPointOwner, rng: &mut ChaCha8Rng) -> OmidPoint {
    let of: Vec<OmidPoint> = OmidPoint::ALL
        .iter()
        .copied()
        .filter(|p| p.owner() == owner)
        .collect();
    of[rng.random_range(0..of.len())]
}

/// The kind of node a stop at a named point hits: the TSO two times in
/// five, a client two in five, a tablet server one in five.
fn owner_of(rng: &mut ChaCha8Rng) -> OmidPointOwner {
    match rng.random_range(0..5) {
        0 | 1 => OmidPointOwner::Tso,
        2 | 3 => OmidPointOwner::Client,
        _ => OmidPointOwner::Tablet,
    }
}

/// Two to eight crashes at Omid's named points, each the 1st to the 3rd
/// time the point is reached from a moment drawn over the whole workload
/// phase (a real cluster's crash comes at any moment of its run, while
/// commits are in flight), restarted 20-500 ms later.
fn crashes(intensity: f64, span: Span, rng: &mut ChaCha8Rng) -> Vec<PointStop> {
    let n = 2 + (intensity * 6.0) as usize;
    (0..n)
        .map(|_| PointStop {
            point: point_of(owner_of(rng), rng),
            nth: rng.random_range(1..=3),
            after_ms: rng.random_range(0..span.run_ms.max(1)),
            ms: rng.random_range(20..=500),
        })
        .collect()
}

/// Two to eight pauses at Omid's named points, each the 1st to the 3rd
/// time the point is reached from a moment drawn over the whole workload
/// phase. A TSO freezes for one to one and a half leases plus up to one
/// call timeout: a TSO frozen past its lease is replaced, and the clients
/// whose calls it holds meet it again when it thaws, which is where a
/// deposed TSO must refuse to serve. A client or a tablet server freezes
/// for 20-400 ms (a collection pause): a client between its data cells
/// and its commit ages its transaction below the low watermark; one
/// between the TSO's answer and its shadow cells leaves readers to the
/// commit table.
fn pauses(intensity: f64, span: Span, rng: &mut ChaCha8Rng) -> Vec<PointStop> {
    let n = 2 + (intensity * 6.0) as usize;
    (0..n)
        .map(|_| {
            let owner = owner_of(rng);
            let point = point_of(owner, rng);
            let nth = rng.random_range(1..=3);
            let after_ms = rng.random_range(0..span.run_ms.max(1));
            let ms = match owner {
                OmidPointOwner::Tso => {
                    span.lease_ms * rng.random_range(4..=6) / 4
                        + rng.random_range(0..=span.timeout_ms)
                }
                _ => rng.random_range(20..=400),
            };
            PointStop {
                point,
                nth,
                after_ms,
                ms,
            }
        })
        .collect()
}

// Omid's run of `percsim compare --scale-out`: TPC-E-lite (`omid-tpce`)
// on as many tablet servers as the point names, the TSO and the tablet
// servers charged CPU per request (`OmidCosts`, docs/omid.md).

/// Omid's scale-out run at `point`: two clients per tablet server (at
/// most [`MAX_NODES`]) sharing the point's trading loops; a conflict map
/// that never evicts within the run (Omid's TSO is configured with room
/// for 100 million keys) and timestamp ranges of ten million, so that
/// neither the low watermark nor the ceiling's persistence, but the
/// TSO's CPU, is what a growing load meets. Calls time out after 2 s, as
/// Percolator's do in its scale-out: each trading loop has one call out
/// at a time, so a saturated TSO's queue holds at most one request per
/// loop (81,920 at 64 servers and ten times the load: 0.49 s of its core
/// at 6 µs each), and no call waits long enough to be sent again. A
/// time-out shorter than that queue (the world's default 100 ms)
/// collapses once the queue outgrows it: every call times out, each copy
/// sent again is queued and charged as well, and with more loops than a
/// time-out's worth of requests the queue never drains, so it and the
/// memory holding it grow without end.
pub fn scale_out(point: &crate::compare::ScalePoint) -> crate::compare::ScaleJob {
    let costs = OmidCosts {
        enabled: true,
        ..OmidCosts::default()
    };
    scale_out_costed(point, costs)
}

/// The scale-out's call time-out, in ms (see [`scale_out`]).
pub const SCALE_OUT_RPC_TIMEOUT_MS: u64 = 2_000;

/// [`scale_out`] with the CPU costs `costs`.
pub fn scale_out_costed(
    point: &crate::compare::ScalePoint,
    costs: OmidCosts,
) -> crate::compare::ScaleJob {
    let clients = (2 * point.servers).min(MAX_NODES);
    let cluster = OmidConfig {
        clients,
        tablets: point.servers,
        conflict_map_size: 100_000_000,
        timestamp_batch: 10_000_000,
        costs,
        ..OmidConfig::default()
    };
    let workload = Tpce {
        customers: point.customers(),
        securities: 100,
        trade_interval_ms: 500_000,
        market_delay_ms: 100,
        initial_balance: 1_000_000,
        workers: point.workers().div_ceil(clients).max(1),
    };
    let world = WorldConfig {
        run_ms: point.run_ms,
        rpc_timeout_ms: SCALE_OUT_RPC_TIMEOUT_MS,
        ..WorldConfig::default()
    };
    let spec = OmidSpec {
        cluster,
        workload: OmidWorkloadSpec::Tpce(workload),
    };
    crate::compare::ScaleJob {
        scenario: spec.scenario(1, world),
        central: "TSO",
        central_cpu: "cpu.busy_us.tso",
        server_cpu: "cpu.busy_us.tablet",
    }
}
