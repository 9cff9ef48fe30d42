//! The toy's verbs for the script engine (`percsim_scenarios::script`): a
//! client writes or reads the register as one named operation, the
//! register's durable versions can be asserted, an intercept rule names a
//! call (`write`, `read`) and optionally the client that sends it, and
//! `stop_at` kills the primary at one of its named points. Everything else
//! (ordering, `no_wait`, waits on nodes, kills, partitions, counters,
//! step-named failures) is the engine's.
//!
//! ```json
//! {"name": "script", "steps": [
//!   {"do": "intercept", "name": "slow", "call": "write", "leg": "reply", "fate": "hold"},
//!   {"do": "write", "op": "w1", "client": 0, "value": "a", "no_wait": true},
//!   {"do": "stop_at", "point": "after_durable", "node": "primary", "fault": {"kill": {}}},
//!   {"do": "release", "name": "slow"},
//!   {"do": "read", "op": "r1", "client": 1, "expect": "a"}
//! ]}
//! ```

use super::protocol::ToyPoint;
use super::world::{Client, ToyControl, ToyCounter, client_name};
use percsim_scenarios::script::{
    Countable, Env, Mismatch, MsgFate, MsgLeg, RuleWords, Script, ScriptControl, ScriptSystem,
    StepFuture, SystemVerb, Thread, ThreadWords, judge_eq,
};
use percsim_sim::world::intercept::{Rule, RuleId};
use percsim_sim::{BoxFuture, Fault, FaultKind};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A toy script: the engine's script with the toy's verbs.
pub type ToyScriptFile = Script<ToyScript>;

/// The toy's fields of a script file: none (the register starts empty).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToyScript {}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Deserialize a present field (even `null`) as `Some`, so a missing
/// expectation and an expected empty register differ.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// The toy's verbs. A `write` or `read` is one operation of its own,
/// named by `op` (the engine's thread): it runs on its client's node, so
/// the client's crash ends it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToyVerb {
    /// Client `client` writes `value` (unique in the script) until the
    /// primary answers its version.
    Write {
        /// The operation's name.
        op: String,
        /// The client that writes.
        client: usize,
        /// The value.
        value: String,
        /// The version the primary must answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect_version: Option<u64>,
        /// Go on with the next step without waiting for this one.
        #[serde(default, skip_serializing_if = "is_false")]
        no_wait: bool,
    },
    /// Client `client` reads the register; `expect` (a string, or null for
    /// a register never written) is checked.
    Read {
        /// The operation's name.
        op: String,
        /// The client that reads.
        client: usize,
        /// The value the read must return (null: none).
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        expect: Option<Option<String>>,
        /// Go on with the next step without waiting for this one.
        #[serde(default, skip_serializing_if = "is_false")]
        no_wait: bool,
    },
    /// Check the register's durable versions now, oldest first.
    AssertRegister {
        /// The values stored.
        versions: Vec<String>,
    },
}

/// The do-words of [`ToyVerb`].
pub const VERBS: &[&str] = &["write", "read", "assert_register"];

impl SystemVerb for ToyVerb {
    fn thread(&self) -> Option<&str> {
        match self {
            ToyVerb::Write { op, .. } | ToyVerb::Read { op, .. } => Some(op),
            ToyVerb::AssertRegister { .. } => None,
        }
    }

    fn opens(&self) -> Option<usize> {
        match self {
            ToyVerb::Write { client, .. } | ToyVerb::Read { client, .. } => Some(*client),
            ToyVerb::AssertRegister { .. } => None,
        }
    }

    fn closes(&self) -> bool {
        self.thread().is_some()
    }

    fn no_wait(&self) -> bool {
        match self {
            ToyVerb::Write { no_wait, .. } | ToyVerb::Read { no_wait, .. } => *no_wait,
            ToyVerb::AssertRegister { .. } => false,
        }
    }

    fn is_assertion(&self) -> bool {
        matches!(self, ToyVerb::AssertRegister { .. })
    }
}

percsim_sim::identities! {
    /// What a toy script's `assert_count` counts.
    pub enum ToyCount {
        /// A write already stored came again.
        WriteRepeated => ("write_repeated", "a write already stored came again"),
        /// A client's call was sent again.
        CallRetried => ("call_retried", "a client's call went unanswered and was sent again"),
        /// The primary was killed at a named point.
        CrashAtPoint => ("crash_at_point", "the primary was killed at a named point"),
    }
}

impl Serialize for ToyCount {
    fn serialize<Z: serde::Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for ToyCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        ToyCount::from_name(&name).ok_or_else(|| {
            let known: Vec<&str> = ToyCount::ALL.iter().map(|c| c.name()).collect();
            serde::de::Error::custom(format!(
                "unknown count {name:?} (known: {})",
                known.join(", ")
            ))
        })
    }
}

impl Countable for ToyCount {
    fn counter(self) -> String {
        match self {
            ToyCount::WriteRepeated => ToyCounter::WriteRepeated.name().into(),
            ToyCount::CallRetried => ToyCounter::CallRetried.name().into(),
            ToyCount::CrashAtPoint => FaultKind::CrashAtStep.counter(),
        }
    }
}

/// The toy's conditions of a `wait` step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ToyWait {
    /// The named operation was answered.
    OpFinished(String),
}

/// The calls a rule can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToyCall {
    /// A write of the register.
    Write,
    /// A read of the register.
    Read,
}

impl ToyCall {
    /// The call's tag on the wire.
    pub fn tag(self) -> &'static str {
        match self {
            ToyCall::Write => "write",
            ToyCall::Read => "read",
        }
    }
}

fn request() -> MsgLeg {
    MsgLeg::Request
}

/// An `intercept` step of a toy script: messages of one call, from one
/// client or any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToyRule {
    /// The rule's name, for its `release` step.
    pub name: String,
    /// The call it matches.
    pub call: ToyCall,
    /// The client whose messages it matches (else every client's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<usize>,
    /// Request (the default) or reply.
    #[serde(default = "request")]
    pub leg: MsgLeg,
    /// What happens to a matched message.
    pub fate: MsgFate,
    /// How many messages it acts on at most (else every one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
}

percsim_scenarios::intercept_rule!(ToyRule);

/// What `stop_at` does to the primary at its point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ToyPointFault {
    /// Kill it; restart it this long after (else at the healed phase).
    Kill {
        /// The restart delay, in simulated ms.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        restart_after_ms: Option<u64>,
    },
}

/// What a finished operation saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The version written or read (0: never written).
    pub version: u64,
    /// The value read (a write's own value).
    pub value: Option<String>,
}

/// A toy script's run state: the operations answered, by name.
pub type ToyState = BTreeMap<String, Answer>;

impl ScriptControl for ToyControl {
    type RuleId = RuleId;
    fn inject(&self, fault: &Fault) {
        self.faults().inject(fault);
    }
    fn heal_partitions(&self) {
        self.faults().heal_partitions();
    }
    fn node_up(&self, node: &str) -> bool {
        self.faults().node_up(node)
    }
    fn counter(&self, name: &str) -> u64 {
        self.faults().counter(name)
    }
    fn release(&self, rule: RuleId) {
        ToyControl::release(self, rule);
    }
}

impl ScriptSystem for ToyScript {
    type Verb = ToyVerb;
    type Count = ToyCount;
    type Wait = ToyWait;
    type Rule = ToyRule;
    type Point = ToyPoint;
    type PointFault = ToyPointFault;
    type State = ToyState;
    type Control = ToyControl;
    type Client = Arc<Client>;
    const FIELDS: &'static [&'static str] = &[];
    const VERBS: &'static [&'static str] = VERBS;
    const THREAD: ThreadWords = ThreadWords {
        field: "op",
        noun: "operation",
        opened: "issued",
        closed: "its end",
    };

    fn client_node(client: usize) -> String {
        client_name(client).to_string()
    }

    fn validate_verb(script: &ToyScriptFile, verb: &ToyVerb, env: &Env<'_>) -> Result<(), String> {
        match verb {
            ToyVerb::Write { client, value, .. } => {
                env.client(*client)?;
                unique_value(script, value, env)
            }
            ToyVerb::Read { client, .. } => env.client(*client),
            ToyVerb::AssertRegister { .. } => Ok(()),
        }
    }

    fn validate_wait(_: &ToyScriptFile, wait: &ToyWait, env: &Env<'_>) -> Result<(), String> {
        let ToyWait::OpFinished(op) = wait;
        env.thread(op)
    }

    fn validate_point(point: &ToyPoint, node: &str, env: &Env<'_>) -> Result<(), String> {
        match node == super::world::PRIMARY {
            true => Ok(()),
            false => Err(format!(
                "{}: node {node:?} never reaches point {} (only the primary does)",
                env.at(),
                point.name()
            )),
        }
    }

    fn validate_rule(_: &ToyScriptFile, rule: &ToyRule, env: &Env<'_>) -> Result<(), String> {
        match rule.client {
            Some(c) => env.client(c),
            None => Ok(()),
        }
    }

    fn run_thread(thread: Thread<Self>, client: Arc<Client>) -> BoxFuture<()> {
        Box::pin(run_op(thread, client))
    }

    fn arm_point(
        control: &ToyControl,
        point: &ToyPoint,
        _node: &str,
        fault: &ToyPointFault,
    ) -> Result<(), String> {
        let ToyPointFault::Kill { restart_after_ms } = fault;
        control.arm(*point, *restart_after_ms)
    }

    fn stops_left(control: &ToyControl) -> Option<Vec<String>> {
        Some(control.armed_left())
    }

    fn driver_step<'a>(
        _: &'a ToyScriptFile,
        _: usize,
        _: &'a ToyVerb,
        _: &'a ToyControl,
    ) -> StepFuture<'a> {
        // The toy's only driver verb is an assertion, which the engine
        // checks through `assert`.
        Box::pin(std::future::ready(()))
    }

    fn assert(
        _: &ToyScriptFile,
        _: usize,
        verb: &ToyVerb,
        control: &ToyControl,
    ) -> Option<Mismatch> {
        let ToyVerb::AssertRegister { versions } = verb else {
            return None;
        };
        let stored = control.versions();
        (stored != *versions).then(|| {
            Mismatch::new(
                format!("the register to hold {versions:?}"),
                format!("it holds {stored:?}"),
            )
        })
    }

    fn holds(script: &ToyScriptFile, wait: &ToyWait, _: &ToyControl) -> bool {
        let ToyWait::OpFinished(op) = wait;
        script.with_state(|s| s.contains_key(op))
    }

    fn install(
        _: &ToyScriptFile,
        rule: &ToyRule,
        words: RuleWords,
        control: &ToyControl,
    ) -> Result<RuleId, Mismatch> {
        Ok(control.intercept(Rule {
            call: rule.call.tag(),
            txn: None,
            items: None,
            from: rule.client.map(|c| client_name(c).to_string()),
            leg: words.leg,
            fate: words.fate,
            times: words.times,
        }))
    }
}

/// A write's value is written by no earlier step: the primary finds a
/// retried write by its value, so two writes of one value would be one.
fn unique_value(script: &ToyScriptFile, value: &str, env: &Env<'_>) -> Result<(), String> {
    let earlier = script.steps[..env.index()]
        .iter()
        .position(|s| matches!(s.verb(), Some(ToyVerb::Write { value: v, .. }) if v == value));
    match earlier {
        Some(k) => Err(format!(
            "{}.value: {value:?} is written by step {k} already (a write's value must be unique: the primary finds a retried write by its value)",
            env.at()
        )),
        None => Ok(()),
    }
}

/// A register's value as a script writes it: the string, or `null`.
fn shown(value: &Option<String>) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Run one operation (its single step) on its client and judge what it saw.
async fn run_op(mut thread: Thread<ToyScript>, client: Arc<Client>) {
    let script = thread.script().clone();
    while let Some(i) = thread.next().await {
        let Some(verb) = script.steps[i].verb().cloned() else {
            continue;
        };
        let (op, answer) = match verb {
            ToyVerb::Write {
                op,
                value,
                expect_version,
                ..
            } => {
                let version = client.write_value(value.clone()).await;
                let show = |v: &u64| format!("version {v}");
                script.fail_on(i, judge_eq(expect_version, &version, show));
                let value = Some(value);
                (op, Answer { version, value })
            }
            ToyVerb::Read { op, expect, .. } => {
                let reply = client.read().await;
                script.fail_on(i, judge_eq(expect, &reply.value, shown));
                let (version, value) = (reply.version, reply.value);
                (op, Answer { version, value })
            }
            ToyVerb::AssertRegister { .. } => continue,
        };
        script.with_state(|s| s.insert(op, answer));
    }
}
