//! The stream liveness rule, `dead_client_txn_open`, on hand-made stream
//! histories: one that trips it, one that does not, and the changes that
//! make the second trip it.

use percsim_checker::LivenessRule;
use percsim_checker::stream::{check_stream_liveness, parse};
use serde_json::Value;
use std::path::PathBuf;

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/stream/{name}.json"))
}

fn value(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path(name)).unwrap()).unwrap()
}

/// The liveness report of the stream history `v`.
fn judge(v: &Value) -> percsim_checker::LivenessReport {
    check_stream_liveness(&parse(&v.to_string()).unwrap())
}

#[test]
fn a_dead_clients_transaction_left_open_past_its_timeout_trips_the_rule() {
    let r = judge(&value("dead_client_txn_open"));
    let rules: Vec<LivenessRule> = r.findings.iter().map(|f| f.rule).collect();
    assert_eq!(
        rules,
        [LivenessRule::DeadClientTxnOpen; 2],
        "{:#?}",
        r.findings
    );
    let never = &r.findings[0];
    assert_eq!(never.txns, [1]);
    for part in [
        "T1 (0,1) (client 1) began at 1000 ms",
        "killed at 1500 ms",
        "never ended it (the history ends at 30000 ms)",
        "past 2250 ms",
        "its timeout 1000 ms + timeout_scan 50 ms + bound 200 ms",
    ] {
        assert!(never.summary.contains(part), "{part}: {}", never.summary);
    }
    let late = &r.findings[1];
    assert!(
        late.summary
            .contains("ended it only at 3000 ms, past 2750 ms")
            && late.summary.contains("its timeout 500 ms"),
        "{}",
        late.summary
    );
    assert!(
        r.render_text().starts_with(
            "liveness thresholds: txn_timeout 1000 ms, timeout_scan 50 ms, session_timeout 400 ms, bound 200 ms"
        ),
        "{}",
        r.render_text()
    );
}

#[test]
fn transactions_ended_in_time_a_live_client_or_a_finished_one_do_not_trip_it() {
    let r = judge(&value("dead_client_txn_ended"));
    assert!(r.passed(), "{:#?}", r.findings);
    assert!(r.thresholds.is_some());
}

#[test]
fn the_transactions_own_timeout_and_a_fault_on_the_cluster_are_what_keep_it_quiet() {
    // Judged by the default timeout (1000 ms), T2 ended 10 s late.
    let mut v = value("dead_client_txn_ended");
    v["transactions"][2]
        .as_object_mut()
        .unwrap()
        .remove("timeout_ms");
    let r = judge(&v);
    assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
    assert_eq!(r.findings[0].txns, [2]);
    // Without the broker's death, T3 had no reason to wait for the heal.
    let mut v = value("dead_client_txn_ended");
    let events = v["events"].as_array_mut().unwrap();
    events.retain(|e| e["node"] != "broker-0");
    let r = judge(&v);
    assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
    assert_eq!(r.findings[0].txns, [3]);
    assert!(
        r.findings[0]
            .summary
            .contains("ended it only at 8500 ms, past 4250 ms")
    );
    // With the fault, the deadline is the heal's, and it says so.
    let mut v = value("dead_client_txn_ended");
    v["transactions"][3]["abort_logged_ns"] = Value::from(9_000_000_000u64);
    let r = judge(&v);
    assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
    assert!(
        r.findings[0].summary.contains("past 8650 ms")
            && r.findings[0]
                .summary
                .contains("the cluster while it was open ended, at 8000 ms"),
        "{}",
        r.findings[0].summary
    );
}

#[test]
fn a_stream_history_without_thresholds_is_not_judged() {
    let mut v = value("dead_client_txn_open");
    let events = v["events"].as_array_mut().unwrap();
    events.retain(|e| e["kind"] != "liveness_thresholds");
    let r = judge(&v);
    assert!(r.passed() && r.thresholds.is_none());
}

#[test]
fn checking_the_file_exits_3_with_the_thresholds_and_the_explanation() {
    let (mut text, mut json) = (Vec::new(), Vec::new());
    let code = percsim_checker::run_check_file(&path("dead_client_txn_open"), false, &mut text);
    let text = String::from_utf8(text).unwrap();
    assert_eq!(code, 3, "{text}");
    assert!(
        text.contains("liveness thresholds: txn_timeout 1000 ms"),
        "{text}"
    );
    assert!(
        text.contains("liveness dead_client_txn_open: T1 (0,1)"),
        "{text}"
    );
    let code = percsim_checker::run_check_file(&path("dead_client_txn_open"), true, &mut json);
    assert_eq!(code, 3);
    let json: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(json["liveness"]["thresholds"]["txn_timeout_ms"], 1000);
    assert_eq!(
        json["liveness"]["findings"][0]["rule"],
        "dead_client_txn_open"
    );
    let mut quiet = Vec::new();
    let code = percsim_checker::run_check_file(&path("dead_client_txn_ended"), false, &mut quiet);
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&quiet));
}

#[test]
fn each_of_two_overlapping_partitions_ends_at_its_own_heal() {
    // The long partition heals at 4300 ms: T1's deadline is 650 ms later.
    let r = judge(&value("dead_client_txn_overlapping_partitions"));
    assert!(r.passed(), "{:#?}", r.findings);
    // Aborted past that deadline, T1 trips the rule, judged from 4300 ms
    // (not from the short partition's heal at 1700 ms).
    let mut v = value("dead_client_txn_overlapping_partitions");
    v["transactions"][0]["abort_logged_ns"] = Value::from(5_000_000_000u64);
    let r = judge(&v);
    assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
    assert!(
        r.findings[0].summary.contains("past 4950 ms")
            && r.findings[0].summary.contains("ended, at 4300 ms"),
        "{}",
        r.findings[0].summary
    );
    // A heal of every partition at once (two heals at one moment) ends both.
    let mut v = value("dead_client_txn_overlapping_partitions");
    let events = v["events"].as_array_mut().unwrap();
    events[5]["t_ns"] = Value::from(1_700_000_000u64);
    let r = judge(&v);
    assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
    assert!(
        r.findings[0].summary.contains("past 2350 ms"),
        "{}",
        r.findings[0].summary
    );
}

#[test]
fn a_client_that_began_no_transaction_is_no_server_when_killed() {
    // T1 aborted at 5000 ms, past its deadline of 4950 ms (see above).
    let mut v = value("dead_client_txn_overlapping_partitions");
    v["transactions"][0]["abort_logged_ns"] = Value::from(5_000_000_000u64);
    // A consumer, client 7, began no transaction; it dies at 1400 ms and
    // comes back only at the heal. Its death keeps no coordinator from
    // acting, so T1's deadline stays where it was.
    let events = v["events"].as_array_mut().unwrap();
    let kill = serde_json::json!({"t_ns": 1_400_000_000u64, "kind": "kill", "node": "client-7"});
    let restart =
        serde_json::json!({"t_ns": 8_000_000_000u64, "kind": "restart", "node": "client-7"});
    events.insert(3, kill);
    events.push(restart);
    let last = events.len() - 1;
    let r = judge(&v);
    assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
    assert!(
        r.findings[0].summary.contains("past 4950 ms"),
        "{}",
        r.findings[0].summary
    );
    // The same death of a server (a broker) is a fault in force until it
    // restarts at 8000 ms, past T1's abort: nothing to find.
    for e in [3, last] {
        v["events"][e]["node"] = Value::from("broker-1");
    }
    let r = judge(&v);
    assert!(r.passed(), "{:#?}", r.findings);
}
