//! Named crash and pause points outside a client's commit: a fault
//! scheduled at the n-th time a server reaches its point fires exactly
//! once, is counted under the point's name, and the run stays correct.

mod common;

use percsim_protocol::percolator::client::Point;
use percsim_scenarios::systems::percolator;
use percsim_scenarios::workloads::{Register, WorkloadSpec};
use percsim_sim::{
    FaultKind, PercolatorConfig, PointAction, PointFault, WorldConfig, point_counter,
};

fn run_with(faults: Vec<PointFault>, seed: u64) -> percsim_sim::RunOutput {
    let cluster = PercolatorConfig {
        clients: 2,
        oracle_range: 20,
        point_faults: faults,
        ..PercolatorConfig::default()
    };
    let world = WorldConfig {
        run_ms: 1_500,
        ..WorldConfig::default()
    };
    let register = WorkloadSpec::Register(Register::default());
    let scenario = percolator::scenario(seed, world, cluster, register);
    common::run_and_check(&scenario, "points")
}

fn count(out: &percsim_sim::RunOutput, key: &str) -> u64 {
    out.summary.counters.get(key).copied().unwrap_or(0)
}

#[test]
fn a_server_dies_between_its_durable_write_and_its_reply() {
    let faults = vec![
        PointFault {
            point: Point::OracleAfterPersist,
            node: 0,
            nth: 2,
            fault: PointAction::Crash {
                restart_after_ms: Some(200),
            },
        },
        PointFault {
            point: Point::TabletAfterApply,
            node: 1,
            nth: 5,
            fault: PointAction::Crash {
                restart_after_ms: Some(300),
            },
        },
        PointFault {
            point: Point::TabletAfterApply,
            node: 0,
            nth: 7,
            fault: PointAction::Pause { duration_ms: 500 },
        },
    ];
    let out = run_with(faults, 5);
    let c = |p| count(&out, &point_counter(p));
    assert_eq!(
        c(Point::OracleAfterPersist),
        1,
        "{:?}",
        out.summary.counters
    );
    assert_eq!(c(Point::TabletAfterApply), 2, "{:?}", out.summary.counters);
    assert_eq!(count(&out, &FaultKind::CrashAtStep.counter()), 2);
    assert_eq!(count(&out, &FaultKind::PauseAtStep.counter()), 1);
    assert_eq!(c(Point::BeforePrewrite), 0);
}

#[test]
fn without_point_faults_no_node_stops_at_a_point() {
    let out = run_with(Vec::new(), 5);
    for p in Point::ALL {
        assert_eq!(count(&out, &point_counter(p)), 0, "{}", p.name());
    }
}

#[test]
fn a_point_fault_naming_a_missing_node_is_refused() {
    let cluster = PercolatorConfig {
        point_faults: vec![PointFault {
            point: Point::TabletAfterApply,
            node: 9,
            nth: 1,
            fault: PointAction::Pause { duration_ms: 1 },
        }],
        ..PercolatorConfig::default()
    };
    let e = cluster
        .validate(&WorldConfig::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("point_faults[0].node"), "{e}");
    assert!(e.contains("tablet_after_apply"), "{e}");
}
