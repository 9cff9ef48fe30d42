//! Broker sessions in a fault-free run: whatever the world's RPC timeout,
//! every broker keeps the session it starts with, and nothing changes
//! owner (a metadata session lives as long as its pings arrive within the
//! session timeout; how long some other call may wait is no part of it).

use percsim_scenarios::Scenario;
use serde_json::json;

/// A fault-free run of `workload` with the cluster's defaults and the
/// world's RPC timeout `rpc_timeout_ms`: the number of session expiries
/// and ownership moves.
fn expiries_and_moves(workload: &str, seed: u64, rpc_timeout_ms: u64) -> (usize, usize) {
    let text = json!({
        "format": "percsim-scenario/2",
        "seed": seed,
        "system": "pulsar",
        "world": {"run_ms": 2000, "quiesce_ms": 10000, "rpc_timeout_ms": rpc_timeout_ms},
        "workload": {"name": workload}
    });
    let s = Scenario::parse(&text.to_string()).expect("a valid scenario");
    let out = s
        .run()
        .unwrap_or_else(|e| panic!("seed {seed}, rpc timeout {rpc_timeout_ms}: {e}"));
    assert_eq!(out.summary.liveness_failure, None, "seed {seed}");
    let count = |kind: &str| {
        out.history
            .events()
            .iter()
            .filter(|e| e.kind == kind)
            .count()
    };
    (count("broker_session_expired"), count("ownership_moved"))
}

#[test]
fn no_session_expires_in_a_fault_free_run_whatever_the_rpc_timeout() {
    for workload in ["stream", "stream-pipeline"] {
        for rpc_timeout_ms in [100, 300, 1000] {
            for seed in 1..=3 {
                assert_eq!(
                    expiries_and_moves(workload, seed, rpc_timeout_ms),
                    (0, 0),
                    "{workload}, seed {seed}, rpc timeout {rpc_timeout_ms} ms: \
                     (session expiries, ownership moves)"
                );
            }
        }
    }
}
