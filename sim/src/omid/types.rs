//! The Omid simulator's types that refer to each other: what outlives
//! every incarnation ([`Shared`]) holds the clients' job, which may be a
//! program ([`OmidProgram`]) that takes a client's handle ([`OmidClient`])
//! holding [`Shared`] again; with them the durable records [`Shared`]
//! holds. Their code lives in the files of the nodes that use them.

use super::config::{OmidConfig, OmidWorkload};
use crate::FaultControl;
use crate::world::port::Port;
use crate::world::txn_history::TxnHistory;
use crate::world::{BoxFuture, NodeName, World};
use percsim_protocol::omid::actions::lease::LeaseRecord;
use percsim_protocol::omid::{CtEntry, DataVersion, OmidAblations, OmidPoint};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// What outlives every incarnation: the world, the settings, durable state.
pub(super) struct Shared {
    pub(super) world: Arc<World>,
    pub(super) cfg: OmidConfig,
    pub(super) job: Job,
    pub(super) ablations: OmidAblations,
    /// The tablet servers' durable store: data cells, shadow cells, the
    /// commit table.
    pub(super) store: Mutex<Store>,
    /// The TSO's persisted ceiling (no timestamp at or above it was handed
    /// out) and the epoch of the last takeover.
    pub(super) tso_disk: Mutex<TsoDisk>,
    /// The liveness service's durable lease record.
    pub(super) lease: Mutex<LeaseRecord>,
    /// Each client's durable record.
    pub(super) clients: Vec<Mutex<ClientDisk>>,
    /// How often each named point was reached over the run.
    pub(super) reached: Mutex<BTreeMap<OmidPoint, u64>>,
    /// How often each crash's and each pause's point was reached since
    /// its `after_ms`, by its index in the section's list.
    pub(super) stop_counts: Mutex<StopCounts>,
    /// The lists' elements whose append was reported committed, by row.
    pub(super) appended: Mutex<BTreeMap<String, BTreeSet<String>>>,
    /// Stops a program armed at named points, not reached yet.
    pub(super) armed: Mutex<Vec<Armed>>,
    /// The history's transactions.
    pub(super) txns: Mutex<TxnHistory>,
}

/// How often each stop's point was reached since its `after_ms`.
#[derive(Debug, Default)]
pub(super) struct StopCounts {
    /// For each crash of the section's `crashes`.
    pub(super) crashes: Vec<u64>,
    /// For each pause of the section's `pauses`.
    pub(super) pauses: Vec<u64>,
}

/// What the clients run: a workload's loop, or a program's tasks.
#[derive(Clone)]
pub(super) enum Job {
    /// A campaign workload.
    Workload(OmidWorkload),
    /// A program (a script).
    Program(Arc<dyn OmidProgram>),
}

/// A client's durable record.
#[derive(Debug, Default)]
pub(super) struct ClientDisk {
    /// Transactions begun so far (values it writes are numbered by them).
    pub(super) begun: u64,
    /// Trades begun so far (`omid-tpce` names its orders by them).
    pub(super) trades: u64,
    /// It stopped after the workload phase.
    pub(super) done: bool,
}

/// The durable store.
#[derive(Debug, Default)]
pub(super) struct Store {
    /// Each cell's versions, by (row, column), oldest first.
    pub cells: BTreeMap<(String, String), Vec<DataVersion>>,
    /// The commit table, by start timestamp.
    pub ct: BTreeMap<u64, CtEntry>,
    /// Each tablet server's commit-table fence: the highest TSO epoch
    /// that took over (decisions of lower epochs are refused there).
    pub fences: BTreeMap<usize, u64>,
}

/// The TSO's persisted state: the ceiling of its timestamps and the epoch
/// of the last TSO that took over (a lower epoch may not raise it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TsoDisk {
    /// No timestamp at or above it was handed out.
    pub ceiling: u64,
    /// The epoch of the last takeover.
    pub epoch: u64,
}

/// A program the Omid cluster runs instead of a campaign workload.
pub trait OmidProgram: Send + Sync + 'static {
    /// Client `client.index()`'s task, in one incarnation (a restarted
    /// client runs it again).
    fn client(&self, client: OmidClient) -> BoxFuture<()>;
    /// A task on the harness's node during the workload phase, which may
    /// inject faults and read the store; the phase ends when it finishes.
    fn driver(&self, control: OmidControl) -> Option<BoxFuture<()>>;
    /// After the healed phase: the program's own violations.
    fn final_check(&self) -> Vec<String>;
}

/// The driver's view of an Omid cluster.
pub struct OmidControl {
    pub(super) faults: FaultControl,
    pub(super) shared: Arc<Shared>,
}

/// What happens to a node stopped at a named point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Killed; restarted this many ms later (`None`: at the healed phase).
    Kill {
        /// The restart delay, in simulated ms.
        restart_after_ms: Option<u64>,
    },
    /// Frozen for this long.
    Pause {
        /// How long, in simulated ms.
        pause_ms: u64,
    },
}

/// A stop a program armed: `node` at `point`, for the transaction of
/// `start_ts` only if one is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Armed {
    pub point: OmidPoint,
    pub node: String,
    pub start_ts: Option<u64>,
    pub stop: Stop,
}

/// One incarnation of client `index`.
pub(super) struct Client {
    pub(super) shared: Arc<Shared>,
    pub(super) index: usize,
    pub(super) name: NodeName,
    pub(super) port: Port,
    /// The TSO it takes for the primary (none: ask the liveness service).
    pub(super) primary: Mutex<Option<SocketAddr>>,
}

/// A client's handle: one incarnation of client `index()`.
#[derive(Clone)]
pub struct OmidClient(pub(super) Arc<Client>);

/// What a transaction's client was told at its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OmidOutcome {
    /// Committed (`None`: read-only, never sent to the TSO).
    Committed {
        /// Its commit timestamp.
        commit_ts: Option<u64>,
    },
    /// Aborted, for `reason`.
    Aborted {
        /// Why, as the history records it.
        reason: String,
    },
}
