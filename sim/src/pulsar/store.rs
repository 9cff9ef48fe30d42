//! Pulsar's durable storage (our BookKeeper): the coordinator's transaction
//! log, each partition's log, and each subscription's log (acks, pending
//! acks, ends) and the latest snapshot of each partition's transaction
//! buffer, each with the epoch of the owner allowed to append (the
//! fence), and the metadata store's ownership table (our ZooKeeper). It
//! survives every crash; a server's memory (the coordinator's state,
//! transaction buffers, subscriptions) is rebuilt from it by the
//! protocol's recover steps.

use percsim_checker::stream::SubscriptionDecl;
use percsim_protocol::pulsar::PulsarAblations;
use percsim_protocol::pulsar::buffer::{self, Entry, ReadMode, TbSnapshot, TbState};
use percsim_protocol::pulsar::coordinator::{self, LogRecord};
use percsim_protocol::pulsar::ownership::{OwnershipTable, Resource};
use percsim_protocol::pulsar::subscription;
use percsim_protocol::pulsar::subscription::SubLogs;
use percsim_protocol::pulsar::types::{ConsumerRef, MsgPos, Partition};
use std::collections::{BTreeMap, BTreeSet};

/// The one coordinator's id (its TxnIds' first half).
pub(crate) const COORDINATOR: u16 = 0;

/// One partition's durable logs.
#[derive(Debug, Clone, Default)]
pub(crate) struct PartitionStore {
    /// The epoch of the owner allowed to append to the partition's log and
    /// its subscriptions' logs (a new owner opens them all at once).
    pub epoch: u64,
    /// The partition's log: messages and markers; an offset is an index.
    pub log: Vec<Entry>,
    /// The latest snapshot of the partition's transaction buffer (Pulsar's
    /// `__transaction_buffer_snapshot` topic keeps one per topic).
    pub snapshot: Option<TbSnapshot>,
    /// Each subscription's logs (the cursor's and the pending-ack
    /// store's), by name.
    pub subs: BTreeMap<String, SubLogs>,
}

impl PartitionStore {
    /// The transaction buffer as a restart rebuilds it.
    pub(crate) fn buffer(&self) -> TbState {
        buffer::recover(&self.log)
    }
}

/// Everything durable.
#[derive(Debug, Clone, Default)]
pub(crate) struct Durable {
    /// The coordinator's transaction log.
    pub tc_log: Vec<LogRecord>,
    /// The epoch of the coordinator's owner allowed to append to it.
    pub tc_epoch: u64,
    /// Every partition, by name.
    pub partitions: BTreeMap<Partition, PartitionStore>,
    /// The metadata store: broker sessions and who owns what.
    pub meta: OwnershipTable,
}

impl Durable {
    /// An empty store with these partitions; the ownership table lists the
    /// coordinator and every partition, owned by nobody yet.
    pub(crate) fn new(partitions: &[Partition]) -> Self {
        let resources = std::iter::once(Resource::Coordinator(COORDINATOR))
            .chain(partitions.iter().cloned().map(Resource::Partition));
        Durable {
            tc_log: Vec::new(),
            tc_epoch: 0,
            partitions: partitions
                .iter()
                .map(|p| (p.clone(), PartitionStore::default()))
                .collect(),
            meta: OwnershipTable::new(resources),
        }
    }

    /// Transactions the coordinator's log leaves not ended.
    pub(crate) fn open_txns(&self) -> u64 {
        coordinator::recover(COORDINATOR, &self.tc_log)
            .0
            .txns()
            .count() as u64
    }

    /// Partitions whose max-read-position is below their end (an open
    /// transaction holds readers back).
    pub(crate) fn held_partitions(&self) -> u64 {
        self.partitions
            .values()
            .filter(|p| {
                let tb = p.buffer();
                tb.max_read_position() < tb.len()
            })
            .count() as u64
    }
}

impl Durable {
    /// Messages a `drained` subscription could still be given: visible,
    /// neither acknowledged nor pending (the faithful read, whatever the
    /// run's ablations).
    pub(crate) fn undrained(&self, subs: &[SubscriptionDecl]) -> u64 {
        let mut left = 0;
        for decl in subs.iter().filter(|s| s.drained) {
            for (_, store) in self
                .partitions
                .iter()
                .filter(|(p, _)| p.topic == decl.topic)
            {
                let sub = store
                    .subs
                    .get(&decl.name)
                    .map(subscription::recover)
                    .unwrap_or_default();
                let d = buffer::read(
                    &store.log,
                    &store.buffer(),
                    &sub,
                    // The durable state holds no dispatch: any reader sees all.
                    &ConsumerRef {
                        name: String::new(),
                        session: 0,
                    },
                    0,
                    ReadMode::Dispatch,
                    usize::MAX,
                    PulsarAblations::NONE,
                );
                left += d.messages.len() as u64;
            }
        }
        left
    }
}

/// The messages a subscription's logs acknowledge for good, as
/// (entry offset, batch index) (pending acks of transactions not ended
/// are left out): what a broker recovering them holds.
pub(crate) fn acked_positions(logs: &SubLogs, log: &[Entry]) -> BTreeSet<(u64, u32)> {
    let sub = subscription::recover(logs);
    let mut acked = BTreeSet::new();
    for (offset, e) in log.iter().enumerate() {
        let Entry::Message(m) = e else { continue };
        for index in 0..m.batch_size() {
            let pos = MsgPos {
                offset: offset as u64,
                index,
            };
            if sub.is_acked_at(pos) {
                acked.insert((pos.offset, index));
            }
        }
    }
    acked
}

/// The history's name of a partition: `topic-index`.
pub(crate) fn partition_name(p: &Partition) -> String {
    format!("{}-{}", p.topic, p.index)
}
