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
