//! The toy in the simulated world: one `primary` (role data server) that
//! holds the register, and clients (`client-N`) that write and read it
//! through two RPCs, `write` and `read`, tagged for the world's intercepts
//! (`MsgTag`: the call's name, the client's transaction, the register's
//! key as the item).
//!
//! Durable state lives in the tenant and survives every crash: the
//! primary's register ([`Disk`]) and each client's own record of its next
//! value and of the write it has not yet seen answered. Memory lives in a
//! node's incarnation and dies with it: the primary's applied versions.
//!
//! The primary applies writes one at a time: apply in memory, crash point
//! `after_apply`, make durable (`persist_ms`), crash point `after_durable`,
//! reply. Reads see the newest durable version only. A client retries a
//! call until it is answered (a write is found again by its value, so a
//! retry or a late copy never stores it twice); a restarted client first
//! finishes the write its earlier incarnation left in doubt.

use super::config::{ReadWrite, ToyConfig, ToyWorkload};
use super::protocol::{self, Disk, ToyAblation, ToyPoint};
use super::script::ToyScriptFile;
use madsim::net::rpc::Request;
use madsim::time::{Duration, Instant, sleep, sleep_until};
use percsim_checker as history;
use percsim_sim::world::intercept::{MsgTag, Rule, RuleId};
use percsim_sim::world::port::Port;
use percsim_sim::world::system_history::SystemHistory;
use percsim_sim::world::txn_history::{TxnFinish, TxnHistory};
use percsim_sim::world::{
    BoxFuture, Carried, Control, NodeKind, NodeName, NodeNames, NodeSpec, Tenant, Unsettled, World,
    lock,
};
use percsim_sim::{ConfigError, FaultControl, FaultKind, Role, RunOutput, System, WorldConfig};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

/// The primary's node name.
pub const PRIMARY: &str = "primary";

/// The toy's primary: the one data server. It reads no wall clock and
/// has no transaction threads to stall.
const PRIMARY_KIND: NodeKind = NodeKind {
    role: Role::DataServer,
    label: PRIMARY,
    numbered: false,
    reads_clock: false,
    stalls: false,
};

/// The toy's clients, `client-N`: they read no wall clock (their
/// deadlines run on true simulated time) and honour stalls.
const CLIENT_KIND: NodeKind = NodeKind {
    role: Role::Client,
    label: "client",
    numbered: true,
    reads_clock: false,
    stalls: true,
};

/// Every kind of node of the toy, in start order.
pub const NODE_KINDS: [NodeKind; 2] = [PRIMARY_KIND, CLIENT_KIND];

/// The register's column in the history (its row is the workload's key).
pub const COLUMN: &str = "v";

/// The port every toy node binds.
const PORT: u16 = 7_000;

percsim_sim::identities! {
    /// The toy's counters.
    pub enum ToyCounter {
        /// A write already stored came again.
        WriteRepeated => ("toy.write_repeated", "a write already stored came again (a retry, a late or duplicated copy)"),
        /// A client's call went unanswered and was sent again.
        CallRetried => ("toy.call_retried", "a client's call went unanswered and was sent again"),
    }
}

percsim_sim::identities! {
    /// The kinds of event the toy records.
    pub enum ToyEvent {
        /// The primary stopped at a named crash point and is killed.
        CrashAtPoint => ("toy_crash_at_point", "the primary stopped at a named crash point"),
    }
}

/// The primary's address.
fn primary_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 6, 0, 1)), PORT)
}

/// Client `i`'s address.
fn client_addr(i: usize) -> SocketAddr {
    let ip = Ipv4Addr::new(10, 7, (i / 250) as u8, (i % 250 + 1) as u8);
    SocketAddr::new(IpAddr::V4(ip), PORT)
}

/// Client `i`'s node name.
pub fn client_name(i: usize) -> NodeName {
    CLIENT_KIND.nth(i)
}

/// Every node's name: the primary, then the clients.
pub fn node_names(cfg: &ToyConfig) -> Vec<NodeName> {
    std::iter::once(PRIMARY_KIND.single())
        .chain((0..cfg.clients).map(client_name))
        .collect()
}

/// Check a toy run's settings: the toy's section, and the world's settings
/// against its nodes (errors name `world.<field>` or the section's field).
pub fn validate(world: &WorldConfig, cfg: &ToyConfig) -> Result<(), ConfigError> {
    cfg.validate()?;
    let names = node_names(cfg);
    let nodes = NodeNames { nodes: &names };
    world.validate(nodes).map_err(|e| ConfigError {
        field: format!("world.{}", e.field),
        problem: e.problem,
    })
}

/// Validate, then run `workload` on the toy `cfg` in a world set up by
/// `world`, with `seed`; `scenario` is stored in the history.
pub fn run(
    world: &WorldConfig,
    cfg: &ToyConfig,
    workload: &ToyWorkload,
    seed: u64,
    scenario: serde_json::Value,
) -> Result<RunOutput, ConfigError> {
    validate(world, cfg)?;
    let system = ToySystem {
        world: world.clone(),
        cfg: cfg.clone(),
        workload: workload.read_write(),
        script: workload.script().map(ToyScriptFile::fresh),
    };
    Ok(percsim_sim::run_system(&system, seed, scenario))
}

/// A write of the register: its value, unique in the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WriteReq {
    /// The value.
    pub value: String,
}

impl Request for WriteReq {
    type Response = u64;
    const ID: u64 = 0x746f_7901;
}

/// A read of the register.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReadReq;

/// What a read saw: the newest version, its value, the read's timestamp.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReadReply {
    /// The version (0: never written).
    pub version: u64,
    /// Its value.
    pub value: Option<String>,
    /// The read's timestamp.
    pub ts: u64,
}

impl Request for ReadReq {
    type Response = ReadReply;
    const ID: u64 = 0x746f_7902;
}

/// The toy before it runs.
pub struct ToySystem {
    world: WorldConfig,
    cfg: ToyConfig,
    workload: ReadWrite,
    script: Option<ToyScriptFile>,
}

impl System for ToySystem {
    fn world_config(&self) -> WorldConfig {
        self.world.clone()
    }

    fn install(&self, world: &Arc<World>) -> Arc<dyn Tenant> {
        Arc::new(ToyTenant(Arc::new(Shared {
            world: world.clone(),
            cfg: self.cfg.clone(),
            workload: self.workload.clone(),
            script: self.script.clone(),
            disk: Mutex::default(),
            clients: (0..self.cfg.clients).map(|_| Mutex::default()).collect(),
            reached: Mutex::default(),
            txns: Mutex::default(),
            armed: Mutex::default(),
        })))
    }
}

/// A client's durable record.
#[derive(Debug, Default)]
struct ClientDisk {
    /// Values written so far.
    written: u64,
    /// The write sent but not yet seen answered: its transaction and value.
    in_doubt: Option<(u64, String)>,
    /// It stopped after the workload phase, with nothing left in doubt.
    done: bool,
}

/// What outlives every incarnation: the world, the settings, durable state.
struct Shared {
    world: Arc<World>,
    cfg: ToyConfig,
    workload: ReadWrite,
    /// The script its clients and driver run instead of the read-write
    /// loop, if the workload is one.
    script: Option<ToyScriptFile>,
    /// The primary's durable storage.
    disk: Mutex<Disk>,
    /// Each client's durable record.
    clients: Vec<Mutex<ClientDisk>>,
    /// How often the primary reached each named point (the run's count,
    /// which crashes are keyed on).
    reached: Mutex<BTreeMap<ToyPoint, u64>>,
    /// The history's transactions: their timestamps and operations (the
    /// world's recorder keeps who ran them, when and how they ended).
    txns: Mutex<TxnHistory>,
    /// Points a script armed (`stop_at`): the primary is killed the next
    /// time it reaches one, and restarted this many ms later (else at the
    /// healed phase).
    armed: Mutex<BTreeMap<ToyPoint, Option<u64>>>,
}

/// The toy installed in a world.
struct ToyTenant(Arc<Shared>);

impl Tenant for ToyTenant {
    fn state_hash(&self) -> Option<u64> {
        let disk = self.0.disk.try_lock().ok()?;
        Some(percsim_sim::world::explore::hash_of(&format!(
            "{:?}",
            *disk
        )))
    }

    fn nodes(&self) -> Vec<NodeSpec> {
        let s = self.0.clone();
        let mut nodes = vec![NodeSpec {
            name: PRIMARY_KIND.single(),
            ip: primary_addr().ip(),
            init: Arc::new(move || Box::pin(primary(s.clone()))),
        }];
        for i in 0..self.0.cfg.clients {
            let s = self.0.clone();
            nodes.push(NodeSpec {
                name: client_name(i),
                ip: client_addr(i).ip(),
                init: Arc::new(move || Box::pin(client(s.clone(), i))),
            });
        }
        nodes
    }

    fn expire_session(&self, _client: usize) {}

    fn driver(&self, control: FaultControl) -> Option<BoxFuture<()>> {
        let script = self.0.script.as_ref()?;
        Some(script.start_driver(ToyControl {
            faults: control,
            shared: self.0.clone(),
        }))
    }

    fn begin_healed(&self) -> BoxFuture<()> {
        Box::pin(async {})
    }

    fn unsettled(&self) -> Vec<Unsettled> {
        let busy = self
            .0
            .clients
            .iter()
            .filter(|c| {
                let c = lock(c);
                !c.done || c.in_doubt.is_some()
            })
            .count();
        vec![Unsettled {
            count: busy as u64,
            what: "clients with an operation unfinished",
        }]
    }

    fn settle(&self, _unsettled: &[Unsettled]) -> BoxFuture<()> {
        Box::pin(sleep(Duration::from_millis(50)))
    }

    fn final_check(&self) -> BoxFuture<Vec<String>> {
        let mut violations = protocol::stored_twice(&lock(&self.0.disk).versions);
        if let Some(script) = &self.0.script {
            violations.extend(script.final_failures());
        }
        Box::pin(async move { violations })
    }

    fn history(
        &self,
        seed: u64,
        scenario: serde_json::Value,
        events: Vec<history::Event>,
    ) -> SystemHistory {
        let built = lock(&self.0.txns).build(&mut self.0.world.recorder());
        SystemHistory::Transactions(history::History {
            format: history::FORMAT.to_string(),
            // What the register promises its clients, which the checker
            // judges by unless asked for another model.
            model: Some(history::Model::SnapshotIsolation),
            seed,
            scenario,
            transactions: built.transactions,
            events,
            final_state: final_state(&self.0),
            observers: Vec::new(),
        })
    }

    fn helper_nodes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The register's durable versions as the history's final state.
fn final_state(shared: &Shared) -> history::FinalState {
    {
        let disk = lock(&shared.disk);
        let versions: Vec<history::Version> = disk
            .versions
            .iter()
            .enumerate()
            .map(|(i, value)| history::Version {
                start_ts: protocol::write_start_ts(i as u64 + 1),
                commit_ts: protocol::commit_ts(i as u64 + 1),
                kind: history::VersionKind::Put,
                value: Some(value.clone()),
                data_missing: false,
            })
            .collect();
        let cells = if versions.is_empty() {
            Vec::new()
        } else {
            vec![history::CellState {
                row: shared.workload.key.clone(),
                col: COLUMN.into(),
                versions,
            }]
        };
        history::FinalState {
            cells,
            ..history::FinalState::default()
        }
    }
}

/// One incarnation of the primary: its memory and its write queue.
struct Primary {
    shared: Arc<Shared>,
    /// The versions applied (memory: lost with the incarnation).
    applied: Mutex<Vec<String>>,
    /// One write at a time, from apply to reply.
    gate: futures::lock::Mutex<()>,
}

/// Run one incarnation of the primary: recover from durable storage, then
/// serve writes and reads.
async fn primary(shared: Arc<Shared>) {
    let port = Port::bind(&shared.world, primary_addr());
    let applied = lock(&shared.disk).versions.clone();
    let me = Arc::new(Primary {
        shared,
        applied: Mutex::new(applied),
        gate: futures::lock::Mutex::new(()),
    });
    let m = me.clone();
    percsim_sim::world::serve::serve_counting(&port, move |req: WriteReq| {
        let m = m.clone();
        async move { m.write(req).await }
    });
    let m = me.clone();
    percsim_sim::world::serve::serve_counting(&port, move |_: ReadReq| {
        let m = m.clone();
        async move { m.read() }
    });
    std::future::pending::<()>().await
}

impl Primary {
    fn ablated(&self) -> bool {
        self.shared.cfg.ablated(ToyAblation::AckBeforeDurable)
    }

    /// Apply a write, make it durable, answer its version.
    async fn write(self: Arc<Self>, req: WriteReq) -> u64 {
        let _turn = self.gate.lock().await;
        let (applied, snapshot) = {
            let mut m = lock(&self.applied);
            (protocol::apply(&mut m, &req.value), m.clone())
        };
        if !applied.fresh {
            // Stored before (and durable, unless the planted bug is on).
            self.bump(ToyCounter::WriteRepeated.name());
            return applied.version;
        }
        if self.ablated() {
            // The planted bug: answer now, make it durable afterwards.
            let me = self.clone();
            madsim::task::spawn(async move { me.persist(snapshot).await });
            return applied.version;
        }
        self.persist(snapshot).await;
        applied.version
    }

    /// Make `snapshot` (the applied versions) durable, passing the crash
    /// points on either side.
    async fn persist(&self, snapshot: Vec<String>) {
        self.point(ToyPoint::AfterApply).await;
        sleep(Duration::from_millis(self.shared.cfg.persist_ms)).await;
        {
            let mut disk = lock(&self.shared.disk);
            if snapshot.len() > disk.versions.len() {
                disk.versions = snapshot;
            }
        }
        self.point(ToyPoint::AfterDurable).await;
    }

    /// Serve a read: the newest durable version (the newest applied one
    /// under the planted bug), at the next read timestamp.
    fn read(&self) -> ReadReply {
        let mut disk = lock(&self.shared.disk);
        let Some(nth) = protocol::next_read(&mut disk) else {
            drop(disk);
            percsim_sim::invariant::violated("the primary ran out of read timestamps");
        };
        let (version, value) = if self.ablated() {
            protocol::newest(&lock(&self.applied))
        } else {
            protocol::newest(&disk.versions)
        };
        ReadReply {
            version,
            value,
            ts: protocol::read_ts(version, nth),
        }
    }

    /// The primary reached `point`: if a crash is set for this time, ask
    /// the world to kill it and never go on.
    async fn point(&self, point: ToyPoint) {
        let s = &self.shared;
        let nth = {
            let mut reached = lock(&s.reached);
            let n = reached.entry(point).or_default();
            *n += 1;
            *n
        };
        let armed = lock(&s.armed).remove(&point);
        let configured = s
            .cfg
            .crashes
            .iter()
            .find(|c| c.point == point && c.nth == nth)
            .map(|c| Some(c.restart_after_ms));
        let Some(restart_after_ms) = armed.or(configured) else {
            return;
        };
        self.bump(&FaultKind::CrashAtStep.counter());
        s.world.event(
            ToyEvent::CrashAtPoint.name(),
            serde_json::json!({"node": PRIMARY, "point": point.name(), "nth": nth}),
        );
        s.world.request(Control::Kill {
            node: PRIMARY.into(),
            restart_after_ms,
        });
        std::future::pending::<()>().await
    }

    fn bump(&self, counter: &str) {
        self.shared.world.recorder().bump(counter);
    }
}

/// One incarnation of client `index`: what a script's operations run on.
pub struct Client {
    shared: Arc<Shared>,
    index: usize,
    name: String,
    port: Port,
}

/// Run one incarnation of client `index`: finish the write an earlier
/// incarnation left in doubt, then write and read until the workload phase
/// ends.
async fn client(shared: Arc<Shared>, index: usize) {
    let port = Port::bind(&shared.world, client_addr(index));
    let me = Arc::new(Client {
        shared,
        index,
        name: client_name(index).to_string(),
        port,
    });
    let in_doubt = lock(&me.shared.clients[index]).in_doubt.clone();
    if let Some((txn, value)) = in_doubt {
        me.finish_write(txn, value).await;
    }
    if let Some(script) = me.shared.script.clone() {
        // A script's client runs only the script's operations: it has
        // nothing of its own left to finish (a write it leaves in doubt
        // keeps it unsettled).
        lock(&me.shared.clients[index]).done = true;
        return script.run_client(index, me).await;
    }
    let think = Duration::from_millis(me.shared.workload.think_ms);
    while !me.shared.world.stopping() {
        if madsim::rand::random::<f64>() < me.shared.workload.write_fraction {
            me.write().await;
        } else {
            me.read().await;
        }
        sleep(think).await;
    }
    lock(&me.shared.clients[index]).done = true;
}

impl Client {
    fn disk(&self) -> std::sync::MutexGuard<'_, ClientDisk> {
        lock(&self.shared.clients[self.index])
    }

    /// The history's row and column of the register.
    fn cell(&self) -> (String, String) {
        (self.shared.workload.key.clone(), COLUMN.to_string())
    }

    /// Write a new value; the write stays in doubt (durably) until answered.
    async fn write(&self) {
        let value = {
            let mut d = self.disk();
            d.written += 1;
            format!("c{}-{}", self.index, d.written)
        };
        self.write_value(value).await;
    }

    /// Write `value` (unique in the run) and answer the version that holds
    /// it; the write stays in doubt (durably) until answered.
    pub async fn write_value(&self, value: String) -> u64 {
        let world = &self.shared.world;
        let now = world.now_ns();
        let (row, col) = self.cell();
        let (txn, _) = world.recorder().begin(self.index as u64, now);
        let op = history::Op::Write {
            row,
            col,
            value: value.clone(),
        };
        lock(&self.shared.txns).op(txn, op);
        self.disk().in_doubt = Some((txn, value.clone()));
        self.finish_write(txn, value).await
    }

    /// Send write `value` of transaction `txn` until answered, record it
    /// committed at its version's timestamps, and answer the version.
    async fn finish_write(&self, txn: u64, value: String) -> u64 {
        let version = self.call("write", txn, WriteReq { value }).await;
        let world = &self.shared.world;
        let now = world.now_ns();
        {
            let mut txns = lock(&self.shared.txns);
            txns.started(txn, protocol::write_start_ts(version));
            let commit_ts = Some(protocol::commit_ts(version));
            let finish = TxnFinish::Committed { commit_ts };
            txns.finish(&mut world.recorder(), txn, finish, now);
        }
        self.disk().in_doubt = None;
        version
    }

    /// Read the register, record what it saw and answer it.
    pub async fn read(&self) -> ReadReply {
        let world = &self.shared.world;
        let now = world.now_ns();
        let (txn, _) = world.recorder().begin(self.index as u64, now);
        let reply = self.call("read", txn, ReadReq).await;
        let now = world.now_ns();
        let (row, col) = self.cell();
        let mut txns = lock(&self.shared.txns);
        txns.started(txn, reply.ts);
        let op = history::Op::Read {
            row,
            col,
            value: reply.value.clone(),
        };
        txns.op(txn, op);
        let finish = TxnFinish::Committed { commit_ts: None };
        txns.finish(&mut world.recorder(), txn, finish, now);
        reply
    }

    /// Send `req` (call `call` of transaction `txn`) to the primary until
    /// it is answered.
    async fn call<R: Request + Clone>(&self, call: &'static str, txn: u64, req: R) -> R::Response {
        let world = &self.shared.world;
        let timeout = Duration::from_millis(world.config().rpc_timeout_ms);
        loop {
            world.watchdog_tick();
            self.wait_if_stalled().await;
            let dst = primary_addr();
            if world.carry(dst, &req) == Carried::Late {
                // The network holds the request back: no answer in time.
                sleep(timeout).await;
            } else {
                let tag = MsgTag {
                    call,
                    txn: Some(txn),
                    item: Some(self.shared.workload.key.clone()),
                    from: self.name.clone(),
                };
                let answer = world.call_tagged(&self.port, dst, req.clone(), tag, timeout);
                if let Ok(reply) = answer.await {
                    return reply;
                }
            }
            world.recorder().bump(ToyCounter::CallRetried.name());
        }
    }

    async fn wait_if_stalled(&self) {
        let world = &self.shared.world;
        while let Some(t) = world.stalled_until(&client_name(self.index)) {
            if t <= Instant::now() {
                return;
            }
            sleep_until(t).await;
        }
    }
}

/// What a toy script's driver may do to the world: the world's fault
/// control, plus the toy's own points and the register's durable state.
pub struct ToyControl {
    faults: FaultControl,
    shared: Arc<Shared>,
}

impl ToyControl {
    /// The world's fault control.
    pub fn faults(&self) -> &FaultControl {
        &self.faults
    }

    /// Kill the primary the next time it reaches `point`, and restart it
    /// `restart_after_ms` later (else at the healed phase). An error if
    /// that point is armed already.
    pub fn arm(&self, point: ToyPoint, restart_after_ms: Option<u64>) -> Result<(), String> {
        let mut armed = lock(&self.shared.armed);
        if armed.contains_key(&point) {
            return Err(format!("point {} is armed already", point.name()));
        }
        armed.insert(point, restart_after_ms);
        Ok(())
    }

    /// The primary's name once per point armed by [`ToyControl::arm`]
    /// that it has not reached since (its stop never happened).
    pub fn armed_left(&self) -> Vec<String> {
        let armed = lock(&self.shared.armed);
        armed.keys().map(|_| PRIMARY.to_string()).collect()
    }

    /// Install a targeted message fault.
    pub fn intercept(&self, rule: Rule) -> RuleId {
        self.shared.world.intercept(rule)
    }

    /// Lift a targeted message fault and deliver what it holds.
    pub fn release(&self, rule: RuleId) {
        self.shared.world.release(rule);
    }

    /// The register's durable versions, oldest first.
    pub fn versions(&self) -> Vec<String> {
        lock(&self.shared.disk).versions.clone()
    }
}
