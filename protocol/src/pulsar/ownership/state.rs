//! The metadata store's ownership table: broker sessions and, for each
//! resource (the coordinator, each partition), the session that owns it
//! and the epoch of that ownership.

use crate::pulsar::types::Partition;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Something one broker serves at a time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Resource {
    /// A transaction coordinator, by its id (its partition of Pulsar's
    /// `transaction_coordinator_assign` topic).
    Coordinator(u16),
    /// A topic partition with its subscriptions.
    Partition(Partition),
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::Coordinator(id) => write!(f, "coordinator-{id}"),
            Resource::Partition(p) => write!(f, "{p}"),
        }
    }
}

/// A broker's metadata session (ZooKeeper's session id): one per broker
/// and generation; a restarted broker, or one whose session expired,
/// opens a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SessionId {
    /// The broker's index.
    pub broker: usize,
    /// Which of the broker's sessions (1-based).
    pub generation: u32,
}

/// Who owns a resource: the owning session (none after it expired and no
/// live broker could take over) and the ownership's epoch, which only grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignment {
    /// The owning session, if any.
    pub session: Option<SessionId>,
    /// The epoch of this ownership (the durable logs are fenced at it).
    pub epoch: u64,
}

/// A change to the table; every step returns these and the metadata
/// service applies them in order ([`OwnershipTable::apply`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MetaRecord {
    /// A broker opened a session.
    Opened {
        /// The session.
        session: SessionId,
        /// When (ms).
        now_ms: u64,
    },
    /// A session's heartbeat arrived.
    Heard {
        /// The session.
        session: SessionId,
        /// When (ms).
        now_ms: u64,
    },
    /// A session expired: its ephemeral ownerships are gone.
    Expired {
        /// The session.
        session: SessionId,
    },
    /// An administrator unloaded a resource: its owner gives it up (the
    /// epoch stays until the next assignment).
    Unloaded {
        /// The resource.
        resource: Resource,
    },
    /// A resource was given to a session at an epoch.
    Assigned {
        /// The resource.
        resource: Resource,
        /// Its new owner.
        session: SessionId,
        /// The new epoch.
        epoch: u64,
    },
}

/// The table as the metadata store holds it (durable: it survives every
/// crash of a broker).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnershipTable {
    /// Live sessions, with when each was last heard from (ms).
    live: BTreeMap<SessionId, u64>,
    /// Sessions that expired (never live again).
    expired: BTreeSet<SessionId>,
    /// Every resource and its ownership.
    owners: BTreeMap<Resource, Assignment>,
}

impl OwnershipTable {
    /// A table of `resources`, each owned by nobody at epoch 0.
    pub fn new(resources: impl IntoIterator<Item = Resource>) -> Self {
        OwnershipTable {
            live: BTreeMap::new(),
            expired: BTreeSet::new(),
            owners: resources
                .into_iter()
                .map(|r| {
                    let a = Assignment {
                        session: None,
                        epoch: 0,
                    };
                    (r, a)
                })
                .collect(),
        }
    }

    /// Apply one record.
    pub fn apply(&mut self, r: &MetaRecord) {
        match r {
            MetaRecord::Opened { session, now_ms } | MetaRecord::Heard { session, now_ms } => {
                if !self.expired.contains(session) {
                    self.live.insert(*session, *now_ms);
                }
            }
            MetaRecord::Expired { session } => {
                self.live.remove(session);
                self.expired.insert(*session);
            }
            MetaRecord::Unloaded { resource } => {
                if let Some(a) = self.owners.get_mut(resource) {
                    a.session = None;
                }
            }
            MetaRecord::Assigned {
                resource,
                session,
                epoch,
            } => {
                self.owners.insert(
                    resource.clone(),
                    Assignment {
                        session: Some(*session),
                        epoch: *epoch,
                    },
                );
            }
        }
    }

    /// Whether `session` is live.
    pub fn is_live(&self, session: SessionId) -> bool {
        self.live.contains_key(&session)
    }

    /// Whether `session` expired.
    pub fn is_expired(&self, session: SessionId) -> bool {
        self.expired.contains(&session)
    }

    /// Live sessions with when each was last heard from.
    pub fn live(&self) -> impl Iterator<Item = (SessionId, u64)> + '_ {
        self.live.iter().map(|(s, t)| (*s, *t))
    }

    /// Every resource and its ownership.
    pub fn owners(&self) -> impl Iterator<Item = (&Resource, &Assignment)> {
        self.owners.iter()
    }

    /// The ownership of `resource`.
    pub fn owner(&self, resource: &Resource) -> Option<Assignment> {
        self.owners.get(resource).copied()
    }

    /// What `session` owns, with each epoch.
    pub fn owned_by(&self, session: SessionId) -> Vec<(Resource, u64)> {
        self.owners
            .iter()
            .filter(|(_, a)| a.session == Some(session))
            .map(|(r, a)| (r.clone(), a.epoch))
            .collect()
    }

    /// Resources without a live owner.
    pub fn orphans(&self) -> Vec<Resource> {
        self.owners
            .iter()
            .filter(|(_, a)| a.session.is_none_or(|s| !self.is_live(s)))
            .map(|(r, _)| r.clone())
            .collect()
    }
}
