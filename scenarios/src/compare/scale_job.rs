//! What a system hands to `percsim compare --scale-out`: the point it
//! runs at and its run there ([`crate::system::SystemDef::scale_out`]).

use crate::scenario::Scenario;
use serde::Serialize;

/// One point of the scale-out: how many data servers, and the load each
/// brings (customers and the trading loops that serve them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ScalePoint {
    /// Data (tablet) servers.
    pub servers: usize,
    /// Customers per server, each trading once per 500 simulated s.
    pub customers_per_server: usize,
    /// Trading loops (workers) per server, spread over the clients.
    pub workers_per_server: usize,
    /// Simulated ms of the workload phase.
    pub run_ms: u64,
}

impl ScalePoint {
    /// The customers in all.
    pub fn customers(&self) -> usize {
        self.customers_per_server * self.servers
    }

    /// The trading loops in all.
    pub fn workers(&self) -> usize {
        self.workers_per_server * self.servers
    }
}

/// A system's run at one point: its scenario and where its CPU time is
/// counted.
pub struct ScaleJob {
    /// TPC-E-lite at the point, the cost model on.
    pub scenario: Scenario,
    /// Its central component's name ("timestamp oracle", "TSO").
    pub central: &'static str,
    /// The counter of the central component's busy CPU µs.
    pub central_cpu: &'static str,
    /// The counter of the data servers' busy CPU µs.
    pub server_cpu: &'static str,
}
