//! The fault driver: faults belong to the workload phase, and the healed
//! phase undoes them all.

use super::*;
use crate::world::lock;
use crate::world::toy::with_faults;

fn kill(node: &str) -> Fault {
    Fault::Kill {
        node: node.into(),
        restart_after_ms: None,
    }
}

/// The kinds of the events recorded so far.
fn event_kinds(world: &World) -> Vec<String> {
    world
        .recorder()
        .events()
        .iter()
        .map(|e| e.kind.clone())
        .collect()
}

#[test]
#[should_panic(expected = "invariant violated: fault Kill { node: \"client-0\"")]
fn a_fault_after_the_workload_phase_trips_the_assertion() {
    with_faults(&[Role::Client], |faults, world| async move {
        world.set_stopping();
        lock_faults(&faults).apply(&kill("client-0"));
    });
}

#[test]
fn a_stall_holds_the_node_it_names_by_index_or_by_name() {
    let roles = [Role::Client, Role::Client, Role::DataServer];
    let (stalled, events) = with_faults(&roles, |faults, world| async move {
        let mut f = lock_faults(&faults);
        let stall = |client: Option<usize>, node: Option<&str>| Fault::Stall {
            client,
            node: node.map(str::to_string),
            duration_ms: 100,
        };
        f.apply(&stall(Some(0), None));
        f.apply(&stall(None, Some("client-1")));
        let kind = crate::world::toy::kind;
        let stalled = [
            kind(Role::Client).nth(0),
            kind(Role::Client).nth(1),
            kind(Role::DataServer).nth(0),
        ]
        .map(|n| world.stalled_until(&n).is_some());
        let fields: Vec<serde_json::Value> = world
            .recorder()
            .events()
            .iter()
            .map(|e| json!(e.fields))
            .collect();
        (stalled, fields)
    });
    assert_eq!(stalled, [true, true, false]);
    assert_eq!(
        events,
        [
            json!({"client": 0, "duration_ms": 100}),
            json!({"node": "client-1", "duration_ms": 100})
        ]
    );
}

#[test]
fn after_the_workload_phase_restarts_and_pause_points_still_apply() {
    let (restarted, paused) = with_faults(&[Role::Client], |faults, world| async move {
        let mut f = lock_faults(&faults);
        f.apply(&kill("client-0"));
        world.set_stopping();
        f.apply(&Fault::Restart {
            node: "client-0".into(),
        });
        let restarted = !f.is_down("client-0");
        // A system's own pause point may fire in the healed phase.
        f.pause_at_point("client-0", 10);
        (restarted, f.is_down("client-0"))
    });
    assert!(restarted && paused);
}

/// A kill or pause a system asks for at one of its named points is its
/// own stop (the system counts it): it is not counted as a fault class,
/// while the same fault injected is.
#[test]
fn a_stop_at_a_point_is_not_counted_as_a_fault_class() {
    let counts = with_faults(&[Role::Client, Role::Client], |faults, world| async move {
        let mut f = lock_faults(&faults);
        f.kill_at_point("client-0", None);
        f.pause_at_point("client-1", 10);
        let count = |k: FaultKind| {
            let n = world.recorder().counters().get(&k.counter()).copied();
            n.unwrap_or(0)
        };
        let at_points = (count(FaultKind::KillClient), count(FaultKind::Pause));
        f.apply(&Fault::Restart {
            node: "client-0".into(),
        });
        f.apply(&Fault::Resume {
            node: "client-1".into(),
        });
        f.apply(&kill("client-0"));
        f.apply(&Fault::Pause {
            node: "client-1".into(),
            duration_ms: 10,
        });
        let injected = (count(FaultKind::KillClient), count(FaultKind::Pause));
        (at_points, injected, f.is_down("client-1"))
    });
    assert_eq!(counts, ((0, 0), (1, 1), true));
}

/// A pause or a stall that found nothing to freeze did not happen, and is
/// not counted: a pause of a node that is down or frozen already, a stall
/// of a client that does not exist.
#[test]
fn a_fault_that_did_not_happen_is_not_counted() {
    let roles = [Role::Client, Role::DataServer];
    let counts = with_faults(&roles, |faults, world| async move {
        let mut f = lock_faults(&faults);
        let count = |k: FaultKind| {
            let n = world.recorder().counters().get(&k.counter()).copied();
            n.unwrap_or(0)
        };
        let pause = |node: &str| Fault::Pause {
            node: node.into(),
            duration_ms: 10,
        };
        f.apply(&kill("data_server-0"));
        f.apply(&pause("data_server-0"));
        let on_a_dead_node = count(FaultKind::Pause);
        f.apply(&pause("client-0"));
        f.apply(&pause("client-0"));
        let twice = count(FaultKind::Pause);
        f.apply(&Fault::Stall {
            client: Some(5),
            node: None,
            duration_ms: 10,
        });
        let stall_of_no_client = count(FaultKind::Stall);
        let pauses = event_kinds(&world)
            .iter()
            .filter(|k| k.as_str() == "pause")
            .count();
        (on_a_dead_node, twice, stall_of_no_client, pauses)
    });
    assert_eq!(counts, (0, 1, 0, 1));
}

#[test]
fn a_workload_drivers_fault_after_the_phase_is_refused_and_recorded() {
    let (during, after, kinds) = with_faults(&[Role::Client], |faults, world| async move {
        let control = FaultControl::new(faults.clone());
        control.inject(&kill("client-0"));
        let during = control.node_up("client-0");
        control.inject(&Fault::Restart {
            node: "client-0".into(),
        });
        world.set_stopping();
        control.inject(&kill("client-0"));
        (during, control.node_up("client-0"), event_kinds(&world))
    });
    assert!(!during, "in the workload phase the kill applies");
    assert!(after, "after it, the kill is refused");
    assert_eq!(kinds, ["kill", "restart", "fault_refused"]);
}

#[test]
fn a_refused_fault_is_recorded_with_what_it_was() {
    let event = with_faults(&[Role::Client], |faults, world| async move {
        world.set_stopping();
        FaultControl::new(faults).inject(&kill("client-0"));
        world.recorder().events()[0].clone()
    });
    assert_eq!(event.kind, EventKind::FaultRefused.name());
    assert_eq!(event.fields["fault"]["kind"], json!("kill"));
    assert_eq!(event.fields["fault"]["node"], json!("client-0"));
    assert_eq!(event.fields["why"], json!("the workload phase is over"));
}

#[test]
#[should_panic(expected = "which no partition cuts")]
fn healing_a_link_no_partition_cut_trips_the_assertion() {
    with_faults(&[Role::Client, Role::DataServer], |faults, _| async move {
        let mut f = lock_faults(&faults);
        let from = f.ids.id("client-0").expect("a node");
        let to = f.ids.id("data_server-0").expect("a node");
        f.run_undo(Undo::Unclog(vec![(from, to)]));
    });
}

#[test]
#[should_panic(
    expected = "invariant violated: the healed phase starts with killed nodes {\"ghost\"}, paused nodes {}, 0 cut links and 0 faults to undo"
)]
fn a_node_left_down_at_the_healed_phase_trips_the_assertion() {
    with_faults(&[Role::Client], |faults, _| async move {
        let mut f = lock_faults(&faults);
        // A killed node the driver does not know cannot be restarted.
        f.killed.insert("ghost".into());
        f.heal();
    });
}

/// A random class firing with `probability` at every tick.
fn class(probability: f64) -> Option<FaultClass> {
    Some(FaultClass {
        probability,
        min_duration_ms: 50,
        max_duration_ms: 100,
        rate: 0.1,
    })
}

/// How many faults of each class `rolls` rolls of `random` start, by the
/// world's counter name (kills by kind).
fn roll_counts(random: RandomFaults, rolls: usize) -> BTreeMap<&'static str, usize> {
    let roles = [Role::Client, Role::Client, Role::DataServer];
    with_faults(&roles, move |faults, _| async move {
        let f = lock_faults(&faults);
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut counts = BTreeMap::new();
        for _ in 0..rolls {
            for fault in roll(&random, &f.ids, f.tenant.as_ref(), &mut rng) {
                let name = match fault {
                    Fault::Kill { .. } => "kill",
                    Fault::Pause { .. } => "pause",
                    Fault::PacketLoss { .. } => "packet_loss",
                    _ => "other",
                };
                *counts.entry(name).or_default() += 1;
            }
        }
        counts
    })
}

#[test]
fn random_classes_fire_in_proportion_to_their_probability() {
    let random = RandomFaults {
        kill_client: class(0.05),
        pause: class(0.2),
        packet_loss: class(0.5),
        ..RandomFaults::default()
    };
    let counts = roll_counts(random.clone(), 2_000);
    // Expected 100, 400 and 1,000 of 2,000 rolls; the bands are more than
    // four standard deviations wide.
    let within = |name: &str, lo: usize, hi: usize| {
        let n = counts.get(name).copied().unwrap_or(0);
        assert!((lo..=hi).contains(&n), "{name}: {n} not in {lo}..={hi}");
    };
    within("kill", 60, 140);
    within("pause", 320, 480);
    within("packet_loss", 900, 1_100);
    assert_eq!(counts.get("other"), None);
    // The same seed rolls the same faults.
    assert_eq!(roll_counts(random, 2_000), counts);
}

#[test]
fn a_class_off_or_at_probability_zero_never_fires_and_one_always_does() {
    let random = RandomFaults {
        pause: class(0.0),
        packet_loss: class(1.0),
        ..RandomFaults::default()
    };
    let counts = roll_counts(random, 500);
    assert_eq!(counts.get("pause"), None);
    assert_eq!(counts.get("kill"), None);
    assert_eq!(counts.get("packet_loss"), Some(&500));
}

#[test]
fn heal_restarts_resumes_and_reconnects_everything() {
    let roles = [Role::Client, Role::Client, Role::DataServer];
    let nodes = roles.len();
    let healed = with_faults(&roles, move |faults, world| async move {
        let mut f = lock_faults(&faults);
        let long = 3_600_000;
        f.apply(&kill("client-0"));
        f.apply(&Fault::Pause {
            node: "client-1".into(),
            duration_ms: long,
        });
        for (a, one_way) in [("data_server-0", false), ("client-1", true)] {
            f.apply(&Fault::Partition {
                a: vec![a.into()],
                b: vec!["client-0".into(), "client-1".into()],
                one_way,
                duration_ms: long,
            });
        }
        f.apply(&Fault::Stall {
            client: Some(1),
            node: None,
            duration_ms: long,
        });
        f.apply(&Fault::PacketLoss {
            rate: 0.5,
            duration_ms: long,
        });
        f.apply(&Fault::Duplicate {
            rate: 0.5,
            max_delay_ms: 10,
            duration_ms: long,
        });
        let before = (
            f.is_down("client-0"),
            f.is_down("client-1"),
            world.cut().len(),
        );
        assert_eq!(before, (true, true, 5), "the faults are in force");
        world.set_stopping();
        f.heal();
        let up = nodes == f.ids.names().iter().filter(|n| !f.is_down(n)).count();
        let link = *lock(&world.link);
        let duplicates = world.net.faults().duplicate_rate;
        (
            up,
            world.cut().len(),
            world.stalled().len(),
            link,
            duplicates,
            f.undo.len(),
        )
    });
    assert_eq!(healed, (true, 0, 0, LinkFaults::default(), 0.0, 0));
}

#[test]
fn overlapping_partitions_keep_a_link_cut_until_the_last_heals() {
    let cut = with_faults(
        &[Role::Client, Role::DataServer],
        |faults, world| async move {
            let cut_off = |ms| Fault::Partition {
                a: vec!["client-0".into()],
                b: vec!["data_server-0".into()],
                one_way: true,
                duration_ms: ms,
            };
            let (from, to) = {
                let mut f = lock_faults(&faults);
                f.apply(&cut_off(10));
                f.apply(&cut_off(1_000));
                (
                    f.ids.id("client-0").unwrap(),
                    f.ids.id("data_server-0").unwrap(),
                )
            };
            let counted = world.cut().get(&(from, to)).copied();
            sleep(Duration::from_millis(20)).await;
            lock_faults(&faults).undo_due();
            let after_first = world.cut().get(&(from, to)).copied();
            sleep(Duration::from_millis(1_000)).await;
            lock_faults(&faults).undo_due();
            (counted, after_first, world.cut().len())
        },
    );
    assert_eq!(cut, (Some(2), Some(1), 0));
}

/// A class aimed at a role fires only on a node of that role that is up
/// (and, for a stall, honours stalls), so every fault it rolls takes
/// effect and is counted then: none while every data server is down.
#[test]
fn a_class_by_role_hits_only_a_live_node_of_its_role() {
    let roles = [Role::Client, Role::DataServer, Role::DataServer];
    let random = RandomFaults {
        pause_of: [(Role::DataServer, class(1.0).unwrap())].into(),
        stall_of: [
            (Role::Client, class(1.0).unwrap()),
            (Role::DataServer, class(1.0).unwrap()),
        ]
        .into(),
        ..RandomFaults::default()
    };
    let (down, up, counted) = with_faults(&roles, move |faults, world| async move {
        let mut f = lock_faults(&faults);
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        f.apply(&kill("data_server-0"));
        f.apply(&Fault::Pause {
            node: "data_server-1".into(),
            duration_ms: 10,
        });
        let pauses = || world.recorder().counters().get("fault.pause").copied();
        let before = pauses();
        let down = roll_roles(&random, &f, &mut rng);
        f.run_undo(Undo::Resume("data_server-1".into()));
        let up = roll_roles(&random, &f, &mut rng);
        for fault in &up {
            f.apply(fault);
        }
        (down, up, (before, pauses()))
    });
    let stall = |d: &Fault| matches!(d, Fault::Stall { node: Some(n), client: None, .. } if n == "client-0");
    assert_eq!(down.len(), 1, "{down:?}");
    assert!(stall(&down[0]), "{down:?}");
    assert_eq!(up.len(), 2, "{up:?}");
    assert!(
        matches!(&up[0], Fault::Pause { node, .. } if node == "data_server-1"),
        "{up:?}"
    );
    assert!(stall(&up[1]), "{up:?}");
    assert_eq!(counted, (Some(1), Some(2)));
}
