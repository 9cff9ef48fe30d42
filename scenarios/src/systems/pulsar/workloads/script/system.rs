//! Pulsar's part of the script engine: how its verbs are checked, run
//! and judged, through the engine's [`ScriptSystem`] interface.

use super::*;

impl ScriptSystem for PulsarScript {
    type Verb = PulsarVerb;
    type Count = PulsarCount;
    type Wait = PulsarWait;
    type Rule = PulsarRule;
    type Point = PulsarPoint;
    type PointFault = PulsarPointFault;
    type State = PulsarState;
    type Control = ScriptControlOf;
    type Client = Arc<Conn>;
    const FIELDS: &'static [&'static str] = &["topic", "exactly_once"];
    const VERBS: &'static [&'static str] = VERBS;
    const THREAD: ThreadWords = ThreadWords {
        field: "actor",
        noun: "actor",
        opened: "declared",
        closed: "its end",
    };

    fn validate_setup(&self) -> Result<(), String> {
        match self.topic.is_empty() {
            true => Err("workload.topic: must not be empty".into()),
            false => Ok(()),
        }
    }

    fn client_node(client: usize) -> String {
        // Pulsar's client processes, as the world names them (`client-N`).
        pulsar_kinds::CLIENT.nth(client).to_string()
    }

    fn validate_verb(s: &PulsarScriptFile, verb: &PulsarVerb, env: &Env<'_>) -> Result<(), String> {
        check::validate_verb(s, verb, env)
    }

    fn validate_wait(s: &PulsarScriptFile, wait: &PulsarWait, env: &Env<'_>) -> Result<(), String> {
        let txn = match wait {
            PulsarWait::TxnFinished(t) | PulsarWait::TxnState { txn: t, .. } => t,
        };
        check::txn_begun(s, txn, env)
    }

    fn validate_point(point: &PulsarPoint, node: &str, env: &Env<'_>) -> Result<(), String> {
        let at = point.parts().0;
        let (kind, label) = match at.on_client() {
            true => (pulsar_kinds::CLIENT, "client"),
            false => (pulsar_kinds::BROKER, "broker"),
        };
        let name = NodeName::parse(node, &pulsar_kinds::ALL);
        match name.is_ok_and(|n| n.kind() == kind) {
            true => Ok(()),
            false => Err(format!(
                "{}: node {node:?} never reaches point {} (only {label}s do)",
                env.at(),
                at.name()
            )),
        }
    }

    fn validate_rule(s: &PulsarScriptFile, rule: &PulsarRule, env: &Env<'_>) -> Result<(), String> {
        check::validate_rule(s, rule, env)
    }

    fn run_thread(thread: Thread<Self>, client: Arc<Conn>) -> BoxFuture<()> {
        Box::pin(run::run_actor(thread, client))
    }

    fn arm_point(
        control: &ScriptControlOf,
        point: &PulsarPoint,
        node: &str,
        fault: &PulsarPointFault,
    ) -> Result<(), String> {
        let (at, txn, partition) = point.parts();
        let txn = begun_for_point(txn, |name| control.txn(name))?;
        let action = match fault {
            PulsarPointFault::Kill { restart_after_ms } => PulsarPointAction::Kill {
                restart_after_ms: *restart_after_ms,
            },
            PulsarPointFault::Pause { ms } => PulsarPointAction::Pause { pause_ms: *ms },
        };
        control.control.arm(ArmedPoint {
            point: at,
            node: node.to_string(),
            txn,
            partition: partition.map(|p| control.partition(p)),
            action,
        })
    }

    fn stops_left(control: &ScriptControlOf) -> Option<Vec<String>> {
        Some(control.control.armed_left())
    }

    fn driver_step<'a>(
        s: &'a PulsarScriptFile,
        i: usize,
        verb: &'a PulsarVerb,
        control: &'a ScriptControlOf,
    ) -> StepFuture<'a> {
        // Every other driver verb is an assertion, checked through `assert`.
        if let PulsarVerb::Unload { partition, .. } = verb {
            let resource = match partition {
                Some(p) => Resource::Partition(control.partition(*p)),
                None => Resource::Coordinator(COORDINATOR_ID),
            };
            if let Err(e) = control.control.unload(&resource) {
                s.fail(i, format!("{resource} unloaded"), e);
            }
        }
        Box::pin(std::future::ready(()))
    }

    fn assert(
        s: &PulsarScriptFile,
        _: usize,
        verb: &PulsarVerb,
        control: &ScriptControlOf,
    ) -> Option<Mismatch> {
        check::assert(s, verb, control)
    }

    fn holds(s: &PulsarScriptFile, wait: &PulsarWait, control: &ScriptControlOf) -> bool {
        match wait {
            PulsarWait::TxnFinished(t) => s.with_state(|st| st.told.contains_key(t)),
            PulsarWait::TxnState { txn, state } => check::txn_record(control, txn) == *state,
        }
    }

    fn install(
        _: &PulsarScriptFile,
        rule: &PulsarRule,
        words: RuleWords,
        control: &ScriptControlOf,
    ) -> Result<RuleId, Mismatch> {
        let txn = begun_for_rule(rule.txn.as_deref(), |name| control.txn(name))?;
        Ok(control.control.intercept(Rule {
            call: rule.call.tag(),
            txn: txn.map(|t| t.seq),
            items: rule
                .partition
                .map(|p| vec![control.partition(p).to_string()]),
            from: rule.client.map(|c| pulsar_kinds::CLIENT.nth(c).to_string()),
            leg: words.leg,
            fate: words.fate,
            times: words.times,
        }))
    }
}
