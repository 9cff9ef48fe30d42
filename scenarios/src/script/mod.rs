//! The script engine: a user-written interleaving of steps with
//! expectations, for any system.
//!
//! A script is a global sequence of steps. Step `i` starts only after step
//! `i - 1` finished (or was issued, for a `no_wait` step). A step runs
//! either on a client node, in the task of its *thread* (the system's unit
//! of sequential work: a Percolator transaction, a Pulsar actor), so the
//! client's crash ends it; or on the driver (node actions, waits,
//! assertions). A failed expectation fails the run with the step, what was
//! expected and what happened (`step 3 {...}: expected X; happened Y`).
//!
//! The engine owns what is the same for every system: the file's shape
//! (`steps`, `at_end`, `step_timeout_ms`, beside the system's own fields),
//! the verbs of the world (`stop_at`, `sleep`, `wait`, `kill`, `restart`, `pause`,
//! `resume`, `partition`, `heal`, `intercept`, `release`, `assert_count`),
//! the step cursor, `no_wait`, step timeouts, the `since_step` counter
//! marks, intercept and release bookkeeping, the generic validation, and
//! the expectation plumbing every system's verbs share (how a transaction
//! ended, [`Outcome`]; judging what a step got, [`judge`]). A
//! system implements [`ScriptSystem`]: its verbs, how they run and how
//! their outcomes are judged, its wait conditions, its store assertions,
//! and how its intercept rules name their targets.

mod expect;
mod parse;
mod run;
mod validate;

/// The macro implementing [`InterceptRule`], beside the trait.
pub use crate::intercept_rule;
pub use expect::{Outcome, judge, judge_eq};

#[cfg(test)]
mod tests;

use percsim_sim::{Fate, Fault, Leg};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

/// A future a system's step returns; it may borrow the script.
pub type StepFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// The script's own fields of a script file (beside the system's).
pub const FIELDS: &[&str] = &["steps", "at_end", "step_timeout_ms"];

/// The verbs the engine runs itself, for every system.
pub const VERBS: &[&str] = &[
    "stop_at",
    "kill",
    "restart",
    "pause",
    "resume",
    "partition",
    "heal",
    "intercept",
    "release",
    "sleep",
    "wait",
    "assert_count",
];

/// How long a `wait` step waits by default (simulated ms).
pub const DEFAULT_WAIT_TIMEOUT_MS: u64 = 10_000;

/// How long a step may take by default before the script gives up.
pub const DEFAULT_STEP_TIMEOUT_MS: u64 = 30_000;

/// A system that can be scripted: the system's part of a script file (its
/// own fields, such as Percolator's `initial` and `observers`, flattened
/// beside `steps`) and what it contributes to the engine.
///
/// Every method taking the [`Script`] may read its steps and the system's
/// run state ([`Script::with_state`]) and record failures
/// ([`Script::fail`]).
pub trait ScriptSystem:
    Serialize + DeserializeOwned + Clone + Default + Debug + PartialEq + Send + Sync + 'static
{
    /// The system's verbs: a `#[serde(tag = "do")]` enum.
    type Verb: SystemVerb;
    /// What `assert_count` may count.
    type Count: Countable;
    /// The system's own conditions of a `wait` step (beside `node_up`).
    type Wait: Serialize + DeserializeOwned + Clone + Debug + PartialEq + Send + Sync + 'static;
    /// An `intercept` step's rule: its name, leg, fate and times (the
    /// engine's words) and its targets (the system's).
    type Rule: InterceptRule;
    /// A named point a node reaches, where `stop_at` stops it.
    type Point: Serialize + DeserializeOwned + Clone + Debug + PartialEq + Send + Sync + 'static;
    /// What `stop_at` does to a node at its point (kill, freeze).
    type PointFault: Serialize
        + DeserializeOwned
        + Clone
        + Debug
        + PartialEq
        + Send
        + Sync
        + 'static;
    /// The system's state of one run (names learnt, threads finished).
    type State: Default + Send + 'static;
    /// The driver's view of the world while the script runs.
    type Control: ScriptControl;
    /// A client node's handle, given to the threads it runs.
    type Client: Clone + Send + Sync + 'static;
    /// The system's fields of a script file (`initial`, `observers`).
    const FIELDS: &'static [&'static str];
    /// Every `"do"` word of [`ScriptSystem::Verb`].
    const VERBS: &'static [&'static str];
    /// How errors name a thread of steps.
    const THREAD: ThreadWords;

    /// Check the system's fields (not the steps).
    fn validate_setup(&self) -> Result<(), String> {
        Ok(())
    }
    /// The node that runs client `client`'s threads, as the world names
    /// it: what a `pause` or `resume` step naming the client freezes or
    /// thaws.
    fn client_node(client: usize) -> String;
    /// Check one of the system's steps; `env.at()` names it.
    fn validate_verb(script: &Script<Self>, verb: &Self::Verb, env: &Env<'_>)
    -> Result<(), String>;
    /// Check one of the system's wait conditions.
    fn validate_wait(script: &Script<Self>, wait: &Self::Wait, env: &Env<'_>)
    -> Result<(), String>;
    /// Check that `node` (an existing node) reaches `point`.
    fn validate_point(point: &Self::Point, node: &str, env: &Env<'_>) -> Result<(), String>;
    /// Check a rule's targets (the engine checked its times, leg and fate).
    fn validate_rule(script: &Script<Self>, rule: &Self::Rule, env: &Env<'_>)
    -> Result<(), String>;
    /// Run one thread of steps on its client: take each step from
    /// [`Thread::next`] (which waits for its turn) and run it.
    fn run_thread(thread: Thread<Self>, client: Self::Client) -> percsim_sim::BoxFuture<()>;
    /// Stop `node` with `fault` the next time it reaches `point`; an
    /// error says why it cannot be armed.
    fn arm_point(
        control: &Self::Control,
        point: &Self::Point,
        node: &str,
        fault: &Self::PointFault,
    ) -> Result<(), String>;
    /// Run one of the system's driver steps (one whose thread is `None`)
    /// that is not an assertion.
    fn driver_step<'a>(
        script: &'a Script<Self>,
        i: usize,
        verb: &'a Self::Verb,
        control: &'a Self::Control,
    ) -> StepFuture<'a>;
    /// Check one of the system's assertions now.
    fn assert(
        script: &Script<Self>,
        i: usize,
        verb: &Self::Verb,
        control: &Self::Control,
    ) -> Option<Mismatch>;
    /// Whether one of the system's wait conditions holds now.
    fn holds(script: &Script<Self>, wait: &Self::Wait, control: &Self::Control) -> bool;
    /// Install an intercept rule: resolve its targets in the system's
    /// words and hand the world the rule with `words` (its leg, fate and
    /// times). A mismatch when a target cannot be resolved yet.
    fn install(
        script: &Script<Self>,
        rule: &Self::Rule,
        words: RuleWords,
        control: &Self::Control,
    ) -> Result<<Self::Control as ScriptControl>::RuleId, Mismatch>;
    /// After the run: the nodes of the stops that `stop_at` steps armed
    /// and that never happened (one entry per stop still armed); the
    /// engine fails those steps. `None` (the default): the system cannot
    /// tell.
    fn stops_left(_control: &Self::Control) -> Option<Vec<String>> {
        None
    }
    /// After the run (healed phase and sweep), before `at_end`: check what
    /// step `i` expects of the end of the run. None by default.
    fn after_run(
        _script: &Script<Self>,
        _i: usize,
        _verb: &Self::Verb,
        _control: &Self::Control,
    ) -> Option<Mismatch> {
        None
    }
}

/// A system's verb: where it runs and how the engine orders it.
pub trait SystemVerb:
    Serialize + DeserializeOwned + Clone + Debug + PartialEq + Send + Sync + 'static
{
    /// The thread whose task runs it on its client; `None`: the driver.
    fn thread(&self) -> Option<&str>;
    /// The client on which it opens its thread (its first step).
    fn opens(&self) -> Option<usize> {
        None
    }
    /// Whether it ends its thread (no step of the thread may follow).
    fn closes(&self) -> bool {
        false
    }
    /// Whether the next step may start as soon as this one is issued.
    fn no_wait(&self) -> bool {
        false
    }
    /// Whether it is an assertion (runs on the driver, allowed in `at_end`).
    fn is_assertion(&self) -> bool {
        false
    }
}

/// Something `assert_count` counts: it names one of the run's counters.
pub trait Countable:
    Copy + Ord + Serialize + DeserializeOwned + Debug + Send + Sync + 'static
{
    /// The run counter it reads.
    fn counter(self) -> String;
}

/// An `intercept` step's rule: the engine's words of it.
pub trait InterceptRule:
    Serialize + DeserializeOwned + Clone + Debug + PartialEq + Send + Sync + 'static
{
    /// The rule's name, for its `release` step.
    fn name(&self) -> &str;
    /// Request or reply.
    fn leg(&self) -> MsgLeg;
    /// What happens to a matched message.
    fn fate(&self) -> MsgFate;
    /// How many messages it acts on at most (`None`: every one).
    fn times(&self) -> Option<u32>;
}

/// Implement [`InterceptRule`] for a rule struct whose fields `name`
/// (`String`), `leg`, `fate` and `times` hold the engine's words of it.
#[macro_export]
macro_rules! intercept_rule {
    ($rule:ty) => {
        impl $crate::script::InterceptRule for $rule {
            fn name(&self) -> &str {
                &self.name
            }
            fn leg(&self) -> $crate::script::MsgLeg {
                self.leg
            }
            fn fate(&self) -> $crate::script::MsgFate {
                self.fate
            }
            fn times(&self) -> Option<u32> {
                self.times
            }
        }
    };
}

/// The transaction a `stop_at` point names (`None`: it names none), as
/// `begun` finds it by name; an error if it is not begun yet.
pub fn begun_for_point<T>(
    name: Option<&str>,
    begun: impl FnOnce(&str) -> Option<T>,
) -> Result<Option<T>, String> {
    name.map(|n| begun(n).ok_or_else(|| format!("transaction {n:?} is not begun yet")))
        .transpose()
}

/// The transaction an intercept rule names (`None`: it names none), as
/// `begun` finds it by name; a mismatch if it is not begun yet.
pub fn begun_for_rule<T>(
    name: Option<&str>,
    begun: impl FnOnce(&str) -> Option<T>,
) -> Result<Option<T>, Mismatch> {
    name.map(|n| {
        begun(n).ok_or_else(|| {
            Mismatch::new(
                format!("transaction {n:?} begun before the rule"),
                "it is not begun yet",
            )
        })
    })
    .transpose()
}

/// How many clients a script needs: one more than the highest client a
/// step opens a thread on (1 if no step opens one).
pub fn clients_needed<S: ScriptSystem>(script: &Script<S>) -> usize {
    script
        .steps
        .iter()
        .filter_map(Step::verb)
        .filter_map(|v| v.opens().map(|c| c + 1))
        .max()
        .unwrap_or(1)
}

/// The world a scenario built from a script alone runs in: the default
/// world with a 60 s workload phase.
pub fn script_world() -> percsim_sim::WorldConfig {
    percsim_sim::WorldConfig {
        run_ms: 60_000,
        ..percsim_sim::WorldConfig::default()
    }
}

/// What the driver may do to the world and read of it.
pub trait ScriptControl: Send + Sync + 'static {
    /// The handle of an installed intercept rule.
    type RuleId: Clone + Send + Sync + 'static;
    /// Apply `fault` now.
    fn inject(&self, fault: &Fault);
    /// Heal every partition in force now.
    fn heal_partitions(&self);
    /// Whether `node` is neither killed nor paused.
    fn node_up(&self, node: &str) -> bool;
    /// The run's counter `name` (0 if never bumped).
    fn counter(&self, name: &str) -> u64;
    /// Lift an intercept rule and deliver what it holds.
    fn release(&self, rule: Self::RuleId);
}

/// How errors name a system's thread of steps, such as
/// `workload.steps[3].txn: transaction "T1" is used after its commit or abort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadWords {
    /// The field of a step naming its thread (`txn`).
    pub field: &'static str,
    /// What a thread is (`transaction`).
    pub noun: &'static str,
    /// What opening one is (`begun`).
    pub opened: &'static str,
    /// What closing one is (`its commit or abort`).
    pub closed: &'static str,
}

impl ThreadWords {
    /// A transaction's words (`txn`, begun, its commit or abort), for the
    /// systems whose steps run transactions.
    pub const TRANSACTION: ThreadWords = ThreadWords {
        field: "txn",
        noun: "transaction",
        opened: "begun",
        closed: "its commit or abort",
    };
}

/// An expectation not met: what was expected, what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// What the step expected.
    pub expected: String,
    /// What happened instead.
    pub happened: String,
}

impl Mismatch {
    /// A mismatch.
    pub fn new(expected: impl Into<String>, happened: impl Into<String>) -> Self {
        Mismatch {
            expected: expected.into(),
            happened: happened.into(),
        }
    }
}

/// The engine's words of a rule, as the world takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleWords {
    /// Request or reply.
    pub leg: Leg,
    /// What happens to a matched message.
    pub fate: Fate,
    /// How many messages it acts on at most (`None`: every one).
    pub times: Option<u32>,
}

/// Request or reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MsgLeg {
    /// The request, on its way to the server.
    Request,
    /// The reply, on its way back.
    Reply,
}

/// What happens to a matched message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum MsgFate {
    /// Lost: a lost request never takes effect; a lost reply after it did.
    Drop,
    /// Held until the rule's `release` step (or the healed phase): a held
    /// request is delivered then, even if its sender gave up long before.
    Hold,
    /// Delivered late.
    Delay {
        /// By this many simulated ms.
        ms: u64,
    },
    /// Delivered, and a copy this many ms later (requests only).
    Duplicate {
        /// When the copy arrives, after the original.
        after_ms: u64,
    },
}

/// The words of a rule as the world takes them.
fn rule_words<R: InterceptRule>(rule: &R) -> RuleWords {
    let leg = match rule.leg() {
        MsgLeg::Request => Leg::Request,
        MsgLeg::Reply => Leg::Reply,
    };
    let fate = match rule.fate() {
        MsgFate::Drop => Fate::Drop,
        MsgFate::Hold => Fate::Hold,
        MsgFate::Delay { ms } => Fate::Delay { delay_ms: ms },
        MsgFate::Duplicate { after_ms } => Fate::Duplicate { after_ms },
    };
    RuleWords {
        leg,
        fate,
        times: rule.times(),
    }
}

/// An assertion on how often something happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountAssert<C> {
    /// What is counted.
    pub count: C,
    /// How many there must be.
    pub equals: u64,
    /// Count only from the start of this step on (else from the run's start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_step: Option<usize>,
}

/// A condition a `wait` step waits for: the world's or the system's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Until<W> {
    /// The node is neither killed nor paused.
    NodeUp(String),
    /// One of the system's conditions.
    System(W),
}

impl<W> From<W> for Until<W> {
    fn from(w: W) -> Self {
        Until::System(w)
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn default_wait_timeout_ms() -> u64 {
    DEFAULT_WAIT_TIMEOUT_MS
}

/// One step of a script: one of the engine's verbs or one of the system's.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "do", rename_all = "snake_case", bound = "")]
pub enum Step<S: ScriptSystem> {
    /// Kill or freeze `node` the next time it reaches the named `point`
    /// (whatever it is doing there).
    StopAt {
        /// The point.
        point: S::Point,
        /// The node.
        node: String,
        /// What happens there.
        fault: S::PointFault,
    },
    /// Kill a node.
    Kill {
        /// The node.
        node: String,
    },
    /// Restart a killed node.
    Restart {
        /// The node.
        node: String,
    },
    /// Freeze a client's node.
    Pause {
        /// The client.
        client: usize,
    },
    /// Unfreeze a client's node.
    Resume {
        /// The client.
        client: usize,
    },
    /// Cut the links between two groups of nodes until a `heal` step (or
    /// the healed phase).
    Partition {
        /// One side.
        a: Vec<String>,
        /// The other side.
        b: Vec<String>,
        /// Only messages from `a` to `b` are lost.
        #[serde(default, skip_serializing_if = "is_false")]
        one_way: bool,
    },
    /// Heal every partition in force.
    Heal,
    /// Install a named targeted message fault (until its `release` step
    /// or the healed phase).
    Intercept(S::Rule),
    /// Lift the named message fault and deliver every message it holds.
    Release {
        /// The rule's name.
        name: String,
    },
    /// Wait this long.
    Sleep {
        /// Simulated milliseconds.
        ms: u64,
    },
    /// Wait until a condition holds; fails after `timeout_ms`.
    Wait {
        /// The condition.
        until: Until<S::Wait>,
        /// How long to wait at most (simulated ms).
        #[serde(default = "default_wait_timeout_ms")]
        timeout_ms: u64,
    },
    /// Check how often something happened.
    AssertCount(CountAssert<S::Count>),
    /// One of the system's verbs.
    #[serde(untagged)]
    System(S::Verb),
}

impl<S: ScriptSystem> Step<S> {
    /// The thread that runs it on its client (`None`: the driver).
    pub fn thread(&self) -> Option<&str> {
        match self {
            Step::System(v) => v.thread(),
            _ => None,
        }
    }

    /// Whether it is an assertion (allowed in `at_end`).
    pub fn is_assertion(&self) -> bool {
        match self {
            Step::AssertCount(_) => true,
            Step::System(v) => v.is_assertion(),
            _ => false,
        }
    }

    /// Whether the next step may start as soon as this one is issued.
    pub fn no_wait(&self) -> bool {
        matches!(self, Step::System(v) if v.no_wait())
    }

    /// The system's verb, if it is one.
    pub fn verb(&self) -> Option<&S::Verb> {
        match self {
            Step::System(v) => Some(v),
            _ => None,
        }
    }

    /// `step {i} {json}`, the json cut at 200 bytes: how failures name it.
    pub fn describe(&self, i: usize) -> String {
        let mut s = serde_json::to_string(self).unwrap_or_default();
        if s.len() > 200 {
            let mut cut = 200;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
            s.push_str("...");
        }
        format!("step {i} {s}")
    }
}

/// A script: the system's fields, the steps, the end-of-run assertions and
/// the step timeout, plus the state of one run (not part of the file).
pub struct Script<S: ScriptSystem> {
    /// The system's fields of the file.
    pub system: S,
    /// The steps, in global order (shared by the copies a run makes of
    /// its script: one per thread, client and driver).
    pub steps: Arc<Vec<Step<S>>>,
    /// Assertions checked after the healed phase and the sweep.
    pub at_end: Arc<Vec<Step<S>>>,
    /// A step that has not finished after this long fails the script.
    pub step_timeout_ms: u64,
    state: Arc<Mutex<State<S>>>,
}

impl<S: ScriptSystem> Clone for Script<S> {
    fn clone(&self) -> Self {
        Script {
            system: self.system.clone(),
            steps: self.steps.clone(),
            at_end: self.at_end.clone(),
            step_timeout_ms: self.step_timeout_ms,
            state: self.state.clone(),
        }
    }
}

impl<S: ScriptSystem> Default for Script<S> {
    fn default() -> Self {
        Script {
            system: S::default(),
            steps: Arc::default(),
            at_end: Arc::default(),
            step_timeout_ms: DEFAULT_STEP_TIMEOUT_MS,
            state: Arc::default(),
        }
    }
}

impl<S: ScriptSystem> Debug for Script<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script")
            .field("steps", &self.steps.len())
            .finish()
    }
}

/// One thread of steps, run in a task of its client: it hands out the
/// thread's steps one by one, each at its turn.
pub struct Thread<S: ScriptSystem> {
    script: Script<S>,
    name: String,
    steps: Vec<usize>,
    next: usize,
    running: Option<usize>,
}

/// Where a step is and what exists before it, for a system's checks.
pub struct Env<'a> {
    at: &'a str,
    index: usize,
    clients: usize,
    nodes: &'a [String],
    opened: &'a BTreeMap<&'a str, usize>,
    words: ThreadWords,
}

/// A condition under which a step counts as finished before it returns.
type Done = Arc<dyn Fn() -> bool + Send + Sync>;

/// The state of one run, shared by the driver and the clients' threads.
struct State<S: ScriptSystem> {
    /// The step that may start next.
    cursor: usize,
    /// The script gave up (a step timed out).
    aborted: bool,
    failures: Vec<String>,
    /// Steps that count as finished, for the driver, once their condition
    /// holds (a commit armed to crash finishes when its client reaches the
    /// armed point).
    watch: BTreeMap<usize, Done>,
    /// The driver's view of the world (set before anything runs).
    control: Option<Arc<S::Control>>,
    /// Counter values when a step named by a `since_step` started.
    marks: BTreeMap<(usize, S::Count), u64>,
    /// The `stop_at` steps whose stop was armed, in order.
    stops: Vec<usize>,
    /// Message rules in force, by name.
    rules: BTreeMap<String, <S::Control as ScriptControl>::RuleId>,
    /// The system's own state.
    system: S::State,
}

impl<S: ScriptSystem> Default for State<S> {
    fn default() -> Self {
        State {
            cursor: 0,
            aborted: false,
            failures: Vec::new(),
            watch: BTreeMap::new(),
            control: None,
            marks: BTreeMap::new(),
            stops: Vec::new(),
            rules: BTreeMap::new(),
            system: S::State::default(),
        }
    }
}
