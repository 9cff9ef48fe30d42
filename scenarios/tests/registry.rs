//! The system registry and the one interface behind every system: a
//! campaign obeys `--faults`, `--workload` and `--ablate` for every system
//! or refuses them by name, seeds are keyed by system, and a scenario file
//! names its system's section.

use percsim_scenarios::campaign::Mix;
use percsim_scenarios::fuzz::Options;
use percsim_scenarios::system::SystemDef;
use percsim_scenarios::systems;

fn mix(systems: &[&str], workloads: &[&str], faults: &[&str], ablations: &[&str]) -> Mix {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    Mix {
        systems: strings(systems),
        workloads: strings(workloads),
        faults: strings(faults),
        ablations: strings(ablations),
    }
}

fn pulsar() -> &'static dyn SystemDef {
    systems::find("pulsar").expect("registered")
}

#[test]
fn a_fault_class_a_system_does_not_honour_is_refused_by_name() {
    let e = mix(&["pulsar"], &[], &["kill_liveness"], &[])
        .validate()
        .unwrap_err();
    assert!(
        e.contains("system pulsar does not honour fault class \"kill_liveness\""),
        "{e}"
    );
    let e = mix(&["percolator"], &[], &["kill_everything"], &[])
        .validate()
        .unwrap_err();
    assert!(e.contains("unknown fault class \"kill_everything\""), "{e}");
    mix(&["pulsar"], &[], &["kill_client"], &[])
        .validate()
        .unwrap();
}

#[test]
fn a_workload_of_another_system_is_refused_and_an_unknown_one_named() {
    let e = mix(&["pulsar"], &["bank"], &[], &[])
        .validate()
        .unwrap_err();
    assert!(e.contains("no workload named for system pulsar"), "{e}");
    let e = mix(&["percolator"], &["nosuch"], &[], &[])
        .validate()
        .unwrap_err();
    assert!(e.contains("unknown workload \"nosuch\""), "{e}");
}

#[test]
fn a_planted_bug_of_another_system_is_refused_by_owner() {
    let e = mix(&["percolator"], &[], &[], &["marker-by-producer-epoch"])
        .validate()
        .unwrap_err();
    assert!(e.contains("is system pulsar's"), "{e}");
    let e = mix(&["percolator"], &[], &[], &["nosuch-bug"])
        .validate()
        .unwrap_err();
    assert!(e.contains("unknown planted bug \"nosuch-bug\""), "{e}");
}

#[test]
fn every_system_by_default_narrows_to_those_the_flags_apply_to() {
    let all: Vec<&str> = systems::names();
    let narrowed = mix(&all, &["stream"], &[], &[]).narrowed().unwrap();
    assert_eq!(narrowed.systems, vec!["pulsar".to_string()]);
    let narrowed = mix(&all, &[], &["kill_liveness"], &[]).narrowed().unwrap();
    assert!(!narrowed.systems.contains(&"pulsar".to_string()));
    let narrowed = mix(&all, &[], &[], &["no-rollback-record"])
        .narrowed()
        .unwrap();
    assert_eq!(narrowed.systems, vec!["percolator".to_string()]);
    assert!(
        mix(&all, &["stream"], &["kill_liveness"], &[])
            .narrowed()
            .is_err()
    );
}

/// `--faults` reaches Pulsar's generated scenarios: only the named class
/// is ever on, and without the names the campaign is what it was.
#[test]
fn pulsar_campaigns_obey_the_named_fault_classes_and_workloads() {
    let only = mix(&["pulsar"], &["stream"], &["kill_client"], &[]);
    let mut on = 0;
    for seed in 0..40 {
        let s = pulsar().generate(seed, &only);
        assert_eq!(s.workload_name(), "stream", "seed {seed}");
        let classes: Vec<&str> = s
            .world
            .faults
            .random
            .classes()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert!(classes.iter().all(|c| *c == "kill_client"), "{classes:?}");
        on += classes.len();
        let section = s.spec.section().unwrap();
        assert_eq!(section["crashes"], serde_json::json!([]), "seed {seed}");
        assert!(s.world.clocks.is_empty(), "seed {seed}");
    }
    assert!(on > 5, "kill_client was on in {on} of 40 seeds");
    // Every class and workload named is the same as none named.
    let none = mix(&["pulsar"], &[], &[], &[]);
    let every = mix(
        &["pulsar"],
        pulsar().workloads(),
        pulsar().fault_classes(),
        &[],
    );
    for seed in 0..10 {
        assert_eq!(
            pulsar().generate(seed, &none).to_value().unwrap(),
            pulsar().generate(seed, &every).to_value().unwrap()
        );
    }
}

/// A campaign over every system runs each system's share of the range, one
/// system after the other, and says which system each seed is.
#[test]
fn a_campaign_keys_its_seeds_by_system() {
    let opts = Options {
        start: 0,
        end: 20,
        mix: mix(&systems::names(), &[], &[], &[]),
        ..Options::default()
    };
    let split: Vec<(&str, u64)> = opts.split().iter().map(|(s, n)| (s.name(), *n)).collect();
    // Each system runs its share of the range, in registration order.
    let want: Vec<(&str, u64)> = systems::all()
        .iter()
        .map(|s| {
            let (num, den) = s.campaign_share();
            (s.name(), 20 * num / den)
        })
        .collect();
    assert_eq!(split, want);
    assert_eq!(split[0], ("percolator", 20));
    assert_eq!(split[1], ("pulsar", 2));
    assert_eq!(split[2], ("omid", 2), "Omid runs a tenth, as Pulsar does");
    assert_eq!(opts.seed_count(), want.iter().map(|(_, n)| n).sum::<u64>());
    let (s, seed) = opts.seed_at(21);
    assert_eq!((s.name(), seed), ("pulsar", 1));
    let (s, seed) = opts.seed_at(22);
    assert_eq!((s.name(), seed), ("omid", 0));
    let (s, seed) = opts.seed_at(3);
    assert_eq!((s.name(), seed), ("percolator", 3));
    let one = Options {
        mix: mix(&["pulsar"], &[], &[], &[]),
        ..opts
    };
    assert_eq!(one.seed_count(), 20, "one system runs the whole range");
}

/// A Pulsar-only campaign whose brokers stop at their named points (killed
/// or frozen) reports those stops as covered and counts them as what they
/// are (`crash_at_step`, `pause_at_step`), never as random pauses, and
/// prints none of another system's sections or points.
#[test]
fn a_pulsar_campaign_reports_its_point_stops_as_covered() {
    let opts = Options {
        start: 0,
        end: 40,
        jobs: 2,
        mix: mix(&["pulsar"], &[], &["crash_at_step", "pause_at_step"], &[]),
        progress: false,
        shrink_budget: 0,
        ..Options::default()
    };
    let summary = percsim_scenarios::fuzz::run(&opts, None).expect("no JSON lines to write");
    let text = summary.render();
    let count = |k: &str| summary.counters.get(k).copied().unwrap_or(0);
    assert!(count("event.crash_at_point") > 0, "{text}");
    assert!(
        count("fault.pause_at_step") > 0,
        "no broker froze at a point:\n{text}"
    );
    assert_eq!(
        count("fault.pause"),
        0,
        "a freeze at a point is no pause:\n{text}"
    );
    for covered in [
        "broker killed at a named point",
        "broker frozen at a named point",
        "client killed at a named point",
    ] {
        let line = text
            .lines()
            .find(|l| l.contains(covered))
            .unwrap_or_else(|| panic!("{covered} not listed:\n{text}"));
        assert!(!line.contains("never happened"), "{line}");
    }
    assert!(
        text.contains("\naborts by reason:\n  ack_conflict"),
        "{text}"
    );
    for absent in [
        "cleanups:",
        "node paused",
        "before_commit_primary",
        "at a named protocol point",
        "liveness service",
    ] {
        assert!(!text.contains(absent), "{absent}:\n{text}");
    }
    pulsar_points_are_counted_one_by_one(&summary);
}

/// Each of Pulsar's named points is listed with its own stops and reaches:
/// the stops at the servers' points add up to the brokers' kills and
/// freezes at points, none is stopped at more often than it was reached,
/// and a point stopped at is not flagged.
fn pulsar_points_are_counted_one_by_one(summary: &percsim_scenarios::fuzz::Summary) {
    use percsim_scenarios::sim::{pulsar_point_reached, pulsar_point_stopped};
    let text = summary.render();
    let count = |k: &str| summary.counters.get(k).copied().unwrap_or(0);
    let points = percsim_scenarios::systems::pulsar::PULSAR.named_points();
    let servers = &points[..percsim_scenarios::systems::pulsar::campaign::stop_points().len()];
    let stopped: u64 = servers.iter().map(|p| count(&p.counter)).sum();
    assert!(stopped > 0, "{text}");
    assert_eq!(
        stopped,
        count("pulsar.broker_killed_at_point") + count("pulsar.broker_paused_at_point"),
        "{text}"
    );
    let never = summary.points_never_hit();
    for p in &points {
        assert_eq!(p.counter, pulsar_point_stopped(p.name));
        let (n, reached) = (count(&p.counter), count(&pulsar_point_reached(p.name)));
        assert!(n <= reached, "{}: {n} stops, {reached} reaches", p.name);
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("  {} ", p.name)))
            .unwrap_or_else(|| panic!("{} not listed:\n{text}", p.name));
        assert!(
            line.contains(&format!(" {n}   reached {reached}")),
            "{line}"
        );
        assert_eq!(never.contains(p), n == 0, "{line}");
    }
}
