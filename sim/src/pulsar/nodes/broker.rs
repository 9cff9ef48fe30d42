//! A broker: keeps a metadata session alive with heartbeats, serves what
//! the metadata service assigns to that session (topic partitions, and the
//! transaction coordinator), and runs each request and marker through the
//! protocol's `broker` step, making its write durable first, then applying
//! it to the partition's transaction buffer and subscriptions in memory.
//!
//! Taking over a resource opens its durable logs at the new epoch (which
//! fences the previous owner) and rebuilds memory from them with the
//! protocol's recover steps; what a step wrote only to memory (the
//! `pending-ack-not-durable` ablation) is lost. An append refused by the
//! fence, or a heartbeat answered "expired", makes the broker stop serving
//! the resource (it then answers [`NotOwner`]).

use crate::pulsar::control::At;
use crate::pulsar::ids::PulsarCounter;
use crate::pulsar::ids::{PulsarEvent, kinds};
use crate::pulsar::invariants::{self, Writer};
use crate::pulsar::nodes::coordinator::Tc;
use crate::pulsar::rpc::{BrokerCall, Heartbeat, MarkerCall, NotOwner, Refusal, TcCall};
use crate::pulsar::store::PartitionStore;
use crate::pulsar::{Cluster, broker_addr, metadata_addr};
use crate::world::port::Port;
use crate::world::serve::serve_counting;
use madsim::time::{Duration, Instant, sleep, sleep_until};
use percsim_protocol::pulsar::ablation::PulsarAblations;
use percsim_protocol::pulsar::broker::{BrokerWrite, PartitionView, deliver_marker, execute};
use percsim_protocol::pulsar::buffer::{self, Entry, TbState};
use percsim_protocol::pulsar::client::{BrokerReply, BrokerRequest, TcReply};
use percsim_protocol::pulsar::dedup::ProducerDedup;
use percsim_protocol::pulsar::ownership::{
    Epochs, Fenced, HeartbeatReply, Resource, SessionId, check_append, open_log,
};
use percsim_protocol::pulsar::points::ServerPoint;
use percsim_protocol::pulsar::subscription::{self, SubLog, SubMutation, SubRecord, Subscription};
use percsim_protocol::pulsar::types::{Participant, Partition, SubscriptionKey, TxnAction, TxnId};
use serde_json::json;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

/// One owned partition as this incarnation holds it in memory.
struct Owned {
    /// The epoch of this ownership (the logs were opened at it).
    epoch: u64,
    tb: TbState,
    subs: BTreeMap<String, Subscription>,
    /// The producer deduplication table: learnt as each message is made
    /// durable (not held back with a marker's update, as Pulsar's table
    /// is updated at publish, apart from the transaction buffer).
    dedup: ProducerDedup,
    /// Durable writes memory has not learnt yet, in log order: a marker
    /// whose update is held (its id; a broker stopped between the marker's
    /// append and its callback), and every write made durable after it
    /// (`None`: ready). A managed ledger completes its appends in order, so
    /// no later write reaches memory before a held one.
    held: VecDeque<(Option<u64>, BrokerWrite)>,
    /// The id the next held update gets.
    next_hold: u64,
    /// Whether the recovery is over (until then requests are refused as
    /// not ready, or queued).
    ready: bool,
    /// When the recovery is due to end (`None`: not recovering).
    ready_at: Option<Instant>,
    /// How many of the log's entries the latest snapshot this buffer
    /// noted describes (the next is due `snapshot_every` entries later).
    snapshot_taken_at: u64,
}

impl Owned {
    /// A new ownership at `epoch`, its memory rebuilt from `store`: the
    /// transaction buffer from the latest snapshot and the log after it,
    /// the pending acks from the subscriptions' logs.
    fn recovered(partition: &Partition, epoch: u64, store: &PartitionStore) -> Owned {
        let subs = store
            .subs
            .iter()
            .map(|(name, log)| (name.clone(), subscription::recover(log)))
            .collect();
        let tb = buffer::recover_from_snapshot(store.snapshot.as_ref(), &store.log).tb;
        let resource = Resource::Partition(partition.clone());
        invariants::check_snapshot_recovery(&resource, &tb, &store.buffer());
        Owned {
            tb,
            subs,
            dedup: ProducerDedup::recover(&store.log),
            ready: true,
            snapshot_taken_at: store.snapshot.as_ref().map_or(0, |s| s.taken_at),
            ..Owned::recovering(epoch, store, None)
        }
    }

    /// A new ownership at `epoch` whose recovery has begun and ends at
    /// `ready_at`: the snapshot is loaded, nothing of the logs replayed.
    fn recovering(epoch: u64, store: &PartitionStore, ready_at: Option<Instant>) -> Owned {
        let snapshot = store.snapshot.as_ref();
        Owned {
            epoch,
            tb: snapshot.map(TbState::from_snapshot).unwrap_or_default(),
            subs: BTreeMap::new(),
            dedup: ProducerDedup::default(),
            held: VecDeque::new(),
            next_hold: 0,
            ready: false,
            ready_at,
            snapshot_taken_at: 0,
        }
    }

    /// Hold back memory's update of the durable `write` (and of every
    /// write after it) until [`Owned::release`]; the hold's id.
    fn hold(&mut self, write: BrokerWrite) -> u64 {
        let id = self.next_hold;
        self.next_hold += 1;
        self.held.push_back((Some(id), write));
        id
    }

    /// Memory learns the durable `write`: now, or after the held updates
    /// before it.
    fn learn(&mut self, write: BrokerWrite) {
        match self.held.is_empty() {
            true => apply_in_memory(self, write),
            false => self.held.push_back((None, write)),
        }
    }

    /// The subscriptions as their logs have them, when that differs from
    /// memory: memory plus every held durable subscription write, in log
    /// order (`None` when no subscription write is held).
    fn logged_subs(&self) -> Option<BTreeMap<String, Subscription>> {
        let mut held = self.held.iter().filter_map(|(_, w)| match w {
            BrokerWrite::Subscription { name, mutation } => Some((name, mutation)),
            _ => None,
        });
        let first = held.next()?;
        let mut subs = self.subs.clone();
        for (name, mutation) in std::iter::once(first).chain(held) {
            subs.entry(name.clone()).or_default().apply(mutation);
        }
        Some(subs)
    }

    /// The transaction buffer as the partition's log has it, when that
    /// differs from memory: memory plus every held durable entry, in log
    /// order (`None` when no entry is held).
    fn logged_tb(&self) -> Option<TbState> {
        let mut held = self.held.iter().filter_map(|(_, w)| match w {
            BrokerWrite::Partition(entry) => Some(entry),
            _ => None,
        });
        let first = held.next()?;
        let mut tb = self.tb.clone();
        for entry in std::iter::once(first).chain(held) {
            tb.apply(entry);
        }
        Some(tb)
    }

    /// Release hold `id`, and apply every update at the queue's head no
    /// longer held, in order.
    fn release(&mut self, id: u64) {
        for (hold, _) in &mut self.held {
            if *hold == Some(id) {
                *hold = None;
            }
        }
        while let Some((None, _)) = self.held.front() {
            if let Some((_, write)) = self.held.pop_front() {
                apply_in_memory(self, write);
            }
        }
    }
}

/// One incarnation of a broker.
pub(crate) struct Broker {
    cluster: Arc<Cluster>,
    me: usize,
    name: String,
    ep: Port,
    session: Mutex<SessionId>,
    partitions: Mutex<BTreeMap<Partition, Owned>>,
    tc: Mutex<Option<Arc<Tc>>>,
}

pub(crate) async fn main(cluster: Arc<Cluster>, me: usize) {
    let ep = Port::bind(&cluster.world, broker_addr(me));
    let session = cluster.next_session(me);
    let b = Arc::new(Broker {
        cluster,
        me,
        name: kinds::BROKER.nth(me).to_string(),
        ep: ep.clone(),
        session: Mutex::new(session),
        partitions: Mutex::default(),
        tc: Mutex::default(),
    });
    let t = b.clone();
    serve_counting(&ep, move |call: BrokerCall| {
        let t = t.clone();
        async move { t.request(call).await }
    });
    let t = b.clone();
    serve_counting(&ep, move |call: MarkerCall| {
        let t = t.clone();
        async move { t.marker(call).await }
    });
    let t = b.clone();
    serve_counting(&ep, move |call: TcCall| {
        let t = t.clone();
        async move { t.coordinator(call).await }
    });
    b.heartbeats().await
}

impl Broker {
    fn partitions(&self) -> MutexGuard<'_, BTreeMap<Partition, Owned>> {
        crate::world::lock(&self.partitions)
    }

    /// Send the session's heartbeat every `heartbeat_ms`, and serve what
    /// the answer says the session owns.
    ///
    /// A heartbeat waits for its answer at most one heartbeat interval (or
    /// the RPC timeout, if shorter), as a ZooKeeper client's pings go out a
    /// fixed fraction of the session timeout apart whatever else the broker
    /// is waiting for: a lost ping (the first one reaches a metadata node
    /// that is not listening yet when the broker starts first) must not
    /// hold back the next past the session timeout.
    async fn heartbeats(self: Arc<Self>) {
        let c = &self.cluster;
        let wait_ms = c.world.config().rpc_timeout_ms.min(c.cfg.heartbeat_ms);
        let timeout = Duration::from_millis(wait_ms);
        loop {
            let session = *crate::world::lock(&self.session);
            let answer = crate::world::deadline::call(
                &self.ep,
                metadata_addr(),
                Heartbeat(session),
                timeout,
            )
            .await;
            match answer {
                Ok(HeartbeatReply::Alive(owned)) => self.reconcile(session, owned),
                Ok(HeartbeatReply::Expired) => self.session_lost(session),
                // No answer: go on serving; the logs' fences refuse our
                // appends if what we serve has moved.
                Err(_) => {}
            }
            sleep(Duration::from_millis(c.cfg.heartbeat_ms)).await;
        }
    }

    /// Serve exactly what `session` owns, at the epochs given.
    fn reconcile(self: &Arc<Self>, session: SessionId, owned: Vec<(Resource, u64)>) {
        if *crate::world::lock(&self.session) != session {
            return;
        }
        let held_tc = crate::world::lock(&self.tc)
            .as_ref()
            .filter(|t| t.active())
            .map(|t| t.epoch());
        let held: BTreeMap<Partition, u64> = self
            .partitions()
            .iter()
            .map(|(p, o)| (p.clone(), o.epoch))
            .collect();
        for (resource, epoch) in &owned {
            match resource {
                Resource::Coordinator(_) if held_tc != Some(*epoch) => {
                    self.take_coordinator(*epoch)
                }
                Resource::Partition(p) if held.get(p) != Some(epoch) => {
                    self.take_partition(p, *epoch)
                }
                _ => {}
            }
        }
        if !owned
            .iter()
            .any(|(r, _)| matches!(r, Resource::Coordinator(_)))
        {
            self.drop_coordinator();
        }
        self.partitions()
            .retain(|p, o| owned.contains(&(Resource::Partition(p.clone()), o.epoch)));
    }

    /// Our session expired: stop serving everything and open a new one.
    fn session_lost(&self, session: SessionId) {
        let mut s = crate::world::lock(&self.session);
        if *s != session {
            return;
        }
        self.partitions().clear();
        self.drop_coordinator();
        *s = self.cluster.next_session(self.me);
    }

    /// Take partition `p` at `epoch`: fence its logs, and start
    /// rebuilding its memory ([`Broker::recover_partition`]).
    fn take_partition(self: &Arc<Self>, p: &Partition, epoch: u64) {
        let entries = {
            let d = &mut *self.cluster.durable();
            let Some(store) = d.partitions.get_mut(p) else {
                return;
            };
            let Ok(e) = open_log(Epochs {
                log: store.epoch,
                writer: epoch,
            }) else {
                return; // a later owner holds it already
            };
            store.epoch = e;
            let resource = Resource::Partition(p.clone());
            self.cluster.watch().opened(resource, self.writer(epoch));
            let entries = replay_entries(store);
            let ready_at = Instant::now() + self.cluster.recovery_time(entries);
            let owned = Owned::recovering(epoch, store, Some(ready_at));
            self.partitions().insert(p.clone(), owned);
            entries
        };
        self.taken(&Resource::Partition(p.clone()), epoch);
        let (b, p) = (self.clone(), p.clone());
        madsim::task::spawn(async move { b.recover_partition(p, epoch, entries).await });
    }

    /// Recover partition `p`, taken at `epoch`: the snapshot is loaded;
    /// replaying `entries` log entries takes their time, then memory is
    /// the recovered buffer and pending acks, and requests are served.
    /// Until then a send, a read or a partition's marker is refused as not
    /// ready (Pulsar's transaction buffer answers a publish while it
    /// recovers with the retriable `ServiceUnitNotReadyException`); an ack
    /// or a subscription's marker waits (Pulsar's pending-ack handle
    /// queues them until its replay is done).
    async fn recover_partition(self: Arc<Self>, p: Partition, epoch: u64, entries: u64) {
        let at = At {
            txn: None,
            partition: Some(p.clone()),
        };
        self.cluster
            .reached(&self.name, ServerPoint::DuringRecovery, at)
            .await;
        // The time was counted when the recovery began.
        let per_entry = self.cluster.cfg.recovery_us_per_entry;
        sleep(Duration::from_micros(entries.saturating_mul(per_entry))).await;
        let d = self.cluster.durable();
        let mut mem = self.partitions();
        if let (Some(store), Some(owned)) = (d.partitions.get(&p), mem.get_mut(&p))
            && owned.epoch == epoch
            && !owned.ready
        {
            *owned = Owned::recovered(&p, epoch, store);
        }
    }

    /// Wait until our recovery of `partition` is over: at once `Recovering`
    /// while it runs, unless `queue` (then wait for its end); `NotOwner`
    /// if we do not serve it.
    async fn ready(&self, partition: &Partition, queue: bool) -> Result<(), Refusal> {
        loop {
            let until = match self.partitions().get(partition) {
                None => return Err(Refusal::NotOwner),
                Some(o) if o.ready => return Ok(()),
                Some(o) => o.ready_at,
            };
            if !queue {
                self.cluster.bump(PulsarCounter::NotReady);
                return Err(Refusal::Recovering);
            }
            let soon = Instant::now() + Duration::from_millis(1);
            sleep_until(until.map_or(soon, |t| t.max(soon))).await;
        }
    }

    /// Write a snapshot of `partition`'s transaction buffer if one is due
    /// (`pulsar.buffer.snapshot_every` entries learnt since the latest);
    /// the buffer notes it after [`ServerPoint::AfterSnapshotWritten`].
    /// The write is fenced as an append is.
    async fn snapshot_if_due(&self, partition: &Partition) {
        let every = self.cluster.cfg.buffer.snapshot_every;
        let written = self.with_partition(partition, |store, owned| {
            let due = owned.ready && owned.held.is_empty();
            let Some(snap) = due
                .then(|| buffer::snapshot(&owned.tb, owned.snapshot_taken_at, every))
                .flatten()
            else {
                return Ok(None);
            };
            check_append(Epochs {
                log: store.epoch,
                writer: owned.epoch,
            })?;
            let taken_at = snap.taken_at;
            store.snapshot = Some(snap);
            Ok(Some((taken_at, owned.epoch)))
        });
        let Ok(Some((taken_at, epoch))) = written else {
            return;
        };
        self.cluster.bump(PulsarCounter::SnapshotWritten);
        let at = At {
            txn: None,
            partition: Some(partition.clone()),
        };
        self.cluster
            .reached(&self.name, ServerPoint::AfterSnapshotWritten, at)
            .await;
        let _ = self.with_partition(partition, |_, owned| {
            if owned.epoch == epoch {
                owned.snapshot_taken_at = owned.snapshot_taken_at.max(taken_at);
            }
            Ok(())
        });
    }

    /// Take the coordinator at `epoch`: fence its log, replay it, finish
    /// every COMMITTING or ABORTING transaction.
    fn take_coordinator(&self, epoch: u64) {
        let log = {
            let mut d = self.cluster.durable();
            let Ok(e) = open_log(Epochs {
                log: d.tc_epoch,
                writer: epoch,
            }) else {
                return;
            };
            d.tc_epoch = e;
            let resource = Resource::Coordinator(crate::pulsar::store::COORDINATOR);
            self.cluster.watch().opened(resource, self.writer(epoch));
            d.tc_log.clone()
        };
        let tc = Tc::start(
            self.cluster.clone(),
            self.name.clone(),
            self.ep.clone(),
            epoch,
            log,
        );
        if let Some(old) = crate::world::lock(&self.tc).replace(tc) {
            old.stop();
        }
        self.taken(
            &Resource::Coordinator(crate::pulsar::store::COORDINATOR),
            epoch,
        );
    }

    /// This broker as a writer of logs it opened at `epoch`.
    fn writer(&self, epoch: u64) -> Writer {
        Writer {
            node: self.name.clone(),
            epoch,
        }
    }

    fn taken(&self, resource: &Resource, epoch: u64) {
        self.cluster.event(
            PulsarEvent::OwnershipTaken,
            json!({"node": self.name, "resource": resource.to_string(), "epoch": epoch}),
        );
    }

    fn drop_coordinator(&self) {
        if let Some(old) = crate::world::lock(&self.tc).take() {
            old.stop();
        }
    }

    async fn coordinator(&self, call: TcCall) -> Result<TcReply, Refusal> {
        let tc = crate::world::lock(&self.tc).clone();
        match tc.filter(|t| t.active()) {
            Some(tc) => tc.handle(call.0).await,
            None => Err(Refusal::NotOwner),
        }
    }

    /// Run `f` on `partition`'s durable store and memory, if we serve it.
    /// An append `f` makes at a fenced epoch is refused: we stop serving.
    fn with_partition<T>(
        &self,
        partition: &Partition,
        f: impl FnOnce(&mut PartitionStore, &mut Owned) -> Result<T, Fenced>,
    ) -> Result<T, NotOwner> {
        let mut d = self.cluster.durable();
        let mut mem = self.partitions();
        let (Some(store), Some(owned)) = (d.partitions.get_mut(partition), mem.get_mut(partition))
        else {
            return Err(NotOwner);
        };
        match f(store, owned) {
            Ok(t) => Ok(t),
            Err(fenced) => {
                mem.remove(partition);
                drop((mem, d));
                self.cluster
                    .fenced(&self.name, &Resource::Partition(partition.clone()), fenced);
                Err(NotOwner)
            }
        }
    }

    /// A partition as the protocol's steps see it: its log, and this
    /// owner's memory of it (the deduplication table only when the
    /// cluster deduplicates producers).
    fn view<'a>(&self, store: &'a PartitionStore, owned: &'a Owned) -> PartitionView<'a> {
        partition_view(store, owned, self.cluster.cfg.deduplication)
    }

    /// Make `write` durable and apply it in memory ([`apply`]); whether it
    /// wrote anything. An accepted append is checked against what the logs
    /// must keep (see `invariants`).
    fn write(
        &self,
        partition: &Partition,
        store: &mut PartitionStore,
        owned: &mut Owned,
        write: BrokerWrite,
    ) -> Result<bool, Fenced> {
        let wrote = self.store(partition, store, owned, &write)?;
        if wrote {
            self.remember(partition, store, owned, write);
        }
        Ok(wrote)
    }

    /// The durable half of [`Broker::write`]: append `write` to the logs
    /// (refused by a later owner's fence) and tell the assertions; whether
    /// it wrote anything.
    fn store(
        &self,
        partition: &Partition,
        store: &mut PartitionStore,
        owned: &mut Owned,
        write: &BrokerWrite,
    ) -> Result<bool, Fenced> {
        let wrote = store_write(store, owned, write)?;
        if wrote {
            let resource = Resource::Partition(partition.clone());
            let mut watch = self.cluster.watch();
            watch.append(&resource, &self.writer(owned.epoch));
            for (to, txn, action) in markers_in(partition, write) {
                watch.marker(&to, txn, action);
            }
        }
        Ok(wrote)
    }

    /// The memory half of [`Broker::write`], once the durable half wrote.
    fn remember(
        &self,
        partition: &Partition,
        store: &PartitionStore,
        owned: &mut Owned,
        write: BrokerWrite,
    ) {
        owned.learn(write);
        check_offsets(partition, store, owned);
    }

    /// Reach [`ServerPoint::AppendInFlight`] before a step that appends to
    /// `partition` (`appends` tells from the partition now), when a driver
    /// armed it here or the cluster plans a stop there: a kill there loses
    /// the append, a pause holds it in flight.
    async fn append_issued(
        &self,
        partition: &Partition,
        at: &At,
        appends: impl FnOnce(&PartitionStore, &Owned) -> bool,
    ) {
        let point = ServerPoint::AppendInFlight;
        let planned = self.cluster.cfg.crashes.iter().any(|c| c.point == point);
        if !planned && !self.cluster.armed_on(&self.name, point, at) {
            return;
        }
        let appends = self.with_partition(partition, |store, owned| Ok(appends(store, owned)));
        if appends.unwrap_or(false) {
            self.cluster
                .reached(&self.name, ServerPoint::AppendInFlight, at.clone())
                .await;
        }
    }

    async fn request(&self, call: BrokerCall) -> Result<BrokerReply, Refusal> {
        let ablations = self.cluster.cfg.ablations;
        let queued = matches!(call.req, BrokerRequest::Ack { .. });
        self.ready(&call.partition, queued).await?;
        let txn = match &call.req {
            BrokerRequest::Send(m) => m.txn,
            BrokerRequest::Ack { txn, .. } => *txn,
            BrokerRequest::Read { .. } | BrokerRequest::Close { .. } => None,
        };
        let at = At {
            txn,
            partition: Some(call.partition.clone()),
        };
        let appends = |store: &PartitionStore, owned: &Owned| {
            let view = self.view(store, owned);
            execute_request(view, owned, &call.req, ablations)
                .1
                .is_durable()
        };
        self.append_issued(&call.partition, &at, appends).await;
        let (reply, wrote) = self.with_partition(&call.partition, |store, owned| {
            let view = self.view(store, owned);
            let (reply, write) = execute_request(view, owned, &call.req, ablations);
            Ok((reply, self.write(&call.partition, store, owned, write)?))
        })?;
        let point = match &call.req {
            BrokerRequest::Send(m) if m.txn.is_some() => {
                Some((ServerPoint::AfterAppendLogged, m.txn))
            }
            BrokerRequest::Ack { txn: Some(t), .. } => {
                Some((ServerPoint::AfterPendingAckLogged, Some(*t)))
            }
            _ => None,
        };
        if let (true, Some((p, txn))) = (wrote, point) {
            let at = At { txn, ..at };
            self.cluster.reached(&self.name, p, at).await;
        }
        if wrote && matches!(call.req, BrokerRequest::Send(_)) {
            self.snapshot_if_due(&call.partition).await;
        }
        Ok(reply)
    }

    async fn marker(&self, call: MarkerCall) -> Result<(), Refusal> {
        let ablations = self.cluster.cfg.ablations;
        let partition = match &call.0.to {
            Participant::Partition(p) => p.clone(),
            Participant::Subscription(s) => s.partition.clone(),
        };
        let queued = matches!(call.0.to, Participant::Subscription(_));
        self.ready(&partition, queued).await?;
        let txn = Some(call.0.txn);
        let at = At {
            txn,
            partition: Some(partition.clone()),
        };
        let appends = |store: &PartitionStore, owned: &Owned| {
            deliver_marker(self.view(store, owned), &call.0, ablations).is_durable()
        };
        self.append_issued(&partition, &at, appends).await;
        // The marker is durable first; the buffer learns it after, as
        // Pulsar's transaction buffer updates itself in the append's
        // callback.
        let stored = self.with_partition(&partition, |store, owned| {
            let write = deliver_marker(self.view(store, owned), &call.0, ablations);
            let (write, cursor) = split_cursor_acks(write);
            let wrote = self.store(&partition, store, owned, &write)?;
            // Memory learns it in the append's callback, after this point.
            Ok(wrote.then(|| (owned.hold(write), owned.epoch, cursor)))
        })?;
        let Some((hold, epoch, cursor)) = stored else {
            return Ok(());
        };
        if let Some(cursor) = cursor {
            self.cursor_acks(&partition, &at, epoch, cursor).await?;
        }
        self.cluster
            .reached(&self.name, ServerPoint::BeforeMarkerApplied, at.clone())
            .await;
        self.with_partition(&partition, |store, owned| {
            // A later ownership (after a pause here) rebuilt its memory
            // from the log, marker included.
            if owned.epoch == epoch {
                owned.release(hold);
                check_offsets(&partition, store, owned);
            }
            Ok(())
        })?;
        self.cluster
            .reached(&self.name, ServerPoint::AfterMarkerLogged, at)
            .await;
        if matches!(call.0.to, Participant::Partition(_)) {
            self.snapshot_if_due(&partition).await;
        }
        Ok(())
    }
}

/// The log entries a recovery of `store` replays: the partition's log
/// after its latest snapshot's max-read-position, and every subscription's
/// log.
fn replay_entries(store: &PartitionStore) -> u64 {
    let buffer = buffer::recover_from_snapshot(store.snapshot.as_ref(), &store.log).replayed;
    let subs = store.subs.values();
    buffer
        + subs
            .map(|l| (l.cursor.len() + l.pending.len()) as u64)
            .sum::<u64>()
}

impl Broker {
    /// Append a commit's cursor acks, after its mark is durable in the
    /// pending-ack log: first reach [`ServerPoint::BeforeCursorAcked`] when
    /// a driver armed it or the cluster plans a stop there (a kill there
    /// leaves the mark without the acks, for recovery to finish). A later
    /// owner (after a pause there) recovered the acks from the mark.
    async fn cursor_acks(
        &self,
        partition: &Partition,
        at: &At,
        epoch: u64,
        cursor: BrokerWrite,
    ) -> Result<(), NotOwner> {
        let point = ServerPoint::BeforeCursorAcked;
        let planned = self.cluster.cfg.crashes.iter().any(|c| c.point == point);
        if planned || self.cluster.armed_on(&self.name, point, at) {
            self.cluster.reached(&self.name, point, at.clone()).await;
        }
        self.with_partition(partition, |store, owned| {
            if owned.epoch == epoch {
                self.write(partition, store, owned, cursor)?;
            }
            Ok(())
        })
    }
}

/// Split a subscription's write into the pending-ack log's records and,
/// if it has any, the cursor's that follow them (a commit's acks): the
/// two logs are appended one after the other.
fn split_cursor_acks(write: BrokerWrite) -> (BrokerWrite, Option<BrokerWrite>) {
    let BrokerWrite::Subscription { name, mutation } = write else {
        return (write, None);
    };
    let (pending, cursor): (Vec<SubRecord>, Vec<SubRecord>) = mutation
        .durable
        .into_iter()
        .partition(|r| r.log() == SubLog::PendingAck);
    if pending.is_empty() || cursor.is_empty() {
        let durable = pending.into_iter().chain(cursor).collect();
        let mutation = SubMutation {
            durable,
            ..mutation
        };
        return (BrokerWrite::Subscription { name, mutation }, None);
    }
    let first = SubMutation {
        durable: pending,
        volatile: mutation.volatile,
    };
    let rest = SubMutation {
        durable: cursor,
        volatile: Vec::new(),
    };
    (
        BrokerWrite::Subscription {
            name: name.clone(),
            mutation: first,
        },
        Some(BrokerWrite::Subscription {
            name,
            mutation: rest,
        }),
    )
}

/// A partition's log and an owner's memory of it, as the protocol's steps
/// see them (the deduplication table only when `dedup`).
fn partition_view<'a>(
    store: &'a PartitionStore,
    owned: &'a Owned,
    dedup: bool,
) -> PartitionView<'a> {
    PartitionView {
        log: &store.log,
        tb: &owned.tb,
        subs: &owned.subs,
        dedup: dedup.then_some(&owned.dedup),
    }
}

/// Run a client's request on `view`. A send is judged against the
/// transaction buffer, and an ack against the subscriptions, as their logs
/// have them (`owned`'s held writes applied): a transaction whose end
/// marker is logged here has ended, even while the marker's update of
/// memory is held, so a late send or ack of it is refused rather than
/// logged after its end, where it would stay open (holding the partition's
/// reads back) or pending (never delivered again) for good.
fn execute_request(
    view: PartitionView<'_>,
    owned: &Owned,
    req: &BrokerRequest,
    ablations: PulsarAblations,
) -> (BrokerReply, BrokerWrite) {
    match req {
        BrokerRequest::Send(_) => {
            if let Some(tb) = owned.logged_tb() {
                return execute(PartitionView { tb: &tb, ..view }, req, ablations);
            }
        }
        BrokerRequest::Ack { .. } => {
            if let Some(subs) = owned.logged_subs() {
                return execute(
                    PartitionView {
                        subs: &subs,
                        ..view
                    },
                    req,
                    ablations,
                );
            }
        }
        _ => {}
    }
    execute(view, req, ablations)
}

/// Assert that `partition`'s owner remembers every entry of its log, once
/// memory has learnt every durable write (nothing held) and while no later
/// owner opened the log: a stale owner frozen past its session's expiry
/// may wake to a log that its successor has appended to (it is refused at
/// its next append).
fn check_offsets(partition: &Partition, store: &PartitionStore, owned: &Owned) {
    if owned.ready && owned.held.is_empty() && store.epoch == owned.epoch {
        let resource = Resource::Partition(partition.clone());
        invariants::check_next_offset(&resource, owned.tb.len(), store.log.len() as u64);
    }
}

/// The markers `write` appends to `partition`'s logs: the participant whose
/// log gets each, the transaction it ends and how.
fn markers_in(partition: &Partition, write: &BrokerWrite) -> Vec<(Participant, TxnId, TxnAction)> {
    match write {
        BrokerWrite::Partition(Entry::Marker { txn, action }) => {
            vec![(Participant::Partition(partition.clone()), *txn, *action)]
        }
        BrokerWrite::Subscription { name, mutation } => {
            let to = Participant::Subscription(SubscriptionKey {
                partition: partition.clone(),
                name: name.clone(),
            });
            let ends = mutation.durable.iter().filter_map(|r| match r {
                SubRecord::End { txn, action } => Some((to.clone(), *txn, *action)),
                _ => None,
            });
            ends.collect()
        }
        _ => Vec::new(),
    }
}

/// Make `write` durable, then apply it in memory; whether it wrote
/// anything. Refused if the logs were opened by a later owner.
#[cfg(test)]
fn apply(
    store: &mut PartitionStore,
    owned: &mut Owned,
    write: BrokerWrite,
) -> Result<bool, Fenced> {
    let wrote = store_write(store, owned, &write)?;
    if wrote {
        apply_in_memory(owned, write);
    }
    Ok(wrote)
}

/// The durable half of a write: append it to the logs; whether it wrote
/// anything. Refused if the logs were opened by a later owner. A read's
/// dispatch has no durable half: it goes to the dispatcher's memory here.
fn store_write(
    store: &mut PartitionStore,
    owned: &mut Owned,
    write: &BrokerWrite,
) -> Result<bool, Fenced> {
    match write {
        BrokerWrite::Nothing => return Ok(false),
        BrokerWrite::Dispatch { name, dispatch } => {
            // The dispatcher's memory, lost with this incarnation: nothing
            // is appended, so there is nothing for a fence to refuse.
            owned
                .subs
                .entry(name.clone())
                .or_default()
                .dispatch(dispatch);
            return Ok(false);
        }
        BrokerWrite::Close { name, consumer } => {
            // The dispatcher's memory too.
            owned.subs.entry(name.clone()).or_default().close(consumer);
            return Ok(false);
        }
        _ => {}
    }
    check_append(Epochs {
        log: store.epoch,
        writer: owned.epoch,
    })?;
    match write {
        BrokerWrite::Nothing | BrokerWrite::Dispatch { .. } | BrokerWrite::Close { .. } => {}
        BrokerWrite::Partition(entry) => {
            owned.dedup.record(entry, store.log.len() as u64);
            store.log.push(entry.clone());
        }
        BrokerWrite::Subscription { name, mutation } => {
            let logs = store.subs.entry(name.clone()).or_default();
            for record in &mutation.durable {
                logs.append(record.clone());
            }
        }
    }
    Ok(true)
}

/// The memory half of a write [`store_write`] made durable: the
/// transaction buffer or the subscription learns it.
fn apply_in_memory(owned: &mut Owned, write: BrokerWrite) {
    match write {
        BrokerWrite::Nothing | BrokerWrite::Dispatch { .. } | BrokerWrite::Close { .. } => {}
        BrokerWrite::Partition(entry) => owned.tb.apply(&entry),
        BrokerWrite::Subscription { name, mutation } => {
            owned.subs.entry(name).or_default().apply(&mutation);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use percsim_protocol::pulsar::types::{Message, ProducerRef};

    fn message(payload: &str) -> BrokerWrite {
        BrokerWrite::Partition(Entry::Message(Message {
            txn: None,
            producer: PRODUCER_1,
            sequence_id: 0,
            payload: payload.into(),
            batch: Vec::new(),
        }))
    }

    /// An empty partition's storage, its logs opened at `epoch`.
    fn store_at(epoch: u64) -> PartitionStore {
        PartitionStore {
            epoch,
            ..PartitionStore::default()
        }
    }

    const PRODUCER_1: ProducerRef = ProducerRef {
        producer_id: 1,
        epoch: 0,
    };

    /// The abort marker of `txn`, produced by `producer`, for `to`.
    fn abort_marker(
        txn: TxnId,
        producer: ProducerRef,
        to: Participant,
    ) -> percsim_protocol::pulsar::types::Marker {
        percsim_protocol::pulsar::types::Marker {
            txn,
            producer,
            action: TxnAction::Abort,
            to,
        }
    }

    fn owned(epoch: u64) -> Owned {
        Owned {
            ready: true,
            ..Owned::recovering(epoch, &PartitionStore::default(), None)
        }
    }

    #[test]
    fn a_fenced_append_reaches_neither_the_log_nor_memory() {
        let mut store = store_at(1);
        let mut old = owned(1);
        assert_eq!(apply(&mut store, &mut old, message("a")), Ok(true));
        // A new owner opens the logs at epoch 2.
        store.epoch = open_log(Epochs {
            log: store.epoch,
            writer: 2,
        })
        .unwrap();
        let refused = apply(&mut store, &mut old, message("b"));
        assert_eq!(refused, Err(Fenced { log: 2, writer: 1 }));
        assert_eq!(store.log.len(), 1, "the stale append landed");
        assert_eq!(old.tb.len(), 1, "the stale append was applied in memory");
        let mut new = owned(2);
        assert_eq!(apply(&mut store, &mut new, message("c")), Ok(true));
        assert_eq!(store.log.len(), 2);
    }

    fn marker(seq: u64) -> BrokerWrite {
        BrokerWrite::Partition(Entry::Marker {
            txn: TxnId {
                coordinator: 0,
                seq,
            },
            action: TxnAction::Commit,
        })
    }

    /// A write made durable after a marker whose update is held waits for
    /// it: memory learns the log's entries in the log's order, whichever
    /// is released first, and the offsets check holds once all are learnt.
    #[test]
    fn memory_learns_held_writes_in_the_logs_order() {
        let p = Partition::new("t", 0);
        let mut store = store_at(1);
        let mut o = owned(1);
        assert_eq!(apply(&mut store, &mut o, message("a")), Ok(true));
        assert_eq!(store_write(&mut store, &mut o, &marker(1)), Ok(true));
        let first = o.hold(marker(1));
        assert_eq!(store_write(&mut store, &mut o, &marker(2)), Ok(true));
        let second = o.hold(marker(2));
        assert_eq!(store_write(&mut store, &mut o, &message("b")), Ok(true));
        o.learn(message("b"));
        assert_eq!(o.tb.len(), 1, "learnt before the held marker");
        o.release(second);
        assert_eq!(o.tb.len(), 1, "the second marker overtook the first");
        o.release(first);
        assert_eq!(o.tb.len(), 4);
        assert!(o.held.is_empty());
        check_offsets(&p, &store, &o);
        o.learn(message("c"));
        assert_eq!(o.tb.len(), 5, "nothing held: learnt at once");
    }

    /// The offsets check stands down for a stale owner (a later owner
    /// opened the log) and while an update is held; otherwise it trips.
    #[test]
    fn the_offsets_check_binds_the_current_owner_with_nothing_held() {
        let p = Partition::new("t", 0);
        let mut store = store_at(1);
        let mut o = owned(1);
        store.log.push(match message("a") {
            BrokerWrite::Partition(e) => e,
            _ => unreachable!(),
        });
        let current = std::panic::catch_unwind(|| check_offsets(&p, &store, &owned(1)));
        assert!(current.is_err(), "a shorter memory passed");
        o.hold(marker(1));
        check_offsets(&p, &store, &o);
        store.epoch = 2;
        check_offsets(&p, &store, &owned(1));
    }

    /// A marker resent while the first one's update is held (its append's
    /// callback pending) finds the transaction still open in memory and is
    /// appended again, with the same outcome, as Pulsar's transaction
    /// buffer does; the assertions accept the repeat.
    #[test]
    fn a_marker_resent_while_the_first_is_held_is_appended_again() {
        let p = Partition::new("t", 0);
        let t = TxnId {
            coordinator: 0,
            seq: 1,
        };
        let mut store = store_at(1);
        let mut o = owned(1);
        let mut sent = message("a");
        if let BrokerWrite::Partition(Entry::Message(m)) = &mut sent {
            m.txn = Some(t);
        }
        assert_eq!(apply(&mut store, &mut o, sent), Ok(true));
        let marker = abort_marker(t, PRODUCER_1, Participant::Partition(p.clone()));
        let mut watch = crate::pulsar::invariants::Watch::new(Default::default());
        watch.tc_record(&percsim_protocol::pulsar::coordinator::LogRecord::Open {
            txn: t,
            producer: marker.producer,
            deadline_ms: 1,
        });
        watch.tc_record(&percsim_protocol::pulsar::coordinator::LogRecord::State {
            txn: t,
            state: percsim_protocol::pulsar::coordinator::TxnState::Aborting,
        });
        let mut holds = Vec::new();
        for _ in 0..2 {
            let view = partition_view(&store, &o, true);
            let write = deliver_marker(view, &marker, Default::default());
            assert_eq!(store_write(&mut store, &mut o, &write), Ok(true));
            for (to, txn, action) in markers_in(&p, &write) {
                watch.marker(&to, txn, action);
            }
            holds.push(o.hold(write));
        }
        for h in holds {
            o.release(h);
        }
        assert_eq!(store.log.len(), 3, "{:?}", store.log);
        assert_eq!(o.tb.ended(t), Some(TxnAction::Abort));
        // Learnt, the marker is not written a third time.
        let view = partition_view(&store, &o, true);
        let again = deliver_marker(view, &marker, Default::default());
        assert_eq!(again, BrokerWrite::Nothing);
    }

    /// An ack of a transaction whose end marker is logged on the
    /// subscription but not yet learnt by memory (the marker's update is
    /// held) is refused: logged after the end, it would leave the message
    /// pending for good, in memory once released and in every later
    /// owner's recovery, and never delivered again.
    #[test]
    fn an_ack_after_a_held_end_marker_is_refused_and_nothing_stays_pending() {
        let p = Partition::new("in", 0);
        let t = TxnId {
            coordinator: 0,
            seq: 2,
        };
        let mut store = store_at(1);
        let mut o = owned(1);
        assert_eq!(apply(&mut store, &mut o, message("a")), Ok(true));
        let to = Participant::Subscription(SubscriptionKey {
            partition: p.clone(),
            name: "proc".into(),
        });
        let end = abort_marker(t, PRODUCER_1, to);
        let view = partition_view(&store, &o, false);
        let write = deliver_marker(view, &end, Default::default());
        assert_eq!(store_write(&mut store, &mut o, &write), Ok(true));
        let hold = o.hold(write);
        let late_ack = BrokerRequest::Ack {
            subscription: "proc".into(),
            offset: 0,
            txn: Some(t),
            index: None,
            cumulative: false,
            kind: Default::default(),
        };
        let view = partition_view(&store, &o, false);
        let (reply, write) = execute_request(view, &o, &late_ack, Default::default());
        assert_eq!(
            reply,
            BrokerReply::AckRefused(subscription::AckError::TxnEnded(t))
        );
        if store_write(&mut store, &mut o, &write) == Ok(true) {
            o.learn(write);
        }
        o.release(hold);
        assert_eq!(o.subs["proc"].pending_txn(0), None, "pending in memory");
        let recovered = subscription::recover(&store.subs["proc"]);
        assert_eq!(recovered.pending_txn(0), None, "pending after recovery");
    }

    /// A send of a transaction whose abort marker is logged on the
    /// partition but not yet learnt by memory is refused: appended after
    /// the marker, it would open the transaction again in the buffer, and
    /// hold the partition's reads back for good.
    #[test]
    fn a_send_after_a_held_end_marker_is_refused_and_nothing_stays_open() {
        let p = Partition::new("events", 2);
        let t = TxnId {
            coordinator: 0,
            seq: 12,
        };
        let mut store = store_at(1);
        let mut o = owned(1);
        let producer = ProducerRef {
            producer_id: 2,
            epoch: 0,
        };
        let end = abort_marker(t, producer, Participant::Partition(p.clone()));
        let view = partition_view(&store, &o, false);
        let write = deliver_marker(view, &end, Default::default());
        assert_eq!(store_write(&mut store, &mut o, &write), Ok(true));
        let hold = o.hold(write);
        let late_send = BrokerRequest::Send(Message {
            txn: Some(t),
            producer,
            sequence_id: 7,
            payload: "late".into(),
            batch: Vec::new(),
        });
        let view = partition_view(&store, &o, false);
        let (reply, write) = execute_request(view, &o, &late_send, Default::default());
        assert!(matches!(reply, BrokerReply::SendRefused(_)), "{reply:?}");
        if store_write(&mut store, &mut o, &write) == Ok(true) {
            o.learn(write);
        }
        o.release(hold);
        assert_eq!(store.log.len(), 1, "{:?}", store.log);
        assert_eq!(o.tb.ended(t), Some(TxnAction::Abort));
    }

    #[test]
    fn a_write_of_nothing_needs_no_fence() {
        let mut store = PartitionStore {
            epoch: 5,
            ..PartitionStore::default()
        };
        assert_eq!(
            apply(&mut store, &mut owned(1), BrokerWrite::Nothing),
            Ok(false)
        );
    }
}
