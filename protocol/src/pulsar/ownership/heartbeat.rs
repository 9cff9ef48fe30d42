//! Heartbeat: a broker keeps its metadata session alive (ZooKeeper's
//! session ping). The first heartbeat of a new session opens it. An
//! expired session never comes back: its broker must drop what it served
//! and open a new session (Pulsar's broker on `SessionExpired`).

use super::state::{MetaRecord, OwnershipTable, Resource, SessionId};
use serde::{Deserialize, Serialize};

/// The metadata service's answer to a heartbeat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum HeartbeatReply {
    /// The session is live and owns these resources, at these epochs.
    Alive(Vec<(Resource, u64)>),
    /// The session expired; its ownerships are gone.
    Expired,
}

/// A heartbeat of `session` at `now_ms`: the record to apply and the reply
/// (computed as after the record).
pub fn heartbeat(
    table: &OwnershipTable,
    session: SessionId,
    now_ms: u64,
) -> (Option<MetaRecord>, HeartbeatReply) {
    if table.is_expired(session) {
        return (None, HeartbeatReply::Expired);
    }
    let record = if table.is_live(session) {
        MetaRecord::Heard { session, now_ms }
    } else {
        MetaRecord::Opened { session, now_ms }
    };
    (Some(record), HeartbeatReply::Alive(table.owned_by(session)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pulsar::ownership::test_util::*;

    #[test]
    fn the_first_heartbeat_opens_a_session_and_later_ones_refresh_it() {
        let mut t = table();
        let reply = must_heartbeat(&mut t, b(0), 5);
        assert_eq!(reply, HeartbeatReply::Alive(vec![]));
        assert_eq!(t.live().collect::<Vec<_>>(), vec![(b(0), 5)]);
        must_heartbeat(&mut t, b(0), 9);
        assert_eq!(t.live().collect::<Vec<_>>(), vec![(b(0), 9)]);
    }

    #[test]
    fn an_expired_session_stays_expired() {
        let mut t = table();
        must_heartbeat(&mut t, b(0), 0);
        t.apply(&MetaRecord::Expired { session: b(0) });
        let (record, reply) = heartbeat(&t, b(0), 10);
        assert_eq!((record, reply), (None, HeartbeatReply::Expired));
        assert!(!t.is_live(b(0)));
    }

    #[test]
    fn a_heartbeat_reports_what_the_session_owns() {
        let mut t = table();
        must_heartbeat(&mut t, b(0), 0);
        must_heartbeat(&mut t, b(1), 0);
        must_assign(&mut t);
        let HeartbeatReply::Alive(owned) = must_heartbeat(&mut t, b(0), 1) else {
            panic!("expired")
        };
        assert_eq!(owned, vec![(coord(), 1), (part(1), 1)]);
    }
}
