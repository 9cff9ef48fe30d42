//! Omid's settings: its section of a scenario file (`"omid": {...}`, an
//! [`OmidConfig`]) and its workloads (`bank`, `register`), with defaults and
//! checks whose errors name the field.

use crate::ConfigError;
use percsim_protocol::omid::{Granularity, OmidAblation, OmidPoint, PostCommit};
use serde::{Deserialize, Serialize};

/// The most clients or tablet servers an Omid cluster runs.
pub const MAX_NODES: usize = 100;

/// The longest a modelled store or TSO step may take, in ms.
pub const MAX_STEP_MS: u64 = 10_000;

/// The shortest lease, in ms: the TSO renews it four times a lease, and
/// a takeover fences every tablet server within it.
pub const MIN_LEASE_MS: u64 = 20;

/// An Omid cluster: a scenario file's `omid` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OmidConfig {
    /// Client nodes (`client-N`).
    pub clients: usize,
    /// Tablet servers (`tablet-N`) holding the data and the commit table.
    pub tablets: usize,
    /// Keys the TSO's conflict map holds before it evicts (and raises its
    /// low watermark).
    pub conflict_map_size: usize,
    /// What conflict detection compares: `cell` or `row`.
    pub granularity: Granularity,
    /// Timestamps the TSO persists at once as its range's ceiling.
    pub timestamp_batch: u64,
    /// Simulated ms the TSO takes to persist a range's ceiling.
    pub persist_ms: u64,
    /// Simulated ms a tablet server takes to apply a write or serve a read.
    pub store_ms: u64,
    /// Whether a backup TSO (`tso-backup`) runs beside the first one.
    pub backup_tso: bool,
    /// When a client reports its commit: `sync` (after its shadow cells,
    /// the default) or `async` (at the TSO's answer).
    #[serde(skip_serializing_if = "is_sync")]
    pub post_commit: PostCommit,
    /// How long the TSO's lease in the liveness service lasts, in ms.
    pub lease_ms: u64,
    /// The TSO's commit-table writer batches decisions and flushes them
    /// every `ct_flush_ms` (0: each decision is written at once); a commit
    /// is answered once its batch is in the commit table.
    #[serde(skip_serializing_if = "is_zero")]
    pub ct_flush_ms: u64,
    /// With `async` post-commit, how long a committed transaction's
    /// post-commit (its shadow cells, then the commit-table entry's
    /// deletion) waits in the client's post-commit executor's queue, in ms,
    /// while the client goes on with its next transaction.
    #[serde(skip_serializing_if = "is_zero")]
    pub post_commit_queue_ms: u64,
    /// Crashes at named points.
    pub crashes: Vec<CrashAt>,
    /// Pauses at named points.
    pub pauses: Vec<PauseAt>,
    /// Planted bugs switched on, by name.
    pub ablations: Vec<OmidAblation>,
    /// Simulated CPU costs of the TSO's and the tablet servers' requests
    /// (off by default).
    #[serde(skip_serializing_if = "OmidCosts::is_off")]
    pub costs: OmidCosts,
}

/// Simulated CPU time of Omid's nodes: what each request costs the TSO
/// and a tablet server, and how many cores each has. Requests queue when
/// every core is busy; "cores used" is busy time over simulated time
/// (counters `cpu.busy_us.tso` and `cpu.busy_us.tablet`). Off by default.
/// The tablet server's costs default to Percolator's cost model's (a
/// request 40 µs, a row read 25 µs and its cell 5 µs, a cell written
/// 10 µs, 4 cores), so both systems' servers are charged alike; the TSO's
/// per-request cost is sourced in `docs/omid.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OmidCosts {
    /// Whether requests cost CPU time at all.
    pub enabled: bool,
    /// Cores of the TSO.
    pub tso_cores: usize,
    /// One request at the TSO: a begin, or a commit's conflict check and
    /// decision.
    pub tso_request_us: u64,
    /// Cores of each tablet server.
    pub tablet_cores: usize,
    /// Fixed cost of one request at a tablet server.
    pub tablet_request_us: u64,
    /// A read's row and cell at a tablet server, on top of the request.
    pub tablet_read_us: u64,
    /// A cell written or erased (a data cell, a shadow cell, a
    /// commit-table entry), on top of the request.
    pub tablet_write_us: u64,
}

impl Default for OmidCosts {
    fn default() -> Self {
        OmidCosts {
            enabled: false,
            tso_cores: 1,
            tso_request_us: 6,
            tablet_cores: 4,
            tablet_request_us: 40,
            tablet_read_us: 30,
            tablet_write_us: 10,
        }
    }
}

impl OmidCosts {
    /// Whether the model is the default, off (left out of a written section).
    fn is_off(&self) -> bool {
        *self == OmidCosts::default()
    }
}

impl Default for OmidConfig {
    fn default() -> Self {
        OmidConfig {
            clients: 3,
            tablets: 2,
            conflict_map_size: 1_000,
            granularity: Granularity::Cell,
            timestamp_batch: 100,
            persist_ms: 2,
            store_ms: 1,
            backup_tso: true,
            post_commit: PostCommit::Sync,
            lease_ms: 300,
            ct_flush_ms: 0,
            post_commit_queue_ms: 0,
            crashes: Vec::new(),
            pauses: Vec::new(),
            ablations: Vec::new(),
            costs: OmidCosts::default(),
        }
    }
}

/// Kill the node that reaches `point` the `nth` time (from 1, counted over
/// the run across the nodes of its kind, from `after_ms` of simulated time
/// on), and restart it `restart_after_ms` later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashAt {
    /// The named point.
    pub point: OmidPoint,
    /// Which time the point is reached (from `after_ms` on).
    pub nth: u64,
    /// From when the point's reaches are counted, in simulated ms since
    /// the run started (0: from the start).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub after_ms: u64,
    /// When the node comes back.
    #[serde(default = "default_restart_ms")]
    pub restart_after_ms: u64,
}

/// Freeze the node that reaches `point` the `nth` time (from 1, counted
/// over the run across the nodes of its kind, from `after_ms` of simulated
/// time on) for `pause_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseAt {
    /// The named point.
    pub point: OmidPoint,
    /// Which time the point is reached (from `after_ms` on).
    pub nth: u64,
    /// From when the point's reaches are counted, in simulated ms since
    /// the run started (0: from the start).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub after_ms: u64,
    /// How long the node stays frozen.
    pub pause_ms: u64,
}

/// Whether `m` is the default post-commit mode (left out of a written
/// section, so that sections written before the setting read the same).
fn is_sync(m: &PostCommit) -> bool {
    *m == PostCommit::Sync
}

/// Whether `n` is zero (a setting left out of a written section when it
/// is, so that sections written before it read the same).
fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn default_restart_ms() -> u64 {
    200
}

/// An error naming `field` with `problem`.
fn err(field: impl Into<String>, problem: impl Into<String>) -> Result<(), ConfigError> {
    Err(ConfigError {
        field: field.into(),
        problem: problem.into(),
    })
}

/// A stop's `after_ms` (of the entry `entry`): at most one simulated hour.
fn after_ms(entry: &str, ms: u64) -> Result<(), ConfigError> {
    if ms > crate::world::MAX_PHASE_MS {
        return err(
            format!("{entry}.after_ms"),
            format!("must be at most one simulated hour, found {ms}"),
        );
    }
    Ok(())
}

impl OmidConfig {
    /// Check for impossible values; the error names the field in the
    /// section (`tablets`, `crashes[1].nth`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (field, n) in [("clients", self.clients), ("tablets", self.tablets)] {
            if n == 0 || n > MAX_NODES {
                return err(field, format!("must be 1 to {MAX_NODES}, found {n}"));
            }
        }
        if self.conflict_map_size == 0 {
            return err("conflict_map_size", "must be at least 1, found 0");
        }
        if self.timestamp_batch == 0 {
            return err("timestamp_batch", "must be at least 1, found 0");
        }
        for (field, ms) in [
            ("persist_ms", self.persist_ms),
            ("store_ms", self.store_ms),
            ("lease_ms", self.lease_ms),
            ("post_commit_queue_ms", self.post_commit_queue_ms),
            ("ct_flush_ms", self.ct_flush_ms),
        ] {
            if ms > MAX_STEP_MS {
                return err(field, format!("must be at most {MAX_STEP_MS}, found {ms}"));
            }
        }
        if self.costs.tso_cores == 0 || self.costs.tablet_cores == 0 {
            return err("costs", "every node has at least 1 core, found 0");
        }
        if self.lease_ms < MIN_LEASE_MS {
            return err(
                "lease_ms",
                format!("must be at least {MIN_LEASE_MS}, found {}", self.lease_ms),
            );
        }
        for (i, p) in self.pauses.iter().enumerate() {
            if p.nth == 0 {
                return err(format!("pauses[{i}].nth"), "counts from 1, found 0");
            }
            if p.pause_ms == 0 || p.pause_ms > crate::world::MAX_PHASE_MS {
                return err(
                    format!("pauses[{i}].pause_ms"),
                    format!("must be 1 ms to one simulated hour, found {}", p.pause_ms),
                );
            }
            after_ms(&format!("pauses[{i}]"), p.after_ms)?;
        }
        for (i, c) in self.crashes.iter().enumerate() {
            if c.nth == 0 {
                return err(format!("crashes[{i}].nth"), "counts from 1, found 0");
            }
            if c.restart_after_ms > crate::world::MAX_PHASE_MS {
                return err(
                    format!("crashes[{i}].restart_after_ms"),
                    "more than one simulated hour",
                );
            }
            after_ms(&format!("crashes[{i}]"), c.after_ms)?;
        }
        Ok(())
    }

    /// Whether planted bug `a` is on.
    pub fn ablated(&self, a: OmidAblation) -> bool {
        self.ablations.contains(&a)
    }
}

/// Omid's workloads, as a scenario file's `workload` object names them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case", deny_unknown_fields)]
pub enum OmidWorkload {
    /// Transfers between accounts whose total never changes, and reads of
    /// every account.
    #[serde(rename = "omid-bank")]
    Bank(Bank),
    /// Reads and read-modify-writes of a few registers with unique values.
    #[serde(rename = "omid-register")]
    Register(Register),
    /// Appends of unique elements to a few lists, each list one cell.
    #[serde(rename = "omid-list-append")]
    ListAppend(ListAppend),
    /// TPC-E-lite: customers' trades, each an order and its settlement.
    #[serde(rename = "omid-tpce")]
    Tpce(Tpce),
}

/// TPC-E-lite, the job of Percolator's `tpce` (the Percolator paper's
/// section 5.3): a brokerage whose customers trade, on average once every
/// `trade_interval_ms` each. A trade is two transactions: Trade-Order
/// (read the account and the security's price, write the order and its
/// index entry by security) and, `market_delay_ms` later, Trade-Result
/// (settle the pending order: balance, holding, status; an order that
/// would leave a negative holding is rejected). Each client runs
/// `workers` trading loops at once, trades arriving as a Poisson process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Tpce {
    /// Customers (the load: each trades once per interval).
    pub customers: usize,
    /// Securities.
    pub securities: usize,
    /// Mean simulated time between two trades of one customer.
    pub trade_interval_ms: u64,
    /// Simulated delay between a trade's order and its result.
    pub market_delay_ms: u64,
    /// Every account's balance before its first trade.
    pub initial_balance: i64,
    /// Trading loops per client, running at once.
    pub workers: usize,
}

impl Default for Tpce {
    fn default() -> Self {
        Tpce {
            customers: 20,
            securities: 10,
            trade_interval_ms: 200,
            market_delay_ms: 20,
            initial_balance: 1_000_000,
            workers: 2,
        }
    }
}

/// The bank: `accounts` accounts loaded with `initial` each; a transaction
/// either moves up to `max_transfer` between two of them (read both, write
/// both) or, with probability `read_all_fraction`, reads every account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Bank {
    /// Accounts.
    pub accounts: usize,
    /// Each account's initial balance.
    pub initial: u64,
    /// The largest amount one transfer moves.
    pub max_transfer: u64,
    /// The share of transactions that read every account.
    pub read_all_fraction: f64,
    /// Simulated ms a client waits between two transactions.
    pub think_ms: u64,
}

impl Default for Bank {
    fn default() -> Self {
        Bank {
            accounts: 5,
            initial: 100,
            max_transfer: 10,
            read_all_fraction: 0.3,
            think_ms: 5,
        }
    }
}

/// Registers: `keys` registers; a transaction either reads one and writes
/// a new unique value to it (probability `write_fraction`) or reads two.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Register {
    /// Registers.
    pub keys: usize,
    /// The share of transactions that write.
    pub write_fraction: f64,
    /// Simulated ms a client waits between two transactions.
    pub think_ms: u64,
}

impl Default for Register {
    fn default() -> Self {
        Register {
            keys: 4,
            write_fraction: 0.5,
            think_ms: 5,
        }
    }
}

/// Lists: `keys` lists, each a cell holding its elements comma-separated;
/// a transaction makes 1 to `max_ops` operations, each on a list drawn at
/// random: a read, or (probability `append_fraction`) an append of a
/// unique element (a read-modify-write of the cell, written once at the
/// end of the transaction with all its appends), as Jepsen's Elle does
/// with its list-append. The order of a list's versions shows in their
/// values; after convergence every list holds each element at most once
/// and every element whose append was reported committed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ListAppend {
    /// Lists.
    pub keys: usize,
    /// The most operations a transaction makes.
    pub max_ops: usize,
    /// The share of operations that append.
    pub append_fraction: f64,
    /// Simulated ms a client waits between two transactions.
    pub think_ms: u64,
}

impl Default for ListAppend {
    fn default() -> Self {
        ListAppend {
            keys: 4,
            max_ops: 4,
            append_fraction: 0.6,
            think_ms: 5,
        }
    }
}

/// A share (`field`, a probability) between 0 and 1.
fn fraction(field: &str, f: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&f) {
        Ok(())
    } else {
        Err(format!(
            "workload.{field}: must be between 0 and 1, found {f}"
        ))
    }
}

impl OmidWorkload {
    /// Its name.
    pub fn name(&self) -> &'static str {
        match self {
            OmidWorkload::Bank(_) => "omid-bank",
            OmidWorkload::Register(_) => "omid-register",
            OmidWorkload::ListAppend(_) => "omid-list-append",
            OmidWorkload::Tpce(_) => "omid-tpce",
        }
    }

    /// Simulated ms a client waits between two transactions.
    pub fn think_ms(&self) -> u64 {
        match self {
            OmidWorkload::Bank(b) => b.think_ms,
            OmidWorkload::Register(r) => r.think_ms,
            OmidWorkload::ListAppend(l) => l.think_ms,
            OmidWorkload::Tpce(_) => 0,
        }
    }

    /// Check for impossible values; the error names the field
    /// (`workload.accounts: ...`).
    pub fn validate(&self) -> Result<(), String> {
        let think = self.think_ms();
        if think > crate::world::MAX_PHASE_MS {
            return Err("workload.think_ms: more than one simulated hour".into());
        }
        match self {
            OmidWorkload::Bank(b) => {
                if b.accounts < 2 || b.accounts > 1_000 {
                    return Err(format!(
                        "workload.accounts: must be 2 to 1000, found {}",
                        b.accounts
                    ));
                }
                if b.initial.checked_mul(b.accounts as u64).is_none() {
                    return Err("workload.initial: the total overflows".into());
                }
                fraction("read_all_fraction", b.read_all_fraction)
            }
            OmidWorkload::Register(r) => {
                if r.keys == 0 || r.keys > 1_000 {
                    return Err(format!(
                        "workload.keys: must be 1 to 1000, found {}",
                        r.keys
                    ));
                }
                fraction("write_fraction", r.write_fraction)
            }
            OmidWorkload::ListAppend(l) => {
                if l.keys == 0 || l.keys > 1_000 {
                    return Err(format!(
                        "workload.keys: must be 1 to 1000, found {}",
                        l.keys
                    ));
                }
                if l.max_ops == 0 || l.max_ops > 100 {
                    return Err(format!(
                        "workload.max_ops: must be 1 to 100, found {}",
                        l.max_ops
                    ));
                }
                fraction("append_fraction", l.append_fraction)
            }
            OmidWorkload::Tpce(t) => t.validate(),
        }
    }
}

impl Tpce {
    /// Check for impossible values; the error names the field.
    fn validate(&self) -> Result<(), String> {
        let sizes = [
            ("customers", self.customers, 100_000_000),
            ("securities", self.securities, 100_000),
            ("workers", self.workers, 10_000),
        ];
        for (field, n, max) in sizes {
            if n == 0 || n > max {
                return Err(format!("workload.{field}: must be 1 to {max}, found {n}"));
            }
        }
        if self.trade_interval_ms == 0 {
            return Err("workload.trade_interval_ms: must be at least 1".into());
        }
        if self.market_delay_ms > crate::world::MAX_PHASE_MS {
            return Err("workload.market_delay_ms: more than one simulated hour".into());
        }
        if self.initial_balance <= 0 {
            return Err(format!(
                "workload.initial_balance: must be positive, found {}",
                self.initial_balance
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_pass_and_each_bad_value_names_its_field() {
        OmidConfig::default().validate().expect("defaults");
        let bad = |f: fn(&mut OmidConfig)| {
            let mut c = OmidConfig::default();
            f(&mut c);
            let e = c.validate().unwrap_err();
            format!("{}: {}", e.field, e.problem)
        };
        assert_eq!(bad(|c| c.tablets = 0), "tablets: must be 1 to 100, found 0");
        assert_eq!(
            bad(|c| c.conflict_map_size = 0),
            "conflict_map_size: must be at least 1, found 0"
        );
        assert_eq!(
            bad(|c| c.lease_ms = 2),
            "lease_ms: must be at least 20, found 2"
        );
        assert_eq!(
            bad(|c| c.pauses = vec![PauseAt {
                point: OmidPoint::TsoAfterDecision,
                nth: 1,
                after_ms: 0,
                pause_ms: 0
            }]),
            "pauses[0].pause_ms: must be 1 ms to one simulated hour, found 0"
        );
        assert_eq!(
            bad(|c| c.store_ms = 20_000),
            "store_ms: must be at most 10000, found 20000"
        );
        fn crash(nth: u64) -> CrashAt {
            CrashAt {
                point: OmidPoint::TsoAfterDecision,
                nth,
                after_ms: 0,
                restart_after_ms: 10,
            }
        }
        assert_eq!(
            bad(|c| c.crashes = vec![crash(1), crash(0)]),
            "crashes[1].nth: counts from 1, found 0"
        );
    }

    #[test]
    fn workloads_read_by_name_and_bad_values_name_the_field() {
        let w: OmidWorkload =
            serde_json::from_str(r#"{"name": "omid-bank", "accounts": 3}"#).unwrap();
        assert_eq!(w.name(), "omid-bank");
        w.validate().expect("a bank");
        let w = OmidWorkload::Bank(Bank {
            accounts: 1,
            ..Bank::default()
        });
        assert_eq!(
            w.validate().unwrap_err(),
            "workload.accounts: must be 2 to 1000, found 1"
        );
        let w = OmidWorkload::Register(Register {
            write_fraction: 2.0,
            ..Register::default()
        });
        assert_eq!(
            w.validate().unwrap_err(),
            "workload.write_fraction: must be between 0 and 1, found 2"
        );
        let w: OmidWorkload =
            serde_json::from_str(r#"{"name": "omid-list-append", "keys": 2}"#).unwrap();
        assert_eq!(w.name(), "omid-list-append");
        w.validate().expect("lists");
        let w = OmidWorkload::ListAppend(ListAppend {
            max_ops: 0,
            ..ListAppend::default()
        });
        assert_eq!(
            w.validate().unwrap_err(),
            "workload.max_ops: must be 1 to 100, found 0"
        );
        let w = OmidWorkload::ListAppend(ListAppend {
            append_fraction: -0.5,
            ..ListAppend::default()
        });
        assert_eq!(
            w.validate().unwrap_err(),
            "workload.append_fraction: must be between 0 and 1, found -0.5"
        );
    }

    #[test]
    fn a_stop_counted_from_past_an_hour_names_its_entry() {
        let c = OmidConfig {
            pauses: vec![PauseAt {
                point: OmidPoint::TsoAfterDecision,
                nth: 1,
                after_ms: 4_000_000,
                pause_ms: 10,
            }],
            ..OmidConfig::default()
        };
        let e = c.validate().unwrap_err();
        assert_eq!(
            format!("{}: {}", e.field, e.problem),
            "pauses[0].after_ms: must be at most one simulated hour, found 4000000"
        );
    }
}
