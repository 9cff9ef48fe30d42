//! Identities of the world as closed enums, each with the name the history,
//! counters and scenario files spell and a one-line description (as
//! `percsim_protocol::percolator::Ablation` does). A rename happens in one place: the
//! compiler then finds every use, and the serialized names stay as they are.

/// Declare a closed enum of identities with `ALL`, `name()`, `describe()`
/// and `from_name()`.
#[macro_export]
#[doc(hidden)]
macro_rules! identities {
    (
        $(#[$meta:meta])*
        $vis:vis enum $ty:ident {
            $( $(#[$vmeta:meta])* $variant:ident => ($name:expr, $desc:expr), )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis enum $ty {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: &'static [$ty] = &[ $( $ty::$variant, )+ ];

            /// The name histories, counters and files spell.
            pub fn name(self) -> &'static str {
                match self { $( $ty::$variant => $name, )+ }
            }

            /// What it is, in a sentence.
            pub fn describe(self) -> &'static str {
                match self { $( $ty::$variant => $desc, )+ }
            }

            /// The value named `name`, if any.
            pub fn from_name(name: &str) -> Option<$ty> {
                Self::ALL.iter().copied().find(|v| v.name() == name)
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

identities! {
    /// The part a node plays in a system, as the world's fault classes
    /// target nodes. A system maps its own nodes onto these roles (for
    /// Percolator: clients, tablet servers, the timestamp oracle, the
    /// liveness service and the master).
    pub enum Role {
        /// A client (worker) process that runs transactions.
        Client => ("client", "a client process running transactions"),
        /// A server that stores and serves the data (a tablet server, a broker).
        DataServer => ("data_server", "a server holding the data"),
        /// The node that orders transactions (a timestamp oracle, a transaction coordinator).
        Coordinator => ("coordinator", "the node that orders transactions"),
        /// The liveness or lock service (Chubby, ZooKeeper).
        Liveness => ("liveness", "the liveness and lock service"),
        /// The node that assigns data to servers (a master, a load manager).
        Master => ("master", "the node that assigns data to servers"),
    }
}

/// A role serializes as its name (`data_server`), as scenario files key
/// the role-targeted fault classes.
impl serde::Serialize for Role {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// A role reads from its name; another name is an error listing the roles.
impl<'de> serde::Deserialize<'de> for Role {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Role, D::Error> {
        let name = String::deserialize(d)?;
        Role::from_name(&name).ok_or_else(|| {
            let roles: Vec<&str> = Role::ALL.iter().map(|r| r.name()).collect();
            serde::de::Error::custom(format!(
                "unknown role {name:?} (roles: {})",
                roles.join(", ")
            ))
        })
    }
}

identities! {
    /// The fault classes of the world, as scenario files name the random
    /// classes (`faults.random.<name>`) and counters count them
    /// (`fault.<name>`).
    pub enum FaultKind {
        /// Kill a client.
        KillClient => ("kill_client", "kill a client (restarted later)"),
        /// Kill a data server.
        KillDataServer => ("kill_data_server", "kill a data server (its data moves; restarted later)"),
        /// Kill the coordinator.
        KillCoordinator => ("kill_coordinator", "kill the coordinator (restarted later)"),
        /// Kill the liveness service.
        KillLiveness => ("kill_liveness", "kill the liveness service (all sessions lost)"),
        /// Kill the master.
        KillMaster => ("kill_master", "kill the master"),
        /// Freeze a node.
        Pause => ("pause", "freeze a client or data server"),
        /// Stall a client's workers with a valid session.
        Stall => ("stall", "stall a client's workers while its session stays valid"),
        /// Cut a node off.
        Partition => ("partition", "cut one node off from all the others"),
        /// Lose messages.
        PacketLoss => ("packet_loss", "lose a fraction of all messages"),
        /// Slow messages.
        Latency => ("latency", "latency spikes"),
        /// Late and duplicated copies of requests.
        Duplicate => ("duplicate", "late and duplicated copies of requests"),
        /// Expire a live client's session.
        SessionExpiry => ("session_expiry", "expire a live client's session"),
        /// Clock offset and drift.
        ClockSkew => ("clock_skew", "clock offset and drift of a client"),
        /// Kill a client at a named protocol step.
        CrashAtStep => ("crash_at_step", "kill a client at a named protocol step"),
        /// Freeze a client at a named protocol step.
        PauseAtStep => ("pause_at_step", "freeze a client at a named protocol step"),
    }
}

impl FaultKind {
    /// The counter of faults of this kind started (`fault.<name>`).
    pub fn counter(self) -> String {
        format!("fault.{}", self.name())
    }

    /// The role whose nodes a kill class kills (`None` for any other
    /// class): the inverse of [`FaultKind::kill_of`].
    pub fn killed_role(self) -> Option<Role> {
        Role::ALL
            .iter()
            .copied()
            .find(|r| FaultKind::kill_of(*r) == self)
    }

    /// The kill class that targets nodes of `role`.
    pub fn kill_of(role: Role) -> FaultKind {
        match role {
            Role::Client => FaultKind::KillClient,
            Role::DataServer => FaultKind::KillDataServer,
            Role::Coordinator => FaultKind::KillCoordinator,
            Role::Liveness => FaultKind::KillLiveness,
            Role::Master => FaultKind::KillMaster,
        }
    }
}

identities! {
    /// The world's own counters (a system adds its own).
    pub enum Counter {
        /// A duplicated copy of a request was delivered.
        NetDuplicated => ("net.duplicated", "a duplicated copy of a request was delivered"),
        /// A request the network held back was delivered late.
        NetLate => ("net.late", "a request the network held back was delivered late"),
        /// A transaction's client learnt it committed.
        TxnCommitted => ("txn.committed", "a client learnt its transaction committed"),
        /// A transaction's client could not learn its outcome.
        TxnUnknown => ("txn.unknown", "a client could not learn its transaction's outcome"),
        /// A targeted rule dropped, delayed, held or duplicated a message.
        NetIntercepted => ("net.intercepted", "a targeted rule dropped, delayed, held or duplicated a message"),
    }
}

identities! {
    /// The kinds of event the world itself records (a system records its own).
    pub enum EventKind {
        /// A node was killed.
        Kill => ("kill", "a node was killed"),
        /// A killed node restarted.
        Restart => ("restart", "a killed node restarted"),
        /// A node was frozen.
        Pause => ("pause", "a node was frozen"),
        /// A frozen node resumed.
        Resume => ("resume", "a frozen node resumed"),
        /// A client's workers stalled.
        Stall => ("stall", "a client's workers stalled"),
        /// Links were cut.
        Partition => ("partition", "links were cut"),
        /// Cut links healed.
        PartitionHealed => ("partition_healed", "cut links healed"),
        /// Message loss started.
        PacketLoss => ("packet_loss", "message loss started"),
        /// A latency spike started.
        Latency => ("latency", "a latency spike started"),
        /// Request duplication started.
        Duplicate => ("duplicate", "request duplication started"),
        /// A client's session was expired.
        SessionExpired => ("session_expired", "a client's session was expired"),
        /// A client's clock is skewed.
        ClockSkew => ("clock_skew", "a client's clock is skewed"),
        /// The healed phase began.
        PhaseHealed => ("phase_healed", "the healed phase began"),
        /// A workload invariant failed.
        WorkloadViolation => ("workload_violation", "a workload invariant failed"),
        /// A targeted rule acted on a message.
        Intercepted => ("intercepted", "a targeted rule dropped, delayed, held or duplicated a message"),
        /// A workload's driver asked for a fault after the workload phase.
        FaultRefused => ("fault_refused", "a fault asked for after the workload phase was not injected"),
    }
}

impl EventKind {
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
        fn check<T: Copy + PartialEq + std::fmt::Debug>(
            all: &[T],
            name: fn(T) -> &'static str,
            from: fn(&str) -> Option<T>,
        ) {
            let mut names: Vec<&str> = all.iter().map(|v| name(*v)).collect();
            for v in all {
                assert_eq!(from(name(*v)), Some(*v));
            }
            names.sort();
            names.dedup();
            assert_eq!(names.len(), all.len(), "duplicate names");
        }
        check(Role::ALL, Role::name, Role::from_name);
        check(FaultKind::ALL, FaultKind::name, FaultKind::from_name);
        check(EventKind::ALL, EventKind::name, EventKind::from_name);
        check(Counter::ALL, Counter::name, Counter::from_name);
        assert_eq!(Role::from_name("no such role"), None);
        for r in Role::ALL {
            assert_eq!(FaultKind::kill_of(*r).killed_role(), Some(*r));
        }
        assert_eq!(FaultKind::Pause.killed_role(), None);
        let role: Role = serde_json::from_str("\"data_server\"").unwrap();
        assert_eq!(
            (role, serde_json::to_string(&role).unwrap()),
            (Role::DataServer, "\"data_server\"".into())
        );
        let e = serde_json::from_str::<Role>("\"broker\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown role \"broker\" (roles: client, data_server"),
            "{e}"
        );
    }
}
