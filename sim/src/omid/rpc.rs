//! Omid's nodes, addresses, messages and identities (counters, events).

use crate::Role;
use crate::world::{NodeKind, NodeName};
use madsim::net::rpc::Request;
use percsim_protocol::omid::actions::lease::LeaseGrant;
use percsim_protocol::omid::{CtEntry, DataVersion};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// The port every Omid node binds.
const PORT: u16 = 7_100;

/// The transaction status oracle: it orders transactions and decides
/// commits. It reads no wall clock and has no transaction threads.
pub const TSO_KIND: NodeKind = NodeKind {
    role: Role::Coordinator,
    label: "tso",
    numbered: false,
    reads_clock: false,
    stalls: false,
};

/// The backup TSO: it takes the lease over when the primary's has run
/// out, and from then on is the primary (the first TSO, once back, is the
/// backup).
pub const BACKUP_KIND: NodeKind = NodeKind {
    role: Role::Coordinator,
    label: "tso-backup",
    numbered: false,
    reads_clock: false,
    stalls: false,
};

/// The liveness service (ZooKeeper in Omid): it keeps the TSO's lease.
pub const LIVENESS_KIND: NodeKind = NodeKind {
    role: Role::Liveness,
    label: "liveness",
    numbered: false,
    reads_clock: false,
    stalls: false,
};

/// The tablet servers, `tablet-N`: they hold the data cells, shadow cells
/// and the commit table.
pub const TABLET_KIND: NodeKind = NodeKind {
    role: Role::DataServer,
    label: "tablet",
    numbered: true,
    reads_clock: false,
    stalls: false,
};

/// The clients, `client-N`: they run transactions and honour stalls.
pub const CLIENT_KIND: NodeKind = NodeKind {
    role: Role::Client,
    label: "client",
    numbered: true,
    reads_clock: false,
    stalls: true,
};

/// Every kind of node of an Omid cluster, in start order.
pub const NODE_KINDS: [NodeKind; 5] = [
    TSO_KIND,
    BACKUP_KIND,
    LIVENESS_KIND,
    TABLET_KIND,
    CLIENT_KIND,
];

/// The TSO's address.
pub fn tso_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 11, 0, 1)), PORT)
}

/// The backup TSO's address.
pub fn backup_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 11, 0, 2)), PORT)
}

/// The liveness service's address.
pub fn liveness_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 11, 0, 3)), PORT)
}

/// The address of TSO `name` (the first or the backup).
pub fn tso_addr_of(name: &str) -> SocketAddr {
    if name == BACKUP_KIND.label {
        backup_addr()
    } else {
        tso_addr()
    }
}

/// Numbered node `i`'s address in subnet `net`.
fn numbered(net: u8, i: usize) -> SocketAddr {
    let ip = Ipv4Addr::new(10, net, (i / 250) as u8, (i % 250 + 1) as u8);
    SocketAddr::new(IpAddr::V4(ip), PORT)
}

/// Tablet server `i`'s address.
pub fn tablet_addr(i: usize) -> SocketAddr {
    numbered(12, i)
}

/// Client `i`'s address.
pub fn client_addr(i: usize) -> SocketAddr {
    numbered(13, i)
}

/// How many nodes of each kind a cluster has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    /// Tablet servers.
    pub tablets: usize,
    /// Clients.
    pub clients: usize,
    /// Whether a backup TSO runs.
    pub backup: bool,
}

/// Every node's name: the TSO (and its backup), the liveness service, the
/// tablet servers, the clients.
pub fn node_names(sizes: Sizes) -> Vec<NodeName> {
    let Sizes {
        tablets,
        clients,
        backup,
    } = sizes;
    std::iter::once(TSO_KIND.single())
        .chain(backup.then(|| BACKUP_KIND.single()))
        .chain(std::iter::once(LIVENESS_KIND.single()))
        .chain((0..tablets).map(|i| TABLET_KIND.nth(i)))
        .chain((0..clients).map(|i| CLIENT_KIND.nth(i)))
        .collect()
}

/// Ask the TSO for a start timestamp.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BeginReq;

/// The TSO's answer to a begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BeginReply {
    /// The start timestamp.
    Started(u64),
    /// This TSO does not hold the lease: ask the liveness service.
    NotPrimary,
}

impl Request for BeginReq {
    type Response = BeginReply;
    const ID: u64 = 0x6f6d_6901;
}

/// Ask the TSO to commit the transaction that started at `start_ts`,
/// which wrote `cells` (row, column).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CommitReq {
    /// The transaction's start timestamp.
    pub start_ts: u64,
    /// Its write set.
    pub cells: Vec<(String, String)>,
}

/// The TSO's answer to a commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CommitReply {
    /// Committed at `commit_ts`; `in_commit_table` says whether the
    /// decision is already in the commit table (else the client writes it).
    Committed {
        /// The commit timestamp.
        commit_ts: u64,
        /// The decision is in the commit table.
        in_commit_table: bool,
    },
    /// Aborted, for this reason.
    Aborted {
        /// Why, as a sentence.
        reason: String,
    },
    /// This TSO does not hold the lease (or lost it before the decision was
    /// in the commit table): ask the liveness service and retry there.
    NotPrimary,
}

/// An answer of the TSO that may send the client to the primary.
pub trait TsoAnswer {
    /// Whether the TSO said it is not the primary.
    fn not_primary(&self) -> bool;
}

impl TsoAnswer for BeginReply {
    fn not_primary(&self) -> bool {
        *self == BeginReply::NotPrimary
    }
}

impl TsoAnswer for CommitReply {
    fn not_primary(&self) -> bool {
        *self == CommitReply::NotPrimary
    }
}

/// A call to the liveness service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LeaseReq {
    /// TSO `who` takes or renews the lease.
    Acquire {
        /// The asking TSO's node name.
        who: String,
    },
    /// Which TSO holds the lease now (a client looking for the primary).
    Who,
}

/// The liveness service's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LeaseReply {
    /// The answer to `Acquire`.
    Grant(LeaseGrant),
    /// The answer to `Who`: the holder of an unexpired lease, if any.
    Holder(Option<String>),
}

impl Request for LeaseReq {
    type Response = LeaseReply;
    const ID: u64 = 0x6f6d_6904;
}

impl Request for CommitReq {
    type Response = CommitReply;
    const ID: u64 = 0x6f6d_6902;
}

/// One step of a tablet server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum StoreOp {
    /// Write a data cell at the writer's start timestamp.
    Write {
        /// The row.
        row: String,
        /// The column.
        col: String,
        /// The writer's start timestamp.
        start_ts: u64,
        /// The value (`None`: a tombstone).
        value: Option<String>,
    },
    /// Remove an aborted transaction's data cell.
    Remove {
        /// The row.
        row: String,
        /// The column.
        col: String,
        /// The writer's start timestamp.
        start_ts: u64,
    },
    /// Write a shadow cell.
    Shadow {
        /// The row.
        row: String,
        /// The column.
        col: String,
        /// The writer's start timestamp.
        start_ts: u64,
        /// Its commit timestamp.
        commit_ts: u64,
    },
    /// Read a cell's versions written below `below_ts`.
    Read {
        /// The row.
        row: String,
        /// The column.
        col: String,
        /// The reader's start timestamp.
        below_ts: u64,
    },
    /// Look a transaction up in the commit table.
    CtGet {
        /// Its start timestamp.
        start_ts: u64,
    },
    /// Put an entry in the commit table if it has none for the transaction.
    CtPut {
        /// Its start timestamp.
        start_ts: u64,
        /// The entry.
        entry: CtEntry,
        /// The deciding TSO's epoch (none for a reader's invalidation or a
        /// client's own write): refused below the tablet's fence.
        epoch: Option<u64>,
    },
    /// Raise this tablet's commit-table fence to `epoch` (a TSO taking
    /// over): decisions of lower epochs are refused from then on.
    CtFence {
        /// The new primary's epoch.
        epoch: u64,
    },
    /// Delete a transaction's commit-table entry.
    CtDelete {
        /// Its start timestamp.
        start_ts: u64,
    },
}

impl StoreOp {
    /// The call's name, as intercepts match it.
    pub fn call(&self) -> &'static str {
        match self {
            StoreOp::Write { .. } => "write",
            StoreOp::Remove { .. } => "remove",
            StoreOp::Shadow { .. } => "shadow",
            StoreOp::Read { .. } => "read",
            StoreOp::CtGet { .. } => "ct_get",
            StoreOp::CtPut { .. } => "ct_put",
            StoreOp::CtDelete { .. } => "ct_delete",
            StoreOp::CtFence { .. } => "ct_fence",
        }
    }

    /// The start timestamp of the transaction it is about (a read's:
    /// the reader's); none for a fence.
    pub fn start_ts(&self) -> Option<u64> {
        match self {
            StoreOp::Write { start_ts, .. }
            | StoreOp::Remove { start_ts, .. }
            | StoreOp::Shadow { start_ts, .. }
            | StoreOp::CtGet { start_ts }
            | StoreOp::CtPut { start_ts, .. }
            | StoreOp::CtDelete { start_ts } => Some(*start_ts),
            StoreOp::Read { below_ts, .. } => Some(*below_ts),
            StoreOp::CtFence { .. } => None,
        }
    }

    /// Whether it changes the store.
    pub fn writes(&self) -> bool {
        !matches!(self, StoreOp::Read { .. } | StoreOp::CtGet { .. })
    }
}

/// A tablet server's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum StoreReply {
    /// Done.
    Done,
    /// A cell's versions, newest first.
    Versions(Vec<DataVersion>),
    /// A commit-table entry (after a put: the one in effect).
    Entry(Option<CtEntry>),
    /// A commit-table put refused: its epoch is below the tablet's fence.
    Fenced,
}

impl Request for StoreOp {
    type Response = StoreReply;
    const ID: u64 = 0x6f6d_6903;
}

crate::identities! {
    /// Omid's counters.
    pub enum OmidCounter {
        /// A reader consulted the commit table about a version without a shadow cell.
        CtLookup => ("omid.ct_lookup", "a reader consulted the commit table about a version without a shadow cell"),
        /// A reader invalidated an undecided transaction.
        Invalidated => ("omid.invalidated", "a reader invalidated an undecided transaction in the commit table"),
        /// The TSO aborted a transaction that started below its low watermark.
        BelowLowWatermark => ("omid.below_low_watermark", "the TSO aborted a transaction that started below its low watermark"),
        /// The TSO evicted an entry of its conflict map.
        Evicted => ("omid.evicted", "the TSO's conflict map evicted an entry and raised the low watermark"),
        /// A commit found the commit table invalidated.
        CommitInvalidated => ("omid.commit_invalidated", "a commit found its transaction invalidated in the commit table"),
        /// A call went unanswered and was sent again.
        CallRetried => ("omid.call_retried", "a call went unanswered and was sent again"),
        /// A TSO took the lease over in a new epoch.
        Takeover => ("omid.takeover", "a TSO took the lease in a new epoch and fenced the commit table"),
        /// A TSO found it had lost its lease and stopped serving.
        SteppedDown => ("omid.stepped_down", "a TSO found its lease gone (or its epoch fenced) and stopped serving"),
        /// A client was sent to look for the primary TSO.
        Redirected => ("omid.redirected", "a client's TSO call went unanswered or was refused, and it looked up the primary"),
        /// A deposed TSO's decision was refused by the commit table's fence.
        FencedDecision => ("omid.fenced_decision", "a deposed TSO's commit decision was refused by the commit table's fence"),
    }
}

crate::identities! {
    /// The kinds of event Omid records.
    pub enum OmidEvent {
        /// A node stopped at a named crash point and is killed.
        CrashAtPoint => ("omid_crash_at_point", "a node stopped at a named crash point"),
        /// A node froze at a named point.
        PauseAtPoint => ("omid_pause_at_point", "a node froze at a named point"),
        /// A TSO took the lease over.
        Takeover => ("omid_takeover", "a TSO took the lease over in a new epoch"),
        /// A reader left a transaction invalid in the commit table.
        Invalidated => ("omid_invalidated", "a reader invalidated an undecided transaction: its writes are void and a late commit of it fails"),
    }
}
