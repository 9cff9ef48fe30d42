//! Every expectation of the examples under `scenarios/examples/script/`
//! can fail: each test changes one expectation and requires the run to
//! fail naming that step, what was expected and what happened. The typed
//! builder runs the same way from Rust.

use percsim_scenarios::Scenario;
use percsim_scenarios::regress;
use percsim_scenarios::systems;
use percsim_scenarios::workloads::{
    Call, CellAssert, CellRef, CountAssert, Counted, ErrorClass, ExpectOutcome, MessageRule,
    MsgFate, MsgLeg, PercolatorVerb, Point, PointAction, ScriptBuilder, Step, StepPoint, Stored,
    Target,
};
use percsim_sim::CallKind;
use serde_json::{Value, json};

fn example(name: &str) -> Value {
    let path = format!("{}/examples/script/{name}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("example")).expect("json")
}

/// Run `v` and require a failure whose text contains every needle.
fn must_fail(v: &Value, needles: &[&str]) {
    let scenario = Scenario::parse(&v.to_string()).expect("valid scenario");
    let judged = regress::run(&scenario).expect("runs");
    let text = judged.problems.join("\n");
    assert!(!judged.passed(), "the changed expectation passed");
    for n in needles {
        assert!(text.contains(n), "{n:?} not in:\n{text}");
    }
}

#[test]
fn a_wrong_failure_class_fails() {
    let mut v = example("expected-failures");
    v["workload"]["steps"][6]["fails"] = json!("write_conflict");
    must_fail(
        &v,
        &[
            "step 6",
            "expected a failure (write_conflict); happened Aborted",
        ],
    );
    let mut v = example("expected-failures");
    v["workload"]["steps"][14]["fails"] = json!("locked");
    must_fail(&v, &["step 14", "expected a failure (locked)"]);
    let mut v = example("partition-heal");
    v["workload"]["steps"][3]["fails"] = json!("rolled_back");
    must_fail(&v, &["step 3", "expected a failure (rolled_back)"]);
}

#[test]
fn a_wait_that_never_holds_fails() {
    let mut v = example("store-and-events");
    let steps = v["workload"]["steps"].as_array_mut().unwrap();
    // T1's client died in its commit: the commit never returns.
    steps.push(json!({"do": "wait", "until": {"txn_finished": "T1"}, "timeout_ms": 100}));
    must_fail(&v, &["step 16", "within 100 ms; happened it did not hold"]);
}

#[test]
fn wrong_store_contents_fail() {
    let mut v = example("store-and-events");
    v["workload"]["steps"][6]["locks"][0]["primary"]["row"] = json!("b");
    must_fail(&v, &["step 6", "expected locks", "happened locks"]);
    let mut v = example("store-and-events");
    v["workload"]["steps"][5]["writes"]
        .as_array_mut()
        .unwrap()
        .pop();
    must_fail(&v, &["step 5", "expected writes"]);
    let mut v = example("store-and-events");
    v["workload"]["steps"][6]["notify"] = json!(true);
    must_fail(
        &v,
        &[
            "step 6",
            "expected notify entry true; happened notify entry false",
        ],
    );
    let mut v = example("interrupted-commits");
    v["workload"]["at_end"][2]["writes"][1]["kind"] = json!("put");
    must_fail(&v, &["at_end 2", "expected writes"]);
}

#[test]
fn wrong_counts_fail() {
    let mut v = example("store-and-events");
    v["workload"]["steps"][7]["equals"] = json!(1);
    must_fail(&v, &["step 7", "expected 1 \"roll_forward\"; happened 0"]);
    let mut v = example("store-and-events");
    v["workload"]["steps"][11]["equals"] = json!(0);
    must_fail(&v, &["step 11", "happened 1 \"roll_forward\""]);
}

#[test]
fn wrong_interrupted_outcomes_fail() {
    let mut v = example("interrupted-commits");
    v["workload"]["at_end"][0]["store"] = json!("committed");
    must_fail(&v, &["at_end 0", "expected \"committed\""]);
    let mut v = example("interrupted-commits");
    v["workload"]["at_end"][1]["store"] = json!("rolled_back");
    must_fail(&v, &["at_end 1", "expected \"rolled_back\""]);
}

#[test]
fn overlapping_steps_are_checked() {
    let mut v = example("overlap");
    v["workload"]["steps"][9]["expect"] = json!(["a=a1", "b=b0"]);
    must_fail(&v, &["step 9", "happened [\"a=a1\", \"b=b2\"]"]);
}

#[test]
fn bad_new_fields_are_refused() {
    let mut v = example("overlap");
    v["workload"]["steps"][6]["until"] = json!({"node_up": "tablet-9"});
    let e = Scenario::parse(&v.to_string()).unwrap_err().to_string();
    assert!(
        e.contains("workload.steps[6] (do \"wait\"): no node named \"tablet-9\""),
        "{e}"
    );
    let mut v = example("store-and-events");
    v["workload"]["steps"][11]["since_step"] = json!(11);
    let e = Scenario::parse(&v.to_string()).unwrap_err().to_string();
    assert!(
        e.contains("since_step: step 11 does not come before"),
        "{e}"
    );
    let mut v = example("expected-failures");
    v["workload"]["steps"][6]["expect"] = json!("aborted");
    let e = Scenario::parse(&v.to_string()).unwrap_err().to_string();
    assert!(
        e.contains("either a result (expect) or a failure (fails)"),
        "{e}"
    );
    let mut v = example("overlap");
    v["workload"]["at_end"] = json!([{"do": "heal"}]);
    let e = Scenario::parse(&v.to_string()).unwrap_err().to_string();
    assert!(e.contains("only assert_* steps"), "{e}");
}

fn lost_update(second: Option<ExpectOutcome>) -> ScriptBuilder {
    let b = ScriptBuilder::new()
        .initial("x", "v", "10")
        .begin(0, "T1")
        .begin(1, "T2")
        .get("T1", "x", "v", Some("10"))
        .get("T2", "x", "v", Some("10"))
        .set("T1", "x", "v", "11")
        .set("T2", "x", "v", "12")
        .commit("T1", ExpectOutcome::Committed)
        .commit("T2", second.unwrap_or(ExpectOutcome::Aborted));
    let b = match second {
        None => b.fails(ErrorClass::WriteConflict),
        Some(_) => b,
    };
    b.assert_stored("T2", Stored::RolledBack)
        .assert_count(Counted::RollForward, 0, None)
}

#[test]
fn the_builder_runs_a_seed_sweep_and_can_fail() {
    let script = lost_update(None).build();
    let scenario = script_scenario(&script, 0);
    let first_failure = regress::sweep(&scenario, 0..3).expect("runs");
    if let Some(j) = first_failure {
        panic!(
            "{}",
            j.explain(&std::env::temp_dir().join("percsim-builder.json"))
        );
    }
    let judged = regress::run(&scenario).expect("runs");
    let history = judged.output.transactions().expect("a transaction history");
    assert!(history.transactions.len() >= 3);
    // The same script expecting the second writer to commit must fail.
    let wrong = script_scenario(&lost_update(Some(ExpectOutcome::Committed)).build(), 0);
    let judged = regress::run(&wrong).expect("runs");
    assert!(!judged.passed());
    let text = judged.explain(&std::env::temp_dir().join("percsim-builder-wrong.json"));
    assert!(
        text.contains("step 7") && text.contains("expected Committed; happened Aborted"),
        "{text}"
    );
    assert!(text.contains("replay: percsim run /"), "{text}");
    assert!(text.contains("--seed 0"), "{text}");
    assert!(!text.contains("cargo run"), "{text}");
}

#[test]
fn the_tutorials_first_version_fails_as_the_docs_show() {
    let mut v = example("first-regression-test");
    v["workload"]["steps"][6]["expect"] = json!("b0");
    must_fail(
        &v,
        &[
            r#"step 6 {"do":"get","txn":"T2","row":"b","col":"v","expect":"b0","no_wait":false}: expected Some("b0"); happened Some("b1")"#,
        ],
    );
}

#[test]
fn a_lost_reply_and_a_lost_request_end_differently_in_the_store() {
    // The examples pass as written (scenario_files.rs); swapping the two
    // store outcomes carried by the commits must fail each at its step.
    let mut v = example("lost-commit-messages");
    v["workload"]["steps"][4]["store"] = json!("rolled_back");
    must_fail(
        &v,
        &["step 4", "expected \"rolled_back\"", "commit records on"],
    );
    let mut v = example("lost-commit-messages");
    v["workload"]["steps"][14]["store"] = json!("committed");
    must_fail(&v, &["step 14", "expected \"committed\""]);
    // Without the rule, the primary commit's reply arrives: committed, not unknown.
    let mut v = example("lost-commit-messages");
    v["workload"]["steps"][3]["times"] = json!(1);
    must_fail(&v, &["step 4", "expected Unknown; happened Committed"]);
}

#[test]
fn message_fault_expectations_can_fail() {
    // A lost secondary commit leaves the secondary locked: expecting no lock fails.
    let mut v = example("message-faults");
    v["workload"]["steps"][16]["locks"] = json!([]);
    must_fail(&v, &["step 16", "expected locks []"]);
    // A held prewrite stops T1: its commit cannot succeed.
    let mut v = example("message-faults");
    v["workload"]["steps"][3]["fails"] = json!("write_conflict");
    must_fail(&v, &["step 3", "expected a failure (write_conflict)"]);
    // A reply delayed past the RPC timeout (100 ms) is lost: the read fails.
    let mut v = example("message-faults");
    v["workload"]["steps"][19]["fate"] = json!({"delay": {"ms": 150}});
    must_fail(
        &v,
        &[
            "step 21",
            "expected Some(\"m0\"); happened error (timed_out)",
        ],
    );
    // The two rules acted on exactly two messages from step 21 on.
    let mut v = example("message-faults");
    v["workload"]["steps"][24]["equals"] = json!(1);
    must_fail(&v, &["step 24", "expected 1 \"intercepted\"; happened 2"]);
}

#[test]
fn a_held_request_is_delivered_after_its_release() {
    // T1's prewrites are held until T1 has given up; its abort wrote a
    // rollback record at k, so every prewrite delivered at the release is
    // refused as late (4 attempts, each held).
    let base = || {
        ScriptBuilder::new()
            .initial("k", "v", "k0")
            .begin(0, "T1")
            .set("T1", "k", "v", "k1")
            .intercept(MessageRule {
                name: "late".into(),
                call: Call(CallKind::Prewrite),
                txn: Some("T1".into()),
                on: Some(Target::Primary),
                client: None,
                leg: MsgLeg::Request,
                fate: MsgFate::Hold,
                times: None,
            })
            .commit("T1", ExpectOutcome::Aborted)
            .fails(ErrorClass::Unavailable)
            .assert_count(Counted::LatePrewriteRejected, 0, None)
            .release("late")
    };
    let rejected = |n| {
        Step::AssertCount(CountAssert {
            count: Counted::LatePrewriteRejected,
            equals: n,
            since_step: None,
        })
    };
    let ok = script_scenario(&base().at_end(rejected(4)).build(), 1);
    let judged = regress::run(&ok).expect("runs");
    assert!(judged.passed(), "{:?}", judged.problems);
    let wrong = script_scenario(&base().at_end(rejected(0)).build(), 1);
    let judged = regress::run(&wrong).expect("runs");
    let text = judged.problems.join("\n");
    assert!(
        text.contains("expected 0 \"late_prewrite_rejected\"; happened 4"),
        "{text}"
    );
}

#[test]
fn bad_message_rules_are_refused() {
    let refused = |f: &dyn Fn(&mut Value), needle: &str| {
        let mut v = example("message-faults");
        f(&mut v);
        let e = Scenario::parse(&v.to_string()).unwrap_err().to_string();
        assert!(e.contains(needle), "{needle:?} not in {e}");
    };
    refused(
        &|v| v["workload"]["steps"][2]["call"] = json!("comit"),
        "unknown call \"comit\" (calls: get, scan, prewrite, commit",
    );
    refused(
        &|v| v["workload"]["steps"][19]["fate"] = json!({"duplicate": {"after_ms": 1}}),
        "workload.steps[19] (do \"intercept\"): fate: only requests can be duplicated",
    );
    refused(
        &|v| v["workload"]["steps"][8]["name"] = json!("nothing"),
        "no intercept step before this one installs a rule named \"nothing\"",
    );
    refused(
        &|v| v["workload"]["steps"][14]["name"] = json!("late"),
        "a message rule named \"late\" is installed twice",
    );
    refused(
        &|v| {
            v["workload"]["steps"][2]["call"] = json!("timestamp");
            v["workload"]["steps"][2]["on"] = Value::Null;
        },
        "a timestamp message carries no transaction",
    );
    refused(
        &|v| v["workload"]["steps"][2]["on"] = json!("secondaries"),
        "fewer than two cells, so it has no secondary",
    );
    refused(
        &|v| v["workload"]["steps"][2]["times"] = json!(0),
        "workload.steps[2] (do \"intercept\"): times: must be at least 1",
    );
}

#[test]
fn the_rewritten_recovery_cases_can_fail() {
    let recovery = |name: &str| -> Value {
        let path = format!(
            "{}/examples/recovery/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).expect("example")).expect("json")
    };
    let mut v = recovery("dead-after-commit-primary");
    v["workload"]["steps"][4]["store"] = json!("rolled_back");
    must_fail(&v, &["step 4", "expected \"rolled_back\""]);
    let mut v = recovery("dead-after-commit-primary");
    v["workload"]["steps"][8]["equals"] = json!(0);
    must_fail(&v, &["step 8", "happened 1 \"roll_forward\""]);
    let mut v = recovery("paused-owner-resumes");
    v["workload"]["steps"][4]["fails"] = json!("write_conflict");
    must_fail(&v, &["step 4", "expected a failure (write_conflict)"]);
    // The wait replaced a 2-second sleep: it holds only once T1 returned.
    let mut v = recovery("paused-owner-resumes");
    v["workload"]["steps"][10] =
        json!({"do": "wait", "until": {"txn_finished": "T1"}, "timeout_ms": 1});
    must_fail(&v, &["step 10", "within 1 ms; happened it did not hold"]);
}

#[test]
fn notify_and_ack_expectations_can_fail() {
    let mut v = example("observers");
    v["workload"]["steps"][0]["ack"]["acked"] = json!(true);
    must_fail(&v, &["step 0", "expected ack", "happened no ack"]);
    let mut v = example("observers");
    v["workload"]["steps"][5]["notify"] = json!(false);
    must_fail(
        &v,
        &[
            "step 5",
            "expected notify entry false; happened notify entry true",
        ],
    );
    // Before T1 commits, no run can have acknowledged T1's write.
    let mut v = example("observers");
    v["workload"]["steps"][5]["ack"] = json!({"observer": "copier", "after": "T1"});
    must_fail(&v, &["step 5", "happened no ack (T1 has no commit_ts)"]);
    let mut v = example("observers");
    v["workload"]["at_end"][0]["ack"]["acked"] = json!(false);
    must_fail(
        &v,
        &["at_end 0", "happened ack by the observer run started at ts"],
    );
    let mut v = example("observers");
    v["workload"]["steps"][8]["until"] = json!({"notify_cleared": {"row": "r", "col": "doc"}});
    v["workload"]["steps"][8]["timeout_ms"] = json!(1);
    must_fail(&v, &["step 8", "within 1 ms; happened it did not hold"]);
}

#[test]
fn bad_observers_are_refused() {
    let mut v = example("observers");
    v["workload"]["steps"][9]["ack"]["observer"] = json!("other");
    let e = Scenario::parse(&v.to_string()).unwrap_err().to_string();
    assert!(
        e.contains(
            "workload.steps[9] (do \"assert_cell\"): ack.observer: no observer named \"other\" observes column \"doc\""
        ),
        "{e}"
    );
    let mut v = example("observers");
    v["workload"]["observers"][0]["copy_to"] = json!("doc");
    let e = Scenario::parse(&v.to_string()).unwrap_err().to_string();
    assert!(
        e.contains("workload.observers[0].copy_to: column \"doc\" is observed"),
        "{e}"
    );
}

/// T1 reads x while the rule `r` acts on the get's reply; the rule is
/// released 100 ms after the read is issued (by then the reply is held or
/// delayed; a release before the reply is decided would lift the rule).
fn held_read(fate: MsgFate, expect: &str) -> regress::Judged {
    let script = ScriptBuilder::new()
        .initial("x", "v", "0")
        .begin(0, "T1")
        .intercept(
            MessageRule::new("r", CallKind::Get, MsgLeg::Reply, fate)
                .for_txn("T1")
                .on_cells(Target::Cell(CellRef::new("x", "v")))
                .from_client(0)
                .at_most(1),
        )
        .get("T1", "x", "v", Some(expect))
        .no_wait()
        .step(Step::Sleep { ms: 100 })
        .release("r")
        .commit("T1", ExpectOutcome::Committed)
        .assert_count(Counted::Intercepted, 1, None)
        .build();
    regress::run(&script_scenario(&script, 1)).expect("runs")
}

#[test]
fn held_and_delayed_replies_reach_a_waiting_caller() {
    let j = held_read(MsgFate::Hold, "0");
    assert!(j.passed(), "{:?}", j.problems);
    assert!(held_read(MsgFate::Delay { ms: 20 }, "0").passed());
    let wrong = held_read(MsgFate::Hold, "1");
    let text = wrong.problems.join("\n");
    assert!(
        text.contains("expected Some(\"1\"); happened Some(\"0\")"),
        "{text}"
    );
}

/// A Percolator script file of these steps on 2 tablets and 2 clients.
fn script_file(steps: Value) -> Value {
    json!({
        "format": "percsim-scenario/2", "seed": 1, "world": {"run_ms": 20000},
        "percolator": {"tablet_servers": 2, "tablets": 2, "clients": 2, "workers_per_client": 1},
        "workload": {"name": "script",
            "initial": [{"row": "a", "col": "v", "value": "a0"}, {"row": "b", "col": "v", "value": "b0"}],
            "steps": steps}
    })
}

#[test]
fn a_crash_or_pause_that_never_fires_fails_naming_its_step() {
    // A transaction that only reads never reaches a commit step.
    for stop in [
        json!({"do": "crash_at", "txn": "R", "step": "after_commit_primary"}),
        json!({"do": "pause_at", "txn": "R", "step": "before_commit_primary"}),
    ] {
        let v = script_file(json!([
            {"do": "begin", "client": 0, "txn": "R"},
            {"do": "get", "txn": "R", "row": "a", "col": "v", "expect": "a0"},
            stop,
            {"do": "commit", "txn": "R"}
        ]));
        must_fail(
            &v,
            &[
                "step 2",
                "the stop never happened: the commit ended (Committed",
            ],
        );
    }
    // A transaction aborted before its commit.
    let v = script_file(json!([
        {"do": "begin", "client": 0, "txn": "T"},
        {"do": "set", "txn": "T", "row": "a", "col": "v", "value": "a1"},
        {"do": "crash_at", "txn": "T", "step": "after_commit_primary"},
        {"do": "abort", "txn": "T"}
    ]));
    must_fail(&v, &["step 2", "aborted before its commit"]);
    // The same crash on a transaction that writes fires: the run passes.
    let v = script_file(json!([
        {"do": "begin", "client": 0, "txn": "T"},
        {"do": "set", "txn": "T", "row": "a", "col": "v", "value": "a1"},
        {"do": "crash_at", "txn": "T", "step": "after_commit_primary"},
        {"do": "commit", "txn": "T", "store": "committed"}
    ]));
    let judged = regress::run(&Scenario::parse(&v.to_string()).unwrap()).unwrap();
    assert!(judged.passed(), "{:?}", judged.problems);
}

#[test]
fn a_stop_at_that_never_fires_fails_naming_its_step() {
    // Client 1 runs no transaction: it never reaches the point.
    let v = script_file(json!([
        {"do": "stop_at", "point": "before_prewrite", "node": "client-1", "fault": {"crash": {}}},
        {"do": "begin", "client": 0, "txn": "T"},
        {"do": "set", "txn": "T", "row": "a", "col": "v", "value": "a1"},
        {"do": "commit", "txn": "T", "expect": "committed"}
    ]));
    must_fail(&v, &["step 0", "the stop never happened"]);
}

#[test]
fn an_expectation_on_a_commit_armed_to_crash_is_refused_at_load() {
    for (field, value) in [
        ("expect", json!("aborted")),
        ("fails", json!("write_conflict")),
    ] {
        let mut commit = json!({"do": "commit", "txn": "T"});
        commit[field] = value;
        let v = script_file(json!([
            {"do": "begin", "client": 0, "txn": "T"},
            {"do": "set", "txn": "T", "row": "a", "col": "v", "value": "a1"},
            {"do": "crash_at", "txn": "T", "step": "after_commit_primary"},
            commit
        ]));
        let e = Scenario::parse(&v.to_string()).unwrap_err().to_string();
        assert!(
            e.contains(&format!("workload.steps[3] (do \"commit\"): {field}")),
            "{e}"
        );
        assert!(e.contains("armed to crash"), "{e}");
    }
    // The builder's commit takes an expectation: refused the same way;
    // commit_armed takes none.
    let armed = ScriptBuilder::new()
        .begin(0, "T")
        .set("T", "a", "v", "a1")
        .crash_at("T", StepPoint::AfterCommitPrimary, None);
    let wrong = script_scenario(
        &armed.clone().commit("T", ExpectOutcome::Aborted).build(),
        0,
    );
    let e = wrong.validate().unwrap_err().to_string();
    assert!(
        e.contains("workload.steps[3] (do \"commit\"): expect"),
        "{e}"
    );
    let right = armed.commit_armed("T").store(Stored::Committed).build();
    let judged = regress::run(&script_scenario(&right, 0)).expect("runs");
    assert!(judged.passed(), "{:?}", judged.problems);
}

#[test]
fn the_builder_writes_every_kind_of_step_as_the_file_does() {
    let script = ScriptBuilder::new()
        .initial("a", "v", "a0")
        .stop_at(
            Point::TabletAfterApply,
            "tablet-0",
            PointAction::Crash {
                restart_after_ms: Some(100),
            },
        )
        .begin(0, "T")
        .set("T", "a", "v", "a1")
        .pause_at("T", StepPoint::BeforeCommitPrimary)
        .commit("T", ExpectOutcome::Committed)
        .no_wait()
        .sleep(50)
        .resume(0)
        .wait(
            percsim_scenarios::workloads::WaitFor::TxnFinished("T".into()),
            5_000,
        )
        .pause(1)
        .resume(1)
        .partition(&["client-1"], &["tablet-1"])
        .heal()
        .kill("client-1")
        .restart("client-1")
        .expire_session(1)
        .begin(1, "S")
        .scan("S", ("a", "b"), "v", &["a=a1"])
        .abort("S")
        .build();
    let words: Vec<String> = script
        .steps
        .iter()
        .map(|s| {
            serde_json::to_value(s).unwrap()["do"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    for verb in [
        "stop_at",
        "pause_at",
        "sleep",
        "resume",
        "wait",
        "pause",
        "partition",
        "heal",
        "kill",
        "restart",
        "expire_session",
        "scan",
        "abort",
    ] {
        assert!(
            words.iter().any(|w| w == verb),
            "{verb} missing from {words:?}"
        );
    }
    let scenario = script_scenario(&script, 0);
    scenario.validate().expect("valid");
    let again = Scenario::parse(&serde_json::to_string(&scenario).unwrap()).expect("reads back");
    assert_eq!(again.to_value().unwrap(), scenario.to_value().unwrap());
}

#[test]
fn a_script_refuses_the_clusters_crashes_and_pauses_keyed_to_a_transaction_number() {
    let steps = json!([
        {"do": "begin", "client": 0, "txn": "T"},
        {"do": "set", "txn": "T", "row": "a", "col": "v", "value": "a1"},
        {"do": "commit", "txn": "T", "expect": "committed"}
    ]);
    for (field, entry, instead) in [
        (
            "crashes",
            json!({"client": 0, "txn": 3, "step": "after_commit_primary"}),
            "crash_at",
        ),
        (
            "pauses",
            json!({"client": 0, "txn": 1, "step": "before_commit_primary", "duration_ms": 10}),
            "pause_at",
        ),
        (
            "point_faults",
            json!({"point": "before_prewrite", "node": 0, "nth": 2, "fault": {"crash": {}}}),
            "stop_at",
        ),
    ] {
        let mut v = script_file(steps.clone());
        v["percolator"][field] = json!([entry]);
        let e = Scenario::parse(&v.to_string()).unwrap_err().to_string();
        assert!(e.contains(&format!("percolator.{field}[0]")), "{e}");
        assert!(e.contains(instead), "{e}");
    }
    Scenario::parse(&script_file(steps).to_string()).expect("without them it loads");
}

/// The default system's scenario running `script`.
fn script_scenario(script: &impl serde::Serialize, seed: u64) -> Scenario {
    regress::script_scenario(systems::default_system(), script, seed).expect("a script of it")
}

#[test]
fn a_system_without_a_script_scenario_hook_refuses_a_bare_script_by_name() {
    let pulsar = systems::find("pulsar").expect("registered");
    let e = regress::script_scenario(pulsar, &json!({"steps": []}), 0).unwrap_err();
    assert!(
        e.to_string()
            .contains("system pulsar cannot build a scenario from a bare script"),
        "{e}"
    );
}

/// T1 reads x and commits a write of it while `rule` acts; the run must
/// count `acted` intercepted messages (`Counted::Intercepted`).
fn intercepted(rule: MessageRule, acted: u64) -> regress::Judged {
    let script = ScriptBuilder::new()
        .initial("x", "v", "0")
        .begin(0, "T1")
        .intercept(rule)
        .get("T1", "x", "v", Some("0"))
        .set("T1", "x", "v", "1")
        .commit("T1", ExpectOutcome::Committed)
        .release("r")
        .assert_count(Counted::Intercepted, acted, None)
        .build();
    regress::run(&script_scenario(&script, 1)).expect("runs")
}

#[test]
fn the_builders_dropped_and_duplicated_messages_act_on_the_run() {
    // A lost get request is sent again: the read and the commit go on.
    let lost = || MessageRule::dropping("r", CallKind::Get, MsgLeg::Request).at_most(1);
    let j = intercepted(lost(), 1);
    assert!(j.passed(), "{:?}", j.problems);
    // A duplicated prewrite: the copy is refused or finds its own lock.
    let copied = || MessageRule::duplicating("r", CallKind::Prewrite, 5).for_txn("T1");
    let j = intercepted(copied(), 1);
    assert!(j.passed(), "{:?}", j.problems);
    // A rule that acts on nothing fails the count: the rules did act above.
    let never = MessageRule::dropping("r", CallKind::Scan, MsgLeg::Request);
    let j = intercepted(never, 1);
    let text = j.problems.join("\n");
    assert!(
        text.contains("expected 1 \"intercepted\"; happened 0"),
        "{text}"
    );
}

#[test]
fn the_builders_rule_constructors_write_what_the_struct_does() {
    let built = MessageRule::holding("h", CallKind::Commit, MsgLeg::Reply)
        .for_txn("T")
        .on_cells(Target::Secondaries)
        .from_client(2)
        .at_most(3);
    let by_hand = MessageRule {
        name: "h".into(),
        call: Call(CallKind::Commit),
        txn: Some("T".into()),
        on: Some(Target::Secondaries),
        client: Some(2),
        leg: MsgLeg::Reply,
        fate: MsgFate::Hold,
        times: Some(3),
    };
    assert_eq!(built, by_hand);
    let fates = [
        (
            MessageRule::dropping("d", CallKind::Get, MsgLeg::Request),
            MsgFate::Drop,
        ),
        (
            MessageRule::delaying("d", CallKind::Get, MsgLeg::Reply, 7),
            MsgFate::Delay { ms: 7 },
        ),
        (
            MessageRule::duplicating("d", CallKind::Prewrite, 9),
            MsgFate::Duplicate { after_ms: 9 },
        ),
    ];
    for (rule, fate) in fates {
        assert_eq!(rule.fate, fate);
        assert_eq!(
            (rule.txn, rule.on, rule.client, rule.times),
            (None, None, None, None)
        );
    }
}

#[test]
fn the_builder_writes_the_remaining_kinds_of_step_as_the_file_does() {
    let script = ScriptBuilder::new()
        .initial("a", "v", "a0")
        .initial("b", "v", "b0")
        .begin(0, "T")
        .set("T", "a", "v", "a1")
        .delete("T", "b", "v")
        .intercept(MessageRule::delaying("r", CallKind::Prewrite, MsgLeg::Reply, 5).for_txn("T"))
        .crash_at("T", StepPoint::AfterCommitPrimary, Some(50))
        .commit_armed("T")
        .store(Stored::Committed)
        .release("r")
        .partition_one_way(&["client-0"], &["tablet-1"])
        .heal()
        .sleep(500)
        .assert_cell(CellAssert {
            notify: Some(false),
            ..CellAssert::new("a", "v")
        })
        .at_end(Step::System(PercolatorVerb::AssertStored {
            txn: "T".into(),
            store: Stored::Committed,
        }))
        .at_end(Step::AssertCount(CountAssert {
            count: Counted::RollForward,
            equals: 1,
            since_step: None,
        }))
        .build();
    let steps = serde_json::to_value(&*script.steps).unwrap();
    let words: Vec<&str> = steps
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["do"].as_str().unwrap())
        .collect();
    assert_eq!(
        words,
        [
            "begin",
            "set",
            "delete",
            "intercept",
            "crash_at",
            "commit",
            "release",
            "partition",
            "heal",
            "sleep",
            "assert_cell"
        ]
    );
    assert_eq!(steps[5]["store"], "committed", "{steps}");
    assert!(steps[5].get("expect").is_none(), "{steps}");
    assert_eq!(steps[7]["one_way"], true, "{steps}");
    assert_eq!(steps[3]["fate"]["delay"]["ms"], 5, "{steps}");
    assert_eq!(script.at_end.len(), 2);
    let scenario = script_scenario(&script, 0);
    scenario.validate().expect("valid");
    let again = Scenario::parse(&serde_json::to_string(&scenario).unwrap()).expect("reads back");
    assert_eq!(again.to_value().unwrap(), scenario.to_value().unwrap());
    // It runs: T's client dies after its primary's commit, the reader rolls T forward.
    let judged = regress::run(&scenario).expect("runs");
    assert!(judged.passed(), "{:?}", judged.problems);
}

#[test]
fn the_builders_at_end_refuses_a_wait_naming_it() {
    let script = ScriptBuilder::new()
        .begin(0, "T")
        .set("T", "a", "v", "a1")
        .commit("T", ExpectOutcome::Committed)
        .at_end(Step::Wait {
            until: percsim_scenarios::workloads::WaitFor::TxnFinished("T".into()).into(),
            timeout_ms: 10,
        })
        .build();
    let e = script_scenario(&script, 0)
        .validate()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("workload.at_end[0] (do \"wait\"): only assert_* steps"),
        "{e}"
    );
}
