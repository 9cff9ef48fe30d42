//! The master: pings tablet servers, and when one misses enough pings in a
//! row, moves its tablets to live servers. A moved tablet is unavailable
//! while it loads. Ownership is recorded in the durable store (as Bigtable
//! records it in Chubby); tablet servers serve only what they own.

use crate::percolator::ids::PercolatorEvent;
use crate::percolator::rpc::{Locate, Ping};
use crate::percolator::{Cluster, CpuKind, master_addr, tablet_server_addr};
use crate::world::deadline;
use crate::world::port::Port;
use crate::world::serve::serve_costed;
use madsim::time::{Duration, Instant, sleep};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;

pub(crate) async fn main(cluster: Arc<Cluster>) {
    let ep = Arc::new(Port::bind(&cluster.world, master_addr()));
    let cost = cluster.cfg.costs.service_request_us;
    let at = CpuKind::Master.server(&ep, &cluster);
    serve_costed(&at, move |w: &Cluster, req: Locate| {
        let owner = w.durable().tablet_owner.get(req.tablet).copied().flatten();
        (owner, cost)
    });
    let n = cluster.cfg.tablet_servers;
    let mut misses = vec![0u32; n];
    // Tablets waiting to load on a new server, with the time they may.
    let mut loading: BTreeMap<usize, Instant> = BTreeMap::new();
    let timeout = Duration::from_millis(cluster.cfg.heartbeat_ms.max(2) / 2);
    loop {
        sleep(Duration::from_millis(cluster.cfg.heartbeat_ms)).await;
        let pings = (0..n).map(|i| {
            let ep = ep.clone();
            async move {
                deadline::call(&ep, tablet_server_addr(i), Ping, timeout)
                    .await
                    .is_ok()
            }
        });
        let alive = futures::future::join_all(pings).await;
        for (i, ok) in alive.iter().enumerate() {
            misses[i] = if *ok { 0 } else { misses[i] + 1 };
        }
        let dead = |i: usize| misses[i] >= cluster.cfg.heartbeat_misses;
        let now = Instant::now();
        let load = Duration::from_millis(cluster.cfg.tablet_load_ms);
        let mut d = cluster.durable();
        let owners = &mut d.tablet_owner;
        for (t, owner) in owners.iter_mut().enumerate() {
            match *owner {
                Some(s) if dead(s) => {
                    *owner = None;
                    loading.insert(t, now + load);
                    cluster.event(
                        PercolatorEvent::TabletUnavailable,
                        json!({"tablet": t, "server": s}),
                    );
                }
                None => {
                    loading.entry(t).or_insert(now + load);
                }
                Some(_) => {}
            }
        }
        let ready: Vec<usize> = loading
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(t, _)| *t)
            .collect();
        for t in ready {
            let mut load_of = vec![0usize; n];
            for s in owners.iter().flatten() {
                load_of[*s] += 1;
            }
            let target = (0..n)
                .filter(|&s| misses[s] == 0)
                .min_by_key(|&s| (load_of[s], s));
            if let Some(s) = target {
                owners[t] = Some(s);
                loading.remove(&t);
                cluster.event(
                    PercolatorEvent::TabletMoved,
                    json!({"tablet": t, "server": s}),
                );
            }
        }
    }
}
