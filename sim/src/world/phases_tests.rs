//! The phases of a run, on a toy system: faults in the workload phase
//! only, timed faults at their times, a healed phase that undoes them all,
//! and a run that does not settle reported as a liveness failure.

use super::*;
use crate::world::faults::{FaultClass, FaultConfig, RandomFaults, TimedFault};
use crate::world::toy::Toy;

const MS: u64 = 1_000_000;

/// The events of `out` as (ms, kind, node) triples.
fn events(out: &RunOutput) -> Vec<(u64, String, String)> {
    out.history
        .events()
        .iter()
        .map(|e| {
            let node = e.fields.get("node").and_then(|n| n.as_str()).unwrap_or("");
            (e.t_ns / MS, e.kind.clone(), node.to_string())
        })
        .collect()
}

/// When the healed phase began, in ms.
fn healed_at_ms(out: &RunOutput) -> u64 {
    let healed = EventKind::PhaseHealed.name();
    events(out)
        .into_iter()
        .find(|(_, kind, _)| kind == healed)
        .map(|(ms, _, _)| ms)
        .expect("a phase_healed event")
}

fn at(at_ms: u64, fault: Fault) -> TimedFault {
    TimedFault { at_ms, fault }
}

/// Two clients and a data server whose workload phase lasts `run_ms`.
fn toy(run_ms: u64, faults: FaultConfig) -> Toy {
    let mut toy = Toy::new(run_ms, &[Role::Client, Role::Client, Role::DataServer]);
    toy.cfg.faults = faults;
    toy
}

#[test]
fn random_classes_fire_only_within_the_workload_phase() {
    let class = |probability| {
        Some(FaultClass {
            probability,
            min_duration_ms: 50,
            max_duration_ms: 300,
            rate: 0.1,
        })
    };
    let random = RandomFaults {
        packet_loss: class(0.25),
        pause: class(0.1),
        ..RandomFaults::default()
    };
    let toy = toy(
        20_000,
        FaultConfig {
            random,
            ..FaultConfig::default()
        },
    );
    let out = toy.run(7);
    let healed_ms = healed_at_ms(&out);
    assert!((20_000..20_020).contains(&healed_ms), "{healed_ms}");
    let count = |kind: &str| {
        let of_kind: Vec<u64> = events(&out)
            .into_iter()
            .filter(|(_, k, _)| k == kind)
            .map(|(ms, _, _)| ms)
            .collect();
        assert!(
            of_kind.iter().all(|ms| *ms < 20_000),
            "{kind} after the phase"
        );
        of_kind.len()
    };
    // 200 rolls: about 50 losses (a band of four standard deviations).
    let losses = count("packet_loss");
    assert!((26..=74).contains(&losses), "{losses}");
    assert_eq!(out.summary.counters["fault.packet_loss"], losses as u64);
    // A pause picks a node at random and skips one already paused.
    let pauses = count("pause");
    assert!((5..=35).contains(&pauses), "{pauses}");
    assert_eq!(out.summary.liveness_failure, None);
    // The same seed, the same history; another seed, other faults.
    assert_eq!(toy.run(7).history, out.history);
    assert_ne!(toy.run(8).history.events(), out.history.events());
}

#[test]
fn timed_faults_fire_at_their_times_and_end_after_their_durations() {
    let schedule = vec![
        at(
            1_234,
            Fault::Kill {
                node: "client-0".into(),
                restart_after_ms: Some(500),
            },
        ),
        at(
            3_000,
            Fault::Pause {
                node: "data_server-0".into(),
                duration_ms: 400,
            },
        ),
    ];
    let out = toy(
        5_000,
        FaultConfig {
            schedule,
            ..FaultConfig::default()
        },
    )
    .run(1);
    let got = events(&out);
    let when = |kind: &str| {
        got.iter()
            .find(|(_, k, _)| k == kind)
            .map(|(ms, _, node)| (*ms, node.as_str()))
            .unwrap_or_else(|| panic!("no {kind} event in {got:?}"))
    };
    // The driver looks every 10 ms.
    let (kill_ms, killed) = when("kill");
    assert!(
        (1_234..1_244).contains(&kill_ms) && killed == "client-0",
        "{got:?}"
    );
    let (restart_ms, restarted) = when("restart");
    assert!((kill_ms + 500..kill_ms + 511).contains(&restart_ms) && restarted == "client-0");
    let (pause_ms, paused) = when("pause");
    assert!((3_000..3_010).contains(&pause_ms) && paused == "data_server-0");
    let (resume_ms, _) = when("resume");
    assert!(
        (pause_ms + 400..pause_ms + 411).contains(&resume_ms),
        "{got:?}"
    );
}

#[test]
fn the_healed_phase_heals_every_partition_and_restarts_every_killed_node() {
    let long = 3_600_000;
    let schedule = vec![
        at(
            100,
            Fault::Kill {
                node: "data_server-0".into(),
                restart_after_ms: None,
            },
        ),
        at(
            200,
            Fault::Partition {
                a: vec!["client-0".into()],
                b: vec!["client-1".into(), "data_server-0".into()],
                one_way: false,
                duration_ms: long,
            },
        ),
        at(
            300,
            Fault::Pause {
                node: "client-1".into(),
                duration_ms: long,
            },
        ),
        at(
            400,
            Fault::Kill {
                node: "client-0".into(),
                restart_after_ms: Some(long),
            },
        ),
    ];
    let out = toy(
        2_000,
        FaultConfig {
            schedule,
            ..FaultConfig::default()
        },
    )
    .run(1);
    let healed_ms = healed_at_ms(&out);
    let mut undone: Vec<(String, String)> = events(&out)
        .into_iter()
        .filter(|(ms, kind, _)| *ms == healed_ms && kind != "phase_healed")
        .map(|(_, kind, node)| (kind, node))
        .collect();
    undone.sort();
    let pair = |k: &str, n: &str| (k.to_string(), n.to_string());
    assert_eq!(
        undone,
        [
            pair("partition_healed", ""),
            pair("restart", "client-0"),
            pair("restart", "data_server-0"),
            pair("resume", "client-1"),
        ]
    );
    assert_eq!(out.summary.liveness_failure, None);
}

#[test]
fn the_recorder_keeps_the_worlds_events_in_time_order() {
    let schedule = vec![
        at(
            500,
            Fault::Stall {
                client: Some(1),
                node: None,
                duration_ms: 50,
            },
        ),
        at(100, Fault::ExpireSession { client: 0 }),
    ];
    let mut toy = toy(
        1_000,
        FaultConfig {
            schedule,
            ..FaultConfig::default()
        },
    );
    toy.cfg.clocks = vec![crate::world::ClockEntry {
        node: None,
        offset_ms: 5,
        drift_ppm: 0,
    }];
    let out = toy.run(1);
    let kinds: Vec<String> = events(&out).into_iter().map(|(_, k, _)| k).collect();
    assert_eq!(
        kinds,
        ["clock_skew", "session_expired", "stall", "phase_healed"]
    );
    let times: Vec<u64> = out.history.events().iter().map(|e| e.t_ns).collect();
    assert!(times.is_sorted(), "{times:?}");
    for kind in ["clock_skew", "session_expired", "stall", "phase_healed"] {
        assert_eq!(out.summary.counters[&format!("event.{kind}")], 1, "{kind}");
    }
    let h = out
        .transactions()
        .expect("the toy writes percsim-history/1");
    assert_eq!(h.seed, 1);
    assert_eq!(h.scenario, json!({"toy": true}));
}

#[test]
fn a_run_that_does_not_settle_is_a_liveness_failure_not_a_safety_one() {
    let mut toy = toy(1_000, FaultConfig::default());
    toy.unsettled = 3;
    toy.violations = vec!["the final check ran".into()];
    let out = toy.run(1);
    assert_eq!(
        out.summary.liveness_failure.as_deref(),
        Some(
            "not converged after 1000 ms of healed phase: 3 toy chores left, 0 late copies in flight"
        )
    );
    // The system's final check does not run on an unsettled system: no
    // workload violation, and the history itself passes the checker.
    assert_eq!(out.summary.workload_violations, Vec::<String>::new());
    assert!(percsim_checker::check(out.transactions().expect("a history")).passed);
    // It ran its whole healed phase.
    assert!(out.summary.sim_ns >= 2_000 * MS, "{}", out.summary.sim_ns);
}

#[test]
fn a_settled_run_runs_the_final_check_and_reports_its_violations() {
    let mut toy = toy(1_000, FaultConfig::default());
    toy.violations = vec!["the final check ran".into()];
    let out = toy.run(1);
    assert_eq!(out.summary.liveness_failure, None);
    assert_eq!(out.summary.workload_violations, ["the final check ran"]);
    let last = out.history.events().last().expect("events");
    assert_eq!(last.kind, EventKind::WorkloadViolation.name());
}

#[test]
fn a_run_of_more_simulated_time_than_the_wall_budget_is_not_stuck() {
    // 700 simulated seconds, past the default wall budget of 600 s, with a
    // client counting an RPC every 100 ms (the watchdog looks at the clock
    // every 256 of them): it takes a few seconds of real time.
    let mut toy = toy(700_000, FaultConfig::default());
    toy.tick_ms = Some(100);
    let started = std::time::Instant::now();
    let out = toy.run(1);
    assert!(out.summary.sim_ns >= 700_000 * MS);
    assert!(started.elapsed().as_secs() < 600);
}
