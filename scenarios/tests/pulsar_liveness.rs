//! A Pulsar run that does not converge is judged a liveness failure, not a
//! safety one: findings that only say "the work did not finish" restate the
//! liveness failure, while findings that cannot come from an unfinished run
//! (an aborted read, a duplicate) stay safety violations.

use percsim_scenarios::Scenario;
use percsim_scenarios::judge::{Verdict, judge};

/// The exactly-once pipeline, fault free, with every transaction timing out
/// (after `txn_timeout_ms`) before it can commit: the processors abort and
/// retry to the end of the quiesce phase, so no input ever gets its output.
fn never_converges(txn_timeout_ms: u64, ablate: &[&str]) -> Scenario {
    let ablations = ablate
        .iter()
        .map(|a| format!("{a:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!(
        r#"{{
  "format": "percsim-scenario/2",
  "seed": 3,
  "system": "pulsar",
  "world": {{"run_ms": 1000, "quiesce_ms": 3000}},
  "pulsar": {{"clients": 3, "brokers": 2, "partitions": 2,
             "log_write_ms": 5, "timeout_scan_ms": 1,
             "client": {{"txn_timeout_ms": {txn_timeout_ms}}},
             "ablations": [{ablations}]}},
  "workload": {{"name": "stream-pipeline"}}
}}"#
    );
    Scenario::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn a_pulsar_run_that_never_converges_is_a_liveness_failure() {
    let judged = judge(&never_converges(1, &[]), false);
    let r = &judged.result;
    assert_eq!(
        r.verdict,
        Verdict::Liveness,
        "rules {:?}\n{}",
        r.violated_rules,
        r.explanation.as_deref().unwrap_or("")
    );
    assert_eq!(r.committed, 0, "no transaction may commit");
    let explanation = r.explanation.as_deref().unwrap_or("");
    assert!(explanation.starts_with("liveness: "), "{explanation}");
    let stream = judged.stream_report.expect("a stream report");
    assert!(
        !stream.passed(),
        "the unfinished work must still be listed in the explanation"
    );
}

/// The same run with a planted bug that hands out messages of undecided
/// transactions: the run still does not converge, but a read of an
/// uncommitted message is no unfinished work, so the verdict is safety,
/// naming that rule and not the findings that restate the liveness failure.
#[test]
fn a_safety_finding_in_a_run_that_never_converges_stays_safety() {
    let scenario = never_converges(30, &["no-max-read-position"]);
    let out = scenario.run().expect("the run completes");
    assert!(
        out.summary.liveness_failure.is_some(),
        "the run must not converge"
    );
    let judged = judge(&scenario, false);
    let r = &judged.result;
    let explanation = r.explanation.as_deref().unwrap_or("");
    assert_eq!(
        r.verdict,
        Verdict::Safety,
        "{:?}\n{explanation}",
        r.violated_rules
    );
    assert!(
        r.violated_rules
            .iter()
            .any(|id| id == "read_uncommitted" || id == "aborted_read"),
        "{:?}",
        r.violated_rules
    );
    assert!(
        !r.violated_rules.iter().any(|id| id == "exactly_once"),
        "only missing outputs, which restate the liveness failure: {:?}",
        r.violated_rules
    );
}

/// A random scenario (seed 7210, shrunk) in which a client is frozen while
/// the answer to its open is on its way: the coordinator times the
/// transaction out (logs ABORTING) before the client hears of it; the client
/// then wakes, hears the open's answer and is killed.
const LATE_OPEN_ANSWER: &str = r#"{
 "format": "percsim-scenario/2",
 "pulsar": {
  "ablations": [],
  "brokers": 4,
  "buffer": {
   "snapshot_every": 64
  },
  "client": {
   "retries": 3,
   "retry_backoff_ms": 50,
   "txn_timeout_ms": 446
  },
  "clients": 3,
  "crashes": [],
  "deduplication": true,
  "heartbeat_ms": 100,
  "log_write_ms": 6,
  "partitions": 4,
  "recovery_us_per_entry": 50,
  "session_timeout_ms": 400,
  "timeout_scan_ms": 50
 },
 "seed": 7210,
 "system": "pulsar",
 "workload": {
  "contents": 5,
  "crash_rate": 0.04008870755316746,
  "documents": 38,
  "load_interval_ms": 20,
  "name": "stream-pipeline"
 },
 "world": {
  "clocks": [],
  "faults": {
   "random": {
    "duplicate": null,
    "kill_client": {
     "max_duration_ms": 1500,
     "min_duration_ms": 100,
     "probability": 0.06803273306586123,
     "rate": 0.0
    },
    "kill_coordinator": {
     "max_duration_ms": 800,
     "min_duration_ms": 50,
     "probability": 0.04656838812414599,
     "rate": 0.0
    },
    "kill_data_server": null,
    "kill_liveness": null,
    "kill_master": null,
    "latency": null,
    "packet_loss": null,
    "partition": {
     "max_duration_ms": 1500,
     "min_duration_ms": 100,
     "probability": 0.017047564635097535,
     "rate": 0.0
    },
    "pause": {
     "max_duration_ms": 2500,
     "min_duration_ms": 100,
     "probability": 0.0688524551337681,
     "rate": 0.0
    },
    "session_expiry": null,
    "stall": null
   },
   "schedule": []
  },
  "quiesce_ms": 30000,
  "rpc_timeout_ms": 100,
  "run_ms": 5975
 }
}"#;

#[test]
fn a_transaction_timed_out_before_its_client_heard_of_it_is_ended() {
    let scenario = Scenario::parse(LATE_OPEN_ANSWER).unwrap_or_else(|e| panic!("{e}"));
    let judged = judge(&scenario, false);
    let h = judged.stream().expect("a stream history");
    // The case happened: a client began a transaction its coordinator had
    // already aborted, and died before hearing the outcome.
    let late = h
        .transactions
        .iter()
        .find(|t| t.label.as_deref() == Some("(0,10)"))
        .expect("T10 is recorded");
    assert_eq!(late.client, 1, "{late:?}");
    let aborted_ns = late
        .abort_logged_ns
        .expect("the coordinator's abort is kept");
    assert!(aborted_ns >= late.invoke_ns, "{late:?}");
    assert!(
        late.invoke_ns < 5_551_000_000,
        "it began when opened: {late:?}"
    );
    // The history is well formed for the offline checker too.
    let text = serde_json::to_string(h).expect("JSON");
    percsim_checker::stream::parse(&text).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        late.coordinator
            .as_ref()
            .is_some_and(|d| d.t_ns == aborted_ns),
        "{late:?}"
    );
    let r = &judged.result;
    assert_eq!(
        r.verdict,
        Verdict::Pass,
        "{:?}\n{}",
        r.violated_rules,
        r.explanation.as_deref().unwrap_or("")
    );
}
