//! Pulsar in the world: a seed of each Pulsar workload converges and passes
//! the stream checker with real traffic, and a seed replays byte for byte.

use percsim_scenarios::Scenario;
use percsim_sim::RunOutput;
use std::path::Path;

fn example(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/pulsar")
        .join(name);
    Scenario::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Run `s`; fail unless it converged and the stream checker passed.
fn run_and_check(s: &Scenario) -> RunOutput {
    let out = s.run().unwrap_or_else(|e| panic!("seed {}: {e}", s.seed));
    assert_eq!(out.summary.liveness_failure, None, "seed {}", s.seed);
    let stream = out.stream().expect("pulsar records a stream history");
    let report = percsim_checker::stream::check(stream);
    assert!(
        report.passed(),
        "seed {}:\n{}",
        s.seed,
        report.render_text()
    );
    out
}

#[test]
fn a_stream_seed_passes_the_stream_checker_with_traffic() {
    let out = run_and_check(&example("stream.json"));
    let st = out.stream().unwrap();
    let report = percsim_checker::stream::check(st);
    assert!(report.stats.committed > 5, "{:?}", report.stats);
    assert!(report.stats.aborted > 0, "{:?}", report.stats);
    assert!(report.stats.receives > 10, "{:?}", report.stats);
    assert!(report.stats.log_markers > 5, "{:?}", report.stats);
    assert_eq!(out.summary.committed, report.stats.committed);
}

#[test]
fn a_pulsar_seed_replays_byte_for_byte() {
    let s = example("stream.json");
    let text = |o: RunOutput| serde_json::to_string(o.stream().unwrap()).unwrap();
    let (a, b) = (text(s.run().unwrap()), text(s.run().unwrap()));
    assert!(a == b, "two runs of seed {} differ", s.seed);
    let mut other = s.clone();
    other.seed += 1;
    assert_ne!(a, text(other.run().unwrap()), "the seed must matter");
}

#[test]
fn a_pipeline_seed_processes_every_document_exactly_once() {
    let out = run_and_check(&example("pipeline.json"));
    let st = out.stream().unwrap();
    let report = percsim_checker::stream::check(st);
    let exactly_once = report
        .rules
        .iter()
        .find(|r| r.id == "exactly_once")
        .expect("the exactly_once rule ran");
    assert!(exactly_once.note.is_none(), "{:?}", exactly_once.note);
    let outputs = st
        .ops
        .iter()
        .filter(|o| matches!(o, percsim_checker::stream::StreamOp::Send(s) if s.source.is_some()))
        .count();
    assert!(outputs > 20, "{outputs} outputs");
    assert!(report.stats.committed > 20, "{:?}", report.stats);
}

#[test]
fn a_pulsar_scenario_refuses_a_percolator_workload_and_bad_settings() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/pulsar/stream.json"),
    )
    .unwrap();
    let bank = text.replace(r#""name": "stream""#, r#""name": "bank""#);
    assert_ne!(bank, text);
    let e = Scenario::parse(&bank).unwrap_err().to_string();
    assert!(e.contains("runs on system \"percolator\""), "{e}");
    let text = text.replace("\"brokers\": 3", "\"brokers\": 0");
    let e = Scenario::parse(&text).unwrap_err().to_string();
    assert!(e.contains("pulsar.brokers: 0"), "{e}");
}

/// The world's network carries Pulsar's requests too: duplicated and
/// held-back copies that reach a broker are counted there, so coverage can
/// see them (they were delivered but never counted before commit 0fbdb7b).
#[test]
fn pulsar_brokers_count_the_late_and_duplicated_copies_they_receive() {
    use percsim_scenarios::systems::pulsar::campaign::{PULSAR_SEED_BASE, generate};
    let (mut copies, mut late) = (0, 0);
    for seed in PULSAR_SEED_BASE..PULSAR_SEED_BASE + 30 {
        let s = generate(seed, &Default::default());
        let out = s.run().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let count = |name: &str| out.summary.counters.get(name).copied().unwrap_or(0);
        copies += count(percsim_sim::Counter::NetDuplicated.name());
        late += count(percsim_sim::Counter::NetLate.name());
    }
    assert!(copies > 0 && late > 0, "copies {copies}, late {late}");
}

/// The load manager's unloads, planned by time: the document job with
/// partitions and the coordinator unloaded while processors hold pending
/// acks still processes every document exactly once, and each unload
/// happened (a target out of range is refused by name).
#[test]
fn planned_unloads_happen_and_the_pipeline_stays_exactly_once() {
    let mut text: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/pulsar/pipeline.json"),
        )
        .unwrap(),
    )
    .unwrap();
    text["pulsar"]["unloads"] = serde_json::json!([
        {"at_ms": 400, "target": {"partition": 0}},
        {"at_ms": 900, "target": "coordinator"},
        {"at_ms": 1500, "target": {"partition": 2}},
        {"at_ms": 2200, "target": {"partition": 1}}
    ]);
    let s = Scenario::parse(&text.to_string()).unwrap();
    let out = run_and_check(&s);
    let unloaded = out
        .summary
        .counters
        .get("event.resource_unloaded")
        .copied()
        .unwrap_or(0);
    // Two topics (input and output): two resources per partition unload.
    assert!(
        unloaded >= 4,
        "{unloaded} unloads: {:?}",
        out.summary.counters
    );
    text["pulsar"]["unloads"] = serde_json::json!([{"at_ms": 400, "target": {"partition": 3}}]);
    let e = Scenario::parse(&text.to_string()).unwrap_err().to_string();
    assert!(e.contains("pulsar.unloads"), "{e}");
}

/// A late ack, and a late transactional send, of a transaction the
/// coordinator has aborted, reaching its broker while the abort marker is
/// logged but its update of memory is held (a stop at
/// `before_marker_applied`): refused, the input is redelivered (the ack was
/// logged after the end and left the input pending for good: exactly_once
/// missing_output) and the partition's reads are not held back (the send
/// was appended after the abort marker and reopened the transaction: not
/// converged).
#[test]
fn late_copies_of_an_aborted_transaction_during_a_held_marker_are_refused() {
    for name in [
        "late-ack-after-held-abort.json",
        "late-send-after-held-abort.json",
    ] {
        run_and_check(&example(name));
    }
}
