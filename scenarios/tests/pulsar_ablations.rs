//! Each Pulsar planted bug is caught by the default Pulsar campaign within
//! a few seeds (measured: `percsim ablations --system pulsar`), and the
//! faithful protocol passes the same seeds. Each bound is the seeds the
//! first range needs (docs/measurements.md, "Pulsar's kill table: stops
//! aimed at the coordinator's decision"): 2 for timeout-races-commit, 1
//! for the others.

use percsim_protocol::pulsar::PulsarAblation;
use percsim_scenarios::systems::pulsar::ablations::measure;

/// `a` must fail with a safety verdict naming `rule` within `seeds` seeds.
fn caught(a: PulsarAblation, seeds: u64, rule: &str) {
    caught_as(a, seeds, &[rule]);
}

/// `a` must fail within `seeds` seeds with a verdict naming one of `rules`.
fn caught_as(a: PulsarAblation, seeds: u64, rules: &[&str]) {
    let row = measure(Some(a), seeds, 2);
    let first = row
        .first_failure
        .unwrap_or_else(|| panic!("{a} not caught in {seeds} seeds"));
    assert!(
        first
            .violated_rules
            .iter()
            .any(|r| rules.contains(&r.as_str())),
        "{a}: expected one of {rules:?}, got {:?}",
        first.violated_rules
    );
}

#[test]
fn the_faithful_protocol_passes_the_campaign_seeds() {
    let row = measure(None, 40, 2);
    assert_eq!(row.seeds, 40);
    assert!(
        row.first_failure.is_none(),
        "{:?}",
        row.first_failure.map(|f| f.explanation)
    );
}

#[test]
fn replay_ignores_aborted_is_an_aborted_read() {
    caught(PulsarAblation::ReplayIgnoresAborted, 1, "aborted_read");
}

#[test]
fn no_max_read_position_is_a_read_uncommitted() {
    caught(PulsarAblation::NoMaxReadPosition, 1, "read_uncommitted");
}

/// Lost pending acks let a second transaction take the same input after a
/// broker restart: the input is processed twice.
#[test]
fn pending_ack_not_durable_processes_an_input_twice() {
    caught_as(
        PulsarAblation::PendingAckNotDurable,
        1,
        &["duplicate", "exactly_once"],
    );
}

/// A marker landing on the next transaction of the same producer shows as
/// any of the three anomalies Jepsen reported for Kafka's flaw (an aborted
/// read, a lost write or a torn transaction), or, when a commit marker ends
/// the next transaction while it is still open, as a read of its messages
/// before it commits, depending on which marker lands where.
#[test]
fn marker_by_producer_epoch_is_caught() {
    caught_as(
        PulsarAblation::MarkerByProducerEpoch,
        1,
        &[
            "aborted_read",
            "lost_write",
            "torn_transaction",
            "read_uncommitted",
        ],
    );
}

#[test]
fn commit_before_log_durable_is_a_lost_write() {
    caught(PulsarAblation::CommitBeforeLogDurable, 1, "lost_write");
}

/// The markers' race tears the transaction, which a processor's
/// transaction shows as an exactly-once violation (a committed input whose
/// output is not committed exactly once), or both at once.
#[test]
fn timeout_races_commit_tears_a_transaction() {
    caught_as(
        PulsarAblation::TimeoutRacesCommit,
        2,
        &["torn_transaction", "exactly_once"],
    );
}

/// The exactly-once pipeline on one broker (it hosts the coordinator and
/// every partition), with `pending-ack-not-durable` planted and `crashes`
/// (the cluster's server points); no random fault.
fn pending_ack_scenario(crashes: serde_json::Value) -> percsim_scenarios::Scenario {
    let text = serde_json::json!({
        "format": "percsim-scenario/2",
        "seed": 2,
        "system": "pulsar",
        "world": {"run_ms": 2000, "quiesce_ms": 20000},
        "pulsar": {"clients": 3, "brokers": 1, "partitions": 2,
                   "ablations": ["pending-ack-not-durable"], "crashes": crashes},
        "workload": {"name": "stream-pipeline", "crash_rate": 0.0}
    });
    percsim_scenarios::Scenario::parse(&text.to_string()).expect("a valid scenario")
}

/// `pending-ack-not-durable` removes only the pending ack's durability
/// across a restart: with no restart, a committed transaction's acks are
/// as durable as ever and the run passes.
#[test]
fn pending_ack_not_durable_without_a_restart_passes() {
    use percsim_scenarios::judge::{Verdict, judge};
    let r = judge(&pending_ack_scenario(serde_json::json!([])), false).result;
    assert_eq!(
        r.verdict,
        Verdict::Pass,
        "{:?}\n{}",
        r.violated_rules,
        r.explanation.unwrap_or_default()
    );
    assert!(r.committed > 20, "{} committed", r.committed);
}

/// The broker restarts after COMMITTING is logged, while the transaction's
/// acks are pending: the restarted broker has forgotten them, so the
/// commit acknowledges nothing, the input is delivered and processed
/// again, and it has two committed outputs: `exactly_once`'s
/// `duplicate_output`. Since recoveries take time, the first transaction's
/// ack is also told ok before the restart, so `duplicate`'s `acked_twice`
/// fires beside it (two committed transactions acknowledged one input);
/// no other rule does.
#[test]
fn pending_ack_not_durable_processes_twice_after_a_broker_restart() {
    use percsim_scenarios::judge::{Verdict, judge};
    let crashes = serde_json::json!([{"point": "after_ending_logged", "nth": 5}]);
    let r = judge(&pending_ack_scenario(crashes), false).result;
    let explanation = r.explanation.unwrap_or_default();
    assert_eq!(r.verdict, Verdict::Safety, "{:?}", r.violated_rules);
    assert_eq!(
        r.violated_rules,
        vec!["duplicate".to_string(), "exactly_once".to_string()],
        "{explanation}"
    );
    assert!(explanation.contains("[acked_twice]"), "{explanation}");
    assert!(explanation.contains("[duplicate_output]"), "{explanation}");
}

/// The `stream` workload on two brokers with `ablations` planted, the
/// coordinator's broker killed the first time it has a transaction's
/// decision in flight to its log (`ending_in_flight`); no random fault.
fn ending_in_flight_scenario(ablations: &[&str]) -> percsim_scenarios::Scenario {
    let text = serde_json::json!({
        "format": "percsim-scenario/2",
        "seed": 2,
        "system": "pulsar",
        "world": {"run_ms": 2000, "quiesce_ms": 20000},
        "pulsar": {"clients": 3, "brokers": 2, "partitions": 2, "ablations": ablations,
                   "crashes": [{"point": "ending_in_flight", "nth": 1}]},
        "workload": {"name": "stream"}
    });
    percsim_scenarios::Scenario::parse(&text.to_string()).expect("a valid scenario")
}

/// A kill with the decision in flight loses it: the faithful coordinator
/// has not answered, so the transaction stays OPEN and nothing committed
/// is lost; `commit-before-log-durable` has told the client "committed"
/// already, and the transaction's messages are never visible:
/// `lost_write`, and no other rule.
#[test]
fn commit_before_log_durable_loses_a_write_at_ending_in_flight() {
    use percsim_scenarios::judge::{Verdict, judge};
    let faithful = judge(&ending_in_flight_scenario(&[]), false).result;
    assert_eq!(
        faithful.verdict,
        Verdict::Pass,
        "{:?}",
        faithful.violated_rules
    );
    let planted = ending_in_flight_scenario(&["commit-before-log-durable"]);
    let r = judge(&planted, false).result;
    let explanation = r.explanation.unwrap_or_default();
    assert_eq!(r.verdict, Verdict::Safety, "{explanation}");
    assert_eq!(
        r.violated_rules,
        vec!["lost_write".to_string()],
        "{explanation}"
    );
    assert_eq!(r.counters.get("pulsar.stopped.ending_in_flight"), Some(&1));
}
