//! The fault driver: faults belong to the workload phase, and the healed
//! phase undoes them all.

use super::*;
use crate::world::toy::with_faults;

fn kill(node: &str) -> Fault {
    Fault::Kill {
        node: node.into(),
        restart_after_ms: None,
    }
}

/// The kinds of the events recorded so far.
fn event_kinds(world: &World) -> Vec<String> {
    world.recorder().events().iter().map(|e| e.kind.clone()).collect()
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
        f.apply_point(&Fault::Pause {
            node: "client-0".into(),
            duration_ms: 10,
        });
        (restarted, f.is_down("client-0"))
    });
    assert!(restarted && paused);
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
