//! What a system's driver task may do to the world while it runs: inject
//! faults and look at nodes and counters. The fault driver implements it;
//! a [`crate::world::Tenant`] is handed a [`FaultControl`] without knowing
//! the driver.

use crate::world::faults::Fault;
use std::sync::Arc;

/// The operations behind a [`FaultControl`] (implemented by the fault driver).
pub(crate) trait Injector: Send + Sync {
    /// Apply `fault` now, or refuse it after the workload phase.
    fn inject(&self, fault: &Fault);
    /// Whether `node` is neither killed nor paused.
    fn node_up(&self, node: &str) -> bool;
    /// The run's counter `name` (0 if never bumped).
    fn counter(&self, name: &str) -> u64;
    /// Heal every partition in force now.
    fn heal_partitions(&self);
}

/// Lets a system's driver task inject faults and look at the world while
/// it runs (the `script` workload pauses, resumes and kills nodes at exact
/// steps and waits for nodes to be up). Reading never changes the
/// schedule: no message is sent, no task is woken.
pub struct FaultControl {
    inner: Arc<dyn Injector>,
}

impl FaultControl {
    /// A control that acts through `inner`.
    pub(crate) fn over(inner: Arc<dyn Injector>) -> Self {
        FaultControl { inner }
    }

    /// Apply `fault` now. After the workload phase only restarts and
    /// resumes are applied (the healed phase is fault-free): any other
    /// fault is refused and recorded as a `fault_refused` event.
    pub fn inject(&self, fault: &Fault) {
        self.inner.inject(fault);
    }

    /// Whether `node` is up: neither killed nor paused.
    pub fn node_up(&self, node: &str) -> bool {
        self.inner.node_up(node)
    }

    /// The run's counter `name` (0 if never bumped), as `RunSummary` reports them.
    pub fn counter(&self, name: &str) -> u64 {
        self.inner.counter(name)
    }

    /// Heal every partition in force now.
    pub fn heal_partitions(&self) {
        self.inner.heal_partitions();
    }
}
