//! What a campaign is expected to exercise ("sometimes" coverage), as a
//! closed enum: each item reads one typed counter of the simulator, so a
//! renamed counter breaks the build instead of flagging "never happened"
//! in every campaign.

use percsim_protocol::percolator::client::AbortReason;
use percsim_sim::{Counter, FaultKind, PercolatorCounter as P, PercolatorEvent, PulsarEvent};

percsim_sim::identities! {
    /// An event a campaign is expected to exercise; one that never happens
    /// is flagged in the summary.
    pub enum Coverage {
        /// A dead owner's commit rolled forward.
        RollForward => ("roll_forward", "roll forward of a dead owner's commit"),
        /// An abandoned lock rolled back.
        RollBack => ("roll_back", "roll back of an abandoned lock"),
        /// A cleanup after the owner's token expired.
        RollBackTokenGone => ("roll_back_token_gone", "cleanup after the owner's token expired"),
        /// A cleanup of a stale lock of a live owner.
        RollBackStale => ("roll_back_stale", "cleanup of a stale lock of a live owner"),
        /// A late prewrite met a rollback record.
        LatePrewriteRejected => ("late_prewrite_rejected", "late prewrite rejected by a rollback record"),
        /// A prewrite was delivered to a cell where its transaction had
        /// already been rolled back (the store's count, kept whether or not
        /// a rollback record refused it).
        LatePrewriteAfterRollback => ("late_prewrite_after_rollback", "late prewrite after rollback"),
        /// A duplicated request was delivered.
        Duplicated => ("duplicated", "duplicated request delivered"),
        /// A request the network held back was delivered late.
        Late => ("late", "request held back by the network delivered late"),
        /// A primary commit timed out and was never applied.
        PrimaryRequestLost => ("primary_request_lost", "primary commit timed out, request never applied"),
        /// A primary commit was applied but every reply was lost.
        PrimaryReplyLost => ("primary_reply_lost", "primary commit applied, every reply lost"),
        /// An outcome unknown to the client was committed in the store.
        UnknownReplyLost => ("unknown_reply_lost", "outcome unknown to the client, committed in the store"),
        /// A node was killed at a named protocol point.
        CrashAtStep => ("crash_at_step", "node killed at a named protocol point"),
        /// A node was frozen at a named protocol point.
        PauseAtStep => ("pause_at_step", "node frozen at a named protocol point"),
        /// A client was killed.
        KillClient => ("kill_client", "client killed"),
        /// A data server was killed.
        KillDataServer => ("kill_data_server", "data server killed"),
        /// The coordinator restarted.
        KillCoordinator => ("kill_coordinator", "coordinator restart"),
        /// The liveness service restarted.
        KillLiveness => ("kill_liveness", "liveness service restart"),
        /// A tablet moved to a live server.
        TabletMoved => ("tablet_moved", "tablet moved to a live server"),
        /// A node was paused.
        Pause => ("pause", "node paused"),
        /// Workers stalled with a valid token.
        Stall => ("stall", "worker stalled with a valid token"),
        /// A network partition.
        Partition => ("partition", "network partition"),
        /// A session expired under a live owner.
        SessionReopened => ("session_reopened", "session expired under a live owner"),
        /// A read waited on a lock.
        LockWait => ("lock_wait", "read waited on a lock"),
        /// A write conflict aborted a transaction.
        WriteConflict => ("write_conflict", "write conflict"),
        /// An owner found itself rolled back.
        RolledBack => ("rolled_back", "owner found itself rolled back"),
        /// A commit's outcome stayed unknown.
        Unknown => ("unknown", "commit outcome unknown"),
        /// An observer run committed.
        ObserverRan => ("observer_ran", "observer run committed"),
        /// A notification was found already processed.
        ObserverNothingNew => ("observer_nothing_new", "notification found already processed"),
        /// A scanner jumped away from a taken row.
        ScanJump => ("scan_jump", "scanner jumped away from a taken row"),
        /// Pulsar: the coordinator or a partition moved to another broker session.
        OwnershipMoved => ("ownership_moved", "Pulsar: ownership moved to another broker"),
        /// Pulsar: a stale owner's append was refused by a log's fence.
        StaleOwnerFenced => ("stale_owner_fenced", "Pulsar: a stale owner's append fenced"),
    }
}

percsim_sim::identities! {
    /// Which seeds can exercise a coverage item: a campaign flags an item
    /// as never happened only if it ran seeds of that scope.
    pub enum Scope {
        /// Only Percolator's seeds (its protocol's counters and events).
        Percolator => ("percolator", "Percolator's protocol"),
        /// Only Pulsar's seeds (its protocol's counters and events).
        Pulsar => ("pulsar", "Pulsar's protocol"),
        /// Any system's seeds: the world's faults and network.
        World => ("world", "the world's faults and network"),
    }
}

impl Scope {
    /// The system whose seeds exercise the scope (the world's scope: any
    /// system's; its name is not a system's).
    pub fn system(self) -> &'static str {
        self.name()
    }
}

impl Coverage {
    /// Which seeds can exercise it.
    pub fn scope(self) -> Scope {
        use Coverage::*;
        match self {
            OwnershipMoved | StaleOwnerFenced => Scope::Pulsar,
            Duplicated | Late | KillClient | KillDataServer | KillCoordinator | Pause
            | Partition | PauseAtStep => Scope::World,
            _ => Scope::Percolator,
        }
    }

    /// The run counter this item reads.
    pub fn counter(self) -> String {
        let fault = |k: FaultKind| k.counter();
        let abort = |r: AbortReason| format!("abort.{}", r.name());
        match self {
            Coverage::RollForward => P::RollForward.name().into(),
            Coverage::RollBack => P::RollBack.name().into(),
            Coverage::RollBackTokenGone => P::RollBackTokenGone.name().into(),
            Coverage::RollBackStale => P::RollBackStale.name().into(),
            Coverage::LatePrewriteRejected => P::StoreLatePrewriteRejected.name().into(),
            Coverage::LatePrewriteAfterRollback => P::StoreLatePrewriteAfterRollback.name().into(),
            Coverage::Duplicated => Counter::NetDuplicated.name().into(),
            Coverage::Late => Counter::NetLate.name().into(),
            Coverage::PrimaryRequestLost => P::CommitPrimaryRequestLost.name().into(),
            Coverage::PrimaryReplyLost => P::CommitPrimaryReplyLost.name().into(),
            Coverage::UnknownReplyLost => P::TxnUnknownReplyLost.name().into(),
            Coverage::CrashAtStep => PercolatorEvent::CrashAtStep.counter(),
            Coverage::PauseAtStep => fault(FaultKind::PauseAtStep),
            Coverage::KillClient => fault(FaultKind::KillClient),
            Coverage::KillDataServer => fault(FaultKind::KillDataServer),
            Coverage::KillCoordinator => fault(FaultKind::KillCoordinator),
            Coverage::KillLiveness => fault(FaultKind::KillLiveness),
            Coverage::TabletMoved => PercolatorEvent::TabletMoved.counter(),
            Coverage::Pause => fault(FaultKind::Pause),
            Coverage::Stall => fault(FaultKind::Stall),
            Coverage::Partition => fault(FaultKind::Partition),
            Coverage::SessionReopened => PercolatorEvent::SessionReopened.counter(),
            Coverage::LockWait => P::ClientLockWaits.name().into(),
            Coverage::WriteConflict => abort(AbortReason::WriteConflict),
            Coverage::RolledBack => abort(AbortReason::RolledBack),
            Coverage::Unknown => Counter::TxnUnknown.name().into(),
            Coverage::ObserverRan => P::ObserverRan.name().into(),
            Coverage::ObserverNothingNew => P::ObserverNothingNew.name().into(),
            Coverage::ScanJump => P::ScanJumps.name().into(),
            Coverage::OwnershipMoved => PulsarEvent::OwnershipMoved.counter(),
            Coverage::StaleOwnerFenced => PulsarEvent::StaleOwnerFenced.counter(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut names: Vec<&str> = Coverage::ALL.iter().map(|c| c.name()).collect();
        for c in Coverage::ALL {
            assert_eq!(Coverage::from_name(c.name()), Some(*c));
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Coverage::ALL.len());
        assert_eq!(Coverage::from_name("nothing"), None);
    }

    /// The counters are the names campaigns wrote before the enums (JSON
    /// lines of older campaigns still merge with the same coverage).
    #[test]
    fn counters_keep_their_on_disk_names() {
        let counters: Vec<String> = Coverage::ALL.iter().map(|c| c.counter()).collect();
        for want in [
            "cleanup.roll_forward",
            "cleanup.roll_back.token_gone",
            "store.late_prewrite_rejected",
            "store.late_prewrite_after_rollback",
            "net.duplicated",
            "net.late",
            "net.commit_primary.request_lost",
            "net.commit_primary.reply_lost",
            "txn.unknown.reply_lost",
            "event.crash_at_step",
            "fault.pause_at_step",
            "fault.kill_data_server",
            "event.tablet_moved",
            "event.session_reopened",
            "client.lock_waits",
            "abort.write_conflict",
            "txn.unknown",
            "observer.nothing_new",
            "scan.jumps",
            "event.ownership_moved",
            "event.stale_owner_fenced",
        ] {
            assert!(counters.iter().any(|c| c == want), "{want}");
        }
        let mut unique = counters.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), counters.len(), "two items read one counter");
    }
}
