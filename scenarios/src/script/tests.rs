//! The engine on a system of its own: threads of `work` steps that record
//! when they start and end, a driver step that records a note, an
//! assertion on how many records there are, and a control that records
//! what the driver did to the world.

use super::*;
use serde_json::json;

/// The fake system's fields: none but a label.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Fake {
    #[serde(default)]
    label: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case", deny_unknown_fields)]
enum FakeVerb {
    Open {
        client: usize,
        thread: String,
    },
    Work {
        thread: String,
        ms: u64,
        #[serde(default)]
        no_wait: bool,
    },
    Close {
        thread: String,
    },
    Note {
        text: String,
    },
    Check {
        records: usize,
    },
}

impl SystemVerb for FakeVerb {
    fn thread(&self) -> Option<&str> {
        match self {
            FakeVerb::Open { thread, .. }
            | FakeVerb::Work { thread, .. }
            | FakeVerb::Close { thread } => Some(thread),
            _ => None,
        }
    }
    fn opens(&self) -> Option<usize> {
        match self {
            FakeVerb::Open { client, .. } => Some(*client),
            _ => None,
        }
    }
    fn closes(&self) -> bool {
        matches!(self, FakeVerb::Close { .. })
    }
    fn no_wait(&self) -> bool {
        matches!(self, FakeVerb::Work { no_wait: true, .. })
    }
    fn is_assertion(&self) -> bool {
        matches!(self, FakeVerb::Check { .. })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum FakeCount {
    Kills,
}

impl Countable for FakeCount {
    fn counter(self) -> String {
        "kills".into()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum FakeWait {
    Records(usize),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FakeRule {
    name: String,
    leg: MsgLeg,
    fate: MsgFate,
    #[serde(default)]
    times: Option<u32>,
}

intercept_rule!(FakeRule);

/// What the control saw: faults injected, rules installed and released.
#[derive(Clone, Default)]
struct FakeControl(Arc<Mutex<Vec<String>>>);

impl FakeControl {
    fn seen(&self) -> Vec<String> {
        self.0.lock().expect("lock").clone()
    }
    fn push(&self, what: String) {
        self.0.lock().expect("lock").push(what);
    }
}

impl ScriptControl for FakeControl {
    type RuleId = usize;
    fn inject(&self, fault: &Fault) {
        self.push(format!("inject {fault:?}"));
    }
    fn heal_partitions(&self) {
        self.push("heal".into());
    }
    fn node_up(&self, _node: &str) -> bool {
        true
    }
    fn counter(&self, name: &str) -> u64 {
        let kills = self.seen().iter().filter(|s| s.contains("Kill")).count();
        if name == "kills" { kills as u64 } else { 0 }
    }
    fn release(&self, rule: usize) {
        self.push(format!("release {rule}"));
    }
}

impl ScriptSystem for Fake {
    type Verb = FakeVerb;
    type Count = FakeCount;
    type Wait = FakeWait;
    type Rule = FakeRule;
    /// A point by name; `"never"` is reached by no node.
    type Point = String;
    /// A fault by name; `"broken"` cannot be armed.
    type PointFault = String;
    /// What ran: `<step> start|end|note`.
    type State = Vec<String>;
    type Control = FakeControl;
    type Client = usize;
    const FIELDS: &'static [&'static str] = &["label"];
    const VERBS: &'static [&'static str] = &["open", "work", "close", "note", "check"];
    const THREAD: ThreadWords = ThreadWords {
        field: "thread",
        noun: "thread",
        opened: "opened",
        closed: "its close",
    };

    /// Client `c` runs on node `n<c>`.
    fn client_node(client: usize) -> String {
        format!("n{client}")
    }
    fn validate_verb(_: &Script<Self>, verb: &FakeVerb, env: &Env<'_>) -> Result<(), String> {
        match verb {
            FakeVerb::Open { client, .. } => env.client(*client),
            _ => Ok(()),
        }
    }
    fn validate_wait(_: &Script<Self>, _: &FakeWait, _: &Env<'_>) -> Result<(), String> {
        Ok(())
    }
    fn validate_rule(_: &Script<Self>, _: &FakeRule, _: &Env<'_>) -> Result<(), String> {
        Ok(())
    }
    fn validate_point(point: &String, node: &str, env: &Env<'_>) -> Result<(), String> {
        match point.as_str() {
            "never" => Err(format!("{}: {node} never reaches {point}", env.at())),
            _ => Ok(()),
        }
    }
    fn arm_point(
        c: &FakeControl,
        point: &String,
        node: &str,
        fault: &String,
    ) -> Result<(), String> {
        match fault.as_str() {
            "broken" => Err("it broke".into()),
            _ => {
                c.push(format!("arm {point} {node} {fault}"));
                Ok(())
            }
        }
    }
    fn run_thread(mut thread: Thread<Self>, _client: usize) -> percsim_sim::BoxFuture<()> {
        Box::pin(async move {
            let script = thread.script().clone();
            while let Some(i) = thread.next().await {
                if let Some(FakeVerb::Work { ms, .. }) = script.steps[i].verb() {
                    record(&script, i, "start");
                    madsim::time::sleep(std::time::Duration::from_millis(*ms)).await;
                    record(&script, i, "end");
                }
            }
        })
    }
    fn driver_step<'a>(
        script: &'a Script<Self>,
        i: usize,
        _verb: &'a FakeVerb,
        _control: &'a FakeControl,
    ) -> StepFuture<'a> {
        record(script, i, "note");
        Box::pin(std::future::ready(()))
    }
    fn assert(
        script: &Script<Self>,
        _: usize,
        verb: &FakeVerb,
        _: &FakeControl,
    ) -> Option<Mismatch> {
        let FakeVerb::Check { records } = verb else {
            return None;
        };
        let n = script.with_state(|s| s.len());
        (n != *records).then(|| Mismatch::new(format!("{records} records"), n.to_string()))
    }
    fn holds(script: &Script<Self>, wait: &FakeWait, _: &FakeControl) -> bool {
        let FakeWait::Records(n) = wait;
        script.with_state(|s| s.len() >= *n)
    }
    fn install(
        _: &Script<Self>,
        rule: &FakeRule,
        words: RuleWords,
        control: &FakeControl,
    ) -> Result<usize, Mismatch> {
        let id = control.seen().len();
        control.push(format!("install {} {words:?} as {id}", rule.name));
        Ok(id)
    }
}

fn record(script: &Script<Fake>, i: usize, what: &'static str) {
    script.with_state(|records| records.push(format!("{i} {what}")));
}

/// Parse and validate a script of the fake system (2 clients, nodes n1, n2).
fn script(v: serde_json::Value) -> Result<Script<Fake>, String> {
    let s = Script::<Fake>::from_value(v)?;
    s.validate(2, &["n1".to_string(), "n2".to_string()])?;
    Ok(s)
}

/// What a run left: the records, the failures, what the control saw.
struct Ran {
    records: Vec<String>,
    failures: Vec<String>,
    seen: Vec<String>,
}

/// Run a script: a driver and one task per client, as the simulator would.
fn run(script: &Script<Fake>) -> Ran {
    let rt = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
    let script = script.fresh();
    let control = FakeControl::default();
    let (s, c) = (script.clone(), control.clone());
    let failures = rt.block_on(async move {
        let driver = madsim::task::spawn(s.start_driver(c));
        let clients: Vec<_> = (0..2)
            .map(|k| {
                let s = s.clone();
                madsim::task::spawn(async move { s.run_client(k, k).await })
            })
            .collect();
        let _ = driver.await;
        for c in clients {
            let _ = c.await;
        }
        s.final_failures()
    });
    Ran {
        records: script.with_state(std::mem::take),
        failures,
        seen: control.seen(),
    }
}

fn steps(list: serde_json::Value) -> serde_json::Value {
    json!({ "steps": list })
}

#[test]
fn steps_run_in_order_across_threads_and_the_driver() {
    let s = script(steps(json!([
        {"do": "open", "client": 0, "thread": "a"},
        {"do": "open", "client": 1, "thread": "b"},
        {"do": "work", "thread": "b", "ms": 5},
        {"do": "work", "thread": "a", "ms": 1},
        {"do": "note", "text": "x"},
        {"do": "work", "thread": "b", "ms": 2},
        {"do": "close", "thread": "a"},
        {"do": "close", "thread": "b"},
    ])))
    .expect("valid");
    let Ran {
        records, failures, ..
    } = run(&s);
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(
        records,
        [
            "2 start", "2 end", "3 start", "3 end", "4 note", "5 start", "5 end"
        ]
    );
}

#[test]
fn a_no_wait_step_lets_the_next_one_start() {
    let s = script(steps(json!([
        {"do": "open", "client": 0, "thread": "a"},
        {"do": "open", "client": 1, "thread": "b"},
        {"do": "work", "thread": "a", "ms": 50, "no_wait": true},
        {"do": "work", "thread": "b", "ms": 1},
        {"do": "close", "thread": "b"},
    ])))
    .expect("valid");
    let Ran {
        records, failures, ..
    } = run(&s);
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(records, ["2 start", "3 start", "3 end", "2 end"]);
    // Without no_wait, step 3 waits for step 2.
    let mut v = steps(json!([]));
    v["steps"] = serde_json::to_value(&*s.steps).expect("json");
    v["steps"][2]["no_wait"] = json!(false);
    let Ran { records, .. } = run(&script(v).expect("valid"));
    assert_eq!(records, ["2 start", "2 end", "3 start", "3 end"]);
}

#[test]
fn a_step_that_takes_too_long_stops_the_script() {
    let mut v = steps(json!([
        {"do": "open", "client": 0, "thread": "a"},
        {"do": "work", "thread": "a", "ms": 1000},
        {"do": "note", "text": "never"},
    ]));
    v["step_timeout_ms"] = json!(100);
    let Ran {
        records, failures, ..
    } = run(&script(v).expect("valid"));
    assert_eq!(
        failures,
        [
            r#"step 1 {"do":"work","thread":"a","ms":1000,"no_wait":false}: expected to finish within 100 ms; happened it did not finish"#
        ]
    );
    assert!(!records.contains(&"2 note".to_string()), "{records:?}");
}

#[test]
fn unknown_verbs_and_bad_fields_are_refused_by_step() {
    let e = script(steps(json!([
        {"do": "open", "client": 0, "thread": "a"},
        {"do": "jump", "thread": "a"},
    ])))
    .unwrap_err();
    assert_eq!(
        e,
        "workload.steps[1]: unknown verb \"jump\" (verbs: stop_at, kill, restart, pause, resume, partition, heal, intercept, release, sleep, wait, assert_count, open, work, close, note, check)"
    );
    let e = script(steps(
        json!([{"do": "open", "client": 0, "thread": "a", "x": 1}]),
    ))
    .unwrap_err();
    assert!(
        e.starts_with("workload.steps[0] (do \"open\"): unknown field `x`"),
        "{e}"
    );
    let e = script(steps(json!([{"do": "sleep"}]))).unwrap_err();
    assert_eq!(e, "workload.steps[0] (do \"sleep\"): missing field `ms`");
    let e = script(json!({"at_end": [{"thread": "a"}], "steps": []})).unwrap_err();
    assert!(
        e.starts_with("workload.at_end[0]: a step needs a \"do\" word"),
        "{e}"
    );
    let e = script(json!({"steps": [], "lable": "x"})).unwrap_err();
    assert_eq!(
        e,
        "unknown field `lable`, expected one of `label`, `steps`, `at_end`, `step_timeout_ms`"
    );
}

#[test]
fn a_failed_expectation_names_its_step() {
    let v = json!({
        "steps": [
            {"do": "open", "client": 0, "thread": "a"},
            {"do": "work", "thread": "a", "ms": 1},
            {"do": "check", "records": 3},
            {"do": "check", "records": 2},
        ],
        "at_end": [{"do": "check", "records": 5}],
    });
    let Ran { failures, .. } = run(&script(v).expect("valid"));
    assert_eq!(
        failures,
        [
            r#"step 2 {"do":"check","records":3}: expected 3 records; happened 2"#,
            r#"at_end 0 {"do":"check","records":5}: expected 5 records; happened 2"#,
        ]
    );
}

#[test]
fn counts_since_a_step_and_waits_are_checked() {
    let v = steps(json!([
        {"do": "kill", "node": "n1"},
        {"do": "kill", "node": "n2"},
        {"do": "assert_count", "count": "kills", "equals": 1, "since_step": 1},
        {"do": "assert_count", "count": "kills", "equals": 1},
        {"do": "wait", "until": {"records": 1}, "timeout_ms": 20},
        {"do": "wait", "until": {"node_up": "n1"}, "timeout_ms": 20},
    ]));
    let Ran { failures, seen, .. } = run(&script(v).expect("valid"));
    assert_eq!(
        failures,
        [
            r#"step 3 {"do":"assert_count","count":"kills","equals":1}: expected 1 "kills"; happened 2 "kills""#,
            r#"step 4 {"do":"wait","until":{"records":1},"timeout_ms":20}: expected {"records":1} within 20 ms; happened it did not hold"#,
        ]
    );
    assert_eq!(seen.len(), 2, "{seen:?}");
}

#[test]
fn rules_are_installed_released_and_lifted_at_the_end() {
    let v = steps(json!([
        {"do": "intercept", "name": "r", "leg": "request", "fate": "hold", "times": 2},
        {"do": "intercept", "name": "s", "leg": "reply", "fate": {"delay": {"ms": 5}}},
        {"do": "release", "name": "r"},
        {"do": "pause", "client": 1},
        {"do": "stop_at", "point": "p", "node": "n2", "fault": "crash"},
        {"do": "stop_at", "point": "p", "node": "n2", "fault": "broken"},
    ]));
    let Ran { failures, seen, .. } = run(&script(v).expect("valid"));
    assert_eq!(
        failures,
        [
            r#"step 5 {"do":"stop_at","point":"p","node":"n2","fault":"broken"}: expected {"do":"stop_at","point":"p","node":"n2","fault":"broken"}; happened it broke"#
        ]
    );
    assert_eq!(
        seen,
        [
            "install r RuleWords { leg: Request, fate: Hold, times: Some(2) } as 0",
            "install s RuleWords { leg: Reply, fate: Delay { delay_ms: 5 }, times: None } as 1",
            "release 0",
            "inject Pause { node: \"n1\", duration_ms: 3600000 }",
            "arm p n2 crash",
            "release 1",
        ]
    );
}

#[test]
fn generic_mistakes_are_refused_with_their_place() {
    let refused = |list: serde_json::Value, needle: &str| {
        let e = script(steps(list)).unwrap_err();
        assert!(e.contains(needle), "{needle:?} not in {e}");
    };
    refused(
        json!([{"do": "work", "thread": "a", "ms": 1}]),
        "workload.steps[0] (do \"work\"): thread: thread \"a\" is used before it is opened",
    );
    refused(
        json!([{"do": "open", "client": 0, "thread": "a"}, {"do": "open", "client": 1, "thread": "a"}]),
        "workload.steps[1] (do \"open\"): thread: thread \"a\" is opened twice",
    );
    refused(
        json!([{"do": "open", "client": 0, "thread": "a"}, {"do": "close", "thread": "a"}, {"do": "close", "thread": "a"}]),
        "workload.steps[2] (do \"close\"): thread: thread \"a\" is used after its close",
    );
    refused(
        json!([{"do": "open", "client": 2, "thread": "a"}]),
        "workload.steps[0] (do \"open\"): client: client 2 does not exist (2 clients)",
    );
    refused(
        json!([{"do": "kill", "node": "n3"}]),
        "workload.steps[0] (do \"kill\"): no node named \"n3\" (nodes: n1, n2)",
    );
    refused(
        json!([{"do": "stop_at", "point": "p", "node": "n3", "fault": "crash"}]),
        "workload.steps[0] (do \"stop_at\"): no node named \"n3\"",
    );
    refused(
        json!([{"do": "stop_at", "point": "never", "node": "n1", "fault": "crash"}]),
        "workload.steps[0] (do \"stop_at\"): n1 never reaches never",
    );
    refused(
        json!([{"do": "release", "name": "r"}]),
        "no intercept step before this one installs a rule named \"r\"",
    );
    refused(
        json!([{"do": "intercept", "name": "r", "leg": "request", "fate": "drop"}, {"do": "intercept", "name": "r", "leg": "request", "fate": "drop"}]),
        "workload.steps[1] (do \"intercept\"): name: a message rule named \"r\" is installed twice",
    );
    refused(
        json!([{"do": "intercept", "name": "r", "leg": "reply", "fate": {"duplicate": {"after_ms": 1}}}]),
        "workload.steps[0] (do \"intercept\"): fate: only requests can be duplicated",
    );
    refused(
        json!([{"do": "intercept", "name": "r", "leg": "request", "fate": "drop", "times": 0}]),
        "workload.steps[0] (do \"intercept\"): times: must be at least 1",
    );
    refused(
        json!([{"do": "assert_count", "count": "kills", "equals": 0, "since_step": 0}]),
        "workload.steps[0] (do \"assert_count\"): since_step: step 0 does not come before this step",
    );
    let e = script(json!({"steps": [], "at_end": [{"do": "heal"}]})).unwrap_err();
    assert!(
        e.contains("workload.at_end[0] (do \"heal\"): only assert_* steps"),
        "{e}"
    );
}

#[test]
fn a_script_writes_back_what_it_read() {
    let v = json!({
        "label": "x",
        "steps": [{"do": "heal"}, {"do": "wait", "until": {"node_up": "n1"}}],
        "at_end": [{"do": "check", "records": 0}],
        "step_timeout_ms": 5,
    });
    let s = script(v.clone()).expect("valid");
    let mut want = v;
    want["steps"][1]["timeout_ms"] = json!(DEFAULT_WAIT_TIMEOUT_MS);
    assert_eq!(serde_json::to_value(&s).expect("json"), want);
}

#[test]
fn a_point_or_rule_naming_a_transaction_not_begun_is_refused() {
    let begun = |name: &str| (name == "T1").then_some(7u64);
    assert_eq!(begun_for_point(None, begun), Ok(None));
    assert_eq!(begun_for_point(Some("T1"), begun), Ok(Some(7)));
    assert_eq!(
        begun_for_point(Some("T2"), begun),
        Err("transaction \"T2\" is not begun yet".to_string())
    );
    assert_eq!(begun_for_rule(Some("T1"), begun), Ok(Some(7)));
    assert_eq!(
        begun_for_rule(Some("T2"), begun),
        Err(Mismatch::new(
            "transaction \"T2\" begun before the rule",
            "it is not begun yet"
        ))
    );
}

#[test]
fn a_script_needs_one_client_more_than_the_highest_it_opens_a_thread_on() {
    let none = script(steps(json!([{"do": "note", "text": "x"}]))).expect("valid");
    assert_eq!(clients_needed(&none), 1);
    let two = script(steps(json!([
        {"do": "open", "client": 1, "thread": "b"},
        {"do": "open", "client": 0, "thread": "a"},
        {"do": "close", "thread": "a"},
        {"do": "close", "thread": "b"},
    ])))
    .expect("valid");
    assert_eq!(clients_needed(&two), 2);
}

#[test]
fn the_intercept_rule_macro_reads_the_rule_s_own_fields() {
    let rule = FakeRule {
        name: "r".into(),
        leg: MsgLeg::Reply,
        fate: MsgFate::Drop,
        times: Some(2),
    };
    assert_eq!(
        (rule.name(), rule.leg(), rule.fate(), rule.times()),
        ("r", MsgLeg::Reply, MsgFate::Drop, Some(2))
    );
}
