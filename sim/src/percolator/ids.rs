//! Percolator's own identities as closed enums (the pattern of
//! [`crate::world::ids`]): the counters its nodes bump and the kinds of
//! event they record. Histories, JSON lines and reports spell the names;
//! code names the variants, so a rename cannot silently break a coverage
//! item, a script's count assertion or a summary.

use percsim_protocol::percolator::client::{CleanupKind, Suspicion};

crate::identities! {
    /// Counters bumped by Percolator's nodes.
    pub enum PercolatorCounter {
        /// A client's batched timestamp RPC to the oracle.
        ClientTsRpcs => ("client.ts_rpcs", "timestamp RPCs a client sent (one per batch)"),
        /// Timestamps asked for in those RPCs.
        ClientTsRequests => ("client.ts_requests", "timestamps a client asked for"),
        /// A read waited on a live owner's lock.
        ClientLockWaits => ("client.lock_waits", "a read waited on a lock"),
        /// A notify scanner found a dirty row.
        ScanRows => ("scan.rows", "a notify scanner found a dirty row"),
        /// A scanner found a dirty row already taken by another scanner.
        ScanCollisions => ("scan.collisions", "a scanner found a row taken by another"),
        /// A scanner jumped to a random position after a collision.
        ScanJumps => ("scan.jumps", "a scanner jumped away from a taken row"),
        /// An observer's run committed.
        ObserverRan => ("observer.ran", "an observer run committed"),
        /// An observer found its cell unchanged since its acknowledgment.
        ObserverNothingNew => ("observer.nothing_new", "a notification found already processed"),
        /// An observer's transaction aborted or its outcome is unknown.
        ObserverFailed => ("observer.failed", "an observer run aborted or ended unknown"),
        /// An observer's read failed.
        ObserverError => ("observer.error", "an observer run failed to read"),
        /// Timestamp requests the oracle served.
        OracleRequests => ("oracle.requests", "timestamp requests the oracle served"),
        /// Timestamps the oracle handed out.
        OracleTimestamps => ("oracle.timestamps", "timestamps the oracle handed out"),
        /// A late or duplicated prewrite met its transaction's rollback record.
        StoreLatePrewriteRejected => (
            "store.late_prewrite_rejected",
            "a late prewrite was rejected by a rollback record"
        ),
        /// A prewrite reached a cell where its transaction had already been
        /// rolled back (counted from the simulator's own record of
        /// rollbacks, whether or not the protocol left a rollback record).
        StoreLatePrewriteAfterRollback => (
            "store.late_prewrite_after_rollback",
            "a prewrite reached a cell after its transaction was rolled back there"
        ),
        /// A prewrite that reached a cell after its transaction was rolled
        /// back there succeeded: it locked the cell again (possible only
        /// without a rollback record, e.g. under `no-rollback-record`).
        StoreLatePrewriteRelocked => (
            "store.late_prewrite_relocked",
            "a prewrite locked a cell again after its transaction was rolled back there"
        ),
        /// A commit succeeded on a cell where its transaction had been rolled
        /// back (possible only on a lock taken again by a late prewrite, or
        /// without the commit's lock check).
        StoreCommitAfterRollback => (
            "store.commit_after_rollback",
            "a commit succeeded on a cell after its transaction was rolled back there"
        ),
        /// Every attempt of a primary commit timed out; the store holds its commit.
        CommitPrimaryReplyLost => ("net.commit_primary.reply_lost", "a primary commit was applied but every reply was lost"),
        /// Every attempt of a primary commit timed out; the store holds no commit.
        CommitPrimaryRequestLost => ("net.commit_primary.request_lost", "a primary commit timed out and was never applied"),
        /// Every attempt of a secondary commit timed out; the store holds its commit.
        CommitSecondaryReplyLost => ("net.commit_secondary.reply_lost", "a secondary commit was applied but every reply was lost"),
        /// Every attempt of a secondary commit timed out; the store holds no commit.
        CommitSecondaryRequestLost => ("net.commit_secondary.request_lost", "a secondary commit timed out and was never applied"),
        /// An unknown outcome whose primary is committed in the store.
        TxnUnknownReplyLost => ("txn.unknown.reply_lost", "an outcome unknown to the client, committed in the store"),
        /// An unknown outcome whose primary is not committed in the store.
        TxnUnknownRequestLost => ("txn.unknown.request_lost", "an outcome unknown to the client, not committed in the store"),
        /// A secondary rolled forward.
        RollForward => ("cleanup.roll_forward", "a secondary rolled forward"),
        /// ... by a reader that found the owner's token gone.
        RollForwardTokenGone => ("cleanup.roll_forward.token_gone", "a roll-forward after the owner's token expired"),
        /// ... by a reader that found the lock stale.
        RollForwardStale => ("cleanup.roll_forward.stale", "a roll-forward of a stale lock"),
        /// ... by the owner itself (never expected).
        RollForwardOwnAbort => ("cleanup.roll_forward.own_abort", "a roll-forward by the owner itself"),
        /// ... by a reader (token gone or stale).
        RollForwardByReader => ("cleanup.roll_forward.by_reader", "a roll-forward by a reader"),
        /// A lock rolled back.
        RollBack => ("cleanup.roll_back", "a lock rolled back"),
        /// ... by a reader that found the owner's token gone.
        RollBackTokenGone => ("cleanup.roll_back.token_gone", "a roll-back after the owner's token expired"),
        /// ... by a reader that found the lock stale.
        RollBackStale => ("cleanup.roll_back.stale", "a roll-back of a stale lock of a live owner"),
        /// ... by the owner cleaning up after its own abort.
        RollBackOwnAbort => ("cleanup.roll_back.own_abort", "a roll-back by the aborting owner"),
        /// ... by a reader (token gone or stale).
        RollBackByReader => ("cleanup.roll_back.by_reader", "a roll-back by a reader"),
        /// A rollback record left where no prewrite had arrived.
        RollBackBeforePrewrite => ("cleanup.roll_back_before_prewrite", "a rollback record before any prewrite"),
        /// ... by a reader that found the owner's token gone.
        RollBackBeforePrewriteTokenGone => (
            "cleanup.roll_back_before_prewrite.token_gone",
            "a rollback record before any prewrite, owner's token gone"
        ),
        /// ... by a reader that found the lock stale.
        RollBackBeforePrewriteStale => (
            "cleanup.roll_back_before_prewrite.stale",
            "a rollback record before any prewrite, stale lock"
        ),
        /// ... by the owner cleaning up after its own abort.
        RollBackBeforePrewriteOwnAbort => (
            "cleanup.roll_back_before_prewrite.own_abort",
            "a rollback record before any prewrite, by the aborting owner"
        ),
        /// ... by a reader (token gone or stale).
        RollBackBeforePrewriteByReader => (
            "cleanup.roll_back_before_prewrite.by_reader",
            "a rollback record before any prewrite, by a reader"
        ),
    }
}

impl PercolatorCounter {
    /// The counters of one cleanup: its kind, its kind by suspicion, and
    /// (unless the owner cleaned up after itself) its kind by a reader.
    pub fn of_cleanup(kind: CleanupKind, suspicion: Suspicion) -> Vec<PercolatorCounter> {
        use PercolatorCounter as C;
        let (all, token, stale, own, reader) = match kind {
            CleanupKind::RollForward => (
                C::RollForward,
                C::RollForwardTokenGone,
                C::RollForwardStale,
                C::RollForwardOwnAbort,
                C::RollForwardByReader,
            ),
            CleanupKind::RollBack => (
                C::RollBack,
                C::RollBackTokenGone,
                C::RollBackStale,
                C::RollBackOwnAbort,
                C::RollBackByReader,
            ),
            CleanupKind::RollBackBeforePrewrite => (
                C::RollBackBeforePrewrite,
                C::RollBackBeforePrewriteTokenGone,
                C::RollBackBeforePrewriteStale,
                C::RollBackBeforePrewriteOwnAbort,
                C::RollBackBeforePrewriteByReader,
            ),
        };
        match suspicion {
            Suspicion::TokenGone => vec![all, token, reader],
            Suspicion::Stale => vec![all, stale, reader],
            Suspicion::OwnAbort => vec![all, own],
        }
    }

    /// The counters of every kind of cleanup in total (no breakdown).
    pub const CLEANUPS: [PercolatorCounter; 3] = [
        PercolatorCounter::RollForward,
        PercolatorCounter::RollBack,
        PercolatorCounter::RollBackBeforePrewrite,
    ];
}

crate::identities! {
    /// Kinds of event Percolator's nodes record in the history.
    pub enum PercolatorEvent {
        /// A client was killed at a named protocol point.
        CrashAtStep => ("crash_at_step", "a node was killed at a named protocol point"),
        /// A client was frozen at a named protocol point.
        PauseAtStep => ("pause_at_step", "a node was frozen at a named protocol point"),
        /// A client whose session expired opened a new one.
        SessionReopened => ("session_reopened", "a client whose session expired opened a new one"),
        /// The master found a tablet without a live server.
        TabletUnavailable => ("tablet_unavailable", "a tablet has no live server"),
        /// The master moved a tablet to a live server.
        TabletMoved => ("tablet_moved", "a tablet moved to a live server"),
        /// A cleanup rolled a secondary forward.
        RollForward => ("roll_forward", "a cleanup rolled a secondary forward"),
        /// A cleanup rolled a lock back.
        RollBack => ("roll_back", "a cleanup rolled a lock back"),
        /// A cleanup left a rollback record before any prewrite.
        RollBackBeforePrewrite => ("roll_back_before_prewrite", "a rollback record before any prewrite"),
        /// A late or duplicated prewrite met its transaction's rollback record.
        LatePrewriteRejected => ("late_prewrite_rejected", "a late prewrite was rejected by a rollback record"),
        /// The store wrote a primary lock's wall time: its prewrite landed
        /// or its owner refreshed it.
        PrimaryRefreshed => ("primary_refreshed", "the store wrote a primary lock's wall time (prewrite or refresh), stamped by its owner at stamped_ms"),
        /// The liveness service opened a session for a client.
        SessionOpened => ("session_opened", "the liveness service opened a session"),
        /// The liveness service found a session expired, or forgot it at a restart.
        SessionEnded => ("session_ended", "the liveness service ended a session"),
        /// A reader met a lock it judged live and backed off.
        LockWait => ("lock_wait", "a reader backed off from a lock it judged live"),
        /// The thresholds the liveness rules judge this run by.
        LivenessThresholds => ("liveness_thresholds", "the thresholds of the liveness rules"),
    }
}

impl PercolatorEvent {
    /// The counter of events of this kind (`event.<name>`).
    pub fn counter(self) -> String {
        format!("event.{}", self.name())
    }

    /// The event recording a cleanup of `kind`.
    pub fn of_cleanup(kind: CleanupKind) -> PercolatorEvent {
        match kind {
            CleanupKind::RollForward => PercolatorEvent::RollForward,
            CleanupKind::RollBack => PercolatorEvent::RollBack,
            CleanupKind::RollBackBeforePrewrite => PercolatorEvent::RollBackBeforePrewrite,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unique_and_round_trip<T: Copy + PartialEq + std::fmt::Debug>(
        all: &[T],
        name: fn(T) -> &'static str,
        from: fn(&str) -> Option<T>,
    ) {
        let mut names: Vec<&str> = all.iter().map(|v| name(*v)).collect();
        for v in all {
            assert_eq!(from(name(*v)), Some(*v), "{v:?}");
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len(), "duplicate names");
    }

    #[test]
    fn names_are_unique_and_round_trip() {
        unique_and_round_trip(
            PercolatorCounter::ALL,
            PercolatorCounter::name,
            PercolatorCounter::from_name,
        );
        unique_and_round_trip(
            PercolatorEvent::ALL,
            PercolatorEvent::name,
            PercolatorEvent::from_name,
        );
        assert_eq!(PercolatorCounter::from_name("cleanup.nothing"), None);
    }

    #[test]
    fn cleanup_counters_keep_their_on_disk_names() {
        // The names histories and JSON lines carried before the enums.
        for kind in [
            CleanupKind::RollForward,
            CleanupKind::RollBack,
            CleanupKind::RollBackBeforePrewrite,
        ] {
            let k = serde_json::to_value(kind).unwrap();
            let k = k.as_str().unwrap();
            assert_eq!(PercolatorEvent::of_cleanup(kind).name(), k);
            for s in [Suspicion::TokenGone, Suspicion::Stale, Suspicion::OwnAbort] {
                let sv = serde_json::to_value(s).unwrap();
                let mut want = vec![
                    format!("cleanup.{k}"),
                    format!("cleanup.{k}.{}", sv.as_str().unwrap()),
                ];
                if s != Suspicion::OwnAbort {
                    want.push(format!("cleanup.{k}.by_reader"));
                }
                let got: Vec<&str> = PercolatorCounter::of_cleanup(kind, s)
                    .into_iter()
                    .map(PercolatorCounter::name)
                    .collect();
                assert_eq!(got, want);
            }
        }
    }
}

/// Percolator's kinds of node, as the world names them: the timestamp
/// oracle (the coordinator role), the liveness service, the master,
/// tablet servers `tablet-N` and clients `client-N`. Only clients read a
/// skewed wall clock (lock wall times, the age of a lock) and honour
/// stalls (their transaction threads wait).
pub mod kinds {
    use crate::world::ids::Role;
    use crate::world::node::NodeKind;

    /// A single server of `role` labelled `label`, reading no clock.
    const fn server(role: Role, label: &'static str, numbered: bool) -> NodeKind {
        NodeKind {
            role,
            label,
            numbered,
            reads_clock: false,
            stalls: false,
        }
    }

    /// The timestamp oracle.
    pub const ORACLE: NodeKind = server(Role::Coordinator, "oracle", false);
    /// The liveness (lock) service.
    pub const LIVENESS: NodeKind = server(Role::Liveness, "liveness", false);
    /// The master, which assigns tablets to servers.
    pub const MASTER: NodeKind = server(Role::Master, "master", false);
    /// A tablet server.
    pub const TABLET: NodeKind = server(Role::DataServer, "tablet", true);
    /// A client.
    pub const CLIENT: NodeKind = NodeKind {
        role: Role::Client,
        label: "client",
        numbered: true,
        reads_clock: true,
        stalls: true,
    };
    /// Every kind, in start order.
    pub const ALL: [NodeKind; 5] = [ORACLE, LIVENESS, MASTER, TABLET, CLIENT];
}
