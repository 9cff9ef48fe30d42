//! Assign: every resource without a live owner (never owned, or its
//! owner's session expired) goes to the live session that owns the fewest
//! resources (ties: the lowest broker, then session), with its epoch plus
//! one (Pulsar's load manager picks the least loaded broker for an
//! unowned bundle; the new owner's ephemeral node replaces the old one).

use super::state::{MetaRecord, OwnershipTable, SessionId};
use std::collections::BTreeMap;

/// The assignments that give every orphaned resource a live owner (none
/// if no session is live).
pub fn assign(table: &OwnershipTable) -> Vec<MetaRecord> {
    let mut load: BTreeMap<SessionId, usize> = table.live().map(|(s, _)| (s, 0)).collect();
    if load.is_empty() {
        return Vec::new();
    }
    for (_, a) in table.owners() {
        if let Some(n) = a.session.and_then(|s| load.get_mut(&s)) {
            *n += 1;
        }
    }
    let mut out = Vec::new();
    for resource in table.orphans() {
        let Some((&session, _)) = load.iter().min_by_key(|(s, n)| (**n, **s)) else {
            break;
        };
        *load.entry(session).or_default() += 1;
        let epoch = table.owner(&resource).map_or(0, |a| a.epoch) + 1;
        out.push(MetaRecord::Assigned {
            resource,
            session,
            epoch,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pulsar::ownership::test_util::*;

    #[test]
    fn resources_spread_over_the_live_brokers() {
        let mut t = table();
        for i in 0..2 {
            must_heartbeat(&mut t, b(i), 0);
        }
        let plan = assign(&t);
        apply_all(&mut t, &plan);
        assert_eq!(t.owned_by(b(0)), vec![(coord(), 1), (part(1), 1)]);
        assert_eq!(t.owned_by(b(1)), vec![(part(0), 1)]);
        assert!(assign(&t).is_empty(), "nothing is left to assign");
    }

    #[test]
    fn an_expired_owner_s_resources_move_with_the_next_epoch() {
        let mut t = table();
        must_heartbeat(&mut t, b(0), 0);
        must_heartbeat(&mut t, b(1), 0);
        must_assign(&mut t);
        must_heartbeat(&mut t, b(1), 400);
        must_expire(&mut t, 500, 500);
        let plan = assign(&t);
        assert_eq!(
            plan,
            vec![
                MetaRecord::Assigned {
                    resource: coord(),
                    session: b(1),
                    epoch: 2
                },
                MetaRecord::Assigned {
                    resource: part(1),
                    session: b(1),
                    epoch: 2
                },
            ]
        );
        apply_all(&mut t, &plan);
        assert_eq!(t.owned_by(b(0)), vec![]);
    }

    #[test]
    fn an_orphan_goes_to_the_broker_owning_the_fewest() {
        let mut t = table();
        must_heartbeat(&mut t, b(0), 0);
        must_heartbeat(&mut t, b(1), 0);
        must_assign(&mut t);
        // b(1) (owning part 0) expires; b(2) joins. b(0) still owns two.
        must_heartbeat(&mut t, b(0), 400);
        must_expire(&mut t, 500, 500);
        must_heartbeat(&mut t, b(2), 600);
        let plan = assign(&t);
        let to = MetaRecord::Assigned {
            resource: part(0),
            session: b(2),
            epoch: 2,
        };
        assert_eq!(plan, vec![to]);
        assert_eq!(format!("{}", coord()), "coordinator-0");
    }

    #[test]
    fn nothing_moves_without_a_live_broker_and_the_epoch_still_grows_later() {
        let mut t = table();
        must_heartbeat(&mut t, b(0), 0);
        must_assign(&mut t);
        must_expire(&mut t, 500, 500);
        assert!(assign(&t).is_empty());
        // The broker restarts with a new session and takes everything back.
        let again = SessionId {
            broker: 0,
            generation: 2,
        };
        must_heartbeat(&mut t, again, 600);
        must_assign(&mut t);
        assert_eq!(
            t.owned_by(again),
            vec![(coord(), 2), (part(0), 2), (part(1), 2)]
        );
    }
}
