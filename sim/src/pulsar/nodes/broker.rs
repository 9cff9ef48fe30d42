//! A broker: owns topic partitions (fixed ownership), runs each request
//! and marker through the protocol's `broker` step, makes its write durable
//! first, then applies it to the partition's transaction buffer and
//! subscriptions in memory. A restart rebuilds that memory from the
//! durable logs with the protocol's recover steps; what a step wrote only
//! to memory (the `pending-ack-not-durable` ablation) is lost.

use crate::pulsar::rpc::{BrokerCall, MarkerCall, NotOwner};
use crate::pulsar::store::PartitionStore;
use crate::pulsar::{Cluster, broker_addr};
use crate::world::serve::{Intake, serve};
use madsim::net::Endpoint;
use percsim_protocol::pulsar::broker::{BrokerWrite, PartitionView, deliver_marker, execute};
use percsim_protocol::pulsar::buffer::TbState;
use percsim_protocol::pulsar::client::{BrokerReply, BrokerRequest};
use percsim_protocol::pulsar::points::ServerPoint;
use percsim_protocol::pulsar::subscription::{self, Subscription};
use percsim_protocol::pulsar::types::Partition;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One owned partition as this incarnation holds it in memory.
struct Owned {
    tb: TbState,
    subs: BTreeMap<String, Subscription>,
}

/// This incarnation's memory: its partitions.
type Memory = Arc<Mutex<BTreeMap<Partition, Owned>>>;

pub(crate) async fn main(cluster: Arc<Cluster>, me: usize) {
    let ep = Endpoint::bind(broker_addr(me)).await.expect("broker: bind");
    let memory: Memory = Arc::new(Mutex::new(recover(&cluster, me)));
    let (c, m) = (cluster.clone(), memory.clone());
    serve(&ep, Intake::Busy, move |call: BrokerCall| {
        let (c, m) = (c.clone(), m.clone());
        async move { request(&c, &m, me, call).await }
    });
    let (c, m) = (cluster.clone(), memory.clone());
    serve(&ep, Intake::Busy, move |call: MarkerCall| {
        let (c, m) = (c.clone(), m.clone());
        async move { marker(&c, &m, me, call).await }
    });
    std::future::pending::<()>().await
}

/// Rebuild the owned partitions from the durable logs.
fn recover(cluster: &Cluster, me: usize) -> BTreeMap<Partition, Owned> {
    let d = cluster.durable();
    d.partitions
        .iter()
        .filter(|(p, _)| cluster.owner.get(*p) == Some(&me))
        .map(|(p, store)| {
            let subs = store
                .subs
                .iter()
                .map(|(name, log)| (name.clone(), subscription::recover(log)))
                .collect();
            (
                p.clone(),
                Owned {
                    tb: store.buffer(),
                    subs,
                },
            )
        })
        .collect()
}

/// Run `f` on `partition`'s durable store and memory, if `me` owns it.
fn with_partition<T>(
    cluster: &Cluster,
    memory: &Memory,
    me: usize,
    partition: &Partition,
    f: impl FnOnce(&mut PartitionStore, &mut Owned) -> T,
) -> Result<T, NotOwner> {
    if cluster.owner.get(partition) != Some(&me) {
        return Err(NotOwner);
    }
    let mut d = cluster.durable();
    let mut mem = crate::world::lock(memory);
    match (d.partitions.get_mut(partition), mem.get_mut(partition)) {
        (Some(store), Some(owned)) => Ok(f(store, owned)),
        _ => Err(NotOwner),
    }
}

/// Make `write` durable, then apply it in memory; whether it wrote anything.
fn apply(store: &mut PartitionStore, owned: &mut Owned, write: BrokerWrite) -> bool {
    match write {
        BrokerWrite::Nothing => false,
        BrokerWrite::Partition(entry) => {
            store.log.push(entry.clone());
            owned.tb.apply(&entry);
            true
        }
        BrokerWrite::Subscription { name, mutation } => {
            let log = store.subs.entry(name.clone()).or_default();
            log.extend(mutation.durable.iter().cloned());
            owned.subs.entry(name).or_default().apply(&mutation);
            true
        }
        BrokerWrite::Dispatch { name, dispatch } => {
            // The dispatcher's memory: lost with this incarnation.
            owned.subs.entry(name).or_default().dispatch(&dispatch);
            false
        }
    }
}

async fn request(
    cluster: &Cluster,
    memory: &Memory,
    me: usize,
    call: BrokerCall,
) -> Result<BrokerReply, NotOwner> {
    let ablations = cluster.cfg.ablations;
    let (reply, wrote) = with_partition(cluster, memory, me, &call.partition, |store, owned| {
        let view = PartitionView {
            log: &store.log,
            tb: &owned.tb,
            subs: &owned.subs,
        };
        let (reply, write) = execute(view, &call.req, ablations);
        (reply, apply(store, owned, write))
    })?;
    let point = match &call.req {
        BrokerRequest::Send(m) if m.txn.is_some() => Some(ServerPoint::AfterAppendLogged),
        BrokerRequest::Ack { txn: Some(_), .. } => Some(ServerPoint::AfterPendingAckLogged),
        _ => None,
    };
    if let (true, Some(p)) = (wrote, point) {
        cluster.reached(&format!("broker-{me}"), p).await;
    }
    Ok(reply)
}

async fn marker(
    cluster: &Cluster,
    memory: &Memory,
    me: usize,
    call: MarkerCall,
) -> Result<(), NotOwner> {
    let ablations = cluster.cfg.ablations;
    let partition = match &call.0.to {
        percsim_protocol::pulsar::types::Participant::Partition(p) => p.clone(),
        percsim_protocol::pulsar::types::Participant::Subscription(s) => s.partition.clone(),
    };
    let wrote = with_partition(cluster, memory, me, &partition, |store, owned| {
        let view = PartitionView {
            log: &store.log,
            tb: &owned.tb,
            subs: &owned.subs,
        };
        let write = deliver_marker(view, &call.0, ablations);
        apply(store, owned, write)
    })?;
    if wrote {
        cluster
            .reached(&format!("broker-{me}"), ServerPoint::AfterMarkerLogged)
            .await;
    }
    Ok(())
}
