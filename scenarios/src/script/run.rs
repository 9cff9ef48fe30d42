//! Running a script: one task per thread on its client, the driver's steps
//! (node actions, waits, assertions, message rules) on the driver, all in
//! step order; then the end-of-run checks.

use super::{
    Mismatch, Script, ScriptControl, ScriptSystem, State, Step, SystemVerb, Thread, Until,
};
use percsim_sim::Fault;
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

impl<S: ScriptSystem> Thread<S> {
    /// The thread's name (a transaction's, an actor's).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The script it belongs to.
    pub fn script(&self) -> &Script<S> {
        &self.script
    }

    /// The previous step of the thread is finished: wait until the
    /// thread's next step may start and return its index (a `no_wait`
    /// step lets the next step start at once). `None` when the thread has
    /// no more steps or the script gave up.
    pub async fn next(&mut self) -> Option<usize> {
        if let Some(i) = self.running.take() {
            self.script.advance(i);
        }
        let i = *self.steps.get(self.next)?;
        self.next += 1;
        if !self.script.wait_turn(i).await {
            return None;
        }
        if self.script.steps[i].no_wait() {
            self.script.advance(i);
        }
        self.running = Some(i);
        Some(i)
    }
}

impl<S: ScriptSystem> Script<S> {
    /// A copy with fresh run state, for one run.
    pub fn fresh(&self) -> Self {
        Script {
            state: Arc::default(),
            ..self.clone()
        }
    }

    fn state(&self) -> MutexGuard<'_, State<S>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Read or change the system's state of this run.
    pub fn with_state<R>(&self, f: impl FnOnce(&mut S::State) -> R) -> R {
        f(&mut self.state().system)
    }

    /// Record that step `i` (for `i` past the steps: `at_end` step
    /// `i - steps`) did not meet its expectation.
    pub fn fail(
        &self,
        i: usize,
        expected: impl std::fmt::Display,
        happened: impl std::fmt::Display,
    ) {
        let what = match i.checked_sub(self.steps.len()) {
            Some(k) => self.at_end[k].describe(k).replacen("step", "at_end", 1),
            None => self.steps[i].describe(i),
        };
        self.state()
            .failures
            .push(format!("{what}: expected {expected}; happened {happened}"));
    }

    /// Step `i` counts as finished, for the driver, as soon as `done`
    /// holds, even if it has not returned.
    pub fn finish_when(&self, i: usize, done: impl Fn() -> bool + Send + Sync + 'static) {
        self.state().watch.insert(i, Arc::new(done));
    }

    /// The threads client `client` runs, in the order their first steps come.
    fn threads_on(&self, client: usize) -> Vec<String> {
        self.steps
            .iter()
            .filter_map(Step::verb)
            .filter(|v| v.opens() == Some(client))
            .filter_map(|v| v.thread().map(str::to_string))
            .collect()
    }

    /// Run client `client`'s threads, one task each, until all end.
    pub async fn run_client(&self, client: usize, handle: S::Client) {
        let tasks: Vec<_> = self
            .threads_on(client)
            .into_iter()
            .map(|name| {
                let steps = (0..self.steps.len())
                    .filter(|&i| self.steps[i].thread() == Some(name.as_str()))
                    .collect();
                let thread = Thread {
                    script: self.clone(),
                    name,
                    steps,
                    next: 0,
                    running: None,
                };
                madsim::task::spawn(S::run_thread(thread, handle.clone()))
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    }

    /// Step `i` starts now: keep the counters a later `since_step` needs.
    fn mark(&self, i: usize) {
        let wanted: Vec<S::Count> = self
            .steps
            .iter()
            .chain(self.at_end.iter())
            .filter_map(|s| match s {
                Step::AssertCount(a) if a.since_step == Some(i) => Some(a.count),
                _ => None,
            })
            .collect();
        let mut s = self.state();
        for counted in wanted {
            let name = super::Countable::counter(counted);
            let n = s.control.as_ref().map(|c| c.counter(&name)).unwrap_or(0);
            s.marks.entry((i, counted)).or_insert(n);
        }
    }

    /// Wait until step `i` may start; false if the script gave up.
    async fn wait_turn(&self, i: usize) -> bool {
        loop {
            {
                let s = self.state();
                if s.aborted || s.cursor > i {
                    return false;
                }
            }
            if self.state().cursor == i {
                self.mark(i);
                return true;
            }
            madsim::time::sleep(Duration::from_millis(1)).await;
        }
    }

    fn advance(&self, i: usize) {
        let mut s = self.state();
        if s.cursor == i {
            s.cursor = i + 1;
        }
    }

    /// The driver's task: runs the driver's steps at their turn, lets
    /// watched steps count as finished, gives up on a step that takes
    /// longer than `step_timeout_ms`. `control` is kept for the end-of-run
    /// checks at once.
    pub fn start_driver(&self, control: S::Control) -> percsim_sim::BoxFuture<()> {
        let control = Arc::new(control);
        self.state().control = Some(control.clone());
        let me = self.clone();
        Box::pin(async move { me.drive(control).await })
    }

    async fn drive(self, control: Arc<S::Control>) {
        let timeout = Duration::from_millis(self.step_timeout_ms.max(1));
        for (i, step) in self.steps.iter().enumerate() {
            let started = madsim::time::Instant::now();
            loop {
                let (cursor, done) = {
                    let s = self.state();
                    (s.cursor, s.watch.get(&i).cloned())
                };
                if cursor > i {
                    break;
                }
                if cursor == i && done.is_some_and(|d| d()) {
                    self.advance(i);
                    break;
                }
                if cursor == i && step.thread().is_none() {
                    self.mark(i);
                    self.driver_step(i, step, &control).await;
                    self.advance(i);
                    break;
                }
                if started.elapsed() > timeout {
                    let ms = self.step_timeout_ms;
                    self.fail(i, format!("to finish within {ms} ms"), "it did not finish");
                    self.state().aborted = true;
                    return;
                }
                madsim::time::sleep(Duration::from_millis(1)).await;
            }
        }
        // Let no_wait steps finish before the workload phase ends.
        madsim::time::sleep(Duration::from_millis(1)).await;
        // Rules the script did not release end with it (they hold messages).
        let left = std::mem::take(&mut self.state().rules);
        for id in left.into_values() {
            control.release(id);
        }
    }

    async fn driver_step(&self, i: usize, step: &Step<S>, control: &S::Control) {
        let node = |c: &usize| S::client_node(*c);
        let fault = match step {
            Step::Pause { client } => Fault::Pause {
                node: node(client),
                duration_ms: 3_600_000,
            },
            Step::Resume { client } => Fault::Resume { node: node(client) },
            Step::Kill { node } => Fault::Kill {
                node: node.clone(),
                restart_after_ms: None,
            },
            Step::Restart { node } => Fault::Restart { node: node.clone() },
            Step::Partition { a, b, one_way } => Fault::Partition {
                a: a.clone(),
                b: b.clone(),
                one_way: *one_way,
                duration_ms: 3_600_000,
            },
            Step::StopAt { point, node, fault } => {
                match S::arm_point(control, point, node, fault) {
                    Ok(()) => self.state().stops.push(i),
                    Err(e) => self.fail(i, json(step), e),
                }
                return;
            }
            Step::Heal => return control.heal_partitions(),
            Step::Intercept(rule) => {
                let words = super::rule_words(rule);
                return match S::install(self, rule, words, control) {
                    Ok(id) => {
                        let name = super::InterceptRule::name(rule).to_string();
                        self.state().rules.insert(name, id);
                    }
                    Err(m) => self.fail(i, m.expected, m.happened),
                };
            }
            Step::Release { name } => {
                let id = self.state().rules.remove(name);
                if let Some(id) = id {
                    control.release(id);
                }
                return;
            }
            Step::Sleep { ms } => {
                return madsim::time::sleep(Duration::from_millis(*ms)).await;
            }
            Step::Wait { until, timeout_ms } => {
                return self.wait(i, until, *timeout_ms, control).await;
            }
            Step::System(v) if !v.is_assertion() => {
                return S::driver_step(self, i, v, control).await;
            }
            _ => return self.assert(i, step, control),
        };
        control.inject(&fault);
    }

    async fn wait(&self, i: usize, until: &Until<S::Wait>, timeout_ms: u64, control: &S::Control) {
        let deadline = madsim::time::Instant::now() + Duration::from_millis(timeout_ms);
        let holds = |u: &Until<S::Wait>| match u {
            Until::NodeUp(n) => control.node_up(n),
            Until::System(w) => S::holds(self, w, control),
        };
        while !holds(until) {
            if madsim::time::Instant::now() >= deadline {
                let what = format!("{} within {timeout_ms} ms", json(until));
                return self.fail(i, what, "it did not hold");
            }
            madsim::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Check an assertion step (`i` counts on past the steps for `at_end`).
    fn assert(&self, i: usize, step: &Step<S>, control: &S::Control) {
        let mismatch = match step {
            Step::AssertCount(a) => {
                let since = a.since_step.map_or(0, |k| {
                    let s = self.state();
                    s.marks.get(&(k, a.count)).copied().unwrap_or(0)
                });
                let n = control.counter(&super::Countable::counter(a.count)) - since;
                (n != a.equals).then(|| {
                    let what = json(&a.count);
                    Mismatch::new(format!("{} {what}", a.equals), format!("{n} {what}"))
                })
            }
            Step::System(v) => S::assert(self, i, v, control),
            _ => None,
        };
        if let Some(m) = mismatch {
            self.fail(i, m.expected, m.happened);
        }
    }

    /// Fail each `stop_at` step whose stop never happened: for each node
    /// with stops still armed, its latest armed steps (stops at one node
    /// happen in the order they were armed).
    fn check_stops(&self, control: &S::Control) {
        let Some(left) = S::stops_left(control) else {
            return;
        };
        let mut armed = self.state().stops.clone();
        let mut never = Vec::new();
        for node in left {
            let at = armed.iter().rposition(
                |&i| matches!(&self.steps[i], Step::StopAt { node: n, .. } if *n == node),
            );
            if let Some(at) = at {
                never.push(armed.remove(at));
            }
        }
        never.sort_unstable();
        for i in never {
            self.fail(
                i,
                "the node to stop at the point",
                "the stop never happened: the node did not reach the point before the run ended",
            );
        }
    }

    /// Check what the steps expect of the end of the run, then the
    /// `at_end` assertions; returns the new failures.
    fn check_at_end(&self) -> Vec<String> {
        let Some(control) = self.state().control.clone() else {
            return Vec::new();
        };
        let before = self.state().failures.len();
        self.check_stops(&control);
        for (i, step) in self.steps.iter().enumerate() {
            if let Some(v) = step.verb()
                && let Some(m) = S::after_run(self, i, v, &control)
            {
                self.fail(i, m.expected, m.happened);
            }
        }
        for (k, step) in self.at_end.iter().enumerate() {
            self.assert(self.steps.len() + k, step, &control);
        }
        self.state().failures.split_off(before)
    }

    /// After the run: every expectation that failed, a script stopped
    /// before its end, the end-of-run checks.
    pub fn final_failures(&self) -> Vec<String> {
        let (mut failures, aborted, cursor) = {
            let s = self.state();
            (s.failures.clone(), s.aborted, s.cursor)
        };
        if !aborted && cursor < self.steps.len() {
            failures.push(format!(
                "the script stopped at step {cursor} of {}: expected every step to run; happened: the workload phase (run_ms) ended first",
                self.steps.len()
            ));
        }
        failures.extend(self.check_at_end());
        failures
    }
}

fn json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}
