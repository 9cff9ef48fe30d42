//! The liveness service (Chubby-like): workers hold sessions that expire
//! when they stop renewing them; readers ask whether a lock's owner still
//! holds its session.

use crate::rpc::{IsAlive, KeepAlive, OpenSession};
use crate::world::{World, liveness_addr};
use madsim::net::Endpoint;
use madsim::time::{Duration, Instant};
use percsim_protocol::SessionId;
use std::sync::Arc;

pub(crate) async fn main(world: Arc<World>) {
    let ep = Endpoint::bind(liveness_addr())
        .await
        .expect("liveness: bind");
    // Sessions are memory only: a restart forgets them all, and every owner
    // then looks dead (safe: cleanup is synchronised on the primary).
    world.lock(&world.sessions).clear();
    let ttl = Duration::from_millis(world.cfg.session_ttl_ms);
    {
        let world = world.clone();
        ep.add_rpc_handler(move |req: OpenSession| {
            let world = world.clone();
            async move {
                let id = {
                    let mut d = world.durable();
                    d.next_session += 1;
                    SessionId(d.next_session)
                };
                world
                    .lock(&world.sessions)
                    .insert(id, (req.client, Instant::now() + ttl));
                id
            }
        });
    }
    {
        let world = world.clone();
        ep.add_rpc_handler(move |req: KeepAlive| {
            let world = world.clone();
            async move {
                let mut s = world.lock(&world.sessions);
                match s.get_mut(&req.session) {
                    Some((_, expiry)) if *expiry > Instant::now() => {
                        *expiry = Instant::now() + ttl;
                        true
                    }
                    _ => {
                        s.remove(&req.session);
                        false
                    }
                }
            }
        });
    }
    ep.add_rpc_handler(move |req: IsAlive| {
        let world = world.clone();
        async move {
            world
                .lock(&world.sessions)
                .get(&req.session)
                .is_some_and(|(_, expiry)| *expiry > Instant::now())
        }
    });
    std::future::pending::<()>().await
}
