//! The TSO's lease in the liveness service, and the fencing of a deposed
//! TSO ("Omid, Reloaded", section 5: a primary TSO and a hot backup; the
//! primary holds a lease in ZooKeeper, the backup takes over once it has
//! expired, and the old primary must stop committing once its lease is
//! gone). Each grant to a new holder raises the lease's epoch; the commit
//! table refuses a TSO's decision of an epoch below the highest one fenced
//! into it, so a deposed TSO's late decision cannot commit.

use serde::{Deserialize, Serialize};

/// The durable lease record the liveness service keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRecord {
    /// The TSO that holds (or last held) the lease.
    pub holder: Option<String>,
    /// The epoch of the holder's term: raised by each grant to a new holder.
    pub epoch: u64,
    /// When the lease runs out, in simulated ms since the run's start.
    pub expires_at_ms: u64,
}

/// The liveness service's answer to a TSO that asks for the lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LeaseGrant {
    /// The asker holds the lease in `epoch` (a new term, or its own renewed).
    Granted {
        /// The term's epoch.
        epoch: u64,
    },
    /// Another TSO holds an unexpired lease.
    Held {
        /// The holder.
        holder: String,
        /// Its epoch.
        epoch: u64,
    },
}

/// The time an acquisition takes place and how long a lease lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseClock {
    /// Simulated ms since the run's start.
    pub now_ms: u64,
    /// How long a lease lasts, in ms.
    pub lease_ms: u64,
}

/// `who` asks for the lease at `clock.now_ms`: granted (in a new epoch) if
/// nobody holds it or the holder's lease has run out, renewed if `who`
/// holds it, refused otherwise.
pub fn acquire(record: &mut LeaseRecord, who: &str, clock: LeaseClock) -> LeaseGrant {
    let mine = record.holder.as_deref() == Some(who);
    let live = record.holder.is_some() && clock.now_ms < record.expires_at_ms;
    if live && !mine {
        return LeaseGrant::Held {
            holder: record.holder.clone().unwrap_or_default(),
            epoch: record.epoch,
        };
    }
    if !mine || !live {
        record.epoch += 1;
        record.holder = Some(who.to_string());
    }
    record.expires_at_ms = clock.now_ms + clock.lease_ms;
    LeaseGrant::Granted {
        epoch: record.epoch,
    }
}

/// The holder of an unexpired lease at `now_ms`, if any.
pub fn holder(record: &LeaseRecord, now_ms: u64) -> Option<&str> {
    record
        .holder
        .as_deref()
        .filter(|_| now_ms < record.expires_at_ms)
}

/// Whether the commit table accepts a decision of `epoch` when the
/// highest epoch fenced into it is `fenced`: a decision without an epoch
/// (a reader's invalidation, a client's own write) always passes.
pub fn admits(fenced: u64, epoch: Option<u64>) -> bool {
    epoch.is_none_or(|e| e >= fenced)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(now_ms: u64) -> LeaseClock {
        LeaseClock {
            now_ms,
            lease_ms: 100,
        }
    }

    #[test]
    fn a_held_lease_is_refused_until_it_expires_then_granted_in_a_new_epoch() {
        let mut r = LeaseRecord::default();
        assert_eq!(
            acquire(&mut r, "tso", at(0)),
            LeaseGrant::Granted { epoch: 1 }
        );
        assert_eq!(
            acquire(&mut r, "tso-backup", at(50)),
            LeaseGrant::Held {
                holder: "tso".into(),
                epoch: 1
            }
        );
        assert_eq!(
            acquire(&mut r, "tso", at(90)),
            LeaseGrant::Granted { epoch: 1 }
        );
        assert_eq!(holder(&r, 189), Some("tso"));
        assert_eq!(holder(&r, 190), None);
        assert_eq!(
            acquire(&mut r, "tso-backup", at(190)),
            LeaseGrant::Granted { epoch: 2 }
        );
    }

    #[test]
    fn a_holder_whose_lease_ran_out_starts_a_new_term() {
        let mut r = LeaseRecord::default();
        acquire(&mut r, "tso", at(0));
        assert_eq!(
            acquire(&mut r, "tso", at(500)),
            LeaseGrant::Granted { epoch: 2 }
        );
    }

    #[test]
    fn the_commit_table_refuses_a_deposed_epoch_only() {
        assert!(admits(2, Some(2)));
        assert!(admits(2, Some(3)));
        assert!(!admits(2, Some(1)));
        assert!(admits(2, None));
    }
}
