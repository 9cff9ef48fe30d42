//! State that belongs to the simulated world rather than to any node: the
//! durable store that outlives crashes (our GFS/Chubby), the history being
//! recorded, and the harness's bookkeeping.

use crate::config::SimConfig;
use crate::nodes::client::Client;
use crate::recorder::Recorder;
use crate::workload::Workload;
use futures::channel::mpsc::UnboundedSender;
use madsim::time::Instant;
use percsim_protocol::SessionId;
use percsim_protocol::client::{ObserverBody, ObserverSpec};
use percsim_protocol::row::Row;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The port every node listens on.
const PORT: u16 = 1000;

/// Network addresses of the nodes.
pub(crate) fn oracle_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), PORT)
}
pub(crate) fn wire_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)), PORT)
}
/// The address of the node named `name` (as faults name nodes).
pub(crate) fn addr_of(name: &str) -> Option<SocketAddr> {
    let index = |prefix: &str| name.strip_prefix(prefix)?.parse::<usize>().ok();
    match name {
        "oracle" => Some(oracle_addr()),
        "liveness" => Some(liveness_addr()),
        "master" => Some(master_addr()),
        _ => index("tablet-")
            .map(tablet_server_addr)
            .or_else(|| index("client-").map(client_addr)),
    }
}
pub(crate) fn liveness_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), PORT)
}
pub(crate) fn master_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 3)), PORT)
}
pub(crate) fn tablet_server_addr(i: usize) -> SocketAddr {
    SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(10, 1, (i / 250) as u8, (i % 250 + 1) as u8)),
        PORT,
    )
}
pub(crate) fn client_addr(i: usize) -> SocketAddr {
    SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(10, 2, (i / 250) as u8, (i % 250 + 1) as u8)),
        PORT,
    )
}

/// Tablet boundaries: tablet `t` serves rows in `[splits[t-1], splits[t])`.
pub(crate) struct Tablets {
    splits: Vec<String>,
}

impl Tablets {
    pub(crate) fn new(mut splits: Vec<String>) -> Self {
        splits.sort();
        splits.dedup();
        splits.retain(|s| !s.is_empty());
        Tablets { splits }
    }

    pub(crate) fn count(&self) -> usize {
        self.splits.len() + 1
    }

    pub(crate) fn of(&self, row: &str) -> usize {
        self.splits.partition_point(|s| s.as_str() <= row)
    }

    /// The tablets that hold rows of `[start, end)`.
    pub(crate) fn covering(&self, start: &str, end: &str) -> Range<usize> {
        let first = self.of(start);
        let last = self.splits.partition_point(|s| s.as_str() < end);
        first..(last + 1).max(first + 1)
    }

    /// The intersection of `[start, end)` with tablet `t`.
    pub(crate) fn clip(&self, t: usize, start: &str, end: &str) -> (String, String) {
        let lo = if t == 0 {
            ""
        } else {
            self.splits[t - 1].as_str()
        };
        let hi = self.splits.get(t).map(String::as_str).unwrap_or(end);
        (start.max(lo).to_string(), end.min(hi).to_string())
    }
}

/// What survives any crash: table rows (GFS), the oracle's persisted upper
/// end, and tablet ownership (Chubby).
pub(crate) struct Durable {
    pub rows: BTreeMap<String, Row>,
    pub oracle_max: u64,
    pub tablet_owner: Vec<Option<usize>>,
    pub next_session: u64,
    /// Raw Bigtable cells written outside any transaction (the Figure 8
    /// baseline): (row, column) -> value.
    pub raw: BTreeMap<(String, String), String>,
}

/// Requests to the harness from inside nodes.
pub(crate) enum Control {
    /// Kill a client now (it reached a scheduled crash point).
    KillClient {
        client: usize,
        restart_after_ms: Option<u64>,
    },
    /// Pause a client now (it reached a step armed for a pause), for
    /// `duration_ms` (until something resumes it, if `None`).
    PauseClient {
        client: usize,
        duration_ms: Option<u64>,
    },
}

/// The whole world one run shares.
pub(crate) struct World {
    pub cfg: SimConfig,
    pub durable: Mutex<Durable>,
    pub recorder: Mutex<Recorder>,
    pub tablets: Tablets,
    pub start: Instant,
    pub stopping: AtomicBool,
    pub workload: Arc<dyn Workload>,
    pub control: UnboundedSender<Control>,
    pub incarnations: Mutex<Vec<u32>>,
    /// Liveness sessions: owner client and expiry. Memory of the liveness
    /// service (cleared when it restarts), kept here so faults can expire one.
    pub sessions: Mutex<BTreeMap<SessionId, (usize, Instant)>>,
    /// The scanners' row locks (memory of the liveness node): holder, lease end.
    pub row_locks: Mutex<BTreeMap<String, (u64, Instant)>>,
    /// The workload's observers.
    pub observers: Vec<(ObserverSpec, Arc<dyn ObserverBody<Client>>)>,
    /// Message faults the client transport applies.
    pub net: Mutex<NetFaults>,
    /// The workload's driver finished: the workload phase may end early.
    pub workload_done: AtomicBool,
    /// Clients whose transaction threads are stalled, until when.
    pub stalled: Mutex<BTreeMap<usize, Instant>>,
    /// The network's own node, which carries late and duplicated copies of
    /// messages: once sent, a copy is the network's, and its sender's death
    /// or pause neither recalls nor freezes it. Set once the node exists.
    pub wire: std::sync::OnceLock<(madsim::runtime::NodeHandle, madsim::net::Endpoint)>,
    /// Links cut by partitions, (from, to) by node, with how many partitions
    /// cut each (partitions may overlap).
    pub cut: Mutex<BTreeMap<(madsim::task::NodeId, madsim::task::NodeId), u32>>,
    /// Late and duplicated copies the network still carries: the healed
    /// phase is over only when none is left.
    pub in_flight: std::sync::atomic::AtomicU64,
    /// Which node has which address.
    pub node_ips: Mutex<BTreeMap<IpAddr, madsim::task::NodeId>>,
    /// Ends the run if it stops making progress.
    pub watchdog: crate::watchdog::Watchdog,
}

/// Message faults applied by the client transport.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NetFaults {
    /// Probability of sending a request a second time.
    pub duplicate_rate: f64,
    /// Largest delay of the copy.
    pub duplicate_max_delay_ms: u64,
}

impl World {
    /// Whether a partition cuts the link from node `from` to the node at `to`.
    pub(crate) fn link_cut(&self, from: madsim::task::NodeId, to: SocketAddr) -> bool {
        let cut = self.lock(&self.cut);
        if cut.is_empty() {
            return false;
        }
        let Some(&to) = self.lock(&self.node_ips).get(&to.ip()) else {
            return false;
        };
        cut.contains_key(&(from, to))
    }

    pub(crate) fn now_ns(&self) -> u64 {
        (Instant::now() - self.start).as_nanos() as u64
    }

    pub(crate) fn durable(&self) -> MutexGuard<'_, Durable> {
        self.durable.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn recorder(&self) -> MutexGuard<'_, Recorder> {
        self.recorder.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// A client was killed: its transactions in progress will never finish.
    pub(crate) fn client_died(&self, client: usize) {
        self.recorder().orphan(client as u64);
    }

    pub(crate) fn lock<'a, T>(&self, m: &'a Mutex<T>) -> MutexGuard<'a, T> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn event(&self, kind: &str, fields: serde_json::Value) {
        let now = self.now_ns();
        self.recorder().event(now, kind, fields);
    }
}

#[cfg(test)]
mod tests {
    use super::Tablets;

    #[test]
    fn tablets_partition_rows() {
        let t = Tablets::new(vec!["m".into(), "f".into()]);
        assert_eq!(t.count(), 3);
        assert_eq!((t.of("a"), t.of("f"), t.of("g"), t.of("z")), (0, 1, 1, 2));
        assert_eq!(t.covering("a", "g"), 0..2);
        assert_eq!(t.covering("g", "h"), 1..2);
        assert_eq!(t.covering("", "\u{10ffff}"), 0..3);
        assert_eq!(t.clip(1, "a", "z"), ("f".to_string(), "m".to_string()));
    }
}
