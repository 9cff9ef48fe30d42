//! What a workload gives the simulator: initial data, tablet boundaries,
//! the code each transaction thread runs, and its final invariant check.

use crate::percolator::inspect::Controller;
use crate::percolator::nodes::client::Client;
pub use crate::percolator::nodes::client::Worker;
pub use crate::world::BoxFuture;
use percsim_protocol::percolator::CellKey;
use percsim_protocol::percolator::client::{ObserverBody, ObserverSpec};
use std::sync::Arc;

/// A workload the simulator can run.
pub trait Workload: Send + Sync + 'static {
    /// Cells committed before the run starts (as one transaction).
    fn initial_data(&self) -> Vec<(CellKey, String)>;
    /// Row keys at which to split the table into `tablets` tablets.
    fn split_points(&self, tablets: usize) -> Vec<String>;
    /// The loop one transaction thread runs; it should return soon after
    /// `worker.client.stopping()` turns true.
    fn worker(&self, worker: Worker) -> BoxFuture<()>;
    /// After quiescence: check the workload's own invariants with a fresh
    /// client; returns the violations found.
    fn final_check(&self, client: Arc<Client>) -> BoxFuture<Vec<String>>;
    /// The workload's observers: each observes one column (several may
    /// observe the same one) and runs its body in a new transaction after a
    /// change. None by default.
    fn observers(&self) -> Vec<(ObserverSpec, Arc<dyn ObserverBody<Client>>)> {
        Vec::new()
    }
    /// An optional task on the harness's own node during the workload
    /// phase, which can inject faults; when it finishes, the workload phase
    /// ends early.
    fn driver(&self, _control: Controller) -> Option<BoxFuture<()>> {
        None
    }
}

/// Split points that cut `keys` (sorted or not) into `tablets` nearly equal runs.
pub fn even_splits(keys: &[String], tablets: usize) -> Vec<String> {
    let mut keys = keys.to_vec();
    keys.sort();
    keys.dedup();
    if tablets <= 1 || keys.is_empty() {
        return Vec::new();
    }
    (1..tablets)
        .map(|i| keys[(i * keys.len() / tablets).min(keys.len() - 1)].clone())
        .collect()
}
