//! Unload: an administrator takes a resource from its owner with no
//! broker dying (Pulsar's `pulsar-admin topics unload`: the broker closes
//! the topic and gives up its ownership node; the next assignment places
//! it again, maybe on the same broker). The resource keeps its epoch until
//! then, so the next owner opens its logs at the epoch after it, fences
//! the old owner and recovers the buffer and pending acks from the logs.

use super::state::{MetaRecord, OwnershipTable, Resource};

/// The record that unloads `resource`: none if nobody owns it now (or the
/// table has no such resource).
pub fn unload(table: &OwnershipTable, resource: &Resource) -> Vec<MetaRecord> {
    match table.owner(resource).and_then(|a| a.session) {
        Some(_) => vec![MetaRecord::Unloaded {
            resource: resource.clone(),
        }],
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pulsar::ownership::assign;
    use crate::pulsar::ownership::test_util::*;

    #[test]
    fn an_unloaded_resource_is_placed_again_at_the_next_epoch() {
        let mut t = table();
        must_heartbeat(&mut t, b(0), 0);
        must_assign(&mut t);
        assert_eq!(t.owner(&part(0)).map(|a| a.epoch), Some(1));
        let plan = unload(&t, &part(0));
        assert_eq!(plan, vec![MetaRecord::Unloaded { resource: part(0) }]);
        apply_all(&mut t, &plan);
        assert_eq!(t.orphans(), vec![part(0)], "only the unloaded one is free");
        let again = assign(&t);
        apply_all(&mut t, &again);
        // The same live broker takes it back, at the next epoch: its logs
        // are opened again and its memory rebuilt.
        assert_eq!(
            t.owner(&part(0)).map(|a| (a.session, a.epoch)),
            Some((Some(b(0)), 2))
        );
    }

    #[test]
    fn nothing_to_unload_when_nobody_owns_it() {
        let t = table();
        assert!(unload(&t, &part(0)).is_empty());
        let missing = Resource::Coordinator(9);
        assert!(unload(&t, &missing).is_empty());
    }
}
