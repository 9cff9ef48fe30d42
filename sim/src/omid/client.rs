//! Omid's clients: each runs the workload's transactions one at a time.
//! A transaction takes its start timestamp from the TSO, writes its data
//! cells at it as it goes, and asks the TSO to commit; once committed it
//! writes its shadow cells and deletes its commit-table entry; once
//! aborted it removes its data cells ("Omid, Reloaded", section 3). A read
//! resolves each version newest first: by its shadow cell, else the commit
//! table, else it invalidates the writer ([`read`] in the protocol).
//!
//! [`read`]: percsim_protocol::omid::actions::read

use super::config::{Bank, ListAppend, OmidWorkload, Register};
use super::rpc::{
    self, BeginReply, BeginReq, CLIENT_KIND, CommitReply, CommitReq, LeaseReply, LeaseReq,
    OmidCounter, StoreOp, StoreReply, TsoAnswer,
};
use super::store::{Caller, tablet_of_row, tablet_of_txn};
use super::types::{Client, ClientDisk, Job, OmidClient, OmidOutcome, Shared};
use crate::world::intercept::MsgTag;
use crate::world::lock;
use crate::world::port::Port;
use crate::world::txn_history::TxnFinish;
use madsim::net::rpc::Request;
use madsim::time::{Duration, sleep};
use percsim_checker as history;
use percsim_protocol::omid::actions::read::{self, Resolution};
use percsim_protocol::omid::{CtEntry, DataVersion, OmidPoint, PostCommit};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// The bank's column.
const BALANCE: &str = "balance";

/// The registers' column.
const VALUE: &str = "v";

/// The lists' column.
const LIST: &str = "list";

/// List `i`'s row.
fn list(i: usize) -> String {
    format!("list-{i}")
}

/// A list's elements (its cell's value, comma-separated).
fn elements(list: &str) -> Vec<&str> {
    list.split(',').filter(|e| !e.is_empty()).collect()
}

/// Account `i`'s row.
fn account(i: usize) -> String {
    format!("acct-{i}")
}

/// Register `i`'s row.
fn register(i: usize) -> String {
    format!("reg-{i}")
}

/// The initial load: the bank's accounts, committed at timestamps 1 and 2
/// with their shadow cells, and the TSO's ceiling above them.
pub(super) fn load(shared: &Shared) {
    if let Job::Workload(OmidWorkload::Tpce(t)) = &shared.job {
        let ops = super::tpce::load(t, &mut lock(&shared.store).cells);
        lock(&shared.tso_disk).ceiling = 3;
        lock(&shared.txns).bootstrap(&mut shared.world.recorder(), 1, 2, ops);
        return;
    }
    let Job::Workload(OmidWorkload::Bank(bank)) = &shared.job else {
        return;
    };
    let mut store = lock(&shared.store);
    let mut ops = Vec::new();
    for i in 0..bank.accounts {
        let value = bank.initial.to_string();
        store.cells.insert(
            (account(i), BALANCE.into()),
            vec![DataVersion {
                start_ts: 1,
                value: Some(value.clone()),
                shadow_ts: Some(2),
            }],
        );
        ops.push(history::Op::Write {
            row: account(i),
            col: BALANCE.into(),
            value,
        });
    }
    lock(&shared.tso_disk).ceiling = 3;
    lock(&shared.txns).bootstrap(&mut shared.world.recorder(), 1, 2, ops);
}

/// The workload's own invariant after convergence: the bank's committed
/// balances still sum to the total; each list holds each element at most
/// once, and every element whose append was reported committed.
pub(super) fn final_check(shared: &Shared) -> Vec<String> {
    let bank = match &shared.job {
        Job::Workload(OmidWorkload::Bank(bank)) => bank,
        Job::Workload(OmidWorkload::ListAppend(l)) => return lists_check(shared, l),
        Job::Workload(OmidWorkload::Tpce(t)) => return super::tpce::final_check(shared, t),
        _ => return Vec::new(),
    };
    let committed = lock(&shared.store).committed();
    let mut total = 0u64;
    for i in 0..bank.accounts {
        let key = (account(i), BALANCE.to_string());
        let Some(value) = committed
            .get(&key)
            .and_then(|vs| vs.last())
            .and_then(|v| v.value.as_ref())
        else {
            return vec![format!("account {} has no committed balance", account(i))];
        };
        let Ok(balance) = value.parse::<u64>() else {
            return vec![format!(
                "account {} holds {value:?}, not a balance",
                account(i)
            )];
        };
        total += balance;
    }
    let want = bank.initial * bank.accounts as u64;
    if total == want {
        Vec::new()
    } else {
        vec![format!("the balances sum to {total}, not {want}")]
    }
}

/// The lists' check after convergence (see [`final_check`]).
fn lists_check(shared: &Shared, l: &ListAppend) -> Vec<String> {
    let committed = lock(&shared.store).committed();
    let acked = lock(&shared.appended);
    let mut problems = Vec::new();
    for row in (0..l.keys).map(list) {
        let key = (row.clone(), LIST.to_string());
        let value = committed
            .get(&key)
            .and_then(|vs| vs.last())
            .and_then(|v| v.value.clone())
            .unwrap_or_default();
        problems.extend(list_problems(&row, &value, acked.get(&row)));
    }
    problems
}

/// What is wrong with list `row` holding `value` after convergence, when
/// the appends of `acked` were reported committed: an element held twice,
/// an element acked and not held.
fn list_problems(row: &str, value: &str, acked: Option<&BTreeSet<String>>) -> Vec<String> {
    let es = elements(value);
    let unique: BTreeSet<&str> = es.iter().copied().collect();
    let mut problems = Vec::new();
    if unique.len() != es.len() {
        problems.push(format!("{row} holds a duplicated element: {value}"));
    }
    for e in acked.into_iter().flatten() {
        if !unique.contains(e.as_str()) {
            problems.push(format!("{row} lost the committed append {e}"));
        }
    }
    problems
}

/// A transaction in progress.
pub(super) struct Txn {
    /// The history's id.
    pub(super) id: u64,
    /// Its start timestamp.
    pub(super) start_ts: u64,
    /// The cells it wrote.
    writes: Vec<(String, String)>,
}

/// Run one incarnation of client `index`: transactions until the workload
/// phase ends.
pub(super) async fn run(shared: Arc<Shared>, index: usize) {
    let port = Port::bind(&shared.world, rpc::client_addr(index));
    let me = Arc::new(Client {
        shared,
        index,
        name: CLIENT_KIND.nth(index),
        port,
        primary: Mutex::default(),
    });
    let workload = match me.shared.job.clone() {
        Job::Workload(w) => w,
        Job::Program(program) => {
            // A program's client runs only the program's transactions.
            program.client(OmidClient(me.clone())).await;
            me.disk().done = true;
            return;
        }
    };
    let think = Duration::from_millis(workload.think_ms());
    while !me.shared.world.stopping() {
        match &workload {
            OmidWorkload::Bank(b) => me.bank(b).await,
            OmidWorkload::Register(r) => me.register(r).await,
            OmidWorkload::ListAppend(l) => me.list_append(l).await,
            OmidWorkload::Tpce(t) => me.tpce(t).await,
        };
        sleep(think).await;
    }
    me.disk().done = true;
}

/// A random number below `n` (at least 1), from the seeded generator.
fn below(n: u64) -> u64 {
    madsim::rand::random::<u64>() % n.max(1)
}

impl Client {
    /// Its durable record.
    pub(super) fn disk_mut(&self) -> std::sync::MutexGuard<'_, ClientDisk> {
        self.disk()
    }

    fn disk(&self) -> std::sync::MutexGuard<'_, ClientDisk> {
        lock(&self.shared.clients[self.index])
    }

    fn caller(&self) -> Caller<'_> {
        Caller {
            shared: &self.shared,
            port: &self.port,
            name: &self.name,
        }
    }

    /// A value no other write of the run writes.
    fn unique_value(&self) -> String {
        let n = self.disk().begun;
        format!("c{}-{n}", self.index)
    }

    /// One bank transaction: a transfer, or a read of every account.
    async fn bank(self: &Arc<Self>, b: &Bank) {
        let mut txn = self.begin().await;
        if madsim::rand::random::<f64>() < b.read_all_fraction {
            for i in 0..b.accounts {
                self.read(&txn, &account(i), BALANCE).await;
            }
            self.commit(txn).await;
            return;
        }
        let from = below(b.accounts as u64) as usize;
        let to = (from + 1 + below(b.accounts as u64 - 1) as usize) % b.accounts;
        let x = self.read(&txn, &account(from), BALANCE).await;
        let y = self.read(&txn, &account(to), BALANCE).await;
        let parsed = (
            x.and_then(|v| v.parse::<u64>().ok()),
            y.and_then(|v| v.parse::<u64>().ok()),
        );
        if let (Some(x), Some(y)) = parsed {
            let amount = (1 + below(b.max_transfer)).min(x);
            if amount > 0 {
                let (x, y) = ((x - amount).to_string(), (y + amount).to_string());
                self.write(&mut txn, &account(from), BALANCE, Some(x)).await;
                self.write(&mut txn, &account(to), BALANCE, Some(y)).await;
            }
        }
        self.commit(txn).await;
    }

    /// One register transaction: a read-modify-write of one register, or
    /// a read of two.
    async fn register(self: &Arc<Self>, r: &Register) {
        let mut txn = self.begin().await;
        let k = register(below(r.keys as u64) as usize);
        if madsim::rand::random::<f64>() < r.write_fraction {
            self.read(&txn, &k, VALUE).await;
            let value = self.unique_value();
            self.write(&mut txn, &k, VALUE, Some(value)).await;
        } else {
            self.read(&txn, &k, VALUE).await;
            let other = register(below(r.keys as u64) as usize);
            self.read(&txn, &other, VALUE).await;
        }
        self.commit(txn).await;
    }

    /// One list-append transaction: 1 to `max_ops` reads or appends on
    /// lists drawn at random; each list appended to is written once, at
    /// the end, with the transaction's elements after those it read.
    async fn list_append(self: &Arc<Self>, l: &ListAppend) {
        let mut txn = self.begin().await;
        let tag = self.unique_value();
        let ops = 1 + below(l.max_ops as u64) as usize;
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        let mut appended: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for k in 0..ops {
            let row = list(below(l.keys as u64) as usize);
            if !seen.contains_key(&row) {
                let v = self.read(&txn, &row, LIST).await.unwrap_or_default();
                seen.insert(row.clone(), v);
            }
            if madsim::rand::random::<f64>() < l.append_fraction {
                appended.entry(row).or_default().push(format!("{tag}.{k}"));
            }
        }
        for (row, es) in &appended {
            let mut value = seen.get(row).cloned().unwrap_or_default();
            for e in es {
                if !value.is_empty() {
                    value.push(',');
                }
                value.push_str(e);
            }
            self.write(&mut txn, row, LIST, Some(value)).await;
        }
        if let OmidOutcome::Committed { .. } = self.commit(txn).await {
            let mut acked = lock(&self.shared.appended);
            for (row, es) in appended {
                acked.entry(row).or_default().extend(es);
            }
        }
    }

    /// The primary TSO's address: the one it used last, else the lease
    /// holder the liveness service names (waiting while nobody holds it).
    async fn primary(&self) -> SocketAddr {
        if let Some(addr) = *lock(&self.primary) {
            return addr;
        }
        loop {
            let reply = self
                .caller()
                .call(rpc::liveness_addr(), "who", None, None, LeaseReq::Who)
                .await;
            if let LeaseReply::Holder(Some(name)) = reply {
                let addr = rpc::tso_addr_of(&name);
                *lock(&self.primary) = Some(addr);
                return addr;
            }
            let wait_ms = (self.shared.cfg.lease_ms / 4).max(1);
            sleep(Duration::from_millis(wait_ms)).await;
        }
    }

    /// Send `req` (call `call` of transaction `txn`) to the primary TSO until
    /// it answers as the primary: a TSO that does not answer, or says it is
    /// not the primary, sends the client to the liveness service.
    async fn tso_call<R>(&self, call: &'static str, txn: u64, req: R) -> R::Response
    where
        R: Request + Clone,
        R::Response: TsoAnswer,
    {
        loop {
            let dst = self.primary().await;
            let tag = MsgTag {
                call,
                txn: Some(txn),
                item: None,
                from: self.name.to_string(),
            };
            match self.caller().try_call(dst, tag, req.clone()).await {
                Some(reply) if !reply.not_primary() => return reply,
                _ => {
                    self.shared.bump(OmidCounter::Redirected.name());
                    *lock(&self.primary) = None;
                }
            }
        }
    }

    /// Begin a transaction: register it, take its start timestamp.
    pub(super) async fn begin(&self) -> Txn {
        let world = &self.shared.world;
        self.disk().begun += 1;
        let (id, _) = world.recorder().begin(self.index as u64, world.now_ns());
        let BeginReply::Started(start_ts) = self.tso_call("begin", id, BeginReq).await else {
            crate::invariant::violated("a begin was answered by a TSO that is not the primary")
        };
        lock(&self.shared.txns).started(id, start_ts);
        Txn {
            id,
            start_ts,
            writes: Vec::new(),
        }
    }

    /// Write `value` to (`row`, `col`) (`None`: delete it, a tombstone):
    /// the data cell goes to the store now, at the transaction's start
    /// timestamp.
    pub(super) async fn write(&self, txn: &mut Txn, row: &str, col: &str, value: Option<String>) {
        let (row_, col_) = (row.to_string(), col.to_string());
        let op = match &value {
            Some(v) => history::Op::Write {
                row: row_,
                col: col_,
                value: v.clone(),
            },
            None => history::Op::Delete {
                row: row_,
                col: col_,
            },
        };
        lock(&self.shared.txns).op(txn.id, op);
        let tablet = tablet_of_row(row, self.shared.cfg.tablets);
        let write = StoreOp::Write {
            row: row.into(),
            col: col.into(),
            start_ts: txn.start_ts,
            value,
        };
        self.caller().store(tablet, Some(txn.id), write).await;
        txn.writes.push((row.into(), col.into()));
    }

    /// The versions of (`row`, `col`) written below `below_ts`, newest first.
    async fn versions(&self, txn: &Txn, row: &str, col: &str) -> Vec<DataVersion> {
        let tablet = tablet_of_row(row, self.shared.cfg.tablets);
        let op = StoreOp::Read {
            row: row.into(),
            col: col.into(),
            below_ts: txn.start_ts,
        };
        match self.caller().store(tablet, Some(txn.id), op).await {
            StoreReply::Versions(vs) => vs,
            other => crate::invariant::violated(&format!("a read was answered {other:?}")),
        }
    }

    /// A commit-table step about the writer of `start_ts`; the entry it answers.
    async fn ct(&self, txn: &Txn, op: StoreOp, start_ts: u64) -> Option<CtEntry> {
        let tablet = tablet_of_txn(start_ts, self.shared.cfg.tablets);
        match self.caller().store(tablet, Some(txn.id), op).await {
            StoreReply::Entry(e) => e,
            other => {
                crate::invariant::violated(&format!("a commit-table step was answered {other:?}"))
            }
        }
    }

    /// Read (`row`, `col`) in `txn`'s snapshot and record what it saw.
    pub(super) async fn read(&self, txn: &Txn, row: &str, col: &str) -> Option<String> {
        let mut seen = None;
        for v in self.versions(txn, row, col).await {
            if let Resolution::Visible { .. } = self.resolve(txn, row, col, &v).await {
                // A tombstone is the newest visible version: no value.
                seen = v.value;
                break;
            }
        }
        let op = history::Op::Read {
            row: row.into(),
            col: col.into(),
            value: seen.clone(),
        };
        lock(&self.shared.txns).op(txn.id, op);
        seen
    }

    /// Resolve version `v` of (`row`, `col`) for `txn`'s snapshot.
    async fn resolve(&self, txn: &Txn, row: &str, col: &str, v: &DataVersion) -> Resolution {
        let ablations = &self.shared.ablations;
        let mut r = read::from_shadow(v, txn.start_ts, ablations);
        if r == Resolution::AskCommitTable {
            self.shared.bump(OmidCounter::CtLookup.name());
            let get = StoreOp::CtGet {
                start_ts: v.start_ts,
            };
            let entry = self.ct(txn, get, v.start_ts).await;
            r = read::from_commit_table(entry, txn.start_ts, ablations);
        }
        let entry = match r {
            Resolution::Invalidate => {
                self.shared.bump(OmidCounter::Invalidated.name());
                let put = StoreOp::CtPut {
                    start_ts: v.start_ts,
                    entry: CtEntry::Invalid,
                    epoch: None,
                };
                let entry = self
                    .ct(txn, put, v.start_ts)
                    .await
                    .unwrap_or(CtEntry::Invalid);
                if entry == CtEntry::Invalid {
                    self.invalidated(v.start_ts);
                }
                entry
            }
            Resolution::RereadShadow => CtEntry::Invalid,
            other => return other,
        };
        let again = self.versions(txn, row, col).await;
        let shadow_ts = again
            .iter()
            .find(|w| w.start_ts == v.start_ts)
            .and_then(|w| w.shadow_ts);
        read::after_invalidation(entry, shadow_ts, txn.start_ts)
    }

    /// Record that this reader left the transaction of `start_ts` invalid.
    fn invalidated(&self, start_ts: u64) {
        let fields = serde_json::json!({"start_ts": start_ts, "by": self.name.to_string()});
        self.shared
            .world
            .event(super::rpc::OmidEvent::Invalidated.name(), fields);
    }

    /// Write or remove `txn`'s data cells' companions: its shadow cells at
    /// `commit_ts`, or (`None`) the data cells themselves.
    async fn each_write(&self, txn: &Txn, commit_ts: Option<u64>) {
        for (row, col) in &txn.writes {
            let (row, col, start_ts) = (row.clone(), col.clone(), txn.start_ts);
            let tablet = tablet_of_row(&row, self.shared.cfg.tablets);
            let op = match commit_ts {
                Some(commit_ts) => StoreOp::Shadow {
                    row,
                    col,
                    start_ts,
                    commit_ts,
                },
                None => StoreOp::Remove { row, col, start_ts },
            };
            self.caller().store(tablet, Some(txn.id), op).await;
        }
    }

    /// End `txn` as its client learnt it.
    fn finish(&self, txn: &Txn, finish: TxnFinish<'_>) {
        let world = &self.shared.world;
        let now = world.now_ns();
        lock(&self.shared.txns).finish(&mut world.recorder(), txn.id, finish, now);
    }

    /// Commit `txn` through the TSO, then complete it; what the client
    /// was told.
    pub(super) async fn commit(self: &Arc<Self>, txn: Txn) -> OmidOutcome {
        if txn.writes.is_empty() {
            self.finish(&txn, TxnFinish::Committed { commit_ts: None });
            return OmidOutcome::Committed { commit_ts: None };
        }
        let start_ts = Some(txn.start_ts);
        self.shared
            .point(OmidPoint::ClientAfterDataWrites, &self.name, start_ts)
            .await;
        let req = CommitReq {
            start_ts: txn.start_ts,
            cells: txn.writes.clone(),
        };
        let reply = self.tso_call("commit", txn.id, req).await;
        let (commit_ts, in_commit_table) = match reply {
            CommitReply::NotPrimary => {
                crate::invariant::violated("a commit was answered by a TSO that is not the primary")
            }
            CommitReply::Aborted { reason } => {
                self.each_write(&txn, None).await;
                self.finish(&txn, TxnFinish::Aborted { reason: &reason });
                return OmidOutcome::Aborted { reason };
            }
            CommitReply::Committed {
                commit_ts,
                in_commit_table,
            } => (commit_ts, in_commit_table),
        };
        lock(&self.shared.txns).commit_ts(txn.id, commit_ts);
        if !in_commit_table {
            return self.commit_late(txn, commit_ts).await;
        }
        let committed = TxnFinish::Committed {
            commit_ts: Some(commit_ts),
        };
        let outcome = OmidOutcome::Committed {
            commit_ts: Some(commit_ts),
        };
        if self.shared.cfg.post_commit == PostCommit::Sync {
            self.post_commit(&txn, commit_ts).await;
            self.finish(&txn, committed);
            return outcome;
        }
        // The decision is in the commit table: the application is told
        // now, the post-commit follows.
        self.finish(&txn, committed);
        let queue_ms = self.shared.cfg.post_commit_queue_ms;
        if queue_ms == 0 {
            self.post_commit(&txn, commit_ts).await;
            return outcome;
        }
        // The post-commit executor's queue: the client goes on.
        let me = self.clone();
        madsim::task::spawn(async move {
            sleep(Duration::from_millis(queue_ms)).await;
            me.post_commit(&txn, commit_ts).await;
        });
        outcome
    }

    /// The post-commit of `txn`, committed at `commit_ts`: its shadow
    /// cells, then its commit-table entry's deletion.
    async fn post_commit(&self, txn: &Txn, commit_ts: u64) {
        let start_ts = Some(txn.start_ts);
        self.shared
            .point(OmidPoint::ClientBeforeShadowCells, &self.name, start_ts)
            .await;
        self.each_write(txn, Some(commit_ts)).await;
        self.shared
            .point(OmidPoint::ClientAfterShadowCells, &self.name, start_ts)
            .await;
        let delete = StoreOp::CtDelete {
            start_ts: txn.start_ts,
        };
        let tablet = tablet_of_txn(txn.start_ts, self.shared.cfg.tablets);
        self.caller().store(tablet, Some(txn.id), delete).await;
    }

    /// Roll `txn` back on its client's word: remove its data cells.
    pub(super) async fn rollback(&self, txn: Txn) {
        self.each_write(&txn, None).await;
        self.finish(
            &txn,
            TxnFinish::Aborted {
                reason: "rolled back",
            },
        );
    }

    /// The planted bug `shadow-cells-before-commit-table`: the shadow cells
    /// first, then the commit-table entry; an invalidated transaction
    /// removes its data cells and aborts.
    async fn commit_late(&self, txn: Txn, commit_ts: u64) -> OmidOutcome {
        self.each_write(&txn, Some(commit_ts)).await;
        self.shared
            .point(
                OmidPoint::ClientAfterShadowCells,
                &self.name,
                Some(txn.start_ts),
            )
            .await;
        let put = StoreOp::CtPut {
            start_ts: txn.start_ts,
            entry: CtEntry::Committed { commit_ts },
            epoch: None,
        };
        match self.ct(&txn, put, txn.start_ts).await {
            Some(CtEntry::Committed { .. }) => {
                self.finish(
                    &txn,
                    TxnFinish::Committed {
                        commit_ts: Some(commit_ts),
                    },
                );
                OmidOutcome::Committed {
                    commit_ts: Some(commit_ts),
                }
            }
            _ => {
                self.each_write(&txn, None).await;
                self.finish(
                    &txn,
                    TxnFinish::Aborted {
                        reason: "invalidated",
                    },
                );
                OmidOutcome::Aborted {
                    reason: "invalidated".into(),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_with_a_duplicate_or_a_lost_committed_append_is_reported() {
        let acked: BTreeSet<String> = ["c0-1.0", "c1-1.0"].map(String::from).into();
        assert!(list_problems("list-0", "c0-1.0,c1-1.0,c2-1.0", Some(&acked)).is_empty());
        assert_eq!(
            list_problems("list-0", "c0-1.0,c0-1.0,c1-1.0", Some(&acked)),
            ["list-0 holds a duplicated element: c0-1.0,c0-1.0,c1-1.0"]
        );
        assert_eq!(
            list_problems("list-0", "c0-1.0", Some(&acked)),
            ["list-0 lost the committed append c1-1.0"]
        );
        assert_eq!(
            list_problems("list-1", "", Some(&acked)).len(),
            2,
            "an empty list lost both"
        );
    }
}
