//! Percolator's part of a scenario ([`PercolatorSpec`]) and how one is
//! made: shared by the system's campaign, ablations and benchmarks.

use super::def::PercolatorDef;
use crate::scenario::Scenario;
use crate::systems::percolator::workloads::WorkloadSpec;
use crate::typed::Typed;
use percsim_sim::{PercolatorConfig, WorldConfig};

/// A Percolator scenario's own part: the cluster (a scenario file's
/// `percolator` section) and the workload.
pub type PercolatorSpec = Typed<PercolatorDef>;

/// A Percolator scenario of `workload` on `cluster` in a world set up by
/// `world`, with `seed`.
pub fn scenario(
    seed: u64,
    world: WorldConfig,
    cluster: PercolatorConfig,
    workload: WorkloadSpec,
) -> Scenario {
    PercolatorSpec { cluster, workload }.scenario(seed, world)
}
