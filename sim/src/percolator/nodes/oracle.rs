//! The timestamp oracle: serves from memory inside a range whose upper end
//! it persisted first (see `percsim_protocol::oracle`).

use crate::percolator::rpc::TsCall;
use crate::percolator::{Cluster, CpuKind, invariants, oracle_addr};
use crate::world::serve::{Intake, serve_costed};
use madsim::net::Endpoint;
use percsim_protocol::Ablation;
use percsim_protocol::oracle::Oracle;
use std::sync::{Arc, Mutex};

pub(crate) async fn main(cluster: Arc<Cluster>) {
    let ep = Endpoint::bind(oracle_addr()).await.expect("oracle: bind");
    let persisted = cluster.durable().oracle_max;
    let oracle = Arc::new(Mutex::new(Oracle::recover(
        persisted,
        cluster.cfg.oracle_range,
    )));
    let cost = cluster.cfg.costs.oracle_request_us;
    let at = CpuKind::Oracle.server(&ep, &cluster);
    serve_costed(&at, Intake::Busy, move |cluster: &Cluster, req: TsCall| {
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
        if let (Some(max), false) = (grant.persist_max, forgets) {
            // Durable before the reply leaves: a restart resumes above it.
            cluster.durable().oracle_max = max;
        }
        let mut rec = cluster.world.recorder();
        rec.bump("oracle.requests");
        rec.add("oracle.timestamps", grant.allocation.count);
        (grant.allocation.first, cost)
    });
    std::future::pending::<()>().await
}
