//! Fault classes named by the role they hit: `kill:<role>`, `pause:<role>`
//! and `stall:<role>`, the role as each system names it (or as the world
//! does), in a campaign's `--faults` and in a scenario file's
//! `world.faults.random`. A role a system has not, or a class it cannot
//! honour, is refused naming the class, the role and the system.

use percsim_scenarios::Scenario;
use percsim_scenarios::campaign::{self, Mix};
use percsim_sim::{NodeName, Role, pulsar_kinds};

const CLASS: &str = r#"{"probability": 0.3, "min_duration_ms": 50, "max_duration_ms": 200}"#;

/// A scenario of `system` whose random classes are `random` (a JSON object).
fn scenario(system: &str, section: &str, workload: &str, random: &str) -> String {
    format!(
        r#"{{"format": "percsim-scenario/2", "system": "{system}", "seed": 3,
            "world": {{"run_ms": 2000, "quiesce_ms": 30000, "faults": {{"random": {random}}}}},
            "{system}": {section}, "workload": {workload}}}"#
    )
}

fn pulsar(random: &str) -> String {
    let section = r#"{"clients": 3, "brokers": 3, "partitions": 2}"#;
    scenario("pulsar", section, r#"{"name": "stream"}"#, random)
}

fn percolator(random: &str) -> String {
    let section = r#"{"tablet_servers": 2, "tablets": 2, "clients": 2}"#;
    scenario("percolator", section, r#"{"name": "register"}"#, random)
}

#[test]
fn a_scenario_file_names_classes_by_the_systems_roles() {
    let file = pulsar(&format!(
        r#"{{"kill:broker": {CLASS}, "pause:broker": {CLASS}, "stall:client": {CLASS}}}"#
    ));
    let s = Scenario::parse(&file).expect("role-named classes load");
    let r = &s.world.faults.random;
    assert!(r.kill_data_server.is_some());
    assert_eq!(r.pause_of.keys().collect::<Vec<_>>(), [&Role::DataServer]);
    assert_eq!(r.stall_of.keys().collect::<Vec<_>>(), [&Role::Client]);
    // The world's name of a role does too, and the old names still load.
    let file = percolator(&format!(
        r#"{{"pause:data_server": {CLASS}, "kill_tablet_server": {CLASS}, "kill:oracle": {CLASS}}}"#
    ));
    let s = Scenario::parse(&file).expect("loads");
    let r = &s.world.faults.random;
    assert!(r.pause_of.contains_key(&Role::DataServer));
    assert!(r.kill_data_server.is_some() && r.kill_coordinator.is_some());
    // Saved, it reads back the same.
    let saved = serde_json::to_string(&s).expect("saves");
    assert_eq!(Scenario::parse(&saved).expect("reads back").world, s.world);
}

#[test]
fn a_role_the_system_has_not_or_a_class_it_cannot_honour_is_refused() {
    let cases = [
        (
            pulsar(&format!(r#"{{"pause:oracle": {CLASS}}}"#)),
            r#"world.faults.random.pause:oracle: system pulsar has no role "oracle" (its roles: client, broker, coordinator, metadata)"#,
        ),
        (
            pulsar(&format!(r#"{{"kill:tablet_server": {CLASS}}}"#)),
            r#"world.faults.random.kill:tablet_server: system pulsar has no role "tablet_server""#,
        ),
        (
            pulsar(&format!(r#"{{"stall:broker": {CLASS}}}"#)),
            "world.faults.random.stall:broker: system pulsar cannot stall its broker nodes (its classes: ",
        ),
        (
            percolator(&format!(r#"{{"stall:tablet_server": {CLASS}}}"#)),
            "world.faults.random.stall:tablet_server: system percolator cannot stall its tablet_server nodes",
        ),
        (
            percolator(&format!(
                r#"{{"kill:tablet_server": {CLASS}, "kill_data_server": {CLASS}}}"#
            )),
            "system percolator is given this class twice (also as \"kill_data_server\")",
        ),
    ];
    for (file, want) in cases {
        let e = Scenario::parse(&file).expect_err(want).to_string();
        assert!(e.contains(want), "{e}\nwanted: {want}");
    }
}

#[test]
fn a_campaign_refuses_a_role_class_naming_the_role_and_the_system() {
    let mix = |system: &str, class: &str| Mix {
        systems: vec![system.into()],
        faults: vec![class.into()],
        ..Mix::default()
    };
    let cases = [
        ("pulsar", "pause:oracle", "it has no role \"oracle\""),
        ("pulsar", "stall:broker", "it cannot stall its broker nodes"),
        (
            "percolator",
            "stall:oracle",
            "it cannot stall its oracle nodes",
        ),
        ("percolator", "pause:broker", "it has no role \"broker\""),
    ];
    for (system, class, why) in cases {
        let e = mix(system, class).validate().unwrap_err();
        let want = format!("system {system} does not honour fault class {class:?}: {why}");
        assert!(e.contains(&want), "{e}\nwanted: {want}");
    }
    for (system, class) in [("pulsar", "pause:broker"), ("percolator", "stall:client")] {
        mix(system, class).validate().expect(class);
    }
}

/// A campaign draws a role-named class only when named, for every system,
/// leaving the system's own draws as they were.
#[test]
fn a_campaign_switches_a_role_class_on_when_named() {
    for (system, class, role) in [
        ("pulsar", "pause:broker", Role::DataServer),
        ("percolator", "pause:tablet_server", Role::DataServer),
        ("omid", "stall:client", Role::Client),
    ] {
        let plain = Mix {
            systems: vec![system.into()],
            ..Mix::default()
        };
        let named = Mix {
            faults: vec![class.into()],
            ..plain.clone()
        };
        let on = campaign::generate(5, &named);
        let r = &on.world.faults.random;
        let by_role = r.pause_of.keys().chain(r.stall_of.keys());
        assert_eq!(by_role.collect::<Vec<_>>(), [&role], "{system}");
        let off = campaign::generate(5, &plain);
        assert!(off.world.faults.random.pause_of.is_empty(), "{system}");
        assert!(off.world.faults.random.stall_of.is_empty(), "{system}");
    }
}

/// `pause:broker` pauses brokers only, and each pause is counted once it
/// is injected: as many `fault.pause` as pause events, all of brokers.
#[test]
fn a_pause_by_role_pauses_nodes_of_that_role_and_is_counted_when_injected() {
    let file = pulsar(&format!(r#"{{"pause:broker": {CLASS}}}"#));
    let s = Scenario::parse(&file).expect("loads");
    let out = s.run().expect("runs");
    let paused: Vec<NodeName> = out
        .history
        .events()
        .iter()
        .filter(|e| e.kind == "pause")
        .map(|e| {
            let node = e.fields["node"].as_str().expect("a node");
            NodeName::parse(node, &pulsar_kinds::ALL).expect("a Pulsar node")
        })
        .collect();
    assert!(paused.len() > 2, "{} pauses", paused.len());
    assert!(
        paused.iter().all(|n| n.role() == Role::DataServer),
        "{paused:?}"
    );
    let counted = out.summary.counters.get("fault.pause").copied();
    assert_eq!(counted, Some(paused.len() as u64));
}
