//! The liveness service (Chubby-like): workers hold sessions that expire
//! when they stop renewing them; readers ask whether a lock's owner still
//! holds its session.

use crate::rpc::{IsAlive, KeepAlive, OpenSession};
use crate::world::{World, liveness_addr};
use madsim::net::Endpoint;
use madsim::time::{Duration, Instant};
use percsim_protocol::SessionId;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

type Sessions = Arc<Mutex<BTreeMap<SessionId, Instant>>>;

pub(crate) async fn main(world: Arc<World>) {
    let ep = Endpoint::bind(liveness_addr())
        .await
        .expect("liveness: bind");
    // Sessions are memory only: a restart forgets them all, and every owner
    // then looks dead (safe: cleanup is synchronised on the primary).
    let sessions: Sessions = Arc::default();
    let ttl = Duration::from_millis(world.cfg.session_ttl_ms);
    {
        let sessions = sessions.clone();
        let world = world.clone();
        ep.add_rpc_handler(move |_req: OpenSession| {
            let sessions = sessions.clone();
            let world = world.clone();
            async move {
                let id = {
                    let mut d = world.durable();
                    d.next_session += 1;
                    SessionId(d.next_session)
                };
                lock(&sessions).insert(id, Instant::now() + ttl);
                id
            }
        });
    }
    {
        let sessions = sessions.clone();
        ep.add_rpc_handler(move |req: KeepAlive| {
            let sessions = sessions.clone();
            async move {
                let mut s = lock(&sessions);
                match s.get_mut(&req.session) {
                    Some(expiry) if *expiry > Instant::now() => {
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
        let sessions = sessions.clone();
        async move {
            lock(&sessions)
                .get(&req.session)
                .is_some_and(|expiry| *expiry > Instant::now())
        }
    });
    std::future::pending::<()>().await
}

fn lock(s: &Sessions) -> std::sync::MutexGuard<'_, BTreeMap<SessionId, Instant>> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}
