//! Omid's part of the script engine: how its verbs are checked, run and
//! judged, through the engine's [`ScriptSystem`] interface.

use super::*;

impl ScriptSystem for OmidScript {
    type Verb = OmidVerb;
    type Count = OmidCount;
    type Wait = OmidWait;
    type Rule = OmidRule;
    type Point = OmidScriptPoint;
    type PointFault = OmidPointFault;
    type State = OmidState;
    type Control = ScriptControlOf;
    type Client = OmidClient;
    const FIELDS: &'static [&'static str] = &[];
    const VERBS: &'static [&'static str] = VERBS;
    const THREAD: ThreadWords = ThreadWords::TRANSACTION;

    fn client_node(client: usize) -> String {
        percsim_sim::omid::CLIENT_KIND.nth(client).to_string()
    }

    fn validate_verb(s: &OmidScriptFile, verb: &OmidVerb, env: &Env<'_>) -> Result<(), String> {
        match verb {
            OmidVerb::Begin { client, .. } => env.client(*client),
            OmidVerb::AssertCommitTable { txn, .. } | OmidVerb::AssertCell { txn, .. } => {
                txn_begun(s, txn, env)
            }
            _ => Ok(()),
        }
    }

    fn validate_wait(s: &OmidScriptFile, wait: &OmidWait, env: &Env<'_>) -> Result<(), String> {
        let OmidWait::TxnFinished(txn) = wait;
        txn_begun(s, txn, env)
    }

    fn validate_point(point: &OmidScriptPoint, node: &str, env: &Env<'_>) -> Result<(), String> {
        let (at, _) = point.parts();
        let owner = at.owner();
        match owner_of(node) == Some(owner) {
            true => Ok(()),
            false => Err(format!(
                "{}: node {node:?} never reaches point {} (only a {} node does)",
                env.at(),
                at.name(),
                owner.name()
            )),
        }
    }

    fn validate_rule(s: &OmidScriptFile, rule: &OmidRule, env: &Env<'_>) -> Result<(), String> {
        if let Some(c) = rule.client {
            env.client(c)?;
        }
        match &rule.txn {
            Some(txn) => txn_begun(s, txn, env),
            None => Ok(()),
        }
    }

    fn run_thread(thread: Thread<Self>, client: OmidClient) -> BoxFuture<()> {
        Box::pin(run::run_txn(thread, client))
    }

    fn arm_point(
        control: &ScriptControlOf,
        point: &OmidScriptPoint,
        node: &str,
        fault: &OmidPointFault,
    ) -> Result<(), String> {
        let (at, txn) = point.parts();
        let start_ts = begun_for_point(txn, |name| control.txn(name))?.map(|t| t.start_ts);
        let stop = match fault {
            OmidPointFault::Kill { restart_after_ms } => Stop::Kill {
                restart_after_ms: *restart_after_ms,
            },
            OmidPointFault::Pause { ms } => Stop::Pause { pause_ms: *ms },
        };
        control.control.arm(at, node, start_ts, stop)
    }

    fn stops_left(control: &ScriptControlOf) -> Option<Vec<String>> {
        Some(control.control.stops_left())
    }

    fn driver_step<'a>(
        _: &'a OmidScriptFile,
        _: usize,
        _: &'a OmidVerb,
        _: &'a ScriptControlOf,
    ) -> StepFuture<'a> {
        // Omid's driver verbs are assertions, checked through `assert`.
        Box::pin(std::future::ready(()))
    }

    fn assert(
        _: &OmidScriptFile,
        _: usize,
        verb: &OmidVerb,
        control: &ScriptControlOf,
    ) -> Option<Mismatch> {
        run::assert(verb, control)
    }

    fn holds(s: &OmidScriptFile, wait: &OmidWait, _: &ScriptControlOf) -> bool {
        let OmidWait::TxnFinished(txn) = wait;
        s.with_state(|st| st.told.contains_key(txn))
    }

    fn install(
        _: &OmidScriptFile,
        rule: &OmidRule,
        words: RuleWords,
        control: &ScriptControlOf,
    ) -> Result<RuleId, Mismatch> {
        let txn = begun_for_rule(rule.txn.as_deref(), |name| control.txn(name))?;
        Ok(control.control.intercept(Rule {
            call: rule.call.tag(),
            txn: txn.map(|t| t.id),
            items: None,
            from: rule.client.map(Self::client_node),
            leg: words.leg,
            fate: words.fate,
            times: words.times,
        }))
    }
}
