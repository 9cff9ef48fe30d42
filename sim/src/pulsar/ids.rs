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
