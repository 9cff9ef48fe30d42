//! Omid's run of `percsim compare --scale-out`: TPC-E-lite (`omid-tpce`)
//! on as many tablet servers as the point names, the TSO and the tablet
//! servers charged CPU per request (`OmidCosts`, docs/omid.md).

use super::{OmidSpec, OmidWorkloadSpec};
use crate::compare::{ScaleJob, ScalePoint};
use percsim_sim::WorldConfig;
use percsim_sim::omid::config::{MAX_NODES, OmidConfig, OmidCosts, Tpce};

/// Omid's scale-out run at `point`: two clients per tablet server (at
/// most [`MAX_NODES`]) sharing the point's trading loops; a conflict map
/// that never evicts within the run (Omid's TSO is configured with room
/// for 100 million keys) and timestamp ranges of ten million, so that
/// neither the low watermark nor the ceiling's persistence, but the
/// TSO's CPU, is what a growing load meets. Calls time out after the
/// world's default 100 ms: Omid's first calls, sent before the liveness
/// service listens, are lost and retried after one time-out, so a longer
/// one (Percolator's 2 s here) would stall the start of every run; a call
/// queued longer than that at a saturated TSO is retried, as a client's
/// would be.
pub fn scale_out(point: &ScalePoint) -> ScaleJob {
    let costs = OmidCosts {
        enabled: true,
        ..OmidCosts::default()
    };
    scale_out_costed(point, costs)
}

/// [`scale_out`] with the CPU costs `costs`.
pub fn scale_out_costed(point: &ScalePoint, costs: OmidCosts) -> ScaleJob {
    let clients = (2 * point.servers).min(MAX_NODES);
    let cluster = OmidConfig {
        clients,
        tablets: point.servers,
        conflict_map_size: 100_000_000,
        timestamp_batch: 10_000_000,
        costs,
        ..OmidConfig::default()
    };
    let workload = Tpce {
        customers: point.customers(),
        securities: 100,
        trade_interval_ms: 500_000,
        market_delay_ms: 100,
        initial_balance: 1_000_000,
        workers: point.workers().div_ceil(clients).max(1),
    };
    let world = WorldConfig {
        run_ms: point.run_ms,
        ..WorldConfig::default()
    };
    let spec = OmidSpec {
        cluster,
        workload: OmidWorkloadSpec::Tpce(workload),
    };
    ScaleJob {
        scenario: spec.scenario(1, world),
        central: "TSO",
        central_cpu: "cpu.busy_us.tso",
        server_cpu: "cpu.busy_us.tablet",
    }
}
