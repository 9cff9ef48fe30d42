//! Percolator's part of the script engine: how its verbs are checked, run
//! and judged, through the engine's [`ScriptSystem`] interface.

use super::*;

impl ScriptSystem for PercolatorScript {
    type Verb = PercolatorVerb;
    type Count = Counted;
    type Wait = WaitFor;
    type Rule = MessageRule;
    type Point = Point;
    type PointFault = PointAction;
    type State = run::RunState;
    type Control = Controller;
    type Client = Arc<Client>;
    const FIELDS: &'static [&'static str] = &["initial", "observers"];
    const VERBS: &'static [&'static str] = VERBS;
    const THREAD: ThreadWords = ThreadWords::TRANSACTION;

    fn validate_setup(&self) -> Result<(), String> {
        observe::validate(&self.observers)
    }

    fn client_node(client: usize) -> String {
        percolator_kinds::CLIENT.nth(client).to_string()
    }

    fn validate_verb(script: &Script, verb: &PercolatorVerb, env: &Env<'_>) -> Result<(), String> {
        validate_verb(script, verb, env)
    }

    fn validate_wait(_: &Script, wait: &WaitFor, env: &Env<'_>) -> Result<(), String> {
        match wait {
            WaitFor::TxnFinished(t) => env.thread(t),
            _ => Ok(()),
        }
    }

    fn validate_point(point: &Point, node: &str, env: &Env<'_>) -> Result<(), String> {
        match reaches(*point, node) {
            true => Ok(()),
            false => Err(format!(
                "{}: node {node:?} never reaches point {}",
                env.at(),
                point.name()
            )),
        }
    }

    fn arm_point(
        control: &Controller,
        point: &Point,
        node: &str,
        fault: &PointAction,
    ) -> Result<(), String> {
        control.arm_point(*point, node, *fault)
    }

    fn validate_rule(script: &Script, rule: &MessageRule, env: &Env<'_>) -> Result<(), String> {
        if let Some(t) = &rule.txn {
            env.thread(t)?;
        }
        if let Some(c) = rule.client {
            env.client(c)?;
        }
        let writes = rule.txn.as_ref().map(|t| cells_of(script, t).len());
        rule.validate(writes)
            .map_err(|e| format!("{}{e}", env.at()))
    }

    fn run_thread(thread: crate::script::Thread<Self>, client: Arc<Client>) -> BoxFuture<()> {
        Box::pin(run::run_txn(thread, client))
    }

    fn driver_step<'a>(
        _script: &'a Script,
        _i: usize,
        verb: &'a PercolatorVerb,
        control: &'a Controller,
    ) -> crate::script::StepFuture<'a> {
        run::driver_step(verb, control);
        Box::pin(std::future::ready(()))
    }

    fn assert(
        script: &Script,
        _i: usize,
        verb: &PercolatorVerb,
        control: &Controller,
    ) -> Option<crate::script::Mismatch> {
        run::assert(script, verb, control)
    }

    fn holds(script: &Script, wait: &WaitFor, control: &Controller) -> bool {
        run::holds(script, wait, control)
    }

    fn install(
        script: &Script,
        rule: &MessageRule,
        words: crate::script::RuleWords,
        control: &Controller,
    ) -> Result<percsim_sim::RuleId, crate::script::Mismatch> {
        run::install(script, rule, words, control)
    }

    fn stops_left(control: &Controller) -> Option<Vec<String>> {
        Some(control.armed_points_left())
    }

    fn after_run(
        script: &Script,
        _i: usize,
        verb: &PercolatorVerb,
        control: &Controller,
    ) -> Option<crate::script::Mismatch> {
        let PercolatorVerb::Commit {
            txn,
            store: Some(store),
            ..
        } = verb
        else {
            return None;
        };
        let check = PercolatorVerb::AssertStored {
            txn: txn.clone(),
            store: *store,
        };
        run::assert(script, &check, control)
    }
}
