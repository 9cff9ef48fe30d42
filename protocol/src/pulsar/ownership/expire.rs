//! Expire: a session not heard from for the session timeout ends, and the
//! ownerships tied to it (ephemeral nodes) with it. The metadata store
//! knows only when it last heard from each session: a dead, paused or
//! cut-off broker looks the same.

use super::state::{MetaRecord, OwnershipTable};

/// When the metadata service looks, and how much silence ends a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expiry {
    /// Now (ms).
    pub now_ms: u64,
    /// A session silent this long expires.
    pub session_timeout_ms: u64,
}

/// The sessions silent for the session timeout or more at `at.now_ms`.
pub fn expire(table: &OwnershipTable, at: Expiry) -> Vec<MetaRecord> {
    table
        .live()
        .filter(|(_, heard)| at.now_ms.saturating_sub(*heard) >= at.session_timeout_ms)
        .map(|(session, _)| MetaRecord::Expired { session })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pulsar::ownership::test_util::*;

    #[test]
    fn a_silent_session_expires_at_the_timeout_and_not_before() {
        let mut t = table();
        must_heartbeat(&mut t, b(0), 100);
        must_heartbeat(&mut t, b(1), 300);
        let at = |now_ms| Expiry {
            now_ms,
            session_timeout_ms: 500,
        };
        assert!(expire(&t, at(599)).is_empty());
        assert_eq!(
            expire(&t, at(600)),
            vec![MetaRecord::Expired { session: b(0) }]
        );
        must_expire(&mut t, 800, 500);
        assert!(!t.is_live(b(0)) && !t.is_live(b(1)));
        assert!(t.is_expired(b(0)) && t.is_expired(b(1)));
    }

    #[test]
    fn a_heartbeat_keeps_a_session_alive() {
        let mut t = table();
        must_heartbeat(&mut t, b(0), 0);
        must_heartbeat(&mut t, b(0), 400);
        assert!(must_expire(&mut t, 800, 500).is_empty());
    }
}
