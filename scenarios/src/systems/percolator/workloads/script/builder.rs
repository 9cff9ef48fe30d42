//! A typed builder for scripts, for `#[test]`s written in Rust.

use super::{CellAssert, CountAssert, Counted, ErrorClass, ExpectOutcome, InitialCell, Script};
use super::{MessageRule, PercolatorVerb as V, ScriptObserver, Step, Stored, Until, WaitFor};
use super::{Point, PointAction, StepPoint};

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
        std::sync::Arc::make_mut(&mut self.script.steps).push(step);
        self
    }

    /// Append one of Percolator's steps.
    fn verb(self, verb: V) -> Self {
        self.step(Step::System(verb))
    }

    /// The last step, if it is one of Percolator's.
    fn last(&mut self) -> Option<&mut V> {
        match std::sync::Arc::make_mut(&mut self.script.steps).last_mut() {
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

    /// Commit with no expectation on what the client reports: for a commit
    /// armed with [`ScriptBuilder::crash_at`] (its client dies before it
    /// can report; a commit armed to crash refuses an expectation when the
    /// script is loaded). Follow it with [`ScriptBuilder::store`] to check
    /// how the transaction ended in the store.
    pub fn commit_armed(self, txn: &str) -> Self {
        self.verb(V::Commit {
            txn: txn.into(),
            expect: None,
            fails: None,
            store: None,
            no_wait: false,
        })
    }

    /// Abort without committing.
    pub fn abort(self, txn: &str) -> Self {
        self.verb(V::Abort { txn: txn.into() })
    }

    /// Read column `col` of every row in `[start_row, end_row)`; `expect`
    /// lists the `row=value` pairs it must return, in order.
    pub fn scan(self, txn: &str, rows: (&str, &str), col: &str, expect: &[&str]) -> Self {
        self.verb(V::Scan {
            txn: txn.into(),
            start_row: rows.0.into(),
            end_row: rows.1.into(),
            col: col.into(),
            expect: Some(expect.iter().map(|e| e.to_string()).collect()),
            fails: None,
            no_wait: false,
        })
    }

    /// Kill the client of `txn` when its commit reaches `step`; restart it
    /// `restart_after_ms` later (`None`: at the healed phase). A crash that
    /// never happens (the transaction aborts or only reads) fails the run
    /// naming this step.
    pub fn crash_at(self, txn: &str, step: StepPoint, restart_after_ms: Option<u64>) -> Self {
        self.verb(V::CrashAt {
            txn: txn.into(),
            step,
            restart_after_ms,
        })
    }

    /// Freeze the client of `txn` when its commit reaches `step` (until a
    /// [`ScriptBuilder::resume`] or the healed phase). A pause that never
    /// happens fails the run naming this step.
    pub fn pause_at(self, txn: &str, step: StepPoint) -> Self {
        self.verb(V::PauseAt {
            txn: txn.into(),
            step,
        })
    }

    /// Kill or freeze `node` the next time it reaches `point`. A stop that
    /// never happens fails the run naming this step.
    pub fn stop_at(self, point: Point, node: &str, fault: PointAction) -> Self {
        self.step(Step::StopAt {
            point,
            node: node.into(),
            fault,
        })
    }

    /// Kill a node (`client-0`, `tablet-1`, `oracle`, ...).
    pub fn kill(self, node: &str) -> Self {
        self.step(Step::Kill { node: node.into() })
    }

    /// Restart a killed node.
    pub fn restart(self, node: &str) -> Self {
        self.step(Step::Restart { node: node.into() })
    }

    /// Freeze a client's node.
    pub fn pause(self, client: usize) -> Self {
        self.step(Step::Pause { client })
    }

    /// Unfreeze a client's node.
    pub fn resume(self, client: usize) -> Self {
        self.step(Step::Resume { client })
    }

    /// Cut the links between the nodes of `a` and those of `b` (both ways)
    /// until [`ScriptBuilder::heal`] or the healed phase.
    pub fn partition(self, a: &[&str], b: &[&str]) -> Self {
        let names = |v: &[&str]| v.iter().map(|n| n.to_string()).collect();
        self.step(Step::Partition {
            a: names(a),
            b: names(b),
            one_way: false,
        })
    }

    /// Lose the messages from the nodes of `from` to those of `to` (one
    /// way: replies and messages back still arrive) until
    /// [`ScriptBuilder::heal`] or the healed phase.
    pub fn partition_one_way(self, from: &[&str], to: &[&str]) -> Self {
        let names = |v: &[&str]| v.iter().map(|n| n.to_string()).collect();
        self.step(Step::Partition {
            a: names(from),
            b: names(to),
            one_way: true,
        })
    }

    /// Heal every partition in force.
    pub fn heal(self) -> Self {
        self.step(Step::Heal)
    }

    /// Wait this many simulated ms.
    pub fn sleep(self, ms: u64) -> Self {
        self.step(Step::Sleep { ms })
    }

    /// Expire a client's liveness session (the client stays alive).
    pub fn expire_session(self, client: usize) -> Self {
        self.verb(V::ExpireSession { client })
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

    /// Install a targeted message fault (until its [`ScriptBuilder::release`]
    /// or the healed phase): [`MessageRule::holding`],
    /// [`MessageRule::dropping`], [`MessageRule::delaying`] or
    /// [`MessageRule::duplicating`], narrowed by its modifiers.
    pub fn intercept(self, rule: MessageRule) -> Self {
        self.step(Step::Intercept(rule))
    }

    /// Lift the message fault `name` and deliver what it holds.
    pub fn release(self, name: &str) -> Self {
        self.step(Step::Release { name: name.into() })
    }

    /// Wait until `until` (one of Percolator's conditions, or the world's
    /// [`Until::NodeUp`]) holds, failing after `timeout_ms`. A `wait` in
    /// [`ScriptBuilder::at_end`] is refused when the script is loaded.
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

    /// Check `step` (an `assert_*` step) after the healed phase and the
    /// sweep. A `wait` or any other step is refused when the script is
    /// loaded: only assertions run at the end.
    pub fn at_end(mut self, step: Step) -> Self {
        std::sync::Arc::make_mut(&mut self.script.at_end).push(step);
        self
    }

    /// The script.
    pub fn build(self) -> Script {
        self.script
    }
}
