//! Pulsar's part of a scenario ([`PulsarSpec`]): its workloads and its
//! planted bugs, shared by the system's campaign and ablations.

use super::def::PulsarDef;
use super::workloads::{PulsarScriptFile, ScriptWorkload, Stream, StreamPipeline};
use crate::system::PlantedBug;
use crate::typed::Typed;
use percsim_protocol::pulsar::{PulsarAblation, PulsarAblations};
use percsim_sim::{PulsarConfig, PulsarWorkload, pulsar_kinds};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Pulsar's workloads, as a scenario file names them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case", deny_unknown_fields)]
pub enum PulsarWorkloadSpec {
    /// Transactional producers and read-committed consumers.
    Stream(Stream),
    /// The document job as an exactly-once stream processor.
    StreamPipeline(StreamPipeline),
    /// A script: named producers and consumers, steps and expectations.
    Script(PulsarScriptFile),
}

impl PulsarWorkloadSpec {
    /// The workload's name.
    pub fn name(&self) -> &'static str {
        match self {
            PulsarWorkloadSpec::Stream(_) => "stream",
            PulsarWorkloadSpec::StreamPipeline(_) => "stream-pipeline",
            PulsarWorkloadSpec::Script(_) => "script",
        }
    }

    /// Check the workload against the cluster it runs on.
    pub(super) fn validate(&self, cluster: &PulsarConfig) -> Result<(), String> {
        match self {
            PulsarWorkloadSpec::Stream(s) => s.validate(),
            PulsarWorkloadSpec::StreamPipeline(p) => p.validate(),
            PulsarWorkloadSpec::Script(s) => {
                let mut nodes = vec![pulsar_kinds::METADATA.single()];
                nodes.extend((0..cluster.brokers).map(|i| pulsar_kinds::BROKER.nth(i)));
                nodes.extend((0..cluster.clients).map(|i| pulsar_kinds::CLIENT.nth(i)));
                let nodes: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
                s.validate(cluster.clients, &nodes)
            }
        }
    }

    /// The workload the simulator runs.
    pub(super) fn build(&self) -> Arc<dyn PulsarWorkload> {
        match self {
            PulsarWorkloadSpec::Stream(s) => Arc::new(s.clone()),
            PulsarWorkloadSpec::StreamPipeline(p) => Arc::new(p.clone()),
            PulsarWorkloadSpec::Script(s) => Arc::new(ScriptWorkload(s.fresh())),
        }
    }
}

/// A Pulsar scenario's own part: the cluster (a scenario file's `pulsar`
/// section) and the workload.
pub type PulsarSpec = Typed<PulsarDef>;

/// The planted bugs among `names` that are Pulsar's (others are other
/// systems').
pub(super) fn ablations_of(names: &[String]) -> PulsarAblations {
    let mut a = PulsarAblations::NONE;
    for x in PulsarAblation::chosen(names) {
        a.insert(x);
    }
    a
}
