//! What a simulated Pulsar cluster is made of: brokers, topics' partition
//! counts, the coordinator's log latency and timeout scan, the brokers'
//! metadata sessions (heartbeat and timeout), the client
//! settings, the planted bugs, the named crash points of its servers and
//! the load manager's unloads.

use crate::pulsar::ids::kinds;
use crate::world::node::NodeName;
use percsim_protocol::pulsar::PulsarAblations;
use percsim_protocol::pulsar::client::PulsarClientConfig;
use percsim_protocol::pulsar::points::ServerPoint;
use serde::{Deserialize, Serialize};

/// Kill a server (the coordinator's broker or a broker) the `nth` time it
/// reaches a named point, or freeze it there (`pause_ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerCrashAt {
    /// The point.
    pub point: ServerPoint,
    /// Which time the point is reached (1-based, over the whole run).
    pub nth: u64,
    /// Restart the server this long after the crash.
    #[serde(default = "default_restart_ms")]
    pub restart_after_ms: u64,
    /// Freeze the server for this long instead of killing it (a stale
    /// owner that wakes up after its ownership moved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_ms: Option<u64>,
}

fn default_restart_ms() -> u64 {
    200
}

/// What the load manager unloads: the coordinator, or one partition index
/// of every topic (with its subscriptions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnloadTarget {
    /// The transaction coordinator (`"coordinator"`).
    Coordinator,
    /// Partition `N` of every topic (`{"partition": N}`).
    Partition(u32),
}

/// Unload a resource from its owner at a time of the workload phase, as
/// Pulsar's load manager sheds a bundle from a busy broker: no process
/// dies, the resource is placed again at the metadata service's next scan
/// (maybe on the same broker), and its new owner fences the logs and
/// recovers the transaction buffer and pending acks from them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnloadAt {
    /// When, in simulated ms from the start of the run.
    pub at_ms: u64,
    /// What is unloaded.
    pub target: UnloadTarget,
}

/// The transaction buffers' snapshots (`"buffer"` in a scenario's
/// `"pulsar"` section).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BufferConfig {
    /// A partition's transaction buffer writes a snapshot of its aborted
    /// index and max-read-position after learning this many entries since
    /// its latest snapshot (0: never; recovery then replays the whole log).
    /// Default 64; Pulsar's own trigger is 1,000 transactions or 5 s
    /// (`transactionBufferSnapshotMaxTransactionCount`,
    /// `transactionBufferSnapshotMinTimeInMillis`).
    pub snapshot_every: u64,
}

/// The most entries a snapshot may wait for.
pub const MAX_SNAPSHOT_EVERY: u64 = 1_000_000;
/// The most a recovery may spend per entry it replays, in microseconds.
pub const MAX_RECOVERY_US_PER_ENTRY: u64 = 100_000;

impl Default for BufferConfig {
    fn default() -> Self {
        BufferConfig { snapshot_every: 64 }
    }
}

/// The Pulsar cluster of a scenario (`"pulsar"` in a scenario file). The
/// world's own settings (phases, faults, clocks, RPC timeout) are the
/// scenario's `world` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PulsarConfig {
    /// Number of client processes (producers, consumers, processors).
    pub clients: usize,
    /// Number of brokers. Which broker serves the coordinator and each
    /// partition is the metadata service's choice (see `docs/pulsar.md`).
    pub brokers: usize,
    /// Partitions of each topic.
    pub partitions: u32,
    /// Simulated latency of one append to the coordinator's log.
    pub log_write_ms: u64,
    /// How often the coordinator looks for transactions past their timeout.
    pub timeout_scan_ms: u64,
    /// How often a broker sends its metadata session a heartbeat.
    pub heartbeat_ms: u64,
    /// A broker session not heard from for this long expires, and what it
    /// owned moves to a live broker (ZooKeeper's session timeout).
    pub session_timeout_ms: u64,
    /// Client-side settings (transaction timeout, retries).
    pub client: PulsarClientConfig,
    /// Whether brokers deduplicate producers' messages by producer and
    /// sequence id (Pulsar's `brokerDeduplicationEnabled`; on here, off in
    /// Pulsar's default configuration): off, a resent or duplicated send
    /// is appended again.
    pub deduplication: bool,
    /// The transaction buffers' snapshots.
    pub buffer: BufferConfig,
    /// Simulated time a recovery (a partition's transaction buffer and
    /// pending acks, or the coordinator's log) spends per entry it
    /// replays, in microseconds (default 50); requests that arrive
    /// meanwhile are refused as not ready or queued (see `docs/pulsar.md`).
    pub recovery_us_per_entry: u64,
    /// Protocol mechanisms switched off (the planted bugs).
    pub ablations: PulsarAblations,
    /// Servers to kill at named points.
    pub crashes: Vec<ServerCrashAt>,
    /// Resources the load manager unloads, by time (none by default).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unloads: Vec<UnloadAt>,
}

impl Default for PulsarConfig {
    fn default() -> Self {
        PulsarConfig {
            clients: 4,
            brokers: 3,
            partitions: 3,
            log_write_ms: 2,
            timeout_scan_ms: 50,
            heartbeat_ms: 100,
            session_timeout_ms: 400,
            // One source of the client's defaults, so a partial `client`
            // object and a missing one agree.
            client: PulsarClientConfig::default(),
            deduplication: true,
            buffer: BufferConfig::default(),
            recovery_us_per_entry: 50,
            ablations: PulsarAblations::NONE,
            crashes: Vec::new(),
            unloads: Vec::new(),
        }
    }
}

impl PulsarConfig {
    /// The names of the cluster's nodes, as faults name them: `metadata`,
    /// `broker-N`, `client-N`.
    pub fn node_names(&self) -> Vec<String> {
        self.nodes().iter().map(NodeName::to_string).collect()
    }

    /// The cluster's nodes, in start order.
    pub(crate) fn nodes(&self) -> Vec<NodeName> {
        let mut nodes = vec![kinds::METADATA.single()];
        nodes.extend((0..self.brokers).map(|i| kinds::BROKER.nth(i)));
        nodes.extend((0..self.clients).map(|i| kinds::CLIENT.nth(i)));
        nodes
    }

    /// Check for impossible settings; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=200).contains(&self.clients) {
            return Err(format!(
                "pulsar.clients: {} is outside 1..=200",
                self.clients
            ));
        }
        if !(1..=50).contains(&self.brokers) {
            return Err(format!(
                "pulsar.brokers: {} is outside 1..=50",
                self.brokers
            ));
        }
        if !(1..=64).contains(&self.partitions) {
            return Err(format!(
                "pulsar.partitions: {} is outside 1..=64",
                self.partitions
            ));
        }
        if self.timeout_scan_ms == 0 {
            return Err("pulsar.timeout_scan_ms: must be at least 1".into());
        }
        if self.heartbeat_ms == 0 {
            return Err("pulsar.heartbeat_ms: must be at least 1".into());
        }
        if self.session_timeout_ms <= self.heartbeat_ms {
            return Err(format!(
                "pulsar.session_timeout_ms: {} must be longer than heartbeat_ms ({})",
                self.session_timeout_ms, self.heartbeat_ms
            ));
        }
        if self.client.txn_timeout_ms == 0 {
            return Err("pulsar.client.txn_timeout_ms: must be at least 1".into());
        }
        if self.buffer.snapshot_every > MAX_SNAPSHOT_EVERY {
            return Err(format!(
                "pulsar.buffer.snapshot_every: {} is outside 0..={MAX_SNAPSHOT_EVERY} (entries between snapshots; 0 turns snapshots off)",
                self.buffer.snapshot_every
            ));
        }
        if self.recovery_us_per_entry > MAX_RECOVERY_US_PER_ENTRY {
            return Err(format!(
                "pulsar.recovery_us_per_entry: {} is outside 0..={MAX_RECOVERY_US_PER_ENTRY} (microseconds per replayed entry)",
                self.recovery_us_per_entry
            ));
        }
        if let Some(c) = self.crashes.iter().find(|c| c.nth == 0) {
            return Err(format!(
                "pulsar.crashes: nth of {} must be at least 1",
                c.point.name()
            ));
        }
        if let Some((i, c)) = self
            .crashes
            .iter()
            .enumerate()
            .find(|(_, c)| c.point.on_client())
        {
            return Err(format!(
                "pulsar.crashes[{i}]: {} is a client's point, which a crashes entry never reaches (it stops brokers); stop a client there with a script's stop_at on client-N",
                c.point.name()
            ));
        }
        if let Some(u) = self
            .unloads
            .iter()
            .find(|u| matches!(u.target, UnloadTarget::Partition(p) if p >= self.partitions))
        {
            return Err(format!(
                "pulsar.unloads: partition {:?} at {} ms is not one of the {} partitions (0..{})",
                u.target, u.at_ms, self.partitions, self.partitions
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{PulsarConfig, UnloadAt, UnloadTarget};

    /// An unload is written as the load manager's plan reads: a time and
    /// a target; a partition the cluster does not have is refused by name.
    #[test]
    fn unloads_parse_and_a_partition_out_of_range_is_refused() {
        let c = parse(
            r#"{"partitions": 2, "unloads": [{"at_ms": 300, "target": {"partition": 1}},
                                             {"at_ms": 500, "target": "coordinator"}]}"#,
        );
        assert_eq!(
            c.unloads,
            vec![
                UnloadAt {
                    at_ms: 300,
                    target: UnloadTarget::Partition(1)
                },
                UnloadAt {
                    at_ms: 500,
                    target: UnloadTarget::Coordinator
                }
            ]
        );
        assert_eq!(c.validate(), Ok(()));
        let bad =
            parse(r#"{"partitions": 2, "unloads": [{"at_ms": 300, "target": {"partition": 2}}]}"#);
        let e = bad.validate().unwrap_err();
        assert!(
            e.contains("pulsar.unloads") && e.contains("partition"),
            "{e}"
        );
        let none = serde_json::to_value(PulsarConfig::default()).expect("serializes");
        assert!(none.get("unloads").is_none(), "{none}");
    }

    /// A `crashes` entry at the client's `after_end_sent` would never fire
    /// (only a script arms that point on a client): it is refused at load,
    /// naming the entry; a broker's point beside it is accepted.
    #[test]
    fn a_crash_at_a_client_point_is_refused_naming_the_entry() {
        let broker = parse(r#"{"crashes": [{"point": "after_marker_logged", "nth": 1}]}"#);
        assert_eq!(broker.validate(), Ok(()));
        let client = parse(
            r#"{"crashes": [{"point": "after_marker_logged", "nth": 1},
                            {"point": "after_end_sent", "nth": 2}]}"#,
        );
        let e = client.validate().unwrap_err();
        assert!(
            e.starts_with("pulsar.crashes[1]: after_end_sent") && e.contains("stop_at"),
            "{e}"
        );
    }

    /// The snapshot interval and the recovery's cost take their defaults,
    /// accept their bounds and refuse past them by name; an unknown field
    /// of `buffer` is refused.
    #[test]
    fn snapshot_and_recovery_knobs_are_bounded_by_name() {
        let d = parse("{}");
        assert_eq!((d.buffer.snapshot_every, d.recovery_us_per_entry), (64, 50));
        let off = parse(r#"{"buffer": {"snapshot_every": 0}, "recovery_us_per_entry": 0}"#);
        assert_eq!(off.validate(), Ok(()));
        let e = parse(r#"{"buffer": {"snapshot_every": 1000001}}"#)
            .validate()
            .unwrap_err();
        assert!(
            e.starts_with("pulsar.buffer.snapshot_every: 1000001"),
            "{e}"
        );
        let e = parse(r#"{"recovery_us_per_entry": 100001}"#)
            .validate()
            .unwrap_err();
        assert!(e.starts_with("pulsar.recovery_us_per_entry: 100001"), "{e}");
        let typo = serde_json::from_str::<PulsarConfig>(r#"{"buffer": {"snapshot_evry": 3}}"#);
        assert!(typo.unwrap_err().to_string().contains("snapshot_evry"));
    }

    fn parse(text: &str) -> PulsarConfig {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    /// A `client` object that names one field keeps the cluster's default
    /// of every other one, whichever field it names.
    #[test]
    fn a_partial_client_object_keeps_the_default_of_every_missing_field() {
        let default = PulsarConfig::default().client;
        assert_eq!(default.txn_timeout_ms, 1_000);
        assert_eq!(parse("{}").client, default);
        assert_eq!(parse(r#"{"client": {}}"#).client, default);
        let given = [
            ("txn_timeout_ms", 7, 0),
            ("retries", 7, 1),
            ("retry_backoff_ms", 7, 2),
        ];
        for (field, value, i) in given {
            let c = parse(&format!(r#"{{"client": {{"{field}": {value}}}}}"#)).client;
            let got = [c.txn_timeout_ms, c.retries as u64, c.retry_backoff_ms];
            let mut want = [
                default.txn_timeout_ms,
                default.retries as u64,
                default.retry_backoff_ms,
            ];
            want[i] = value;
            assert_eq!(got, want, "client with only {field}");
        }
    }
}
