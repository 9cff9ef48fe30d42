//! Expire: a session not heard from for the session timeout ends, and the
//! ownerships tied to it (ephemeral nodes) with it. The metadata store
//! knows only when it last heard from each session: a dead, paused or
//! cut-off broker looks the same.

use super::state::{MetaRecord, OwnershipTable};

/// The sessions silent for `session_timeout_ms` or more at `now_ms`.
pub fn expire(table: &OwnershipTable, now_ms: u64, session_timeout_ms: u64) -> Vec<MetaRecord> {
    table
        .live()
        .filter(|(_, heard)| now_ms.saturating_sub(*heard) >= session_timeout_ms)
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
        assert!(expire(&t, 599, 500).is_empty());
        assert_eq!(
            expire(&t, 600, 500),
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
        assert!(expire(&t, 800, 500).is_empty());
    }
}
