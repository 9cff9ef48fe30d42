//! What a simulated cluster is made of and how it behaves.

use crate::percolator::ids::kinds;
pub use crate::percolator::points::{PointAction, PointFault};
use crate::world::node::NodeName;
use crate::world::{NodeNames, WorldConfig};
use percsim_protocol::percolator::Ablations;
use percsim_protocol::percolator::client::{ClientConfig, PointNode, StepPoint};
use serde::{Deserialize, Serialize};

/// Kill a client at a named step of one of its transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashAt {
    /// The client to kill.
    pub client: usize,
    /// Which of its transactions (1-based, counted over the client's whole
    /// life including restarts).
    pub txn: u64,
    /// The step after which it dies.
    pub step: StepPoint,
    /// Restart the client this long after the crash (never, if `None`).
    #[serde(default)]
    pub restart_after_ms: Option<u64>,
}

/// Freeze a client at a named step of one of its transactions, for a while.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseAt {
    /// The client to freeze.
    pub client: usize,
    /// Which of its transactions (1-based, over the client's whole life).
    pub txn: u64,
    /// The step after which it freezes.
    pub step: StepPoint,
    /// How long it stays frozen.
    pub duration_ms: u64,
}

/// Simulated CPU time: what each request costs a node, and how many cores
/// each kind of node has. Requests queue when every core is busy; "cores
/// used" is busy time over simulated time. Off by default: with the model
/// off, requests cost nothing and nodes never queue. The defaults follow the
/// Percolator paper's Figure 8 discussion: a row read (a Bigtable read of an
/// SSTable block) is dearer than a cell write, and reading several columns
/// of one row costs little more than reading one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CostModel {
    /// Whether requests cost CPU time at all.
    pub enabled: bool,
    /// Cores of each tablet server.
    pub tablet_cores: usize,
    /// Cores of the timestamp oracle.
    pub oracle_cores: usize,
    /// Cores of the liveness service and of the master (each).
    pub service_cores: usize,
    /// Fixed cost of taking in and answering one request at a tablet server.
    pub request_us: u64,
    /// Reading one row (once per row step that reads, per row scanned).
    pub row_read_us: u64,
    /// Each column cell a row step examines, on top of the row read.
    pub cell_read_us: u64,
    /// Each cell a row step writes or erases.
    pub cell_write_us: u64,
    /// One request at the oracle (a batch of timestamps costs one request).
    pub oracle_request_us: u64,
    /// One request at the liveness service or the master.
    pub service_request_us: u64,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            enabled: false,
            tablet_cores: 4,
            oracle_cores: 1,
            service_cores: 1,
            request_us: 40,
            row_read_us: 25,
            cell_read_us: 5,
            cell_write_us: 10,
            oracle_request_us: 5,
            service_request_us: 10,
        }
    }
}

/// Percolator's cluster: a scenario file's `percolator` section (the
/// world's own settings, phases, faults and clocks, are its `world` section).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PercolatorConfig {
    /// Number of tablet servers.
    pub tablet_servers: usize,
    /// Number of tablets (contiguous row ranges), spread over the servers.
    pub tablets: usize,
    /// Number of client (worker) processes.
    pub clients: usize,
    /// Concurrent transaction threads per client; they share one pending
    /// timestamp RPC.
    pub workers_per_client: usize,
    /// Client protocol settings.
    pub client: ClientConfig,
    /// Attempts per row request before the client gives up on it.
    pub rpc_attempts: u32,
    /// Liveness sessions expire after this long without a keep-alive.
    pub session_ttl_ms: u64,
    /// The slack the liveness rules allow on top of a TTL (network delay
    /// and the time to act on what was learnt): a dead owner's lock may
    /// block a reader up to `session_ttl_ms` plus this after the owner
    /// died, and a primary refreshed less than `client.lock_ttl_ms` minus
    /// this before must not be rolled back while its owner lives.
    pub liveness_bound_ms: u64,
    /// The slack the liveness rule on notifications allows on top of a
    /// scanner's interval and one observer run's longest time: once the
    /// healed phase began, a change to an observed cell must be processed
    /// within the three of them (several dirty cells in a scanner's way,
    /// round trips).
    pub notify_bound_ms: u64,
    /// The oracle persists ranges of this many timestamps.
    pub oracle_range: u64,
    /// The master pings tablet servers this often.
    pub heartbeat_ms: u64,
    /// A server missing this many pings in a row is declared dead and its
    /// tablets move.
    pub heartbeat_misses: u32,
    /// Time a moved tablet stays unavailable while it loads on its new server.
    pub tablet_load_ms: u64,
    /// Clients to kill at named protocol steps.
    pub crashes: Vec<CrashAt>,
    /// Clients to freeze at named protocol steps.
    pub pauses: Vec<PauseAt>,
    /// Nodes to kill or freeze the n-th time they reach a named point.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub point_faults: Vec<PointFault>,
    /// Protocol mechanisms switched off (see `percsim_protocol::percolator::ablation`).
    pub ablations: Ablations,
    /// Notify scanners per client (used when the workload has observers).
    pub scanners_per_client: usize,
    /// A scanner that finds its row taken by another scanner jumps to a
    /// new random position (the paper's cure for "bus clumping"); without
    /// it, it follows the other scanner.
    pub scanner_jump: bool,
    /// Simulated CPU costs (off by default).
    pub costs: CostModel,
}

impl Default for PercolatorConfig {
    fn default() -> Self {
        PercolatorConfig {
            tablet_servers: 3,
            tablets: 6,
            clients: 4,
            workers_per_client: 2,
            client: ClientConfig::default(),
            rpc_attempts: 4,
            session_ttl_ms: 1_000,
            liveness_bound_ms: 200,
            notify_bound_ms: 2_000,
            oracle_range: 1_000,
            heartbeat_ms: 100,
            heartbeat_misses: 3,
            tablet_load_ms: 50,
            crashes: Vec::new(),
            pauses: Vec::new(),
            point_faults: Vec::new(),
            ablations: Ablations::NONE,
            scanners_per_client: 2,
            scanner_jump: true,
            costs: CostModel::default(),
        }
    }
}

/// Why a configuration cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cluster setting `{field}`: {problem}")]
pub struct ConfigError {
    /// The offending field.
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
}

impl PercolatorConfig {
    /// Check the configuration, and the world's settings it runs in, for
    /// impossible settings. A problem with the world's settings names its
    /// field as `world.<path>`, one of the cluster's as its field.
    pub fn validate(&self, world: &WorldConfig) -> Result<(), ConfigError> {
        self.check_sizes()?;
        self.check_steps()?;
        self.check_point_faults()?;
        self.check_costs()?;
        let nodes = self.nodes();
        world
            .validate(NodeNames { nodes: &nodes })
            .map_err(|e| ConfigError {
                field: format!("world.{}", e.field),
                problem: e.problem,
            })
    }

    /// Node counts, timeouts and clocks.
    fn check_sizes(&self) -> Result<(), ConfigError> {
        let limits: [(&str, usize, usize); 4] = [
            ("tablet_servers", self.tablet_servers, 200),
            ("tablets", self.tablets, 10_000),
            ("clients", self.clients, 200),
            ("workers_per_client", self.workers_per_client, 1_024),
        ];
        for (field, value, max) in limits {
            if value == 0 {
                return err(field, "must be at least 1");
            }
            if value > max {
                return err(field, &format!("{value} is more than the supported {max}"));
            }
        }
        if self.scanners_per_client > 64 {
            return err("scanners_per_client", "more than the supported 64");
        }
        if self.rpc_attempts == 0 {
            return err("rpc_attempts", "must be at least 1");
        }
        if let Some((field, problem)) = self.client.problem() {
            return err(&format!("client.{field}"), &problem);
        }
        if self.session_ttl_ms == 0 || self.heartbeat_ms == 0 || self.oracle_range == 0 {
            return err(
                "session_ttl_ms/heartbeat_ms/oracle_range",
                "must be at least 1",
            );
        }
        Ok(())
    }

    /// Crashes and pauses at named steps name existing clients.
    fn check_steps(&self) -> Result<(), ConfigError> {
        let steps = self.crashes.iter().map(|c| ("crashes", c.client, c.txn));
        let pauses = self.pauses.iter().map(|p| ("pauses", p.client, p.txn));
        let mut index: std::collections::BTreeMap<&str, usize> = Default::default();
        for (list, client, txn) in steps.chain(pauses) {
            let i = index.entry(list).or_default();
            if client >= self.clients {
                return err(
                    &format!("{list}[{i}].client"),
                    &format!("client {client} does not exist ({} clients)", self.clients),
                );
            }
            if txn == 0 {
                return err(
                    &format!("{list}[{i}].txn"),
                    "transactions are counted from 1",
                );
            }
            *i += 1;
        }
        Ok(())
    }

    /// Point faults name an existing node of the point's kind and count
    /// occurrences from 1.
    fn check_point_faults(&self) -> Result<(), ConfigError> {
        for (i, f) in self.point_faults.iter().enumerate() {
            let (kind, count) = match f.point.node() {
                PointNode::Client => ("clients", self.clients),
                PointNode::TabletServer => ("tablet servers", self.tablet_servers),
                PointNode::Oracle => ("oracles", 1),
            };
            if f.node >= count {
                return err(
                    &format!("point_faults[{i}].node"),
                    &format!(
                        "node {} does not exist: {} is reached by {kind} ({count})",
                        f.node,
                        f.point.name()
                    ),
                );
            }
            if f.nth == 0 {
                return err(
                    &format!("point_faults[{i}].nth"),
                    "occurrences are counted from 1",
                );
            }
        }
        Ok(())
    }

    /// Cores of the cost model.
    fn check_costs(&self) -> Result<(), ConfigError> {
        let c = &self.costs;
        for (field, cores) in [
            ("costs.tablet_cores", c.tablet_cores),
            ("costs.oracle_cores", c.oracle_cores),
            ("costs.service_cores", c.service_cores),
        ] {
            if cores == 0 || cores > 1_024 {
                return err(field, "must be between 1 and 1024");
            }
        }
        Ok(())
    }
}

/// A [`ConfigError`] for `field`.
fn err(field: &str, problem: &str) -> Result<(), ConfigError> {
    Err(ConfigError {
        field: field.to_string(),
        problem: problem.to_string(),
    })
}

impl PercolatorConfig {
    /// The names of the cluster's nodes, as faults name them.
    pub fn node_names(&self) -> Vec<String> {
        self.nodes().iter().map(NodeName::to_string).collect()
    }

    /// The cluster's nodes, in start order.
    pub(crate) fn nodes(&self) -> Vec<NodeName> {
        let mut nodes = vec![
            kinds::ORACLE.single(),
            kinds::LIVENESS.single(),
            kinds::MASTER.single(),
        ];
        nodes.extend((0..self.tablet_servers).map(|i| kinds::TABLET.nth(i)));
        nodes.extend((0..self.clients).map(|i| kinds::CLIENT.nth(i)));
        nodes
    }
}
