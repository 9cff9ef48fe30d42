//! The liveness service (ZooKeeper in Omid): it keeps the TSO's lease as
//! a durable record ([`LeaseRecord`]), grants it to one TSO at a time in
//! rising epochs, and tells clients which TSO holds it.

use super::rpc::{self, LeaseReply, LeaseReq};
use super::types::Shared;
use crate::world::lock;
use crate::world::port::Port;
use percsim_protocol::omid::actions::lease::{self, LeaseClock};
use std::sync::Arc;

/// Simulated ms since the run's start.
pub(super) fn now_ms(shared: &Shared) -> u64 {
    shared.world.now_ns() / 1_000_000
}

/// Run one incarnation of the liveness service: serve lease calls.
pub(super) async fn run(shared: Arc<Shared>) {
    let port = Port::bind(&shared.world, rpc::liveness_addr());
    crate::world::serve::serve_counting(&port, move |req: LeaseReq| {
        let shared = shared.clone();
        async move { answer(&shared, &req) }
    });
    std::future::pending::<()>().await
}

/// The answer to `req` now.
fn answer(shared: &Shared, req: &LeaseReq) -> LeaseReply {
    let now_ms = now_ms(shared);
    let mut record = lock(&shared.lease);
    match req {
        LeaseReq::Acquire { who } => {
            let clock = LeaseClock {
                now_ms,
                lease_ms: shared.cfg.lease_ms,
            };
            let before = record.epoch;
            let grant = lease::acquire(&mut record, who, clock);
            if record.epoch != before {
                shared.world.event(
                    rpc::OmidEvent::Takeover.name(),
                    serde_json::json!({"node": who, "epoch": record.epoch}),
                );
            }
            LeaseReply::Grant(grant)
        }
        LeaseReq::Who => LeaseReply::Holder(lease::holder(&record, now_ms).map(String::from)),
    }
}
