//! Pulsar's own identities as closed enums (the pattern of
//! [`crate::world::ids`]): the counters its nodes bump and the kinds of
//! event they record.

use percsim_protocol::pulsar::client::AbortReason;

crate::identities! {
    /// Counters bumped by Pulsar's nodes.
    pub enum PulsarCounter {
        /// The coordinator aborted a transaction past its timeout.
        TxnTimedOut => ("pulsar.txn_timed_out", "the coordinator aborted a transaction past its timeout"),
        /// A client or the coordinator asked the metadata service who owns a resource.
        Lookup => ("pulsar.lookup", "a lookup of a resource's owner"),
        /// A broker answered that it does not own the resource asked for.
        NotOwner => ("pulsar.not_owner", "a broker answered that it does not own a resource"),
        /// A broker (or the coordinator) answered that it is still recovering the resource asked for.
        NotReady => ("pulsar.not_ready", "a broker answered that it is still recovering a resource"),
        /// A partition's transaction buffer wrote a snapshot.
        SnapshotWritten => ("pulsar.snapshot_written", "a transaction buffer wrote a snapshot"),
        /// Log entries a recovery replayed (a partition's log after its snapshot, its subscriptions' logs, the coordinator's log).
        RecoveryReplayed => ("pulsar.recovery_replayed", "log entries replayed by recoveries"),
        /// A broker was killed at one of its named points.
        BrokerKilledAtPoint => ("pulsar.broker_killed_at_point", "a broker was killed at a named point"),
        /// A broker was frozen at one of its named points.
        BrokerPausedAtPoint => ("pulsar.broker_paused_at_point", "a broker was frozen at a named point"),
        /// A client learnt its transaction aborted: an open transaction held a pending ack on its input.
        AbortAckConflict => ("pulsar.abort.ack_conflict", "aborted: another open transaction held a pending ack on the input"),
        /// A client learnt its transaction aborted: its input was acknowledged for good already.
        AbortAlreadyAcked => ("pulsar.abort.already_acked", "aborted: the input was acknowledged for good already"),
        /// A client learnt its transaction aborted: the coordinator had aborted it on its timeout.
        AbortTimedOut => ("pulsar.abort.timed_out", "aborted: the coordinator had aborted it on its timeout"),
        /// A client learnt its transaction aborted: a server did not answer or refused before commit.
        AbortUnavailable => ("pulsar.abort.unavailable", "aborted: a server did not answer or refused before commit"),
        /// A client aborted its transaction by its own choice.
        AbortUser => ("pulsar.abort.user", "aborted by the client's own choice"),
        /// A resource was unloaded from the live broker that owned it (a
        /// planned unload whose target had no owner then is not counted):
        /// the fault class `unload`, counted as the world counts its own.
        Unload => ("fault.unload", "a resource was unloaded from its owner with no broker dying"),
    }
}

impl PulsarCounter {
    /// The counter of aborts a client learnt of for `reason`.
    pub fn abort(reason: AbortReason) -> PulsarCounter {
        match reason {
            AbortReason::AckConflict => PulsarCounter::AbortAckConflict,
            AbortReason::AlreadyAcked => PulsarCounter::AbortAlreadyAcked,
            AbortReason::TimedOut => PulsarCounter::AbortTimedOut,
            AbortReason::Unavailable => PulsarCounter::AbortUnavailable,
            AbortReason::User => PulsarCounter::AbortUser,
        }
    }
}

crate::identities! {
    /// Kinds of event Pulsar's nodes record in the history.
    pub enum PulsarEvent {
        /// The metadata service expired a broker's session (silent for the session timeout).
        SessionExpired => ("broker_session_expired", "a broker's metadata session expired"),
        /// A resource (the coordinator or a partition) was given to another session at the next epoch.
        OwnershipMoved => ("ownership_moved", "a resource moved to another broker session"),
        /// A broker took over a resource: it fenced the logs at its epoch and recovered from them.
        OwnershipTaken => ("ownership_taken", "a broker fenced a resource's logs and recovered it"),
        /// An owner's append was refused because a later owner fenced the log; it stopped serving.
        StaleOwnerFenced => ("stale_owner_fenced", "a stale owner's append was refused by the log's fence"),
        /// A server was killed at a named point.
        CrashAtPoint => ("crash_at_point", "a server was killed at a named point"),
        /// A client was killed at a named point of its procedures.
        ClientCrashAtPoint => ("crash_at_client_point", "a client was killed at a named point"),
        /// A driver unloaded a resource from its owner (no broker died); the next assignment places it again.
        Unloaded => ("resource_unloaded", "a resource was unloaded from its owner with no broker dying"),
        /// The thresholds the liveness rules judge this run by.
        LivenessThresholds => ("liveness_thresholds", "the thresholds of the liveness rules"),
    }
}

/// The counter of the times a node reached Pulsar's named point `point`
/// (a server's or a client's, by its name): `pulsar.reached.<point>`.
pub fn point_reached_counter(point: &str) -> String {
    format!("pulsar.reached.{point}")
}

/// The counter of the stops (kills and pauses) at Pulsar's named point
/// `point`: `pulsar.stopped.<point>`.
pub fn point_stopped_counter(point: &str) -> String {
    format!("pulsar.stopped.{point}")
}

impl PulsarEvent {
    /// The counter of events of this kind (`event.<name>`).
    pub fn counter(self) -> String {
        format!("event.{}", self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        for c in PulsarCounter::ALL {
            assert_eq!(PulsarCounter::from_name(c.name()), Some(*c));
        }
        for e in PulsarEvent::ALL {
            assert_eq!(PulsarEvent::from_name(e.name()), Some(*e));
        }
        assert_eq!(
            PulsarEvent::StaleOwnerFenced.counter(),
            "event.stale_owner_fenced"
        );
        assert_eq!(PulsarCounter::from_name("pulsar.nothing"), None);
        assert_eq!(
            PulsarCounter::abort(AbortReason::AckConflict).name(),
            "pulsar.abort.ack_conflict"
        );
    }
}

/// Pulsar's kinds of node, as the world names them: the metadata service
/// (the master role), brokers `broker-N` (the data servers; the coordinator
/// role moves between them) and clients `client-N`. No node reads a
/// skewed wall clock (deadlines run on true simulated time); clients honour
/// stalls (their tasks wait before each call).
pub mod kinds {
    use crate::world::ids::Role;
    use crate::world::node::NodeKind;

    /// The metadata service (ZooKeeper's part: sessions and ownership).
    pub const METADATA: NodeKind = NodeKind {
        role: Role::Master,
        label: "metadata",
        numbered: false,
        reads_clock: false,
        stalls: false,
    };
    /// A broker.
    pub const BROKER: NodeKind = NodeKind {
        role: Role::DataServer,
        label: "broker",
        numbered: true,
        reads_clock: false,
        stalls: false,
    };
    /// A client process.
    pub const CLIENT: NodeKind = NodeKind {
        role: Role::Client,
        label: "client",
        numbered: true,
        reads_clock: false,
        stalls: true,
    };
    /// Every kind of node of a Pulsar cluster.
    pub const ALL: [NodeKind; 3] = [METADATA, BROKER, CLIENT];
}
