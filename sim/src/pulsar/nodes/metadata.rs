//! The metadata service (our ZooKeeper and load manager): keeps broker
//! sessions alive on their heartbeats, expires a session silent for
//! `session_timeout_ms`, gives what an expired session owned to the least
//! loaded live broker at the next epoch, and answers lookups. It acts only
//! on what a metadata store knows: when it last heard from each session.
//! Its table is durable (a replicated store survives its own restarts); a
//! restart counts every live session as heard now (ZooKeeper's new leader
//! restarts the session timers).

use crate::pulsar::ids::PulsarEvent;
use crate::pulsar::invariants;
use crate::pulsar::rpc::{Heartbeat, Lookup};
use crate::pulsar::{Cluster, metadata_addr};
use crate::world::port::Port;
use crate::world::serve::serve;
use madsim::time::{Duration, sleep};
use percsim_protocol::pulsar::ownership::{self, MetaRecord, OwnershipTable};
use serde_json::json;
use std::sync::Arc;

pub(crate) async fn main(cluster: Arc<Cluster>) {
    let ep = Port::bind(&cluster.world, metadata_addr());
    {
        let now_ms = cluster.now_ms();
        let mut d = cluster.durable();
        let live: Vec<_> = d.meta.live().map(|(s, _)| s).collect();
        for session in live {
            d.meta.apply(&MetaRecord::Heard { session, now_ms });
        }
    }
    let c = cluster.clone();
    serve(&ep, move |Heartbeat(session)| {
        let c = c.clone();
        async move {
            let now_ms = c.now_ms();
            let mut d = c.durable();
            let (record, reply) = ownership::heartbeat(&d.meta, session, now_ms);
            if let Some(r) = record {
                d.meta.apply(&r);
            }
            reply
        }
    });
    let c = cluster.clone();
    serve(&ep, move |Lookup(resource)| {
        let c = c.clone();
        async move { ownership::lookup(&c.durable().meta, &resource) }
    });
    // Half the heartbeat interval: an expiry is noticed soon after it is due.
    let every = Duration::from_millis((cluster.cfg.heartbeat_ms / 2).max(1));
    loop {
        sleep(every).await;
        scan(&cluster);
        // The load manager sheds what its plan says is due; the next scan
        // places it again.
        cluster.unload_due();
    }
}

/// Expire silent sessions, then give every orphaned resource an owner.
fn scan(cluster: &Cluster) {
    let now_ms = cluster.now_ms();
    let mut d = cluster.durable();
    let at = ownership::Expiry {
        now_ms,
        session_timeout_ms: cluster.cfg.session_timeout_ms,
    };
    let expired = ownership::expire(&d.meta, at);
    for r in &expired {
        d.meta.apply(r);
        if let MetaRecord::Expired { session } = r {
            cluster.event(
                PulsarEvent::SessionExpired,
                json!({"broker": session.broker, "generation": session.generation}),
            );
        }
    }
    let moves = ownership::assign(&d.meta);
    for r in &moves {
        if let MetaRecord::Assigned {
            resource,
            session,
            epoch,
        } = r
        {
            let from = previous_owner(&d.meta, resource);
            cluster.event(
                PulsarEvent::OwnershipMoved,
                json!({"resource": resource.to_string(), "from": from,
                       "to": session.broker, "generation": session.generation, "epoch": epoch}),
            );
        }
        invariants::check_assignment(&d.meta, r);
        d.meta.apply(r);
    }
}

/// The broker that owned `resource` before (none if nobody ever did).
fn previous_owner(
    meta: &OwnershipTable,
    resource: &percsim_protocol::pulsar::ownership::Resource,
) -> Option<usize> {
    meta.owner(resource)?.session.map(|s| s.broker)
}
