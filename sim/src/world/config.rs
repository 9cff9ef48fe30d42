//! The world's own settings (a scenario file's `world` section) and how
//! they are checked against the nodes a system runs.

use crate::world::clock::ClockEntry;
use crate::world::faults::{Fault, FaultConfig};
use crate::world::ids::Role;
use crate::world::node::NodeName;
use crate::world::schedule::Schedule;
use serde::{Deserialize, Serialize};

/// The world's own settings: a scenario file's `world` section. They are
/// the same for every system: the phases, the faults, the clocks and how
/// long one message may take to be answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorldConfig {
    /// Length of the workload phase in simulated ms (faults active).
    pub run_ms: u64,
    /// Bound on the healed phase in which the system must settle.
    pub quiesce_ms: u64,
    /// Timeout of one RPC attempt (also of a late copy's delivery).
    pub rpc_timeout_ms: u64,
    /// Skewed clocks: each entry names its node, or (the list form) is
    /// the clock of the client at its position; a node no entry gives a
    /// clock has a perfect one.
    pub clocks: Vec<ClockEntry>,
    /// Timed and random faults of the workload phase.
    pub faults: FaultConfig,
    /// An exploration's schedule: which of the world's choices differ from
    /// the seed's (see [`crate::world::explore`]). Absent in ordinary runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explore: Option<Schedule>,
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            run_ms: 5_000,
            quiesce_ms: 60_000,
            rpc_timeout_ms: 100,
            clocks: Vec::new(),
            faults: FaultConfig::default(),
            explore: None,
        }
    }
}

/// The longest phase a run may have: one simulated hour.
pub const MAX_PHASE_MS: u64 = 3_600_000;

/// A world setting that cannot run: the field (a path inside the `world`
/// section) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("world.{field}: {problem}")]
pub struct WorldError {
    /// The offending field, as a path inside the `world` section.
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
}

/// The nodes a system will run, as the world's settings must name them.
#[derive(Debug, Clone, Copy)]
pub struct NodeNames<'a> {
    /// Every node, in start order (clients are numbered from 0; timed
    /// faults and the list form of clocks name clients by index).
    pub nodes: &'a [NodeName],
}

impl NodeNames<'_> {
    /// The node named `name`, if the system runs it.
    fn find(&self, name: &str) -> Option<NodeName> {
        self.nodes.iter().copied().find(|n| n.to_string() == name)
    }

    /// Client `index`, if the system runs it.
    fn client(&self, index: usize) -> Option<NodeName> {
        self.nodes.iter().copied().find(|n| n.is_client(index))
    }

    /// How many clients.
    fn clients(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.role() == Role::Client)
            .count()
    }

    /// The names of the nodes that pass `test`, for messages.
    fn listed(&self, test: impl Fn(&NodeName) -> bool) -> String {
        let names: Vec<String> = self
            .nodes
            .iter()
            .filter(|n| test(n))
            .map(|n| n.to_string())
            .collect();
        match names.is_empty() {
            true => "none of this system's nodes does".to_string(),
            false => format!("nodes that do: {}", names.join(", ")),
        }
    }

    /// The roles the nodes play, for messages: `roles: client, data_server`.
    fn roles(&self) -> String {
        let mut roles: Vec<Role> = self.nodes.iter().map(|n| n.role()).collect();
        roles.sort();
        roles.dedup();
        let names: Vec<&str> = roles.iter().map(|r| r.name()).collect();
        format!("roles: {}", names.join(", "))
    }

    /// Why `name` is no node of the system.
    fn unknown(&self, name: &str) -> String {
        let names: Vec<String> = self.nodes.iter().map(|n| n.to_string()).collect();
        format!("no node named {name:?} (nodes: {})", names.join(", "))
    }
}

/// A [`WorldError`] for `field`.
fn refuse(field: &str, problem: String) -> WorldError {
    WorldError {
        field: field.to_string(),
        problem,
    }
}

impl WorldConfig {
    /// Check the settings against the nodes the system runs: phases of at
    /// most an hour, a positive RPC timeout, clocks only for nodes that
    /// read one, timed faults that name existing nodes and clients with
    /// sensible values, random classes with sensible probabilities and
    /// durations.
    pub fn validate(&self, nodes: NodeNames<'_>) -> Result<(), WorldError> {
        if self.rpc_timeout_ms == 0 {
            return Err(refuse("rpc_timeout_ms", "must be at least 1".into()));
        }
        if self.run_ms > MAX_PHASE_MS || self.quiesce_ms > MAX_PHASE_MS {
            let problem = "more than one simulated hour".into();
            return Err(refuse("run_ms/quiesce_ms", problem));
        }
        self.check_clocks(nodes)?;
        if let Some(problem) = self.explore.as_ref().and_then(Schedule::problem) {
            return Err(refuse("explore", problem));
        }
        self.check_faults(nodes)
    }

    /// Each clock entry names a node that reads a wall clock (the list
    /// form: a client that exists), and no node has two.
    ///
    /// The list form loads as it always did, whether or not the system's
    /// clients read a clock: Pulsar's campaign draws such skews for
    /// clients that run on true time.
    fn check_clocks(&self, nodes: NodeNames<'_>) -> Result<(), WorldError> {
        let mut owners: Vec<NodeName> = Vec::new();
        for (i, c) in self.clocks.iter().enumerate() {
            let field = format!("clocks[{i}]");
            let node = match &c.node {
                None => nodes
                    .client(i)
                    .ok_or_else(|| refuse("clocks", "more clock entries than clients".into()))?,
                Some(name) => {
                    let node = nodes
                        .find(name)
                        .ok_or_else(|| refuse(&field, nodes.unknown(name)))?;
                    if !node.kind().reads_clock {
                        let which = nodes.listed(|n| n.kind().reads_clock);
                        let problem = format!("{node} does not read a wall clock ({which})");
                        return Err(refuse(&field, problem));
                    }
                    node
                }
            };
            if let Some(j) = owners.iter().position(|o| *o == node) {
                let problem = format!("{node} already has a clock (clocks[{j}])");
                return Err(refuse(&field, problem));
            }
            owners.push(node);
        }
        Ok(())
    }

    fn check_faults(&self, nodes: NodeNames<'_>) -> Result<(), WorldError> {
        for (i, t) in self.faults.schedule.iter().enumerate() {
            let field = format!("faults.schedule[{i}]");
            if let Some(problem) = fault_problem(&t.fault, nodes) {
                return Err(WorldError { field, problem });
            }
        }
        for (name, class) in self.faults.random.classes() {
            if let Some(problem) = class.problem() {
                return Err(WorldError {
                    field: format!("faults.random.{name}"),
                    problem,
                });
            }
        }
        for (map, role, class) in self.faults.random.by_role() {
            let field = format!("faults.random.{map}.{role}");
            let stall = map == "stall_of";
            if let Some(problem) = class.problem() {
                return Err(refuse(&field, problem));
            }
            if !nodes.nodes.iter().any(|n| n.role() == role) {
                let problem = format!("no node plays role {role} ({})", nodes.roles());
                return Err(refuse(&field, problem));
            }
            if stall
                && !nodes
                    .nodes
                    .iter()
                    .any(|n| n.role() == role && n.kind().stalls)
            {
                let which = nodes.listed(|n| n.kind().stalls);
                let problem = format!("no node of role {role} stalls ({which})");
                return Err(refuse(&field, problem));
            }
        }
        Ok(())
    }
}

/// What is wrong with timed fault `fault` on `nodes`, if anything: a node
/// or client that does not exist, a stall of a node that does not stall,
/// a value that makes no sense.
fn fault_problem(fault: &Fault, nodes: NodeNames<'_>) -> Option<String> {
    if let Some(n) = fault.nodes().into_iter().find(|n| nodes.find(n).is_none()) {
        return Some(nodes.unknown(n));
    }
    if let Some(c) = fault.client().filter(|c| *c >= nodes.clients()) {
        return Some(format!(
            "client {c} does not exist ({} clients)",
            nodes.clients()
        ));
    }
    if let Some(problem) = fault.problem() {
        return Some(problem);
    }
    let Fault::Stall { client, node, .. } = fault else {
        return None;
    };
    let target = match (client, node) {
        (Some(c), _) => nodes.client(*c),
        (None, Some(n)) => nodes.find(n),
        (None, None) => None,
    };
    let target = target.filter(|t| !t.kind().stalls)?;
    let which = nodes.listed(|n| n.kind().stalls);
    Some(format!("{target} does not stall ({which})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::faults::TimedFault;
    use crate::world::node::NodeKind;

    /// A kind of numbered node of `role`; clients read a clock and stall.
    fn kind(role: Role, label: &'static str) -> NodeKind {
        let client = role == Role::Client;
        NodeKind {
            role,
            label,
            numbered: true,
            reads_clock: client,
            stalls: client,
        }
    }

    /// Two clients and two tablet servers.
    fn nodes() -> Vec<NodeName> {
        let (client, tablet) = (
            kind(Role::Client, "client"),
            kind(Role::DataServer, "tablet"),
        );
        vec![tablet.nth(0), tablet.nth(1), client.nth(0), client.nth(1)]
    }

    /// The error of `cfg` on [`nodes`], as a scenario shows it.
    fn problem(cfg: &WorldConfig) -> Option<String> {
        let nodes = nodes();
        let e = cfg.validate(NodeNames { nodes: &nodes }).err()?;
        Some(format!("world.{}: {}", e.field, e.problem))
    }

    /// A world with `clocks`, given as JSON.
    fn clocks(json: &str) -> WorldConfig {
        WorldConfig {
            clocks: serde_json::from_str(json).expect("clock entries"),
            ..WorldConfig::default()
        }
    }

    #[test]
    fn a_clock_must_be_of_a_node_that_reads_one() {
        let ok = r#"[{"offset_ms": 1, "drift_ppm": 0}, {"node": "client-1", "offset_ms": 2, "drift_ppm": 0}]"#;
        assert_eq!(problem(&clocks(ok)), None);
        let cases = [
            (
                r#"[{"node": "tablet-1", "offset_ms": 5, "drift_ppm": 0}]"#,
                "world.clocks[0]: tablet-1 does not read a wall clock (nodes that do: client-0, client-1)",
            ),
            (
                r#"[{"offset_ms": 1, "drift_ppm": 0}, {"node": "client-7", "offset_ms": 5, "drift_ppm": 0}]"#,
                "world.clocks[1]: no node named \"client-7\" (nodes: tablet-0, tablet-1, client-0, client-1)",
            ),
            (
                r#"[{"offset_ms": 1, "drift_ppm": 0}, {"node": "client-0", "offset_ms": 5, "drift_ppm": 0}]"#,
                "world.clocks[1]: client-0 already has a clock (clocks[0])",
            ),
            (
                r#"[{"offset_ms": 1, "drift_ppm": 0}, {"offset_ms": 1, "drift_ppm": 0}, {"offset_ms": 1, "drift_ppm": 0}]"#,
                "world.clocks: more clock entries than clients",
            ),
        ];
        for (json, want) in cases {
            assert_eq!(problem(&clocks(json)).as_deref(), Some(want), "{json}");
        }
    }

    #[test]
    fn a_stall_must_name_a_node_that_stalls() {
        let stall = |client: Option<usize>, node: Option<&str>| WorldConfig {
            faults: FaultConfig {
                schedule: vec![TimedFault {
                    at_ms: 10,
                    fault: Fault::Stall {
                        client,
                        node: node.map(str::to_string),
                        duration_ms: 100,
                    },
                }],
                ..FaultConfig::default()
            },
            ..WorldConfig::default()
        };
        assert_eq!(problem(&stall(Some(1), None)), None);
        assert_eq!(problem(&stall(None, Some("client-1"))), None);
        let cases = [
            (
                stall(None, Some("tablet-0")),
                "world.faults.schedule[0]: tablet-0 does not stall (nodes that do: client-0, client-1)",
            ),
            (
                stall(None, Some("tablet-9")),
                "world.faults.schedule[0]: no node named \"tablet-9\" (nodes: tablet-0, tablet-1, client-0, client-1)",
            ),
            (
                stall(Some(2), None),
                "world.faults.schedule[0]: client 2 does not exist (2 clients)",
            ),
            (
                stall(Some(0), Some("client-0")),
                "world.faults.schedule[0]: a stall names either a client (by index) or a node (by name)",
            ),
        ];
        for (cfg, want) in cases {
            assert_eq!(problem(&cfg).as_deref(), Some(want));
        }
    }

    #[test]
    fn a_class_by_role_must_name_a_role_the_nodes_play_and_can_honour() {
        let of = |json: &str| WorldConfig {
            faults: FaultConfig {
                random: serde_json::from_str(json).expect("random classes"),
                ..FaultConfig::default()
            },
            ..WorldConfig::default()
        };
        let class = r#"{"probability": 0.1, "min_duration_ms": 1, "max_duration_ms": 2}"#;
        let ok = format!(
            r#"{{"pause_of": {{"data_server": {class}}}, "stall_of": {{"client": {class}}}}}"#
        );
        assert_eq!(problem(&of(&ok)), None);
        let bad = r#"{"probability": 2.0, "min_duration_ms": 1, "max_duration_ms": 2}"#;
        let cases = [
            (
                format!(r#"{{"pause_of": {{"master": {class}}}}}"#),
                "world.faults.random.pause_of.master: no node plays role master (roles: client, data_server)",
            ),
            (
                format!(r#"{{"stall_of": {{"data_server": {class}}}}}"#),
                "world.faults.random.stall_of.data_server: no node of role data_server stalls (nodes that do: client-0, client-1)",
            ),
            (
                format!(r#"{{"pause_of": {{"client": {bad}}}}}"#),
                "world.faults.random.pause_of.client: probability 2 is not a probability",
            ),
        ];
        for (json, want) in cases {
            assert_eq!(problem(&of(&json)).as_deref(), Some(want), "{json}");
        }
        // Switched off as a shrink writes it, a map reads as none.
        let off: crate::world::faults::RandomFaults =
            serde_json::from_str(r#"{"pause_of": null}"#).expect("null reads");
        assert!(off.pause_of.is_empty());
        let e = serde_json::from_str::<crate::world::faults::RandomFaults>(&format!(
            r#"{{"pause_of": {{"tablet_server": {class}}}}}"#
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("unknown role \"tablet_server\""), "{e}");
    }
}
