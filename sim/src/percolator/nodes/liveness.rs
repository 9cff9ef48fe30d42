//! The liveness service (Chubby-like): workers hold sessions that expire
//! when they stop renewing them; readers ask whether a lock's owner still
//! holds its session.

use crate::percolator::ids::PercolatorEvent;
use crate::percolator::rpc::{IsAlive, KeepAlive, OpenSession, RowLockCall};
use crate::percolator::{Cluster, CpuKind, liveness_addr};
use crate::world::port::Port;
use crate::world::serve::serve_costed;
use madsim::time::{Duration, Instant};
use percsim_protocol::percolator::SessionId;
use std::sync::Arc;

/// How long a scanner's row lock lasts if its holder never releases it.
const ROW_LOCK_LEASE_MS: u64 = 2_000;

pub(crate) async fn main(cluster: Arc<Cluster>) {
    let ep = Port::bind(&cluster.world, liveness_addr());
    // Sessions are memory only: a restart forgets them all, and every owner
    // then looks dead (safe: cleanup is synchronised on the primary).
    let forgotten = std::mem::take(&mut *cluster.lock(&cluster.sessions));
    for (session, (client, _)) in forgotten {
        session_ended(&cluster, session, client, "service_restart");
    }
    cluster.lock(&cluster.row_locks).clear();
    let cost = cluster.cfg.costs.service_request_us;
    let at = CpuKind::Liveness.server(&ep, &cluster);
    serve_costed(&at, move |w: &Cluster, req: RowLockCall| {
        (row_lock(w, req), cost)
    });
    serve_costed(&at, move |w: &Cluster, req: OpenSession| {
        (open_session(w, req), cost)
    });
    serve_costed(&at, move |w: &Cluster, req: KeepAlive| {
        (keep_alive(w, req), cost)
    });
    serve_costed(&at, move |w: &Cluster, req: IsAlive| {
        (is_alive(w, req), cost)
    });
    std::future::pending::<()>().await
}

/// The scanners' lightweight row locks: memory only, with a lease so a
/// crashed holder's lock lapses.
fn row_lock(cluster: &Cluster, req: RowLockCall) -> bool {
    let mut locks = cluster.lock(&cluster.row_locks);
    let now = Instant::now();
    if !req.lock {
        if locks.get(&req.row).is_some_and(|(h, _)| *h == req.holder) {
            locks.remove(&req.row);
        }
        return true;
    }
    match locks.get(&req.row) {
        Some((h, until)) if *h != req.holder && *until > now => false,
        _ => {
            locks.insert(
                req.row,
                (req.holder, now + Duration::from_millis(ROW_LOCK_LEASE_MS)),
            );
            true
        }
    }
}

fn open_session(cluster: &Cluster, req: OpenSession) -> SessionId {
    let ttl = Duration::from_millis(cluster.cfg.session_ttl_ms);
    let id = {
        let mut d = cluster.durable();
        d.next_session += 1;
        SessionId(d.next_session)
    };
    cluster
        .lock(&cluster.sessions)
        .insert(id, (req.client, Instant::now() + ttl));
    // The liveness rules date a lock's session from here: a fault that
    // ended the client's sessions before this moment did not end this one.
    cluster.event(
        PercolatorEvent::SessionOpened,
        serde_json::json!({"session": id.0, "client": req.client}),
    );
    id
}

fn keep_alive(cluster: &Cluster, req: KeepAlive) -> bool {
    let ttl = Duration::from_millis(cluster.cfg.session_ttl_ms);
    let mut s = cluster.lock(&cluster.sessions);
    match s.get_mut(&req.session) {
        Some((_, expiry)) if *expiry > Instant::now() => {
            *expiry = Instant::now() + ttl;
            true
        }
        _ => {
            let ended = s.remove(&req.session);
            drop(s);
            if let Some((client, _)) = ended {
                session_ended(cluster, req.session, client, "expired");
            }
            false
        }
    }
}

/// Whether `req.session` is alive. An expired session is forgotten here,
/// the first time it is found expired (a keep-alive or a question about it
/// would find it expired all the same), and its end recorded.
fn is_alive(cluster: &Cluster, req: IsAlive) -> bool {
    let mut s = cluster.lock(&cluster.sessions);
    let Some((client, expiry)) = s.get(&req.session).copied() else {
        return false;
    };
    if expiry > Instant::now() {
        return true;
    }
    s.remove(&req.session);
    drop(s);
    session_ended(cluster, req.session, client, "expired");
    false
}

/// Record that session `session` of client `client` ended, and why
/// (`expired`, `service_restart`).
fn session_ended(cluster: &Cluster, session: SessionId, client: usize, why: &str) {
    cluster.event(
        PercolatorEvent::SessionEnded,
        serde_json::json!({"session": session.0, "client": client, "why": why}),
    );
}
