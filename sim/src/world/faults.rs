//! Fault injection: explicit timed faults and randomised fault classes
//! (each a probability per tick plus a duration range, as in TigerBeetle's
//! simulator). Faults are active only in the workload phase; the healed
//! phase removes them all.

use crate::world::ids::{FaultKind, Role};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How often random fault classes are rolled.
pub const FAULT_TICK_MS: u64 = 100;

/// A fault that starts at a given time of the workload phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimedFault {
    /// When it starts, in simulated ms from the start of the run.
    pub at_ms: u64,
    /// What it is.
    pub fault: Fault,
}

/// One fault. Nodes are named as their system names them (Percolator:
/// `oracle`, `liveness`, `master`, `tablet-N` and `client-N`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// Kill a node; restart it after a while (or at the healed phase).
    Kill {
        /// The node.
        node: String,
        /// Restart after this long; `None` waits for the healed phase.
        #[serde(default)]
        restart_after_ms: Option<u64>,
    },
    /// Restart a killed node now.
    Restart {
        /// The node.
        node: String,
    },
    /// Resume a paused node now.
    Resume {
        /// The node.
        node: String,
    },
    /// Freeze a whole node (its timers run on; its session may expire).
    Pause {
        /// The node.
        node: String,
        /// How long.
        duration_ms: u64,
    },
    /// Stall a node's transaction threads while its liveness session
    /// stays valid: a live but stuck worker whose locks age. It names a
    /// client by index (`client`) or any node whose system lets it stall
    /// by name (`node`), not both.
    Stall {
        /// The client, by index.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client: Option<usize>,
        /// The node, by name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<String>,
        /// How long.
        duration_ms: u64,
    },
    /// Cut the links between two groups of nodes.
    Partition {
        /// One side.
        a: Vec<String>,
        /// The other side.
        b: Vec<String>,
        /// Only messages from `a` to `b` are lost.
        #[serde(default)]
        one_way: bool,
        /// How long.
        duration_ms: u64,
    },
    /// Lose this fraction of all messages.
    PacketLoss {
        /// Probability of losing each message.
        rate: f64,
        /// How long.
        duration_ms: u64,
    },
    /// Message latency between `min_ms` and `max_ms`.
    Latency {
        /// Smallest latency.
        min_ms: u64,
        /// Largest latency.
        max_ms: u64,
        /// How long.
        duration_ms: u64,
    },
    /// Interfere with this fraction of client requests to tablet servers:
    /// half are delivered a second time up to `max_delay_ms` later, half are
    /// held back and delivered only late (a late or duplicated prewrite, say).
    Duplicate {
        /// Probability of duplicating each request.
        rate: f64,
        /// Largest extra delay of the copy.
        max_delay_ms: u64,
        /// How long.
        duration_ms: u64,
    },
    /// Expire a client's liveness session while it is alive.
    ExpireSession {
        /// The client.
        client: usize,
    },
}

/// A randomised fault class: at every tick of [`FAULT_TICK_MS`], start one
/// such fault with `probability`, lasting between the two durations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultClass {
    /// Chance per tick of starting a fault.
    pub probability: f64,
    /// Shortest duration.
    pub min_duration_ms: u64,
    /// Longest duration.
    pub max_duration_ms: u64,
    /// Intensity: the loss or duplication probability, or the latency
    /// spike (messages take up to 2 + rate x 500 ms); ignored otherwise.
    #[serde(default)]
    pub rate: f64,
}

/// Which fault classes are on, and how hard.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RandomFaults {
    /// Kill a random client (restarted after the duration).
    pub kill_client: Option<FaultClass>,
    /// Kill a random data server (its data moves; restarted after). The
    /// name it had before, `kill_tablet_server`, still loads.
    #[serde(alias = "kill_tablet_server")]
    pub kill_data_server: Option<FaultClass>,
    /// Kill the coordinator (restarted after the duration). The name it
    /// had before, `kill_oracle`, still loads.
    #[serde(alias = "kill_oracle")]
    pub kill_coordinator: Option<FaultClass>,
    /// Kill the liveness service (all sessions lost).
    pub kill_liveness: Option<FaultClass>,
    /// Kill the master.
    pub kill_master: Option<FaultClass>,
    /// Pause a random client or tablet server.
    pub pause: Option<FaultClass>,
    /// Stall a random client's workers (its session stays valid).
    pub stall: Option<FaultClass>,
    /// Partition a random node (any of them) from all the others.
    pub partition: Option<FaultClass>,
    /// Message loss at `rate`.
    pub packet_loss: Option<FaultClass>,
    /// Latency spikes: every message takes up to `rate` x 500 ms.
    pub latency: Option<FaultClass>,
    /// Late and duplicated requests at `rate` (see [`Fault::Duplicate`]).
    pub duplicate: Option<FaultClass>,
    /// Expire a random client's session.
    pub session_expiry: Option<FaultClass>,
    /// Pause a node of a role, by role (`pause:<role>`): a node of the
    /// role that is up, at random (the one that holds the role now, for a
    /// role that moves between nodes).
    #[serde(
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "null_as_none"
    )]
    pub pause_of: BTreeMap<Role, FaultClass>,
    /// Stall a node of a role, by role (`stall:<role>`): its transaction
    /// threads hold while its session stays valid. Only a role whose
    /// nodes honour stalls.
    #[serde(
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "null_as_none"
    )]
    pub stall_of: BTreeMap<Role, FaultClass>,
}

/// A map of role-targeted classes; `null` (a class switched off, as a
/// shrink writes it) reads as none.
fn null_as_none<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<Role, FaultClass>, D::Error> {
    Ok(Option::<BTreeMap<Role, FaultClass>>::deserialize(d)?.unwrap_or_default())
}

impl RandomFaults {
    /// The role-targeted classes that are on: (`pause_of` or `stall_of`,
    /// the role, the class), for validation.
    pub fn by_role(&self) -> Vec<(&'static str, Role, &FaultClass)> {
        let pauses = self.pause_of.iter().map(|(r, c)| ("pause_of", *r, c));
        let stalls = self.stall_of.iter().map(|(r, c)| ("stall_of", *r, c));
        pauses.chain(stalls).collect()
    }

    /// The classes that are on, by name, for validation and summaries.
    pub fn classes(&self) -> Vec<(&'static str, &FaultClass)> {
        self.kinds()
            .into_iter()
            .map(|(k, c)| (k.name(), c))
            .collect()
    }

    /// The classes that are on, by kind.
    pub fn kinds(&self) -> Vec<(FaultKind, &FaultClass)> {
        [
            (FaultKind::KillClient, &self.kill_client),
            (FaultKind::KillDataServer, &self.kill_data_server),
            (FaultKind::KillCoordinator, &self.kill_coordinator),
            (FaultKind::KillLiveness, &self.kill_liveness),
            (FaultKind::KillMaster, &self.kill_master),
            (FaultKind::Pause, &self.pause),
            (FaultKind::Stall, &self.stall),
            (FaultKind::Partition, &self.partition),
            (FaultKind::PacketLoss, &self.packet_loss),
            (FaultKind::Latency, &self.latency),
            (FaultKind::Duplicate, &self.duplicate),
            (FaultKind::SessionExpiry, &self.session_expiry),
        ]
        .into_iter()
        .filter_map(|(n, c)| c.as_ref().map(|c| (n, c)))
        .collect()
    }

    /// The class of `kind`, for setting it (None for kinds that are no
    /// random class: clock skew, crash and pause at a step).
    pub fn class_mut(&mut self, kind: FaultKind) -> Option<&mut Option<FaultClass>> {
        Some(match kind {
            FaultKind::KillClient => &mut self.kill_client,
            FaultKind::KillDataServer => &mut self.kill_data_server,
            FaultKind::KillCoordinator => &mut self.kill_coordinator,
            FaultKind::KillLiveness => &mut self.kill_liveness,
            FaultKind::KillMaster => &mut self.kill_master,
            FaultKind::Pause => &mut self.pause,
            FaultKind::Stall => &mut self.stall,
            FaultKind::Partition => &mut self.partition,
            FaultKind::PacketLoss => &mut self.packet_loss,
            FaultKind::Latency => &mut self.latency,
            FaultKind::Duplicate => &mut self.duplicate,
            FaultKind::SessionExpiry => &mut self.session_expiry,
            FaultKind::ClockSkew | FaultKind::CrashAtStep | FaultKind::PauseAtStep => return None,
        })
    }
}

/// The faults of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FaultConfig {
    /// Explicit faults at given times.
    pub schedule: Vec<TimedFault>,
    /// Randomised fault classes.
    pub random: RandomFaults,
}

impl Fault {
    /// The class counted when the fault starts (kills are counted by the
    /// role of the node killed; restarts and resumes are not counted).
    pub(crate) fn kind(&self) -> Option<FaultKind> {
        match self {
            Fault::Pause { .. } => Some(FaultKind::Pause),
            Fault::Stall { .. } => Some(FaultKind::Stall),
            Fault::Partition { .. } => Some(FaultKind::Partition),
            Fault::PacketLoss { .. } => Some(FaultKind::PacketLoss),
            Fault::Latency { .. } => Some(FaultKind::Latency),
            Fault::Duplicate { .. } => Some(FaultKind::Duplicate),
            Fault::ExpireSession { .. } => Some(FaultKind::SessionExpiry),
            Fault::Kill { .. } | Fault::Restart { .. } | Fault::Resume { .. } => None,
        }
    }

    /// Whether the fault undoes another (a restart, a resume) rather than
    /// disturbing the system: only these belong in the healed phase.
    pub(crate) fn heals(&self) -> bool {
        matches!(self, Fault::Restart { .. } | Fault::Resume { .. })
    }

    /// The nodes the fault names.
    pub fn nodes(&self) -> Vec<&str> {
        match self {
            Fault::Kill { node, .. }
            | Fault::Pause { node, .. }
            | Fault::Restart { node }
            | Fault::Resume { node } => vec![node.as_str()],
            Fault::Partition { a, b, .. } => a.iter().chain(b).map(String::as_str).collect(),
            Fault::Stall { node, .. } => node.iter().map(String::as_str).collect(),
            _ => Vec::new(),
        }
    }

    /// The clients the fault names.
    pub(crate) fn client(&self) -> Option<usize> {
        match self {
            Fault::Stall { client, .. } => *client,
            Fault::ExpireSession { client } => Some(*client),
            _ => None,
        }
    }

    /// A rate or duration that makes no sense.
    pub(crate) fn problem(&self) -> Option<String> {
        match self {
            Fault::PacketLoss { rate, .. } | Fault::Duplicate { rate, .. }
                if !(0.0..=1.0).contains(rate) =>
            {
                Some(format!("rate {rate} is not a probability"))
            }
            Fault::Latency { min_ms, max_ms, .. } if min_ms > max_ms || *min_ms == 0 => Some(
                format!("latency range {min_ms}..{max_ms} ms is empty or starts at 0"),
            ),
            Fault::Partition { a, b, .. } if a.is_empty() || b.is_empty() => {
                Some("a partition needs nodes on both sides".to_string())
            }
            Fault::Stall { client, node, .. } if client.is_some() == node.is_some() => {
                Some("a stall names either a client (by index) or a node (by name)".to_string())
            }
            _ => None,
        }
    }
}

impl FaultClass {
    pub(crate) fn problem(&self) -> Option<String> {
        if !(0.0..=1.0).contains(&self.probability) {
            return Some(format!(
                "probability {} is not a probability",
                self.probability
            ));
        }
        if !(0.0..=1.0).contains(&self.rate) {
            return Some(format!("rate {} is not a probability", self.rate));
        }
        if self.min_duration_ms > self.max_duration_ms {
            return Some(format!(
                "min_duration_ms {} is above max_duration_ms {}",
                self.min_duration_ms, self.max_duration_ms
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kill class by the role it kills; the names the classes had before
    /// still load, and save as the new names.
    #[test]
    fn kill_classes_load_by_their_old_names_too() {
        let class = r#"{"probability": 0.1, "min_duration_ms": 1, "max_duration_ms": 2}"#;
        let old = format!(r#"{{"kill_tablet_server": {class}, "kill_oracle": {class}}}"#);
        let new = format!(r#"{{"kill_data_server": {class}, "kill_coordinator": {class}}}"#);
        let a: RandomFaults = serde_json::from_str(&old).unwrap();
        let b: RandomFaults = serde_json::from_str(&new).unwrap();
        assert_eq!(a, b);
        assert!(a.kill_data_server.is_some() && a.kill_coordinator.is_some());
        let saved = serde_json::to_string(&a).unwrap();
        assert!(saved.contains("\"kill_data_server\""), "{saved}");
        assert!(!saved.contains("kill_tablet_server"), "{saved}");
        let names: Vec<&str> = a.classes().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["kill_data_server", "kill_coordinator"]);
        assert!(serde_json::from_str::<RandomFaults>(r#"{"kill_tablets": null}"#).is_err());
    }

    /// A stall names a client by index (as before) or a node by name; the
    /// client form saves as it always did.
    #[test]
    fn a_stall_names_a_client_or_a_node() {
        let by_client = r#"{"kind":"stall","client":1,"duration_ms":50}"#;
        let by_node = r#"{"kind":"stall","node":"client-1","duration_ms":50}"#;
        let a: Fault = serde_json::from_str(by_client).unwrap();
        let b: Fault = serde_json::from_str(by_node).unwrap();
        assert_eq!(serde_json::to_string(&a).unwrap(), by_client);
        assert_eq!(serde_json::to_string(&b).unwrap(), by_node);
        assert_eq!((a.client(), a.nodes()), (Some(1), vec![]));
        assert_eq!((b.client(), b.nodes()), (None, vec!["client-1"]));
        assert_eq!(a.problem(), None);
        let both = r#"{"kind":"stall","client":1,"node":"client-1","duration_ms":50}"#;
        let neither = r#"{"kind":"stall","duration_ms":50}"#;
        for text in [both, neither] {
            let f: Fault = serde_json::from_str(text).unwrap();
            let problem = f.problem().expect("refused");
            assert!(
                problem.contains("either a client (by index) or a node"),
                "{problem}"
            );
        }
    }
}
