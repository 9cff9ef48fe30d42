//! A typed builder for scripts, for `#[test]`s written in Rust.

use super::{CellAssert, CountAssert, Counted, ErrorClass, ExpectOutcome, InitialCell, Script};
use super::{MessageRule, PercolatorVerb as V, ScriptObserver, Step, Stored, Until, WaitFor};

/// Builds a [`Script`] step by step. Each method appends one step; the
/// modifiers [`ScriptBuilder::no_wait`] and [`ScriptBuilder::fails`] change
/// the step appended last.
///
/// ```
/// use percsim_scenarios::workloads::{ExpectOutcome, ScriptBuilder};
/// let script = ScriptBuilder::new()
///     .initial("x", "v", "0")
///     .begin(0, "T1")
///     .get("T1", "x", "v", Some("0"))
///     .set("T1", "x", "v", "1")
///     .commit("T1", ExpectOutcome::Committed)
///     .build();
/// assert_eq!(script.steps.len(), 4);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ScriptBuilder {
    script: Script,
}

impl ScriptBuilder {
    /// An empty script.
    pub fn new() -> Self {
        ScriptBuilder {
            script: Script::default(),
        }
    }

    /// Commit `row`/`col` = `value` before the script starts.
    pub fn initial(mut self, row: &str, col: &str, value: &str) -> Self {
        self.script.system.initial.push(InitialCell {
            row: row.into(),
            col: col.into(),
            value: value.into(),
        });
        self
    }

    /// An observer `name` of column `col` that copies each change to `copy_to`.
    pub fn observer(mut self, name: &str, col: &str, copy_to: &str) -> Self {
        self.script.system.observers.push(ScriptObserver {
            name: name.into(),
            col: col.into(),
            copy_to: copy_to.into(),
        });
        self
    }

    /// Append any step.
    pub fn step(mut self, step: Step) -> Self {
        self.script.steps.push(step);
        self
    }

    /// Append one of Percolator's steps.
    fn verb(self, verb: V) -> Self {
        self.step(Step::System(verb))
    }

    /// The last step, if it is one of Percolator's.
    fn last(&mut self) -> Option<&mut V> {
        match self.script.steps.last_mut() {
            Some(Step::System(v)) => Some(v),
            _ => None,
        }
    }

    /// Begin transaction `txn` on client `client`.
    pub fn begin(self, client: usize, txn: &str) -> Self {
        self.verb(V::Begin {
            client,
            txn: txn.into(),
            fails: None,
            no_wait: false,
        })
    }

    /// Read a cell; `expect` is the value it must return (`None`: no value).
    pub fn get(self, txn: &str, row: &str, col: &str, expect: Option<&str>) -> Self {
        self.verb(V::Get {
            txn: txn.into(),
            row: row.into(),
            col: col.into(),
            expect: Some(expect.map(str::to_string)),
            fails: None,
            no_wait: false,
        })
    }

    /// Buffer a write.
    pub fn set(self, txn: &str, row: &str, col: &str, value: &str) -> Self {
        self.verb(V::Set {
            txn: txn.into(),
            row: row.into(),
            col: col.into(),
            value: value.into(),
        })
    }

    /// Buffer a delete.
    pub fn delete(self, txn: &str, row: &str, col: &str) -> Self {
        self.verb(V::Delete {
            txn: txn.into(),
            row: row.into(),
            col: col.into(),
        })
    }

    /// Commit; the client must report `expect`.
    pub fn commit(self, txn: &str, expect: ExpectOutcome) -> Self {
        self.verb(V::Commit {
            txn: txn.into(),
            expect: Some(expect),
            fails: None,
            store: None,
            no_wait: false,
        })
    }

    /// The last step (a begin, get, scan or commit) must fail with `class`
    /// (a commit: abort with it); its value or outcome expectation is dropped.
    pub fn fails(mut self, class: ErrorClass) -> Self {
        match self.last() {
            Some(V::Begin { fails, .. }) => *fails = Some(class),
            Some(V::Get { fails, expect, .. }) => (*fails, *expect) = (Some(class), None),
            Some(V::Scan { fails, expect, .. }) => (*fails, *expect) = (Some(class), None),
            Some(V::Commit { fails, expect, .. }) => (*fails, *expect) = (Some(class), None),
            _ => {}
        }
        self
    }

    /// Do not wait for the last step (a begin, get, scan or commit) to finish.
    pub fn no_wait(mut self) -> Self {
        if let Some(
            V::Begin { no_wait, .. }
            | V::Get { no_wait, .. }
            | V::Scan { no_wait, .. }
            | V::Commit { no_wait, .. },
        ) = self.last()
        {
            *no_wait = true;
        }
        self
    }

    /// The last step (a commit) must have left its transaction `store` in
    /// the store once the run is over, whatever its client was told.
    pub fn store(mut self, want: Stored) -> Self {
        if let Some(V::Commit { store, .. }) = self.last() {
            *store = Some(want);
        }
        self
    }

    /// Install a targeted message fault (until its [`ScriptBuilder::release`]).
    pub fn intercept(self, rule: MessageRule) -> Self {
        self.step(Step::Intercept(rule))
    }

    /// Lift the message fault `name` and deliver what it holds.
    pub fn release(self, name: &str) -> Self {
        self.step(Step::Release { name: name.into() })
    }

    /// Wait until `until` (one of Percolator's conditions, or the world's
    /// [`Until::NodeUp`]) holds, failing after `timeout_ms`.
    pub fn wait(self, until: impl Into<Until<WaitFor>>, timeout_ms: u64) -> Self {
        let until = until.into();
        self.step(Step::Wait { until, timeout_ms })
    }

    /// Check one cell of the store now.
    pub fn assert_cell(self, a: CellAssert) -> Self {
        self.verb(V::AssertCell(a))
    }

    /// `count` happened `equals` times since step `since_step` started
    /// (since the run's start when `None`).
    pub fn assert_count(self, count: Counted, equals: u64, since_step: Option<usize>) -> Self {
        self.step(Step::AssertCount(CountAssert {
            count,
            equals,
            since_step,
        }))
    }

    /// Transaction `txn` ended `store` in the store.
    pub fn assert_stored(self, txn: &str, store: Stored) -> Self {
        self.verb(V::AssertStored {
            txn: txn.into(),
            store,
        })
    }

    /// Check `step` (an `assert_*` step) after the healed phase and the sweep.
    pub fn at_end(mut self, step: Step) -> Self {
        self.script.at_end.push(step);
        self
    }

    /// The script.
    pub fn build(self) -> Script {
        self.script
    }
}
