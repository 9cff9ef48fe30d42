//! Pulsar's own identities as closed enums (the pattern of
//! [`crate::world::ids`]): the counters its nodes bump and the kinds of
//! event they record.

crate::identities! {
    /// Counters bumped by Pulsar's nodes.
    pub enum PulsarCounter {
        /// The coordinator aborted a transaction past its timeout.
        TxnTimedOut => ("pulsar.txn_timed_out", "the coordinator aborted a transaction past its timeout"),
        /// A client or the coordinator asked the metadata service who owns a resource.
        Lookup => ("pulsar.lookup", "a lookup of a resource's owner"),
        /// A broker answered that it does not own the resource asked for.
        NotOwner => ("pulsar.not_owner", "a broker answered that it does not own a resource"),
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
    }
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
    }
}

/// Pulsar's kinds of node, as the world names them: the metadata service
/// (the master role), brokers `broker-N` (the data servers; the coordinator
/// role moves between them) and clients `client-N`. No node reads a
/// skewed wall clock (deadlines run on true simulated time); clients honour
/// stalls (their tasks wait before each call).
pub(crate) mod kinds {
    use crate::world::ids::Role;
    use crate::world::node::NodeKind;

    /// The metadata service (ZooKeeper's part: sessions and ownership).
    pub(crate) const METADATA: NodeKind = NodeKind {
        role: Role::Master,
        label: "metadata",
        numbered: false,
        reads_clock: false,
        stalls: false,
    };
    /// A broker.
    pub(crate) const BROKER: NodeKind = NodeKind {
        role: Role::DataServer,
        label: "broker",
        numbered: true,
        reads_clock: false,
        stalls: false,
    };
    /// A client process.
    pub(crate) const CLIENT: NodeKind = NodeKind {
        role: Role::Client,
        label: "client",
        numbered: true,
        reads_clock: false,
        stalls: true,
    };
    /// Every kind of node of a Pulsar cluster.
    pub(crate) const ALL: [NodeKind; 3] = [METADATA, BROKER, CLIENT];
}
