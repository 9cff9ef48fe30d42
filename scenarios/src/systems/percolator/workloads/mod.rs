//! Percolator's workloads.

mod bank;
mod dedup;
mod list_append;
mod pipeline;
mod register;
mod script;
mod tpce;
mod util;

pub use bank::Bank;
pub use dedup::Dedup;
pub use list_append::ListAppend;
pub use pipeline::Pipeline;
pub use register::Register;
pub use script::{
    AckExpect, Call, CallKind, CellAssert, CellRef, CountAssert, Counted, ErrorClass,
    ExpectOutcome, InitialCell, LockExpect, MessageRule, MsgFate, MsgLeg, PercolatorScript,
    PercolatorVerb, Point, PointAction, RecordKind, Script, ScriptBuilder, ScriptObserver, Step,
    StepPoint, Stored, Target, Until, WaitFor, WriteExpect,
};
pub use tpce::Tpce;

use percsim_sim::{PercolatorConfig, Workload};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A workload and its parameters, as a scenario file names it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// Transfers between accounts; every snapshot sums to the total.
    Bank(Bank),
    /// Reads and writes of unique values over a few registers.
    Register(Register),
    /// Appends of unique elements to lists.
    ListAppend(ListAppend),
    /// The paper's document deduplication (`UpdateDocument`).
    Dedup(Dedup),
    /// The paper's indexing pipeline: loader and three observers.
    Pipeline(Pipeline),
    /// A user-written interleaving with expectations.
    Script(Script),
    /// TPC-E-lite: the paper's brokerage benchmark (trade order and result).
    Tpce(Tpce),
}

/// Every workload's name, as a scenario file spells it.
pub const NAMES: &[&str] = &[
    "bank",
    "register",
    "list-append",
    "dedup",
    "pipeline",
    "script",
    "tpce",
];

impl WorkloadSpec {
    /// The workload's name.
    pub fn name(&self) -> &'static str {
        match self {
            WorkloadSpec::Bank(_) => "bank",
            WorkloadSpec::Register(_) => "register",
            WorkloadSpec::ListAppend(_) => "list-append",
            WorkloadSpec::Dedup(_) => "dedup",
            WorkloadSpec::Pipeline(_) => "pipeline",
            WorkloadSpec::Script(_) => "script",
            WorkloadSpec::Tpce(_) => "tpce",
        }
    }

    /// Check the parameters.
    pub fn validate(&self, cluster: &PercolatorConfig) -> Result<(), String> {
        match self {
            WorkloadSpec::Script(s) => {
                script_faults(cluster)?;
                s.validate(cluster.clients, &cluster.node_names())
            }
            WorkloadSpec::Register(r) => r.validate(),
            WorkloadSpec::ListAppend(l) => l.validate(),
            WorkloadSpec::Dedup(d) => d.validate(),
            WorkloadSpec::Pipeline(p) => p.validate(),
            WorkloadSpec::Tpce(t) => t.validate(),
            WorkloadSpec::Bank(b) => {
                if b.accounts < 2 || b.accounts > 100_000 {
                    return Err(format!(
                        "workload.accounts: {} is outside 2..=100000",
                        b.accounts
                    ));
                }
                if b.max_transfer == 0 {
                    return Err("workload.max_transfer: must be at least 1".into());
                }
                if !(0.0..=1.0).contains(&b.read_all_ratio) {
                    return Err(format!(
                        "workload.read_all_ratio: {} is not a probability",
                        b.read_all_ratio
                    ));
                }
                Ok(())
            }
        }
    }

    /// The runnable workload.
    pub fn build(&self) -> Arc<dyn Workload> {
        match self {
            WorkloadSpec::Bank(b) => Arc::new(b.clone()),
            WorkloadSpec::Script(s) => Arc::new(s.fresh()),
            WorkloadSpec::Register(r) => Arc::new(r.clone()),
            WorkloadSpec::ListAppend(l) => Arc::new(l.fresh()),
            WorkloadSpec::Dedup(d) => Arc::new(d.clone()),
            WorkloadSpec::Pipeline(p) => Arc::new(p.clone()),
            WorkloadSpec::Tpce(t) => Arc::new(t.clone()),
        }
    }
}

/// A script arms its stops in its steps: the cluster's `crashes`, `pauses`
/// and `point_faults` (keyed to a client's n-th transaction or a node's
/// n-th time at a point, which a script does not fix) could silently never
/// fire, so a script refuses them.
fn script_faults(cluster: &PercolatorConfig) -> Result<(), String> {
    let (field, instead) = if !cluster.crashes.is_empty() {
        ("crashes", "a crash_at step")
    } else if !cluster.pauses.is_empty() {
        ("pauses", "a pause_at step")
    } else if !cluster.point_faults.is_empty() {
        ("point_faults", "a stop_at step")
    } else {
        return Ok(());
    };
    Err(format!(
        "percolator.{field}[0]: a script arms its stops in its steps; use {instead} (an entry keyed to the n-th transaction or the n-th time at a point may never fire in a script, and nothing would say so)"
    ))
}
