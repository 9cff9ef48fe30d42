//! The timestamp oracle: serves from memory inside a range whose upper end
//! it persisted first (see `percsim_protocol::percolator::oracle`).

use crate::percolator::ids::PercolatorCounter;
use crate::percolator::rpc::TsCall;
use crate::percolator::{Cluster, CpuKind, invariants, oracle_addr};
use crate::world::port::Port;
use crate::world::serve::{AfterHandler, serve_costed_at_points};
use percsim_protocol::percolator::Ablation;
use percsim_protocol::percolator::client::Point;
use percsim_protocol::percolator::oracle::Oracle;
use std::sync::{Arc, Mutex};

pub(crate) async fn main(cluster: Arc<Cluster>) {
    let ep = Port::bind(&cluster.world, oracle_addr());
    let persisted = cluster.durable().oracle_max;
    let oracle = Arc::new(Mutex::new(Oracle::recover(
        persisted,
        cluster.cfg.oracle_range,
    )));
    let cost = cluster.cfg.costs.oracle_request_us;
    let at = CpuKind::Oracle.server(&ep, &cluster);
    serve_costed_at_points(&at, move |cluster: &Cluster, req: TsCall| {
        let grant = oracle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .allocate(req.count);
        if invariants::oracle_monotone(cluster.cfg.ablations) {
            let mut high = cluster.lock(&cluster.granted);
            invariants::check_grant(*high, grant.allocation.first.0);
            *high = grant.allocation.first.0 + grant.allocation.count.saturating_sub(1);
        }
        let forgets = cluster.cfg.ablations.has(Ablation::OracleForgets);
        let mut after = AfterHandler::Reply;
        if let Some(max) = grant.persist_max {
            // Durable before the reply leaves: a restart resumes above it.
            // The planted bug skips the write, not the moment: a stop there
            // restarts the oracle below what it granted.
            if !forgets {
                cluster.durable().oracle_max = max;
            }
            after = cluster.server_point(Point::OracleAfterPersist, 0);
        }
        let mut rec = cluster.world.recorder();
        rec.bump(PercolatorCounter::OracleRequests.name());
        rec.add(
            PercolatorCounter::OracleTimestamps.name(),
            grant.allocation.count,
        );
        (grant.allocation.first, cost, after)
    });
    std::future::pending::<()>().await
}
