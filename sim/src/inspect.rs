//! What a workload's driver may read of the world while it runs (a
//! script's wait conditions and store assertions): one cell as the store
//! holds it, whether a node is up, the run's counters. Reading never
//! changes the schedule: no message is sent, no task is woken.

use crate::driver::Controller;
use percsim_protocol::row::Column;

/// One cell as the durable store holds it now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellView {
    /// Its data, lock and write columns.
    pub column: Column,
    /// Its entry in the row's `notify` column, if any (the value that set it).
    pub notify: Option<u64>,
}

impl Controller {
    /// The cell `row`/`col` as the store holds it now.
    pub fn cell(&self, row: &str, col: &str) -> CellView {
        let faults = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        let durable = faults.world().durable();
        let Some(r) = durable.rows.get(row) else {
            return CellView::default();
        };
        CellView {
            column: r.col(col).clone(),
            notify: r.notify.get(col).copied(),
        }
    }

    /// Whether `node` is up: neither killed nor paused.
    pub fn node_up(&self, node: &str) -> bool {
        !self
            .faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_down(node)
    }

    /// The run's counter `name` (0 if never bumped), as `RunSummary` reports them.
    pub fn counter(&self, name: &str) -> u64 {
        let faults = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        let n = faults.world().recorder().counters.get(name).copied();
        n.unwrap_or(0)
    }

    /// Heal every partition in force now.
    pub fn heal_partitions(&self) {
        self.faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .heal_partitions();
    }
}
