//! The one run path: run a scenario, check its history once, and return a
//! verdict. `percsim run` and `replay`, `fuzz`, `ablations`, `bench` and
//! the tests all call [`judge`].

use crate::scenario::{Scenario, ScenarioError};
use percsim_checker::stream::{StreamHistory, StreamReport};
use percsim_checker::{History, Report};
use percsim_sim::{RunOutput, SystemHistory};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How a seed ended, declared from best to worst: the derived order is the
/// ranking a campaign's summary reports its worst verdict by (safety over
/// crash over nondeterminism over stuck over a failed expectation over
/// liveness).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every check passed.
    Pass,
    /// The cluster did not converge in the healed phase.
    Liveness,
    /// A script's own expectation did not hold (a value, an outcome, a
    /// stored cell or a count the scenario's author wrote down), while the
    /// checker found no safety violation.
    ExpectationFailed,
    /// The watchdog ended the run: simulated time ran past the run's phases
    /// (plus a margin), or the run exceeded its wall-time or memory budget.
    Stuck,
    /// The same seed gave two different histories.
    Nondeterministic,
    /// The simulation itself crashed (a panic, or a tripped invariant).
    Crash,
    /// The checker or a workload invariant found a safety violation.
    Safety,
}

impl Verdict {
    /// The process exit code for this verdict: 0 pass, 1 safety, 3
    /// liveness, 4 crash, 5 nondeterminism, 6 stuck, 7 a script's
    /// expectation failed (2 is bad input).
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Pass => 0,
            Verdict::Safety => 1,
            Verdict::Liveness => 3,
            Verdict::Crash => 4,
            Verdict::Nondeterministic => 5,
            Verdict::Stuck => 6,
            Verdict::ExpectationFailed => 7,
        }
    }
}

/// One seed's result, as a JSON line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedResult {
    /// The system the seed ran (lines written before systems were named
    /// leave it out: a merge takes the system whose workload it ran).
    #[serde(default)]
    pub system: String,
    /// The seed.
    pub seed: u64,
    /// How it ended.
    pub verdict: Verdict,
    /// The workload.
    pub workload: String,
    /// Transactions committed, aborted and unknown.
    pub committed: u64,
    /// Aborted transactions.
    pub aborted: u64,
    /// Transactions with unknown outcome.
    pub unknown: u64,
    /// Simulated time in ms.
    pub sim_ms: u64,
    /// Checker rules that failed.
    pub violated_rules: Vec<String>,
    /// A short explanation for a failure.
    pub explanation: Option<String>,
    /// Counters (events, cleanups, aborts by reason).
    pub counters: BTreeMap<String, u64>,
    /// Wall time spent on the seed (ms).
    pub wall_ms: u64,
    /// The failure capsule saved for the seed, if one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capsule: Option<String>,
    /// The faults the scenario configured that never happened in this run
    /// (filled by the commands that run a user's scenario: `percsim run`,
    /// `replay` and `fuzz --scenario`; see [`not_fired`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_fired: Vec<String>,
}

impl SeedResult {
    /// A result for `seed` of `system`'s `workload` with nothing counted yet.
    pub fn empty(system: &str, seed: u64, workload: &str) -> Self {
        SeedResult {
            system: system.to_string(),
            seed,
            verdict: Verdict::Pass,
            workload: workload.to_string(),
            committed: 0,
            aborted: 0,
            unknown: 0,
            sim_ms: 0,
            violated_rules: Vec::new(),
            explanation: None,
            counters: BTreeMap::new(),
            wall_ms: 0,
            capsule: None,
            not_fired: Vec::new(),
        }
    }
}

/// Where a judged run spent its wall time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timing {
    /// Running the simulation.
    pub simulate: Duration,
    /// Checking the history.
    pub check: Duration,
}

/// A run's outcome with the checker's verdict.
pub struct Judged {
    /// The per-seed result.
    pub result: SeedResult,
    /// The system's history, in its own format, kept for capsules (none
    /// if the run crashed).
    pub history: Option<SystemHistory>,
    /// The checker's report on a `percsim-history/1` history (judged once, here).
    pub report: Option<Report>,
    /// The stream checker's report on a `percsim-stream-history/1` history.
    pub stream_report: Option<StreamReport>,
    /// Simulated time of the run, in ns (0 if it crashed).
    pub sim_ns: u64,
    /// Wall time spent simulating and checking.
    pub timing: Timing,
}

impl Judged {
    /// The `percsim-history/1` history, if the run wrote that format.
    pub fn transactions(&self) -> Option<&History> {
        self.history.as_ref()?.transactions()
    }

    /// The `percsim-stream-history/1` history, if the run wrote that format.
    pub fn stream(&self) -> Option<&StreamHistory> {
        self.history.as_ref()?.stream()
    }
}

/// The name a failed script expectation is listed under in
/// `violated_rules` (a script's expectations are its author's, not the
/// checker's rules nor a workload invariant).
pub const EXPECTATION_RULE: &str = "script_expectation";

/// The name a configured fault that never fired is listed under in
/// `violated_rules` when a single run requires it ([`require_fired`]).
pub const NOT_FIRED_RULE: &str = "configured_fault_fired";

/// The faults `scenario` configured that never happened in the judged run
/// (a crash or pause keyed to a transaction number the run never reached),
/// each named by its path in the scenario file; none if the run wrote no
/// history.
pub fn not_fired(scenario: &Scenario, judged: &Judged) -> Vec<String> {
    judged
        .history
        .as_ref()
        .map_or_else(Vec::new, |h| scenario.spec.not_fired(h))
}

/// A single run of a user's scenario must do what its scenario file
/// configured: each fault that never fired is recorded in the result and
/// named in its explanation, and a run that passed otherwise fails as an
/// unmet expectation (exit code 7). A fault that did not happen is never
/// counted as injected (the counters count stops that happened).
pub fn require_fired(scenario: &Scenario, judged: &mut Judged) {
    let left = not_fired(scenario, judged);
    if left.is_empty() {
        return;
    }
    let r = &mut judged.result;
    let lines: Vec<String> = left.iter().map(|l| format!("not fired: {l}")).collect();
    let text = format!(
        "{}\n(the run never reached what the entry is keyed to: the transaction aborted or only read, or the node never got there; arm the stop in a script step, or pick another seed)",
        lines.join("\n")
    );
    r.explanation = Some(match r.explanation.take() {
        Some(e) => format!("{text}\n\n{e}"),
        None => text,
    });
    if r.verdict == Verdict::Pass {
        r.verdict = Verdict::ExpectationFailed;
        r.violated_rules.push(NOT_FIRED_RULE.into());
    }
    r.not_fired = left;
}

/// Checker findings that restate a liveness failure: a run that did not
/// converge leaves locks and notifications behind by definition (and a
/// transaction whose other cells are still locked looks partial too).
fn restates_liveness(class: &str) -> bool {
    use percsim_checker::FindingClass as C;
    matches!(
        C::from_name(class),
        Some(C::LockLeft | C::NotifyLeft | C::UnprocessedChange | C::PartialCommit)
    )
}

/// Stream findings that restate a liveness failure: what a run that did
/// not converge leaves undone (`StreamFindingClass::restates_non_convergence`
/// says which classes, and why the others stay safety violations). A class
/// this build does not know is a safety finding.
fn stream_restates_liveness(class: &str) -> bool {
    percsim_checker::stream::StreamFindingClass::from_name(class)
        .is_some_and(|c| c.restates_non_convergence())
}

/// Run `scenario`, check its history, and return the verdict; with
/// `check_determinism`, run it twice and compare the histories.
pub fn judge(scenario: &Scenario, check_determinism: bool) -> Judged {
    let mut judged = judge_once(scenario);
    if check_determinism {
        compare_with_rerun(scenario, &mut judged);
    }
    judged
}

/// Run a second time and mark the result nondeterministic if the history differs.
fn compare_with_rerun(scenario: &Scenario, judged: &mut Judged) {
    let text = |h: Option<&SystemHistory>| h.map(|h| serde_json::to_string(h).unwrap_or_default());
    let again = scenario.run().ok();
    let a = text(judged.history.as_ref());
    let b = text(again.as_ref().map(|o| &o.history));
    if a != b {
        judged.result.verdict = Verdict::Nondeterministic;
        judged.result.explanation = Some(format!(
            "seed {} gave two different histories ({} and {} bytes)",
            scenario.seed,
            a.map_or(0, |s| s.len()),
            b.map_or(0, |s| s.len())
        ));
    }
}

fn judge_once(scenario: &Scenario) -> Judged {
    let started = Instant::now();
    verdict_of(scenario, scenario.run(), started)
}

/// Judge the result `run` of running `scenario` (started at `started`): a
/// crashed run (a panic, a tripped invariant) is a crash verdict naming the
/// seed; otherwise the history is checked once.
pub fn verdict_of(
    scenario: &Scenario,
    run: Result<RunOutput, ScenarioError>,
    started: Instant,
) -> Judged {
    let mut result = SeedResult::empty(scenario.system(), scenario.seed, scenario.workload_name());
    let out = match run {
        Ok(out) => out,
        Err(e) => {
            result.verdict = match e {
                ScenarioError::Stuck(_) => Verdict::Stuck,
                _ => Verdict::Crash,
            };
            result.explanation = Some(match e {
                ScenarioError::Crashed(m) => format!("seed {}: {m}", scenario.seed),
                e => e.to_string(),
            });
            result.wall_ms = started.elapsed().as_millis() as u64;
            let timing = Timing {
                simulate: started.elapsed(),
                check: Duration::ZERO,
            };
            return Judged {
                result,
                history: None,
                report: None,
                stream_report: None,
                sim_ns: 0,
                timing,
            };
        }
    };
    let simulate = started.elapsed();
    let report = out.transactions().map(percsim_checker::check);
    let liveness = (out.transactions().map(percsim_checker::check_liveness)).or_else(|| {
        out.stream()
            .map(percsim_checker::stream::check_stream_liveness)
    });
    let stream_report = out.stream().map(percsim_checker::stream::check);
    let check = started.elapsed() - simulate;
    let s = &out.summary;
    result.committed = s.committed;
    result.aborted = s.aborted;
    result.unknown = s.unknown;
    result.sim_ms = s.sim_ns / 1_000_000;
    result.counters = s.counters.clone();
    // Any finding other than a restatement of a liveness failure is a
    // safety violation all the same.
    result.violated_rules = violated(
        report.as_ref(),
        stream_report.as_ref(),
        s.liveness_failure.is_some(),
    );
    // A script's violations are its author's expectations, not invariants.
    let expectations = scenario.spec.expectations();
    let safety = !result.violated_rules.is_empty();
    if !s.workload_violations.is_empty() {
        let rule = if expectations {
            EXPECTATION_RULE
        } else {
            "workload_invariant"
        };
        result.violated_rules.push(rule.into());
    }
    if !result.violated_rules.is_empty() {
        result.verdict = if safety || !expectations {
            Verdict::Safety
        } else {
            Verdict::ExpectationFailed
        };
        let checked = render(report.as_ref(), stream_report.as_ref());
        let label = if expectations {
            "expectation failed"
        } else {
            "workload invariant"
        };
        result.explanation = Some(explain(&checked, label, &s.workload_violations, safety));
    } else if let Some(l) = &s.liveness_failure {
        result.verdict = Verdict::Liveness;
        let text = render(report.as_ref(), stream_report.as_ref());
        // The liveness rules say what stayed undone, and since when.
        let rules = match liveness.as_ref().filter(|l| !l.passed()) {
            Some(live) => {
                let names = live.findings.iter().map(|f| f.rule.name().to_string());
                result.violated_rules.extend(names);
                result.violated_rules.dedup();
                format!("{}\n", live.render_text())
            }
            None => String::new(),
        };
        result.explanation = Some(format!("liveness: {l}\n\n{rules}{text}"));
    } else if let Some(live) = liveness.as_ref().filter(|l| !l.passed()) {
        result.verdict = Verdict::Liveness;
        result
            .violated_rules
            .extend(live.findings.iter().map(|f| f.rule.name().to_string()));
        result.violated_rules.dedup();
        result.explanation = Some(live.render_text());
    }
    result.wall_ms = started.elapsed().as_millis() as u64;
    Judged {
        result,
        sim_ns: s.sim_ns,
        history: Some(out.history),
        report,
        stream_report,
        timing: Timing { simulate, check },
    }
}

/// A failure's explanation: the checker's report first when it found the
/// violation; else the workload's own failures (`label: ...`) first, then
/// the report, introduced so that its PASS is not read as the run's.
fn explain(checked: &str, label: &str, violations: &[String], safety: bool) -> String {
    let own: Vec<String> = violations.iter().map(|v| format!("{label}: {v}")).collect();
    if safety || own.is_empty() {
        let mut text = checked.to_string();
        for line in &own {
            text.push_str(&format!("\n{line}"));
        }
        return text;
    }
    format!(
        "{}\n\nthe history checker found no violation of the protocol's rules (the failure is the {label} above):\n{checked}",
        own.join("\n")
    )
}

/// The rules a run's history broke, by whichever checker judged it
/// (findings that restate a liveness failure left out when `liveness`).
fn violated(report: Option<&Report>, stream: Option<&StreamReport>, liveness: bool) -> Vec<String> {
    let mut rules: Vec<String> = report
        .iter()
        .flat_map(|r| &r.rules)
        .filter(|r| !r.passed)
        .filter(|r| !liveness || r.counts.keys().any(|c| !restates_liveness(c)))
        .map(|r| r.id.clone())
        .collect();
    rules.extend(
        stream
            .iter()
            .flat_map(|r| &r.rules)
            .filter(|r| !r.passed)
            .filter(|r| !liveness || r.counts.keys().any(|c| !stream_restates_liveness(c)))
            .map(|r| r.id.clone()),
    );
    rules
}

/// The text of whichever checker's report there is.
fn render(report: Option<&Report>, stream: Option<&StreamReport>) -> String {
    match (stream, report) {
        (Some(sr), _) => sr.render_text(),
        (None, Some(r)) => r.render_text(),
        (None, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::Verdict;

    #[test]
    fn a_failed_expectation_comes_before_the_checkers_pass() {
        let checked = "percsim check: PASS, all 9 rules hold (seed 1)\n3 transactions";
        let wrong = vec!["step 6 {...}: expected X; happened Y".to_string()];
        let text = super::explain(checked, "expectation failed", &wrong, false);
        let failed = text
            .find("expectation failed: step 6")
            .expect("the failure");
        let pass = text.find("check: PASS").expect("the checker's report");
        assert!(failed < pass, "{text}");
        assert!(text.contains("found no violation"), "{text}");
        // A violation the checker found leads.
        let broken = "percsim check: FAIL, 1 of 9 rules broken (seed 1)";
        let text = super::explain(broken, "expectation failed", &wrong, true);
        assert!(text.starts_with("percsim check: FAIL"), "{text}");
    }

    /// A missing output restates a failure to converge; a duplicate output,
    /// an aborted read, or a class this build does not know do not.
    #[test]
    fn only_unfinished_work_restates_a_stream_liveness_failure() {
        assert!(super::stream_restates_liveness("missing_output"));
        assert!(super::stream_restates_liveness("never_delivered"));
        assert!(!super::stream_restates_liveness("duplicate_output"));
        assert!(!super::stream_restates_liveness("aborted_by_client"));
        assert!(!super::stream_restates_liveness("no_such_class"));
    }

    /// The derived order is the severity ranking: every verdict is worse
    /// than the one declared before it, and a pass is the best.
    #[test]
    fn the_derived_order_ranks_by_severity() {
        let ranked = [
            Verdict::Pass,
            Verdict::Liveness,
            Verdict::ExpectationFailed,
            Verdict::Stuck,
            Verdict::Nondeterministic,
            Verdict::Crash,
            Verdict::Safety,
        ];
        for pair in ranked.windows(2) {
            assert!(
                pair[0] < pair[1],
                "{:?} must rank below {:?}",
                pair[0],
                pair[1]
            );
        }
        assert_eq!(ranked.iter().max(), Some(&Verdict::Safety));
    }
}
