//! Who serves what: the ownership of the transaction coordinator and of
//! each topic partition by the brokers, kept in the metadata store as
//! Pulsar keeps it (namespace-bundle ownership through ephemeral nodes of
//! a broker's metadata session; the coordinator is partition `n` of the
//! `transaction_coordinator_assign` topic and is owned the same way), and
//! the fencing of a durable log when a new owner opens it (BookKeeper's
//! ledger fencing: the old owner's appends fail).
//!
//! One file per step; each reads the [`OwnershipTable`] or a log's epoch
//! and returns what to record, with trace tests at the bottom:
//! - [`heartbeat`]: a broker's session is kept alive (and opened);
//! - [`expire`]: sessions silent for the session timeout end;
//! - [`assign`]: resources without a live owner go to the least loaded
//!   live broker, with the next epoch;
//! - [`lookup`]: the owner of a resource, as the metadata store answers
//!   it, and the client's cache of answers;
//! - `fence`: opening a log at an epoch, and checking an append's epoch;
//! - [`unload`]: an administrator takes a resource from its owner, with
//!   no broker dying.

mod assign;
mod expire;
mod fence;
mod heartbeat;
mod lookup;
mod state;
mod unload;

pub use assign::assign;
pub use expire::{Expiry, expire};
pub use fence::{Epochs, Fenced, check_append, open_log};
pub use heartbeat::{HeartbeatReply, heartbeat};
pub use lookup::{LookupCache, lookup};
pub use state::{Assignment, MetaRecord, OwnershipTable, Resource, SessionId};
pub use unload::unload;

#[cfg(test)]
pub(crate) mod test_util {
    //! Trace helpers: a table of the coordinator and two partitions.
    use super::*;
    use crate::pulsar::types::Partition;

    /// Session generation 1 of broker `i`.
    pub fn b(i: usize) -> SessionId {
        SessionId {
            broker: i,
            generation: 1,
        }
    }

    /// The coordinator.
    pub fn coord() -> Resource {
        Resource::Coordinator(0)
    }

    /// Partition `i` of topic `t`.
    pub fn part(i: u32) -> Resource {
        Resource::Partition(Partition::new("t", i))
    }

    /// A table of the coordinator and partitions 0 and 1.
    pub fn table() -> OwnershipTable {
        OwnershipTable::new([coord(), part(0), part(1)])
    }

    /// Apply `records` in order.
    pub fn apply_all(t: &mut OwnershipTable, records: &[MetaRecord]) {
        for r in records {
            t.apply(r);
        }
    }

    /// Run [`assign`] and apply what it returns.
    pub fn must_assign(t: &mut OwnershipTable) -> Vec<MetaRecord> {
        let plan = assign(t);
        apply_all(t, &plan);
        plan
    }

    /// Run [`expire`] and apply what it returns.
    pub fn must_expire(t: &mut OwnershipTable, now_ms: u64, timeout_ms: u64) -> Vec<MetaRecord> {
        let at = Expiry {
            now_ms,
            session_timeout_ms: timeout_ms,
        };
        let plan = expire(t, at);
        apply_all(t, &plan);
        plan
    }

    /// A heartbeat that must be answered (the session is not expired).
    pub fn must_heartbeat(t: &mut OwnershipTable, s: SessionId, now_ms: u64) -> HeartbeatReply {
        let (record, reply) = heartbeat(t, s, now_ms);
        t.apply(&record.expect("the session is not expired"));
        reply
    }
}
