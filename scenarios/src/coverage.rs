//! What a campaign is expected to exercise ("sometimes" coverage): the
//! world's items (faults injected, the network's late and duplicated
//! deliveries), each applying to the systems that honour the fault class
//! that produces it, and each campaigned system's own items
//! (`SystemDef::coverage`, gathered by the summary). Every item reads one typed counter, so a
//! renamed counter breaks the build instead of flagging "never happened"
//! in every campaign.

use percsim_sim::{Counter, FaultKind};

/// An event a campaign is expected to exercise; one whose counter never
/// moved is flagged in the summary. A system builds its own from a closed
/// enum of its items (its name and description) and the counter each reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoverageItem {
    /// Its name, unique among the items of one campaign.
    pub name: &'static str,
    /// What happened, as the summary prints it.
    pub description: &'static str,
    /// The run counter whose moving shows it happened.
    pub counter: String,
    /// The name of the fault class whose injection alone produces it, if
    /// one does (a world class, or a system's own such as Pulsar's
    /// `unload`): a campaign whose `--faults` leave the class out does not
    /// list it.
    pub class: Option<&'static str>,
}

percsim_sim::identities! {
    /// The world's coverage items: events any system's seeds can exercise
    /// when it honours the fault class producing them.
    pub enum WorldCoverage {
        /// A duplicated request was delivered.
        Duplicated => ("duplicated", "duplicated request delivered"),
        /// A request the network held back was delivered late.
        Late => ("late", "request held back by the network delivered late"),
        /// A client was killed.
        KillClient => ("kill_client", "client killed"),
        /// A data server was killed.
        KillDataServer => ("kill_data_server", "data server killed"),
        /// The coordinator restarted.
        KillCoordinator => ("kill_coordinator", "coordinator restart"),
        /// The liveness service restarted.
        KillLiveness => ("kill_liveness", "liveness service restart"),
        /// A node was paused.
        Pause => ("pause", "node paused"),
        /// Workers stalled with a valid token.
        Stall => ("stall", "worker stalled with a valid token"),
        /// A network partition.
        Partition => ("partition", "network partition"),
    }
}

impl WorldCoverage {
    /// The fault class whose injection produces it: it applies to a
    /// system that honours the class.
    pub fn fault_class(self) -> FaultKind {
        match self {
            WorldCoverage::Duplicated | WorldCoverage::Late => FaultKind::Duplicate,
            WorldCoverage::KillClient => FaultKind::KillClient,
            WorldCoverage::KillDataServer => FaultKind::KillDataServer,
            WorldCoverage::KillCoordinator => FaultKind::KillCoordinator,
            WorldCoverage::KillLiveness => FaultKind::KillLiveness,
            WorldCoverage::Pause => FaultKind::Pause,
            WorldCoverage::Stall => FaultKind::Stall,
            WorldCoverage::Partition => FaultKind::Partition,
        }
    }

    /// The run counter this item reads.
    pub fn counter(self) -> String {
        match self {
            WorldCoverage::Duplicated => Counter::NetDuplicated.name().into(),
            WorldCoverage::Late => Counter::NetLate.name().into(),
            other => other.fault_class().counter(),
        }
    }

    /// As a campaign's item.
    pub fn item(self) -> CoverageItem {
        CoverageItem {
            name: self.name(),
            description: self.describe(),
            counter: self.counter(),
            class: Some(self.fault_class().name()),
        }
    }

    /// The items that apply to a system honouring `fault_classes` (the
    /// default of `SystemDef::world_coverage`).
    pub fn for_classes(fault_classes: &[&str]) -> Vec<WorldCoverage> {
        WorldCoverage::ALL
            .iter()
            .copied()
            .filter(|w| fault_classes.contains(&w.fault_class().name()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut names: Vec<&str> = WorldCoverage::ALL.iter().map(|c| c.name()).collect();
        for c in WorldCoverage::ALL {
            assert_eq!(WorldCoverage::from_name(c.name()), Some(*c));
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), WorldCoverage::ALL.len());
        assert_eq!(WorldCoverage::from_name("nothing"), None);
    }

    /// The counters are the names campaigns wrote before the enums (JSON
    /// lines of older campaigns still merge with the same coverage).
    #[test]
    fn counters_keep_their_on_disk_names() {
        let counters: Vec<String> = WorldCoverage::ALL.iter().map(|c| c.counter()).collect();
        for want in [
            "net.duplicated",
            "net.late",
            "fault.kill_client",
            "fault.kill_data_server",
            "fault.kill_coordinator",
            "fault.kill_liveness",
            "fault.pause",
            "fault.stall",
            "fault.partition",
        ] {
            assert!(counters.iter().any(|c| c == want), "{want}");
        }
        let mut unique = counters.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), counters.len(), "two items read one counter");
    }

    /// An item applies only to a system honouring its fault class.
    #[test]
    fn the_fault_classes_say_which_items_apply() {
        let some = WorldCoverage::for_classes(&["duplicate", "pause"]);
        assert_eq!(
            some,
            vec![
                WorldCoverage::Duplicated,
                WorldCoverage::Late,
                WorldCoverage::Pause
            ]
        );
        assert!(WorldCoverage::for_classes(&[]).is_empty());
        assert_eq!(
            WorldCoverage::for_classes(crate::faultmix::CLASSES).len(),
            WorldCoverage::ALL.len()
        );
    }
}
