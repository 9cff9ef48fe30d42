//! The workloads percsim ships.

mod bank;
mod script;

pub use bank::Bank;
pub use script::{ExpectOutcome, InitialCell, Script, Step};

use percsim_sim::{SimConfig, Workload};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A workload and its parameters, as a scenario file names it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// Transfers between accounts; every snapshot sums to the total.
    Bank(Bank),
    /// A user-written interleaving with expectations.
    Script(Script),
}

impl WorkloadSpec {
    /// The workload's name.
    pub fn name(&self) -> &'static str {
        match self {
            WorkloadSpec::Bank(_) => "bank",
            WorkloadSpec::Script(_) => "script",
        }
    }

    /// Check the parameters.
    pub fn validate(&self, cluster: &SimConfig) -> Result<(), String> {
        match self {
            WorkloadSpec::Script(s) => s.validate(cluster.clients, &cluster.node_names()),
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
        }
    }
}
