//! Lookup: which broker serves a resource (Pulsar's topic lookup and the
//! client's lookup of its coordinator). The metadata store answers with
//! the live owner; a client keeps the answers in a [`LookupCache`] and
//! forgets one when the broker answers "not owner" or does not answer.

use super::state::{OwnershipTable, Resource};
use std::collections::BTreeMap;

/// The broker that owns `resource` through a live session, if any.
pub fn lookup(table: &OwnershipTable, resource: &Resource) -> Option<usize> {
    let session = table.owner(resource)?.session?;
    table.is_live(session).then_some(session.broker)
}

/// A client's cache of lookup answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LookupCache {
    owners: BTreeMap<Resource, usize>,
}

impl LookupCache {
    /// The cached owner of `resource`.
    pub fn get(&self, resource: &Resource) -> Option<usize> {
        self.owners.get(resource).copied()
    }

    /// Remember that `broker` owns `resource`.
    pub fn learn(&mut self, resource: &Resource, broker: usize) {
        self.owners.insert(resource.clone(), broker);
    }

    /// Forget the owner of `resource` (it answered "not owner", or nothing).
    pub fn forget(&mut self, resource: &Resource) {
        self.owners.remove(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pulsar::ownership::MetaRecord;
    use crate::pulsar::ownership::test_util::*;

    #[test]
    fn lookup_answers_only_a_live_owner() {
        let mut t = table();
        assert_eq!(lookup(&t, &coord()), None, "nobody owns it yet");
        must_heartbeat(&mut t, b(2), 0);
        must_assign(&mut t);
        assert_eq!(lookup(&t, &coord()), Some(2));
        t.apply(&MetaRecord::Expired { session: b(2) });
        assert_eq!(lookup(&t, &coord()), None, "its session expired");
    }

    #[test]
    fn the_cache_forgets_an_owner_that_said_no() {
        let mut c = LookupCache::default();
        c.learn(&part(0), 1);
        assert_eq!(c.get(&part(0)), Some(1));
        c.forget(&part(0));
        assert_eq!(c.get(&part(0)), None);
    }
}
