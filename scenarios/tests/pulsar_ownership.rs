//! Pulsar's ownership moves in the world: when the broker that owns the
//! coordinator or a partition dies (or stops answering), the metadata
//! service expires its session and another broker takes the resource over
//! at the next epoch; clients and the coordinator find it by lookup; an
//! old owner that wakes up is fenced by the logs.

use percsim_checker::Event;
use percsim_checker::stream::{MarkerKind, StreamHistory};
use percsim_scenarios::Scenario;
use percsim_sim::RunOutput;
use serde_json::{Value, json};

/// A `stream` scenario on 3 brokers with no random fault, with `faults`
/// (the cluster's `faults`) and `crashes` (the cluster's server points).
/// Producers never abort on purpose, so every end a client asks for is a
/// commit.
fn scenario(seed: u64, faults: Value, crashes: Value) -> Scenario {
    let text = json!({
        "format": "percsim-scenario/1",
        "seed": seed,
        "system": "pulsar",
        "cluster": {"clients": 4, "run_ms": 3000, "quiesce_ms": 30000, "faults": faults},
        "pulsar": {"brokers": 3, "partitions": 3, "crashes": crashes},
        "workload": {"name": "stream", "abort_ratio": 0.0}
    });
    Scenario::parse(&text.to_string()).expect("a valid scenario")
}

/// Run `s`: it must converge and pass the stream checker.
fn run(s: &Scenario) -> (RunOutput, StreamHistory) {
    let out = s.run().unwrap_or_else(|e| panic!("seed {}: {e}", s.seed));
    assert_eq!(out.summary.liveness_failure, None, "seed {}", s.seed);
    let h = out.stream().cloned().expect("a stream history");
    let report = percsim_checker::stream::check(&h);
    assert!(
        report.passed(),
        "seed {}:\n{}",
        s.seed,
        report.render_text()
    );
    (out, h)
}

fn events<'a>(out: &'a RunOutput, kind: &'a str) -> impl Iterator<Item = &'a Event> + 'a {
    out.history.events().iter().filter(move |e| e.kind == kind)
}

fn field<'a>(e: &'a Event, name: &str) -> &'a Value {
    e.fields.get(name).unwrap_or(&Value::Null)
}

fn healed_ns(out: &RunOutput) -> u64 {
    events(out, "phase_healed")
        .next()
        .expect("a healed phase")
        .t_ns
}

/// The broker that hosts the coordinator is killed right after it logged
/// COMMITTING (before any marker) and stays dead for the workload phase:
/// another broker takes the coordinator over, replays the log and sends
/// the transaction's commit markers.
#[test]
fn coordinator_owner_killed_another_broker_finishes_the_committing_transaction() {
    for seed in 1..=4 {
        coordinator_owner_killed(seed);
    }
}

fn coordinator_owner_killed(seed: u64) {
    let crashes = json!([{"point": "after_ending_logged", "nth": 2, "restart_after_ms": 10000}]);
    let (out, h) = run(&scenario(seed, json!({}), crashes));
    let crash = events(&out, "crash_at_point")
        .next()
        .expect("the crash point was reached");
    let dead = field(crash, "node").as_str().unwrap().to_string();
    let healed = healed_ns(&out);
    let taken = events(&out, "ownership_taken")
        .find(|e| e.t_ns > crash.t_ns && e.t_ns < healed && field(e, "resource") == "coordinator-0")
        .expect("another broker took the coordinator in the workload phase");
    assert_ne!(field(taken, "node").as_str().unwrap(), dead);
    assert!(field(taken, "epoch").as_u64().unwrap() >= 2);
    // The transaction whose end was under way at the crash: commit asked
    // for before it, not answered before it.
    let inflight: Vec<u64> = h
        .transactions
        .iter()
        .filter(|t| t.commit_request_ns.is_some_and(|c| c <= crash.t_ns))
        .filter(|t| t.complete_ns.is_none_or(|c| c > crash.t_ns))
        .map(|t| t.id)
        .collect();
    assert!(!inflight.is_empty(), "no commit was under way at the crash");
    let committed_markers: Vec<u64> = h
        .final_state
        .partitions
        .iter()
        .flat_map(|p| &p.entries)
        .filter(|e| e.marker == Some(MarkerKind::Commit))
        .filter_map(|e| e.txn)
        .collect();
    assert!(
        inflight.iter().any(|t| committed_markers.contains(t)),
        "none of {inflight:?} got its commit markers"
    );
}

/// A broker that owns partitions dies for the whole workload phase: its
/// partitions move, and clients find the new owners (sends to every
/// partition succeed after the move).
#[test]
fn partition_owner_killed_clients_find_the_new_owner() {
    for seed in 5..=8 {
        partition_owner_killed(seed);
    }
}

fn partition_owner_killed(seed: u64) {
    let faults = json!({"schedule": [
        {"at_ms": 500, "fault": {"kind": "kill", "node": "broker-1", "restart_after_ms": 10000}}
    ]});
    let (out, h) = run(&scenario(seed, faults, json!([])));
    let moved: Vec<&Event> = events(&out, "ownership_moved")
        .filter(|e| field(e, "from") == 1)
        .collect();
    assert!(!moved.is_empty(), "broker-1's partitions never moved");
    let after = moved.iter().map(|e| e.t_ns).max().unwrap();
    let healed = healed_ns(&out);
    for e in &moved {
        assert_ne!(field(e, "to"), 1, "moved to the dead broker");
        let resource = field(e, "resource").as_str().unwrap();
        let Some(name) = resource.strip_prefix("events-partition-") else {
            continue;
        };
        let partition = format!("events-{name}");
        let sent = h.ops.iter().any(|op| {
            matches!(op, percsim_checker::stream::StreamOp::Send(s)
                if s.partition == partition && s.t_ns > after && s.t_ns < healed
                    && s.result == percsim_checker::stream::OpResult::Ok)
        });
        assert!(sent, "no send to {partition} succeeded after it moved");
    }
    assert!(
        out.summary
            .counters
            .get("pulsar.lookup")
            .copied()
            .unwrap_or(0)
            > 0
    );
}

/// The coordinator's broker freezes after every marker of a commit is
/// acknowledged, before it logs COMMITTED, for longer than its session
/// timeout: the coordinator moves and its new owner finishes the
/// transaction; when the old owner wakes up it goes on with the step
/// before it hears that its session expired, and its append to the
/// transaction log is refused.
#[test]
fn a_paused_old_coordinator_owner_is_fenced_when_it_wakes() {
    for seed in 1..=4 {
        paused_coordinator_owner(seed);
    }
}

fn paused_coordinator_owner(seed: u64) {
    let crashes = json!([{"point": "after_all_markers", "nth": 2, "pause_ms": 1500}]);
    let (out, _) = run(&scenario(seed, json!({}), crashes));
    let pause = events(&out, "crash_at_point")
        .next()
        .expect("the pause point was reached");
    let node = field(pause, "node").clone();
    let fenced = events(&out, "stale_owner_fenced")
        .find(|e| field(e, "node") == &node && field(e, "resource") == "coordinator-0")
        .expect("the old owner's append was refused");
    assert!(
        fenced.t_ns >= pause.t_ns + 1_500_000_000,
        "fenced before it woke"
    );
    assert!(field(fenced, "log_epoch").as_u64() > field(fenced, "epoch").as_u64());
    let moved = events(&out, "ownership_moved")
        .find(|e| field(e, "resource") == "coordinator-0")
        .expect("the coordinator moved");
    assert!(moved.t_ns < fenced.t_ns);
}

/// A broker frozen while clients send to its partitions: they move; the
/// requests it received while frozen are handled when it wakes, and their
/// appends are refused by the partitions' fences (the checker then finds
/// no duplicate and no lost or torn write).
#[test]
fn a_paused_partition_owner_is_fenced_when_it_wakes() {
    for seed in 5..=8 {
        paused_partition_owner(seed);
    }
}

fn paused_partition_owner(seed: u64) {
    let faults = json!({"schedule": [
        {"at_ms": 800, "fault": {"kind": "pause", "node": "broker-1", "duration_ms": 1500}}
    ]});
    let (out, _) = run(&scenario(seed, faults, json!([])));
    assert!(events(&out, "ownership_moved").any(|e| field(e, "from") == 1));
    let fenced: Vec<&Event> = events(&out, "stale_owner_fenced")
        .filter(|e| field(e, "node") == "broker-1")
        .collect();
    assert!(!fenced.is_empty(), "broker-1 was never fenced");
    assert!(
        fenced.iter().all(|e| e.t_ns >= 2_300_000_000),
        "fenced before it woke"
    );
}

/// A seed in which ownership moves replays byte for byte.
#[test]
fn a_seed_with_a_move_replays_byte_for_byte() {
    let faults = json!({"schedule": [
        {"at_ms": 500, "fault": {"kind": "kill", "node": "broker-0", "restart_after_ms": 800}}
    ]});
    let s = scenario(11, faults, json!([]));
    let text = |o: RunOutput| {
        assert!(
            o.history
                .events()
                .iter()
                .any(|e| e.kind == "ownership_moved")
        );
        serde_json::to_string(&o.history).unwrap()
    };
    let (a, b) = (text(s.run().unwrap()), text(s.run().unwrap()));
    assert!(a == b, "two runs of seed {} differ", s.seed);
}

/// Faults name Pulsar's nodes; a name of another system is bad input.
#[test]
fn a_fault_naming_no_pulsar_node_is_refused() {
    let faults = json!({"schedule": [
        {"at_ms": 500, "fault": {"kind": "kill", "node": "coordinator"}}
    ]});
    let text = json!({
        "format": "percsim-scenario/1", "seed": 1, "system": "pulsar",
        "cluster": {"clients": 2, "faults": faults},
        "workload": {"name": "stream"}
    });
    let e = Scenario::parse(&text.to_string()).unwrap_err().to_string();
    assert!(e.contains("no node named \"coordinator\""), "{e}");
    assert!(e.contains("metadata, broker-0"), "{e}");
}

/// A session timeout no longer than the heartbeat would expire every
/// session between two heartbeats: bad input, naming the field.
#[test]
fn a_session_timeout_shorter_than_the_heartbeat_is_refused() {
    let text = json!({
        "format": "percsim-scenario/1", "seed": 1, "system": "pulsar",
        "cluster": {"clients": 2},
        "pulsar": {"heartbeat_ms": 100, "session_timeout_ms": 100},
        "workload": {"name": "stream"}
    });
    let e = Scenario::parse(&text.to_string()).unwrap_err().to_string();
    assert!(
        e.contains("pulsar.session_timeout_ms: 100 must be longer than heartbeat_ms (100)"),
        "{e}"
    );
    let zero = text
        .to_string()
        .replace("\"heartbeat_ms\":100", "\"heartbeat_ms\":0");
    let e = Scenario::parse(&zero).unwrap_err().to_string();
    assert!(e.contains("pulsar.heartbeat_ms: must be at least 1"), "{e}");
}
