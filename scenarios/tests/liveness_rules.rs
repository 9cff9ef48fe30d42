//! Liveness judged on Percolator runs: the scripts of
//! `scenarios/examples/percolator/script/bug-*.json` pass on the faithful
//! build and fail with a liveness verdict (exit 3) under the planted bug
//! they name; the refresh setting is validated. A Pulsar coordinator that
//! never times out a dead client's transaction is a `dead_client_txn_open`
//! finding. Observers that never run leave notifications pending past
//! the bound (`notification_pending`).

use percsim_scenarios::campaign::Verdict;
use percsim_scenarios::fuzz;
use percsim_scenarios::scenario::Scenario;
use serde_json::{Value, json};
use std::path::Path;

/// The example `name` of `examples/percolator/script/`, as JSON.
fn example(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/percolator/script")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).expect("JSON")
}

/// Load and judge a scenario.
fn judge(v: Value) -> percsim_scenarios::campaign::SeedResult {
    let s = Scenario::from_value(v).unwrap_or_else(|e| panic!("{e}"));
    fuzz::judge(&s, false).result
}

/// Each liveness bug's script passes on the faithful build and is a
/// liveness failure under the bug, by the rule it names, with an
/// explanation naming the owner, the lock and the thresholds.
#[test]
fn each_liveness_bug_has_a_script_that_catches_it() {
    let cases = [
        ("no-lock-refresh", "live_owner_rolled_back", "lock a/v"),
        ("stale-by-wall-time-only", "dead_owner_blocks", "lock b/v"),
    ];
    let mut wrong = Vec::new();
    for (bug, rule, lock) in cases {
        let file = format!("bug-{bug}.json");
        let faithful = judge(example(&file));
        if faithful.verdict != Verdict::Pass {
            wrong.push(format!("{file} faithful: {:?}", faithful.explanation));
        }
        let mut v = example(&file);
        v["percolator"]["ablations"] = json!([bug]);
        let r = judge(v);
        let text = r.explanation.clone().unwrap_or_default();
        let explained = text.contains("liveness thresholds: lock_ttl")
            && text.contains(&format!("liveness {rule}: "))
            && text.contains("T1 (start_ts")
            && text.contains(lock);
        if r.verdict != Verdict::Liveness
            || r.verdict.exit_code() != 3
            || !r.violated_rules.iter().any(|x| x == rule)
            || !explained
        {
            wrong.push(format!(
                "{file} with {bug}: {:?} {:?} {text}",
                r.verdict, r.violated_rules
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// `refreshes_per_ttl` must be at least 1 and leave at least 1 ms between
/// refreshes: bad input, naming the field.
#[test]
fn a_bad_refresh_setting_is_refused() {
    let mut v = example("bug-no-lock-refresh.json");
    v["percolator"]["client"]["refreshes_per_ttl"] = json!(0);
    let e = Scenario::parse(&v.to_string()).unwrap_err().to_string();
    assert!(
        e.contains("percolator.client.refreshes_per_ttl: must be at least 1"),
        "{e}"
    );
    v["percolator"]["client"]["refreshes_per_ttl"] = json!(5000);
    let e = Scenario::parse(&v.to_string()).unwrap_err().to_string();
    assert!(e.contains("less than 1 ms apart"), "{e}");
}

/// A Pulsar script: client 0 begins T1, sends in it and is killed; the
/// coordinator scans for timeouts every `scan_ms`.
fn pulsar_client_dies(scan_ms: u64) -> Value {
    json!({
        "format": "percsim-scenario/2",
        "system": "pulsar",
        "seed": 1,
        "description": "a client dies holding an open transaction",
        "world": {"run_ms": 8000, "rpc_timeout_ms": 500},
        "pulsar": {"clients": 2, "brokers": 1, "partitions": 1, "timeout_scan_ms": scan_ms},
        "workload": {
            "name": "script",
            "steps": [
                {"do": "producer", "actor": "p", "client": 0},
                {"do": "begin", "actor": "p", "txn": "T1"},
                {"do": "send", "actor": "p", "txn": "T1", "partition": 0, "value": "a"},
                {"do": "kill", "node": "client-0"},
                {"do": "sleep", "ms": 5000}
            ]
        }
    })
}

/// The faithful coordinator aborts a dead client's transaction past its
/// timeout: the run passes, its thresholds recorded. No planted bug turns
/// the coordinator's timeouts off, so a coordinator whose timeout scan
/// never comes (`timeout_scan_ms` longer than the run) stands in for one:
/// its history, judged by the faithful coordinator's thresholds, is a
/// `dead_client_txn_open` finding naming T1.
#[test]
fn a_coordinator_that_never_times_out_a_dead_clients_transaction_is_caught() {
    let faithful = Scenario::from_value(pulsar_client_dies(50)).unwrap();
    let judged = fuzz::judge(&faithful, false);
    assert_eq!(
        judged.result.verdict,
        Verdict::Pass,
        "{:?}",
        judged.result.explanation
    );
    let h = judged.stream().expect("a stream history");
    let l = percsim_checker::stream::check_stream_liveness(h);
    assert!(l.passed() && l.thresholds.is_some(), "{:#?}", l);
    let t = h.transactions.iter().find(|t| t.client == 0).expect("T1");
    assert!(
        t.abort_logged_ns.is_some() && t.timeout_ms == Some(1000),
        "{t:?}"
    );

    let off = Scenario::from_value(pulsar_client_dies(1_000_000)).unwrap();
    let mut h = fuzz::judge(&off, false)
        .stream()
        .expect("a stream history")
        .clone();
    for e in h
        .events
        .iter_mut()
        .filter(|e| e.kind == "liveness_thresholds")
    {
        e.fields.insert("timeout_scan_ms".into(), json!(50));
    }
    let l = percsim_checker::stream::check_stream_liveness(&h);
    assert_eq!(l.findings.len(), 1, "{:#?}", l.findings);
    let f = &l.findings[0];
    assert_eq!(f.rule, percsim_checker::LivenessRule::DeadClientTxnOpen);
    assert!(
        f.summary.contains("(client 0)") && f.summary.contains("never ended it"),
        "{}",
        f.summary
    );
}

/// The paper's pipeline on a small cluster without faults, with
/// `scanners` notify scanners per client and 8 s of healed phase.
fn pipeline(scanners: u64) -> Value {
    json!({
        "format": "percsim-scenario/2",
        "system": "percolator",
        "seed": 5,
        "description": "the indexing pipeline, its observers run by the notify scanners",
        "world": {"run_ms": 2000, "quiesce_ms": 8000},
        "percolator": {"clients": 2, "workers_per_client": 1, "scanners_per_client": scanners},
        "workload": {"name": "pipeline", "documents": 4, "contents": 2}
    })
}

/// With scanners, every notification is processed in time; with none,
/// no observer ever runs: a liveness failure (exit 3) whose explanation
/// names a notification pending past the bound, the rule and its
/// thresholds.
#[test]
fn observers_that_never_run_leave_notifications_pending_past_the_bound() {
    let faithful = judge(pipeline(2));
    assert_eq!(
        faithful.verdict,
        Verdict::Pass,
        "{:?}",
        faithful.explanation
    );
    let r = judge(pipeline(0));
    let text = r.explanation.clone().unwrap_or_default();
    assert_eq!(r.verdict, Verdict::Liveness, "{text}");
    assert_eq!(r.verdict.exit_code(), 3);
    assert!(
        r.violated_rules.iter().any(|x| x == "notification_pending"),
        "{:?}",
        r.violated_rules
    );
    for part in [
        "liveness notification_pending: the notification of ",
        "no committed run of the observer started after it",
        "notifications: scan_interval 40 ms, observer_run ",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
}
