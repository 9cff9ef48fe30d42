//! Stream histories (`percsim-stream-history/1`): every rule has a fixture
//! that fails it (and only it) and passes on the valid pipeline fixture or a
//! near miss of it; bad input is exit code 2 with a message naming the problem.

use percsim_checker::RuleReport;
use percsim_checker::stream::{StreamReport, check, parse};
use percsim_checker::{HistoryFormat, detect_file, run_check_file};
use serde_json::{Value, json};
use std::path::PathBuf;

const RULES: [&str; 7] = [
    "aborted_read",
    "read_uncommitted",
    "lost_write",
    "duplicate",
    "torn_transaction",
    "monotonic_offsets",
    "exactly_once",
];

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/stream/{name}.json"))
}

fn value(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path(name)).expect("fixture exists"))
        .expect("JSON")
}

fn judge(v: &Value) -> StreamReport {
    let h = parse(&v.to_string()).unwrap_or_else(|e| panic!("should parse: {e}"));
    check(&h)
}

fn report(name: &str) -> StreamReport {
    judge(&value(name))
}

/// Asserts exactly these rules failed.
fn assert_failed(r: &StreamReport, rules: &[&str]) {
    assert_eq!(r.violated_rules(), rules, "\n{}", r.render_text());
    assert_eq!(r.passed(), rules.is_empty());
}

/// The rule's violation counts per class, as (class, count) pairs.
fn counts(r: &StreamReport, rule: &str) -> Vec<(String, u64)> {
    let rr: &RuleReport = r.rule(rule).expect("rule reported");
    rr.counts.iter().map(|(c, n)| (c.clone(), *n)).collect()
}

fn class(r: &StreamReport, rule: &str, class: &str) -> String {
    let f = r
        .rule(rule)
        .expect("rule reported")
        .violations
        .iter()
        .find(|f| f.class == class)
        .unwrap_or_else(|| panic!("no {rule}/{class} in\n{}", r.render_text()));
    format!("{}\n{}\ntxns {:?}", f.summary, f.details.join("\n"), f.txns)
}

fn has_all(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "lacks {n:?}:\n{text}");
    }
}

/// Fixture `name` fails only `rule`, with these counts per class.
fn fails_only(name: &str, rule: &str, want: &[(&str, u64)]) -> StreamReport {
    let r = report(name);
    assert_failed(&r, &[rule]);
    let want: Vec<(String, u64)> = want.iter().map(|(c, n)| (c.to_string(), *n)).collect();
    assert_eq!(counts(&r, rule), want);
    r
}

/// History `v` with the receipt of `message` moved to `t_ns` (ops kept in
/// time order).
fn received_at(mut v: Value, message: &str, t_ns: u64) -> Value {
    let i = op_index(&v, "receive", message, None);
    ops_mut(&mut v)[i]["t_ns"] = json!(t_ns);
    ops_mut(&mut v).sort_by_key(|o| o["t_ns"].as_u64());
    v
}

fn ops_mut(v: &mut Value) -> &mut Vec<Value> {
    v["ops"].as_array_mut().expect("ops")
}

fn op_index(v: &Value, f: &str, message: &str, txn: Option<u64>) -> usize {
    v["ops"]
        .as_array()
        .expect("ops")
        .iter()
        .position(|o| o["f"] == f && o["message"] == message && txn.is_none_or(|t| o["txn"] == t))
        .unwrap_or_else(|| panic!("no {f} of {message}"))
}

#[test]
fn valid_pipeline_passes_every_rule() {
    let r = report("valid_pipeline");
    assert_failed(&r, &[]);
    let ids: Vec<&str> = r.rules.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, RULES);
    assert_eq!(r.seed, 7);
    let s = &r.stats;
    assert_eq!(
        (s.transactions, s.committed, s.aborted, s.unknown),
        (6, 4, 2, 0)
    );
    assert_eq!((s.sends, s.receives, s.acks), (8, 8, 4));
    assert_eq!(
        (s.partitions, s.log_messages, s.log_markers, s.subscriptions),
        (2, 8, 6, 2)
    );
    assert!(
        r.render_text()
            .starts_with("percsim check (percsim-stream-history/1): PASS, all 7 rules hold")
    );
    // The same history, judged twice, gives the same report.
    assert_eq!(r, report("valid_pipeline"));
}

#[test]
fn aborted_read() {
    let r = fails_only("aborted_read", "aborted_read", &[("aborted_by_client", 1)]);
    let e = class(&r, "aborted_read", "aborted_by_client");
    has_all(
        &e,
        &[
            "\"o2\"",
            "T4 (0,4)",
            "transaction timeout",
            "out-0@2",
            "abort marker at offset 3",
            "txns [4]",
        ],
    );
}

#[test]
fn aborted_read_of_a_transaction_that_never_committed() {
    // T4's client never learnt the outcome and the log holds no marker for
    // it: reading its message is still an aborted read.
    let mut v = value("aborted_read");
    v["transactions"][3]["outcome"] = json!("unknown");
    v["transactions"][3]["complete_ns"] = Value::Null;
    let out = v["final_state"]["partitions"][1]["entries"]
        .as_array_mut()
        .unwrap();
    out.retain(|e| !(e["marker"] == "abort" && e["txn"] == 4));
    let r = judge(&v);
    assert_failed(&r, &["aborted_read"]);
    let e = class(&r, "aborted_read", "not_committed");
    has_all(
        &e,
        &[
            "\"o2\"",
            "no commit marker after it",
            "T4 never committed in out-0",
        ],
    );
}

#[test]
fn read_uncommitted_before_commit_request() {
    let r = fails_only(
        "read_uncommitted",
        "read_uncommitted",
        &[("before_commit_request", 1)],
    );
    let e = class(&r, "read_uncommitted", "before_commit_request");
    has_all(
        &e,
        &[
            "\"o2b\"",
            "at 0.000355 ms",
            "asked to commit only at 0.000370 ms",
            "txns [5]",
        ],
    );
    // The near miss: received at the very moment the commit was requested passes.
    assert_failed(
        &judge(&received_at(value("read_uncommitted"), "o2b", 370)),
        &[],
    );
}

#[test]
fn read_uncommitted_past_an_open_transaction() {
    let r = fails_only(
        "read_uncommitted_past_open",
        "read_uncommitted",
        &[("past_open_transaction", 1)],
    );
    let e = class(&r, "read_uncommitted", "past_open_transaction");
    has_all(
        &e,
        &[
            "\"m3\" at in-0@3",
            "w1",
            "T1 (0,1)",
            "offset 0",
            "requested only at 0.000130 ms",
        ],
    );
    // Received after T1's commit request: passes.
    assert_failed(
        &judge(&received_at(value("read_uncommitted_past_open"), "m3", 131)),
        &[],
    );
}

#[test]
fn lost_write() {
    let r = fails_only(
        "lost_write",
        "lost_write",
        &[("never_delivered", 1), ("not_visible", 1)],
    );
    has_all(
        &class(&r, "lost_write", "not_visible"),
        &[
            "\"m5\"",
            "outside any transaction",
            "told ok",
            "in no partition's log",
        ],
    );
    has_all(
        &class(&r, "lost_write", "never_delivered"),
        &[
            "\"o3\"",
            "out-0@6",
            "\"audit\"",
            "T6 (0,6)",
            "commit marker at offset 7",
        ],
    );
    // A subscription not declared drained promises nothing about delivery.
    let mut v = value("lost_write");
    v["subscriptions"][1]["drained"] = json!(false);
    let i = op_index(&v, "send", "m5", None);
    ops_mut(&mut v).remove(i);
    let r = judge(&v);
    assert_failed(&r, &[]);
    assert!(r.rule("lost_write").unwrap().note.is_none());
}

#[test]
fn duplicate() {
    let r = fails_only(
        "duplicate",
        "duplicate",
        &[("acked_twice", 1), ("duplicate_in_log", 1)],
    );
    has_all(
        &class(&r, "duplicate", "duplicate_in_log"),
        &["\"m3\" is in the logs 2 times", "in-0@3", "in-0@6"],
    );
    has_all(
        &class(&r, "duplicate", "acked_twice"),
        &[
            "in-0@1",
            "\"m2\"",
            "T5 (0,5)",
            "T6 (0,6)",
            "processed 2 times",
            "txns [5, 6]",
        ],
    );
    // The valid fixture has m2 acknowledged twice too, by aborted T4 and
    // committed T5: one committed acknowledgment, which passes. On a
    // subscription without exactly-once, two committed ones pass as well.
    let mut v = value("duplicate");
    v["subscriptions"][0]["exactly_once"] = json!(false);
    v["final_state"]["partitions"][0]["entries"]
        .as_array_mut()
        .unwrap()
        .pop();
    let r = judge(&v);
    assert_failed(&r, &[]);
    assert!(
        r.rule("exactly_once")
            .unwrap()
            .note
            .as_deref()
            .unwrap()
            .contains("nothing to check")
    );
}

#[test]
fn torn_transaction() {
    let r = fails_only(
        "torn_transaction",
        "torn_transaction",
        &[("conflicting_markers", 1), ("messages_without_acks", 1)],
    );
    has_all(
        &class(&r, "torn_transaction", "messages_without_acks"),
        &[
            "T6 (0,6)",
            "\"o3\" at out-0@6",
            "took effect",
            "\"m3\" (in-0@3)",
            "not held by the subscription",
            "did not take effect",
        ],
    );
    has_all(
        &class(&r, "torn_transaction", "conflicting_markers"),
        &["T3", "commit markers at out-0@1", "abort markers at in-0@6"],
    );
}

/// A timeout abort recorded at the coordinator is a claim, checked against
/// the markers: T4 (aborted, abort marker) agrees; T3 (commit marker) is
/// flagged as contradicted.
#[test]
fn coordinator_decision_is_checked_against_the_markers() {
    let decided = |v: &mut Value, txn: usize| {
        v["transactions"][txn]["coordinator"] =
            json!({"outcome": "aborted", "t_ns": 1000, "reason": "timeout"});
    };
    let mut agrees = value("valid_pipeline");
    decided(&mut agrees, 3);
    assert_failed(&judge(&agrees), &[]);

    let mut contradicted = value("valid_pipeline");
    decided(&mut contradicted, 2);
    let r = judge(&contradicted);
    assert_failed(&r, &["torn_transaction"]);
    assert_eq!(
        counts(&r, "torn_transaction"),
        [("coordinator_contradicted".to_string(), 1)]
    );
    has_all(
        &class(&r, "torn_transaction", "coordinator_contradicted"),
        &[
            "T3 (0,3)",
            "the coordinator recorded aborted at 0.001 ms (timeout)",
            "commit markers at out-0@1",
        ],
    );

    // An unknown decision, or one before the transaction began, is bad input.
    let mut unknown = value("valid_pipeline");
    unknown["transactions"][2]["coordinator"] = json!({"outcome": "unknown", "t_ns": 1000});
    bad(&unknown, &["$.transactions[2]", "coordinator.outcome"]);
    let mut early = value("valid_pipeline");
    early["transactions"][2]["coordinator"] = json!({"outcome": "aborted", "t_ns": 1});
    bad(&early, &["coordinator.t_ns", "earlier than invoke_ns"]);
}

/// A coordinator recovery that aborts a transaction whose COMMITTING was
/// already durable: without the durable state in the history nothing is
/// wrong (client unknown, abort markers agreeing with the coordinator's
/// abort); with it, `logged_commit_reversed`.
#[test]
fn recovery_that_aborts_a_durably_committing_transaction() {
    let v = value("recovery_aborts_committing");
    let r = judge(&v);
    assert_failed(&r, &["torn_transaction"]);
    assert_eq!(
        counts(&r, "torn_transaction"),
        [("logged_commit_reversed".to_string(), 1)]
    );
    has_all(
        &class(&r, "torn_transaction", "logged_commit_reversed"),
        &[
            "T1 (0,1)",
            "durably held the decision to commit at 0.000045 ms",
            "abort markers at out-0@1",
            "the coordinator recorded an abort at 0.002 ms (recovery)",
        ],
    );
    let mut unrecorded = v.clone();
    unrecorded["transactions"][0]
        .as_object_mut()
        .unwrap()
        .remove("commit_logged_ns");
    assert_failed(&judge(&unrecorded), &[]);

    // Recovery that finishes the commit is right.
    let mut finished = v.clone();
    finished["transactions"][0]
        .as_object_mut()
        .unwrap()
        .remove("coordinator");
    finished["final_state"]["partitions"][0]["entries"][1]["marker"] = json!("commit");
    finished["final_state"]["acks"][0]["acked_below"] = json!(0);
    let r = judge(&finished);
    assert!(
        r.rule("torn_transaction").unwrap().passed,
        "{}",
        r.render_text()
    );

    // A client told aborted after the durable decision is a reversal too.
    let mut told = value("valid_pipeline");
    told["transactions"][2]["commit_logged_ns"] = json!(1000);
    assert_failed(&judge(&told), &[]);
    told["transactions"][2]["outcome"] = json!("aborted");
    let r = judge(&told);
    assert_eq!(
        r.rule("torn_transaction")
            .unwrap()
            .counts
            .get("logged_commit_reversed"),
        Some(&1),
        "{}",
        r.render_text()
    );

    let mut early = v;
    early["transactions"][0]["commit_logged_ns"] = json!(1);
    bad(&early, &["commit_logged_ns", "earlier than invoke_ns"]);
}

#[test]
fn torn_transaction_acks_without_messages() {
    // T5's acknowledgment of m2 fails, so the subscription's ack of offset 1
    // can only be aborted T4's: T4's ack took effect, its output o2 did not.
    let mut v = value("valid_pipeline");
    let i = op_index(&v, "ack", "m2", Some(5));
    ops_mut(&mut v)[i]["result"] = json!("failed");
    let r = judge(&v);
    assert_failed(&r, &["torn_transaction"]);
    has_all(
        &class(&r, "torn_transaction", "acks_without_messages"),
        &[
            "T4 (0,4)",
            "\"o2\" at out-0@2",
            "did not take effect",
            "held by the subscription",
        ],
    );
}

#[test]
fn torn_transaction_partly_visible() {
    // T1's commit marker lands between its two messages: m1 is visible, m2 is not.
    let mut v = value("valid_pipeline");
    let log = &mut v["final_state"]["partitions"][0]["entries"];
    log[1] = json!({"offset": 1, "marker": "commit", "txn": 1});
    log[2] = json!({"offset": 2, "message": "m2", "txn": 1});
    for o in ops_mut(&mut v).iter_mut().filter(|o| o["message"] == "m2") {
        o["offset"] = json!(2);
    }
    let r = judge(&v);
    let torn = class(&r, "torn_transaction", "partly_visible");
    has_all(
        &torn,
        &[
            "T1 (0,1)",
            "\"m1\" at in-0@0 (visible",
            "\"m2\" at in-0@2 (invisible: no commit marker",
        ],
    );
    // The consumers' receipts of m2 are aborted reads too, and o2b, made
    // from m2, is now an output without a committed input.
    assert_failed(&r, &["aborted_read", "torn_transaction", "exactly_once"]);
    has_all(
        &class(&r, "exactly_once", "output_without_input"),
        &["\"o2b\"", "\"m2\""],
    );
}

#[test]
fn monotonic_offsets() {
    let r = fails_only(
        "monotonic_offsets",
        "monotonic_offsets",
        &[("inconsistent_offset", 1), ("nonmonotonic_receive", 1)],
    );
    has_all(
        &class(&r, "monotonic_offsets", "nonmonotonic_receive"),
        &[
            "consumer p1 went from offset 3 to 1 on in-0",
            "at 0.000220 ms",
            "at 0.000340 ms",
        ],
    );
    has_all(
        &class(&r, "monotonic_offsets", "inconsistent_offset"),
        &[
            "\"o3\" was reported at out-0@5",
            "T5's commit marker at out-0@5",
            "txns [6]",
        ],
    );
}

#[test]
fn nonmonotonic_send() {
    let mut v = value("valid_pipeline");
    let i = op_index(&v, "send", "o2b", None);
    ops_mut(&mut v)[i]["offset"] = json!(0);
    let r = judge(&v);
    // Offset 0 holds o1: the reply is inconsistent with the log as well.
    assert_failed(&r, &["monotonic_offsets"]);
    has_all(
        &class(&r, "monotonic_offsets", "nonmonotonic_send"),
        &[
            "producer client 3 was told offset 0 after 2 on out-0",
            "\"o2\" went to out-0@2",
        ],
    );
}

#[test]
fn exactly_once() {
    let r = fails_only(
        "exactly_once",
        "exactly_once",
        &[("duplicate_output", 1), ("output_without_input", 1)],
    );
    has_all(
        &class(&r, "exactly_once", "duplicate_output"),
        &[
            "input \"m3\" on \"proc\" has 2 committed outputs",
            "\"o3\"",
            "\"o3b\"",
            "T6",
            "T7",
            "txns [6, 7]",
        ],
    );
    has_all(
        &class(&r, "exactly_once", "output_without_input"),
        &["\"o4\"", "\"m4\"", "abort marker at offset 5", "T7"],
    );
}

#[test]
fn exactly_once_missing_output() {
    // o1 no longer names m1 as its source: m1 has no output, and the
    // subscription is drained, so its processors should have made one.
    let mut v = value("valid_pipeline");
    let i = op_index(&v, "send", "o1", None);
    ops_mut(&mut v)[i].as_object_mut().unwrap().remove("source");
    let r = judge(&v);
    assert_failed(&r, &["exactly_once"]);
    has_all(
        &class(&r, "exactly_once", "missing_output"),
        &["input \"m1\" on \"proc\" has 0 committed outputs"],
    );
    // Not drained: an input may still be waiting, which passes.
    v["subscriptions"][0]["drained"] = json!(false);
    assert_failed(&judge(&v), &[]);
}

#[test]
fn run_check_file_exit_codes_and_reports() {
    let run = |name: &str, json: bool| {
        let mut out = Vec::new();
        let code = run_check_file(&path(name), json, &mut out);
        (code, String::from_utf8(out).expect("utf-8"))
    };
    let (code, text) = run("valid_pipeline", false);
    assert_eq!(code, 0, "{text}");
    let (code, text) = run("torn_transaction", false);
    assert_eq!(code, 1);
    has_all(
        &text,
        &[
            "FAIL, 1 of 7 rules broken",
            "FAIL  torn_transaction",
            "[messages_without_acks] T6 is torn",
            "        1. T6 (0,6)",
        ],
    );
    let (code, text) = run("exactly_once", true);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&text).expect("JSON report");
    assert_eq!(v["format"], "percsim-check/1");
    assert_eq!(v["history_format"], "percsim-stream-history/1");
    assert_eq!(v["passed"], false);
    assert_eq!(v["rules"][6]["id"], "exactly_once");
    assert_eq!(v["rules"][6]["counts"]["duplicate_output"], 1);
}

#[test]
fn stream_files_are_told_apart_from_other_histories() {
    let format = |p: &std::path::Path| detect_file(p).ok();
    assert_eq!(format(&path("valid_pipeline")), Some(HistoryFormat::Stream));
    let percolator =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid_basic.json");
    assert_eq!(format(&percolator), Some(HistoryFormat::Transactions));
    assert_eq!(format(&path("no_such_file")), None);
    // A wrong version of the stream format is still routed here, and refused.
    let dir = std::env::temp_dir().join(format!("percsim-stream-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("v2.json");
    let mut v = value("valid_pipeline");
    v["format"] = json!("percsim-stream-history/2");
    std::fs::write(&f, v.to_string()).unwrap();
    assert_eq!(format(&f), Some(HistoryFormat::Stream));
    let mut out = Vec::new();
    assert_eq!(run_check_file(&f, false, &mut out), 2);
    has_all(
        &String::from_utf8(out).unwrap(),
        &["$.format", "percsim-stream-history/2"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Parses `v` expecting an error; returns its message after checking it names every needle.
fn bad(v: &Value, needles: &[&str]) -> String {
    let e = parse(&v.to_string()).expect_err("should be refused");
    let msg = e.to_string();
    has_all(&msg, needles);
    msg
}

#[test]
fn malformed_histories_are_refused_with_the_problem_named() {
    let base = value("valid_pipeline");
    let e = parse("{\"format\": \"percsim-stream-history/1\",\n \"ops\": [}").expect_err("syntax");
    assert_eq!(e.line(), Some(2));
    has_all(&e.to_string(), &["JSON syntax error"]);

    let mut v = base.clone();
    v["ops"][0].as_object_mut().unwrap().remove("partition");
    bad(&v, &["missing field `partition`"]);
    let mut v = base.clone();
    v["ops"][0]["offset"] = json!(-1);
    bad(&v, &["invalid"]);
    let mut v = base.clone();
    v["transactions"][1]["outcome"] = json!("maybe");
    bad(&v, &["unknown variant `maybe`"]);
    let mut v = base.clone();
    v["transactions"][1]["id"] = json!(1);
    bad(
        &v,
        &[
            "$.transactions[1] (transaction id 1).id",
            "a second transaction",
        ],
    );
    let mut v = base.clone();
    v["ops"][3]["txn"] = json!(99);
    bad(
        &v,
        &["$.ops[3].txn", "transaction 99 is not in $.transactions"],
    );
    let mut v = base.clone();
    v["ops"][3]["message"] = json!("m1");
    bad(&v, &["$.ops[3].message", "already sent by $.ops[0]"]);
    let mut v = base.clone();
    v["ops"][5]["t_ns"] = json!(1);
    bad(&v, &["$.ops[5].t_ns", "time order"]);
    let mut v = base.clone();
    v["ops"][4]["subscription"] = json!("audit");
    bad(
        &v,
        &[
            "$.ops[4].partition",
            "is of topic \"in\"",
            "follows \"out\"",
        ],
    );
    let mut v = base.clone();
    v["ops"][4]["subscription"] = json!("nobody");
    bad(
        &v,
        &[
            "$.ops[4].subscription",
            "\"nobody\" is not in $.subscriptions",
        ],
    );
    let mut v = base.clone();
    v["ops"][0]["partition"] = json!("in-9");
    bad(
        &v,
        &[
            "$.ops[0].partition",
            "\"in-9\" is not in $.final_state.partitions",
        ],
    );
    let mut v = base.clone();
    v["final_state"]["partitions"][0]["entries"][2]["offset"] = json!(1);
    bad(
        &v,
        &[
            "$.final_state.partitions[0].entries[2].offset",
            "offsets must increase",
        ],
    );
    let mut v = base.clone();
    v["final_state"]["partitions"][0]["entries"][0]["marker"] = json!("commit");
    bad(
        &v,
        &[
            "$.final_state.partitions[0].entries[0]",
            "both `message` and `marker`",
        ],
    );
    let mut v = base.clone();
    v["final_state"]["partitions"][0]["entries"][2]
        .as_object_mut()
        .unwrap()
        .remove("txn");
    bad(
        &v,
        &["entries[2].txn", "a marker must name its transaction"],
    );
    let mut v = base.clone();
    v["final_state"]["partitions"][1]["name"] = json!("in-0");
    bad(
        &v,
        &["$.final_state.partitions[1].name", "a second partition"],
    );
    let mut v = base.clone();
    let acks = v["final_state"]["acks"].as_array_mut().unwrap();
    acks.push(acks[0].clone());
    bad(&v, &["$.final_state.acks[1]", "listed twice"]);
    let mut v = base.clone();
    v["transactions"][0]["complete_ns"] = json!(1);
    bad(
        &v,
        &[
            "$.transactions[0] (transaction id 1).complete_ns",
            "earlier than invoke_ns",
        ],
    );
}

#[test]
fn malformed_file_is_exit_code_2_with_a_json_error() {
    let dir = std::env::temp_dir().join(format!("percsim-stream-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.json");
    let mut v = value("valid_pipeline");
    v["ops"][3]["txn"] = json!(99);
    std::fs::write(&f, v.to_string()).unwrap();
    let mut out = Vec::new();
    assert_eq!(run_check_file(&f, true, &mut out), 2);
    let e: Value = serde_json::from_slice(&out).expect("JSON error report");
    assert_eq!(e["passed"], false);
    assert_eq!(e["path"], "$.ops[3].txn");
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("is not a valid stream history")
    );
    let mut out = Vec::new();
    assert_eq!(
        run_check_file(&dir.join("missing.json"), false, &mut out),
        2
    );
    assert!(
        String::from_utf8(out)
            .unwrap()
            .starts_with("error: cannot read")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The first JSON block of the stream section of docs/history-format.md.
fn doc_example() -> Value {
    let doc = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/history-format.md"),
    )
    .expect("docs/history-format.md");
    let section = doc
        .split("# Stream histories")
        .nth(1)
        .expect("stream section");
    let block = section.split("```json\n").nth(1).expect("a JSON block");
    serde_json::from_str(block.split("\n```").next().unwrap()).expect("the example is JSON")
}

#[test]
fn the_documented_example_passes_and_fails_as_the_doc_says() {
    let v = doc_example();
    assert_failed(&judge(&v), &[]);
    let mut v = v;
    v["subscriptions"][0]["drained"] = json!(true);
    let r = judge(&v);
    assert_failed(&r, &["lost_write", "exactly_once"]);
    has_all(&class(&r, "lost_write", "never_delivered"), &["\"m2\""]);
    has_all(
        &class(&r, "exactly_once", "missing_output"),
        &["input \"m2\""],
    );
}

#[test]
fn check_never_panics_on_histories_with_an_op_or_a_log_entry_missing() {
    // Such histories may break references (an entry's transaction, an ack's
    // message); check must still judge them, the same way every time.
    let names = [
        "valid_pipeline",
        "aborted_read",
        "read_uncommitted",
        "read_uncommitted_past_open",
        "lost_write",
        "duplicate",
        "torn_transaction",
        "monotonic_offsets",
        "exactly_once",
    ];
    for name in names {
        let h = parse(&value(name).to_string()).expect("fixture parses");
        for i in 0..h.ops.len() {
            let mut g = h.clone();
            g.ops.remove(i);
            assert_eq!(check(&g), check(&g), "{name} without op {i}");
        }
        for p in 0..h.final_state.partitions.len() {
            for i in 0..h.final_state.partitions[p].entries.len() {
                let mut g = h.clone();
                g.final_state.partitions[p].entries.remove(i);
                g.transactions.clear();
                assert_eq!(check(&g).rules.len(), 7, "{name} without entry {p}/{i}");
            }
        }
    }
}

/// The run's events are read (fields kept as written), written back, and
/// never judged; a history without them (older files) reads as before and
/// is written without the field.
#[test]
fn events_are_kept_and_never_judged() {
    let plain = value("valid_pipeline");
    let mut with = plain.clone();
    with["events"] = json!([
        {"t_ns": 5, "kind": "kill", "node": "broker-0"},
        {"t_ns": 9, "kind": "phase_healed"}
    ]);
    let h = parse(&with.to_string()).expect("parses");
    assert_eq!(h.events.len(), 2);
    assert_eq!(h.events[0].fields["node"], json!("broker-0"));
    let again = serde_json::to_value(&h).expect("JSON");
    assert_eq!(again["events"], with["events"]);
    let (a, b) = (judge(&plain), judge(&with));
    assert_eq!(
        (a.passed(), a.violated_rules(), &a.stats),
        (b.passed(), b.violated_rules(), &b.stats)
    );

    let old = parse(&plain.to_string()).expect("parses");
    assert!(old.events.is_empty());
    let written = serde_json::to_value(&old).expect("JSON");
    assert!(written.get("events").is_none(), "{written}");

    with["events"][1] = json!({"t_ns": 9});
    let e = parse(&with.to_string()).expect_err("an event without a kind");
    assert!(e.to_string().contains("missing field `kind`"), "{e}");
}

/// A broker redelivers an unacknowledged message to the same consumer
/// without being asked (Pulsar does): not a step back in offsets. Delivered
/// again after it was acknowledged, it is one.
#[test]
fn a_redelivery_of_an_unacknowledged_message_is_not_nonmonotonic() {
    assert_failed(&report("redelivery"), &[]);
    let mut v = value("redelivery");
    let first_ack = v["ops"][4].clone();
    v["ops"][4] = json!({"f": "ack", "client": 2, "subscription": "s", "partition": "in-0",
        "offset": 0, "message": "m1", "t_ns": 45, "txn": null, "result": "ok"});
    v["ops"][6] = first_ack;
    v["ops"][6]["t_ns"] = json!(60);
    let r = judge(&v);
    assert_failed(&r, &["monotonic_offsets"]);
    assert_eq!(
        counts(&r, "monotonic_offsets"),
        [("nonmonotonic_receive".to_string(), 1)]
    );
    // A cumulative acknowledgment of offset 1 covers offset 0 as well.
    let mut v = value("redelivery");
    v["ops"][4]["cumulative"] = json!(true);
    assert_failed(&judge(&v), &["monotonic_offsets"]);
}

/// A transaction told committed whose only effect, an acknowledgment, never
/// took effect is a lost write; held by the subscription, it passes.
#[test]
fn a_committed_acknowledgment_that_never_took_effect_is_lost() {
    let r = report("lost_ack");
    assert_failed(&r, &["lost_write"]);
    has_all(
        &class(&r, "lost_write", "lost_ack"),
        &["by T1 never took effect", "txns [1]"],
    );
    let mut v = value("lost_ack");
    v["final_state"]["acks"][0]["acked_below"] = json!(1);
    assert_failed(&judge(&v), &[]);
    // An aborted transaction's acknowledgment is not promised.
    let mut v = value("lost_ack");
    v["transactions"][0]["outcome"] = json!("aborted");
    assert_failed(&judge(&v), &[]);
}

/// Sends of two producers of one client are ordered per producer; without
/// producer ids they are one producer's, out of order.
#[test]
fn send_order_is_judged_per_producer() {
    let mut v = value("redelivery");
    v["ops"][0]["offset"] = json!(1);
    v["ops"][0]["message"] = json!("m2");
    v["ops"][1]["offset"] = json!(0);
    v["ops"][1]["message"] = json!("m1");
    v["ops"][0]["producer"] = json!("p-a");
    v["ops"][1]["producer"] = json!("p-b");
    assert_failed(&judge(&v), &[]);
    v["ops"][1]["producer"] = json!("p-a");
    let r = judge(&v);
    assert_eq!(
        counts(&r, "monotonic_offsets"),
        [("nonmonotonic_send".to_string(), 1)]
    );
}

/// A `read_uncommitted` consumer may see an aborted transaction's message;
/// a `read_committed` one (the default) may not.
#[test]
fn a_read_uncommitted_consumer_is_not_judged_for_aborted_reads() {
    let mut v = value("valid_pipeline");
    let receive = json!({"f": "receive", "client": 5, "consumer": "x1", "subscription": "proc",
        "partition": "in-0", "offset": 4, "message": "m4", "t_ns": 470});
    v["ops"].as_array_mut().unwrap().push(receive);
    let r = judge(&v);
    assert!(
        r.violated_rules().contains(&"aborted_read"),
        "{}",
        r.render_text()
    );
    let last = v["ops"].as_array().unwrap().len() - 1;
    v["ops"][last]["isolation"] = json!("read_uncommitted");
    let r = judge(&v);
    assert!(
        !r.violated_rules().contains(&"aborted_read"),
        "{}",
        r.render_text()
    );
}

/// A committed transaction with no recorded commit request was open at
/// least until its last send: a receipt past its first message before then
/// reads past an open transaction.
#[test]
fn past_open_transaction_without_a_recorded_commit_request() {
    let mut v = value("read_uncommitted_past_open");
    v["transactions"][0]["commit_request_ns"] = Value::Null;
    let i = op_index(&v, "send", "m2", None);
    ops_mut(&mut v)[i]["t_ns"] = json!(128);
    ops_mut(&mut v).sort_by_key(|o| o["t_ns"].as_u64());
    let r = judge(&v);
    let n = counts(&r, "read_uncommitted");
    assert!(
        n.contains(&("past_open_transaction".to_string(), 1)),
        "{}",
        r.render_text()
    );
    has_all(
        &class(&r, "read_uncommitted", "past_open_transaction"),
        &["no commit request was recorded", "at 0.000128 ms"],
    );
}
