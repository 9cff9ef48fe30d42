//! Fuzzing campaigns: each seed generates a whole scenario (cluster size,
//! workload parameters, which faults are on), runs it and checks it.

use crate::scenario::Scenario;
use crate::workloads::{Bank, WorkloadSpec};
use percsim_protocol::client::StepPoint;
use percsim_sim::{ClockSkew, CrashAt, SimConfig};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use serde::Serialize;
use std::collections::BTreeMap;

/// Generate the scenario for `seed`: a swarm-style mix where each fault
/// class is on or off, and how hard, is drawn from the seed.
pub fn generate(seed: u64) -> Scenario {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7065_7263_7369_6d00);
    let clients = rng.random_range(2..=5);
    let mut cluster = SimConfig {
        tablet_servers: rng.random_range(1..=4),
        tablets: rng.random_range(1..=8),
        clients,
        workers_per_client: rng.random_range(1..=3),
        run_ms: rng.random_range(1_000..=3_000),
        ..SimConfig::default()
    };
    if rng.random_bool(0.5) {
        let n = rng.random_range(1..=3);
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
                client: rng.random_range(0..clients),
                txn: rng.random_range(1..=15),
                step,
                restart_after_ms: rng.random_bool(0.6).then(|| rng.random_range(100..=2_000)),
            });
        }
    }
    if rng.random_bool(0.3) {
        cluster.clocks = (0..clients)
            .map(|_| ClockSkew {
                offset_ms: rng.random_range(-2_000..=2_000),
                drift_ppm: rng.random_range(-20_000..=20_000),
            })
            .collect();
    }
    let bank = Bank {
        accounts: rng.random_range(3..=16),
        read_all_ratio: rng.random_range(0.0..0.5),
        ..Bank::default()
    };
    Scenario::new(seed, cluster, WorkloadSpec::Bank(bank))
}

/// How a seed ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every check passed.
    Pass,
    /// The checker or a workload invariant found a safety violation.
    Safety,
    /// The cluster did not converge in the healed phase.
    Liveness,
    /// The simulation itself crashed (a panic).
    Crash,
}

impl Verdict {
    /// The process exit code for this verdict (0 pass, 1 safety, 3 liveness, 4 crash).
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Pass => 0,
            Verdict::Safety => 1,
            Verdict::Liveness => 3,
            Verdict::Crash => 4,
        }
    }
}

/// One seed's result, as a JSON line.
#[derive(Debug, Clone, Serialize)]
pub struct SeedResult {
    /// The seed.
    pub seed: u64,
    /// How it ended.
    pub verdict: Verdict,
    /// The workload.
    pub workload: String,
    /// Transactions committed, aborted and unknown.
    pub committed: u64,
    /// Aborted transactions.
    pub aborted: u64,
    /// Transactions with unknown outcome.
    pub unknown: u64,
    /// Simulated time in ms.
    pub sim_ms: u64,
    /// Checker rules that failed.
    pub violated_rules: Vec<String>,
    /// A short explanation for a failure.
    pub explanation: Option<String>,
    /// Counters (events, cleanups, aborts by reason).
    pub counters: BTreeMap<String, u64>,
    /// Wall time spent on the seed (ms).
    pub wall_ms: u64,
}

/// A run's outcome with the checker's verdict.
pub struct Judged {
    /// The per-seed result.
    pub result: SeedResult,
    /// The history, kept for capsules.
    pub history: Option<percsim_checker::History>,
}

/// Run and judge one scenario.
pub fn run_one(scenario: &Scenario) -> Judged {
    let started = std::time::Instant::now();
    let mut result = SeedResult {
        seed: scenario.seed,
        verdict: Verdict::Pass,
        workload: scenario.workload.name().to_string(),
        committed: 0,
        aborted: 0,
        unknown: 0,
        sim_ms: 0,
        violated_rules: Vec::new(),
        explanation: None,
        counters: BTreeMap::new(),
        wall_ms: 0,
    };
    let out = match scenario.run() {
        Ok(out) => out,
        Err(e) => {
            result.verdict = Verdict::Crash;
            result.explanation = Some(e.to_string());
            result.wall_ms = started.elapsed().as_millis() as u64;
            return Judged {
                result,
                history: None,
            };
        }
    };
    let report = percsim_checker::check(&out.history);
    let s = &out.summary;
    result.committed = s.committed;
    result.aborted = s.aborted;
    result.unknown = s.unknown;
    result.sim_ms = s.sim_ns / 1_000_000;
    result.counters = s.counters.clone();
    result.violated_rules = report
        .violated_rules()
        .iter()
        .map(|r| r.to_string())
        .collect();
    if !s.workload_violations.is_empty() {
        result.violated_rules.push("workload_invariant".into());
    }
    if !result.violated_rules.is_empty() {
        result.verdict = Verdict::Safety;
        let mut text = report.render_text();
        for v in &s.workload_violations {
            text.push_str(&format!("\nworkload invariant: {v}"));
        }
        result.explanation = Some(text);
    } else if let Some(l) = &s.liveness_failure {
        result.verdict = Verdict::Liveness;
        result.explanation = Some(l.clone());
    }
    result.wall_ms = started.elapsed().as_millis() as u64;
    Judged {
        result,
        history: Some(out.history),
    }
}
