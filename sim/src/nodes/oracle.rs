//! The timestamp oracle: serves from memory inside a range whose upper end
//! it persisted first (see `percsim_protocol::oracle`).

use crate::rpc::TsCall;
use crate::serve::{CpuKind, Intake, Server, serve_costed};
use crate::world::{World, oracle_addr};
use madsim::net::Endpoint;
use percsim_protocol::Ablation;
use percsim_protocol::oracle::Oracle;
use std::sync::{Arc, Mutex};

pub(crate) async fn main(world: Arc<World>) {
    let ep = Endpoint::bind(oracle_addr()).await.expect("oracle: bind");
    let persisted = world.durable().oracle_max;
    let oracle = Arc::new(Mutex::new(Oracle::recover(
        persisted,
        world.cfg.oracle_range,
    )));
    let cost = world.cfg.costs.oracle_request_us;
    let at = Server::new(&ep, &world, CpuKind::Oracle);
    serve_costed(&at, Intake::Busy, move |world: &World, req: TsCall| {
        let grant = oracle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .allocate(req.count);
        let forgets = world.cfg.ablations.has(Ablation::OracleForgets);
        if let (Some(max), false) = (grant.persist_max, forgets) {
            // Durable before the reply leaves: a restart resumes above it.
            world.durable().oracle_max = max;
        }
        let mut rec = world.recorder();
        *rec.counters.entry("oracle.requests".into()).or_default() += 1;
        *rec.counters.entry("oracle.timestamps".into()).or_default() += grant.allocation.count;
        (grant.allocation.first, cost)
    });
    std::future::pending::<()>().await
}
