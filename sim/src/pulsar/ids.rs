//! Pulsar's own identities as closed enums (the pattern of
//! [`crate::world::ids`]): the counters its nodes bump. Counters and JSON
//! lines spell the names; code names the variants.

crate::identities! {
    /// Counters bumped by Pulsar's nodes.
    pub enum PulsarCounter {
        /// The coordinator aborted an open transaction past its timeout.
        TxnTimedOut => ("pulsar.txn_timed_out", "the coordinator aborted an open transaction past its timeout"),
    }
}

#[cfg(test)]
mod tests {
    use super::PulsarCounter;

    #[test]
    fn names_round_trip() {
        for c in PulsarCounter::ALL {
            assert_eq!(PulsarCounter::from_name(c.name()), Some(*c));
            assert!(c.name().starts_with("pulsar."), "{c}");
            assert!(!c.describe().is_empty());
        }
    }
}
