//! Scale-out and the CPU cost model: central services are not capped by
//! the simulator's intake, a node never works more than its cores allow,
//! and TPC-E-lite keeps its invariants and shows the broker conflicts the
//! paper predicts.

mod common;

use percsim_scenarios::systems::percolator;
use percsim_scenarios::workloads::{Register, Tpce, WorkloadSpec};
use percsim_sim::{CostModel, PercolatorConfig, PercolatorCounter, WorldConfig};

/// A world of `run_ms` with replies awaited for `rpc_timeout_ms`.
fn world(run_ms: u64, rpc_timeout_ms: u64) -> WorldConfig {
    WorldConfig {
        run_ms,
        rpc_timeout_ms,
        ..WorldConfig::default()
    }
}

fn counter(out: &percsim_sim::RunOutput, key: &str) -> u64 {
    out.summary.counters.get(key).copied().unwrap_or(0)
}

/// madsim's own RPC handler takes in one request of a kind per simulated
/// ms; with it, the oracle and the master capped the cluster near 1,000
/// requests per simulated second and time-outs cascaded into "unavailable"
/// aborts (fixed in 051291d). 48 clients keep more than 2,000 oracle requests per
/// second in flight: all must be served, none may time out.
#[test]
fn the_oracle_serves_more_than_one_request_per_simulated_ms() {
    let cluster = PercolatorConfig {
        tablet_servers: 8,
        tablets: 16,
        clients: 96,
        workers_per_client: 2,
        ..PercolatorConfig::default()
    };
    let register = Register {
        keys: 4_000,
        ..Register::default()
    };
    let scenario = percolator::scenario(
        3,
        world(1_500, 100),
        cluster,
        WorkloadSpec::Register(register),
    );
    let out = common::run_and_check(&scenario, "scale");
    let per_s = counter(&out, PercolatorCounter::OracleRequests.name()) as f64
        / (out.summary.sim_ns as f64 / 1e9);
    assert!(
        per_s > 2_000.0,
        "oracle requests per simulated second: {per_s:.0}"
    );
    assert_eq!(
        counter(&out, "abort.unavailable"),
        0,
        "{:?}",
        out.summary.counters
    );
}

/// With the cost model on, a saturated tablet server is busy for (almost)
/// all of its cores' time and never for more; with it off, nothing is charged.
#[test]
fn a_saturated_tablet_server_works_exactly_as_much_as_its_cores_allow() {
    let run_ms = 1_000;
    let mut cluster = PercolatorConfig {
        tablet_servers: 1,
        tablets: 1,
        clients: 32,
        workers_per_client: 16,
        costs: CostModel {
            enabled: true,
            tablet_cores: 1,
            ..CostModel::default()
        },
        ..PercolatorConfig::default()
    };
    let register = Register {
        keys: 5_000,
        max_ops: 2,
        ..Register::default()
    };
    let w = world(run_ms, 2_000);
    let spec = WorkloadSpec::Register(register.clone());
    let scenario = percolator::scenario(5, w.clone(), cluster.clone(), spec);
    let out = common::run_and_check(&scenario, "scale");
    let busy_us = counter(&out, "cpu.busy_us.tablet");
    let capacity_us = run_ms * 1_000;
    assert!(
        busy_us <= capacity_us + 1_000,
        "busy {busy_us} us > capacity {capacity_us} us"
    );
    assert!(
        busy_us * 10 >= capacity_us * 8,
        "not saturated: busy {busy_us} of {capacity_us} us"
    );

    cluster.costs.enabled = false;
    let scenario = percolator::scenario(5, w, cluster, WorkloadSpec::Register(register));
    let out = common::run_and_check(&scenario, "scale");
    assert_eq!(counter(&out, "cpu.busy_us.tablet"), 0);
}

fn tpce_cluster() -> PercolatorConfig {
    PercolatorConfig {
        tablet_servers: 3,
        tablets: 6,
        clients: 3,
        workers_per_client: 32,
        costs: CostModel {
            enabled: true,
            ..CostModel::default()
        },
        ..PercolatorConfig::default()
    }
}

/// TPC-E-lite commits trades and its final invariants hold.
#[test]
fn tpce_lite_trades_and_keeps_balances_and_holdings_consistent() {
    let tpce = Tpce {
        customers: 5_000,
        trade_interval_ms: 50_000,
        ..Tpce::default()
    };
    let scenario = percolator::scenario(
        7,
        world(4_000, 2_000),
        tpce_cluster(),
        WorkloadSpec::Tpce(tpce),
    );
    let out = common::run_and_check(&scenario, "scale");
    assert!(
        out.summary.committed > 600,
        "committed {}",
        out.summary.committed
    );
    assert!(
        out.summary.workload_violations.is_empty(),
        "{:?}",
        out.summary.workload_violations
    );
}

/// The broker-commission write the paper omitted: every broker serves many
/// customers, so Trade-Results conflict on it; without it they do not.
#[test]
fn the_broker_commission_write_shows_the_conflicts_the_paper_predicts() {
    let aborts = |broker_commission: bool| {
        let tpce = Tpce {
            customers: 2_000,
            customers_per_broker: 1_000,
            trade_interval_ms: 10_000,
            broker_commission,
            ..Tpce::default()
        };
        let world = world(4_000, 2_000);
        let scenario = percolator::scenario(11, world, tpce_cluster(), WorkloadSpec::Tpce(tpce));
        let out = common::run_and_check(&scenario, "scale");
        assert!(
            out.summary.workload_violations.is_empty(),
            "{:?}",
            out.summary.workload_violations
        );
        counter(&out, "abort.write_conflict") + counter(&out, "abort.lock_conflict")
    };
    let (with, without) = (aborts(true), aborts(false));
    assert!(
        with > 10 * without.max(1),
        "conflicts with commission {with}, without {without}"
    );
}
