//! The verdict: per-rule results, the first few findings of each class with
//! explanations, the allowed anomalies, and their text rendering.

use crate::FindingClass;
use crate::identity::{ClassOf, Named};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::fmt::Write as _;

/// How many findings of each class a report shows in full; the rest are counted.
pub(crate) const SHOWN_PER_CLASS: u64 = 5;

/// The tag of the JSON report format.
pub(crate) const REPORT_FORMAT: &str = "percsim-check/1";

/// The checker's verdict on one history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Always `percsim-check/1`.
    pub format: String,
    /// True when every rule holds (allowed anomalies do not count against it).
    pub passed: bool,
    /// The seed the history says it was made with.
    pub seed: u64,
    /// What the history contained.
    pub stats: Stats,
    /// The consistency model the verdict is judged against (a
    /// [`crate::Model`] name: the one asked for, else the one the history
    /// names, else `snapshot-isolation`).
    pub model: String,
    /// Why that model: `asked` (`--model`), `history` (the history names
    /// it) or `default` (it names none): a [`crate::ModelSource`] name.
    pub model_source: String,
    /// Every model the history satisfies, strongest first (the findings of
    /// every class, allowed or not, weighed against each model).
    pub satisfies: Vec<String>,
    /// One entry per rule, in a fixed order, whether it held or not.
    pub rules: Vec<RuleReport>,
    /// Anomalies the model allows (under snapshot isolation, write skew):
    /// shown, never a failure.
    pub allowed: AllowedAnomalies,
}

/// Counts describing the history that was checked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Transactions in the history.
    pub transactions: u64,
    /// Transactions their client reported committed.
    pub committed: u64,
    /// Transactions their client reported aborted.
    pub aborted: u64,
    /// Transactions whose client could not tell.
    pub unknown: u64,
    /// Transactions committed in the store although their client did not report it.
    pub committed_in_store_only: u64,
    /// Read operations.
    pub reads: u64,
    /// Write and delete operations.
    pub writes: u64,
    /// Distinct cells mentioned anywhere.
    pub cells: u64,
    /// Cells whose written values are all distinct, used for the dependency graph.
    pub unique_value_cells: u64,
    /// Write records in the final state (puts, deletes and rollbacks).
    pub store_versions: u64,
    /// Locks left in the final state.
    pub locks: u64,
    /// Edges of the dependency graph (ww, wr, rw and real-time links).
    pub graph_edges: u64,
    /// Observers the history declares.
    pub observers: u64,
    /// Transactions marked as observer runs (of any outcome).
    pub observer_runs: u64,
    /// Notify entries left in the final state.
    pub notify_entries: u64,
}

/// The result of one rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleReport {
    /// Stable snake_case id, e.g. `snapshot_reads`.
    pub id: String,
    /// What the rule demands, in plain words.
    pub name: String,
    /// True when no violation was found.
    pub passed: bool,
    /// Number of violations found, of all classes.
    pub total: u64,
    /// Number of violations per class.
    pub counts: BTreeMap<String, u64>,
    /// The first few violations of each class, grouped by class.
    pub violations: Vec<Finding>,
    /// A remark on how the rule was applied, e.g. that there was nothing to
    /// check (`no observers declared`); absent when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Anomalies that the model judged permits, reported for information.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AllowedAnomalies {
    /// Number found, of all classes.
    pub total: u64,
    /// Number found per class (for example `G2-item`).
    pub counts: BTreeMap<String, u64>,
    /// The first few of each class.
    pub examples: Vec<Finding>,
}

/// One violation (or allowed anomaly), explained.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The id of the rule it belongs to.
    pub rule: String,
    /// Its class within the rule, e.g. `stale_read`, `partial_commit` or `G-single`.
    pub class: String,
    /// One sentence saying what is wrong.
    pub summary: String,
    /// The ids of the transactions involved, most relevant first.
    pub txns: Vec<u64>,
    /// Supporting lines: the transactions involved with their timestamps and ops.
    pub details: Vec<String>,
    /// For a dependency cycle, the cycle step by step; empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cycle: Vec<CycleStep>,
}

/// One edge of a dependency cycle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CycleStep {
    /// The transaction the edge leaves.
    pub from: u64,
    /// The transaction the edge enters.
    pub to: u64,
    /// `ww`, `wr`, `rw` or `rt` (real time).
    pub edge: String,
    /// Why the edge exists, in plain words.
    pub explanation: String,
}

impl Report {
    /// True when every rule holds. Allowed anomalies do not make it false.
    pub fn passed(&self) -> bool {
        self.rules.iter().all(|r| r.passed)
    }

    /// True when the history is snapshot isolated as far as the rules can
    /// tell: no finding of a class snapshot isolation forbids.
    pub fn snapshot_isolated(&self) -> bool {
        self.satisfies(crate::Model::SnapshotIsolation)
    }

    /// True when, in addition, no anomaly snapshot isolation allows (G2-item,
    /// write skew) was found: the dependency graph is acyclic.
    pub fn serializable(&self) -> bool {
        self.satisfies(crate::Model::Serializable)
    }

    /// True when the history satisfies `model` (it is among
    /// [`Report::satisfies`]).
    pub fn satisfies(&self, model: crate::Model) -> bool {
        self.satisfies.iter().any(|m| m == model.name())
    }

    /// The ids of the rules that were broken, in report order.
    pub fn violated_rules(&self) -> Vec<&str> {
        violated(&self.rules)
    }

    /// The result of the rule with this id, if there is such a rule.
    pub fn rule(&self, id: &str) -> Option<&RuleReport> {
        find_rule(&self.rules, id)
    }

    /// A human-readable rendering of the whole report.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let broken = self.violated_rules().len();
        if broken == 0 {
            let _ = writeln!(
                out,
                "percsim check: PASS, all {} rules hold (seed {})",
                self.rules.len(),
                self.seed
            );
        } else {
            let _ = writeln!(
                out,
                "percsim check: FAIL, {broken} of {} rules broken (seed {})",
                self.rules.len(),
                self.seed
            );
        }
        let s = &self.stats;
        let _ = writeln!(
            out,
            "{} transactions ({} committed, {} aborted, {} unknown; {} committed in the store only), \
             {} reads, {} writes, {} cells ({} with unique values), {} store versions, {} locks left",
            s.transactions,
            s.committed,
            s.aborted,
            s.unknown,
            s.committed_in_store_only,
            s.reads,
            s.writes,
            s.cells,
            s.unique_value_cells,
            s.store_versions,
            s.locks
        );
        let _ = writeln!(out, "{}", self.model_line());
        if s.observers > 0 || s.observer_runs > 0 || s.notify_entries > 0 {
            let _ = writeln!(
                out,
                "{}, {}, {} left",
                plural(s.observers, "observer declared", "observers declared"),
                plural(s.observer_runs, "observer run", "observer runs"),
                plural(s.notify_entries, "notify entry", "notify entries")
            );
        }
        render_rules(&mut out, &self.rules, Details::Plain);
        if self.allowed.total > 0 {
            out.push('\n');
            let _ = writeln!(
                out,
                "Allowed under {} (shown for information, not violations):",
                self.model_prose()
            );
            render_findings(
                &mut out,
                self.allowed.total,
                &self.allowed.counts,
                &self.allowed.examples,
                "anomaly",
                Details::Plain,
            );
        }
        out
    }
}

impl Report {
    /// The model judged against, why, and the models the history satisfies,
    /// e.g. `model: snapshot-isolation (default: the history names no
    /// model); satisfies: serializable, ...`.
    pub(crate) fn model_line(&self) -> String {
        let satisfies = if self.satisfies.is_empty() {
            "none of the models".to_string()
        } else {
            self.satisfies.join(", ")
        };
        format!(
            "model: {} ({}); satisfies: {satisfies}",
            self.model,
            self.model_source_words()
        )
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// How a finding's details are printed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Details {
    /// One indented line each.
    Plain,
    /// One indented line each, numbered from 1 (steps of an explanation).
    Numbered,
}

/// The ids of the broken rules among `rules`, in order.
pub(crate) fn violated(rules: &[RuleReport]) -> Vec<&str> {
    rules
        .iter()
        .filter(|r| !r.passed)
        .map(|r| r.id.as_str())
        .collect()
}

/// The report of the rule with this id among `rules`.
pub(crate) fn find_rule<'a>(rules: &'a [RuleReport], id: &str) -> Option<&'a RuleReport> {
    rules.iter().find(|r| r.id == id)
}

/// The text of every rule's verdict, with the findings of the broken ones.
pub(crate) fn render_rules(out: &mut String, rules: &[RuleReport], details: Details) {
    for rule in rules {
        out.push('\n');
        let verdict = if rule.passed { "PASS" } else { "FAIL" };
        let _ = writeln!(out, "{verdict}  {}: {}", rule.id, rule.name);
        if let Some(note) = &rule.note {
            let _ = writeln!(out, "      ({note})");
        }
        if !rule.passed {
            render_findings(
                out,
                rule.total,
                &rule.counts,
                &rule.violations,
                "violation",
                details,
            );
        }
    }
}

fn render_findings(
    out: &mut String,
    total: u64,
    counts: &BTreeMap<String, u64>,
    findings: &[Finding],
    noun: &str,
    style: Details,
) {
    let per_class: Vec<String> = counts.iter().map(|(c, n)| format!("{c} {n}")).collect();
    let plural = if total == 1 { "" } else { "s" };
    let _ = writeln!(
        out,
        "      {total} {noun}{plural}: {}",
        per_class.join(", ")
    );
    for (class, count) in counts {
        let shown: Vec<&Finding> = findings.iter().filter(|f| &f.class == class).collect();
        if (shown.len() as u64) < *count {
            let _ = writeln!(
                out,
                "      {class}: showing the first {} of {count}",
                shown.len()
            );
        }
        for f in shown {
            let _ = writeln!(out, "    - [{class}] {}", f.summary);
            if !f.cycle.is_empty() {
                let _ = writeln!(out, "        the cycle, step by step:");
                for (i, step) in f.cycle.iter().enumerate() {
                    let _ = writeln!(
                        out,
                        "        {}. T{} -{}-> T{}: {}",
                        i + 1,
                        step.from,
                        step.edge,
                        step.to,
                        step.explanation
                    );
                }
            }
            for (i, d) in f.details.iter().enumerate() {
                let _ = match style {
                    Details::Plain => writeln!(out, "        {d}"),
                    Details::Numbered => writeln!(out, "        {}. {d}", i + 1),
                };
            }
        }
    }
}

/// What a rule module says about one finding, before the sink files it.
pub(crate) struct Draft {
    pub summary: String,
    pub txns: Vec<u64>,
    pub details: Vec<String>,
    pub cycle: Vec<CycleStep>,
}

impl Draft {
    /// A finding without a cycle.
    pub(crate) fn new(summary: String, txns: Vec<u64>, details: Vec<String>) -> Draft {
        let mut seen = std::collections::BTreeSet::new();
        let unique: Vec<u64> = txns.into_iter().filter(|t| seen.insert(*t)).collect();
        Draft {
            summary,
            txns: unique,
            details,
            cycle: Vec::new(),
        }
    }
}

/// A finding as a stream rule states it: summary, transactions, details.
impl From<(String, Vec<u64>, Vec<String>)> for Draft {
    fn from((summary, txns, details): (String, Vec<u64>, Vec<String>)) -> Draft {
        Draft::new(summary, txns, details)
    }
}

/// Collects the findings of one rule, of any history format (`C` is its
/// classes): counts all, keeps the first few of each class.
pub(crate) struct Sink<C: ClassOf = FindingClass> {
    rule: C::Rule,
    total: u64,
    counts: BTreeMap<String, u64>,
    shown: Vec<Finding>,
    note: Option<String>,
}

impl<C: ClassOf + fmt::Display> Sink<C>
where
    C::Rule: fmt::Display,
{
    pub(crate) fn new(rule: C::Rule) -> Sink<C> {
        Sink {
            rule,
            total: 0,
            counts: BTreeMap::new(),
            shown: Vec::new(),
            note: None,
        }
    }

    /// Sets the rule's remark (see [`RuleReport::note`]).
    pub(crate) fn note(&mut self, note: String) {
        self.note = Some(note);
    }

    /// Files one finding of `class`, which must be one of the rule's
    /// classes; `make` runs only if it will be shown.
    pub(crate) fn add<D: Into<Draft>>(&mut self, class: C, make: impl FnOnce() -> D) {
        debug_assert!(
            class.rule_of() == self.rule,
            "{class} filed under {}",
            self.rule
        );
        let class = class.name();
        self.total += 1;
        let count = match self.counts.get_mut(class) {
            Some(c) => {
                *c += 1;
                *c
            }
            None => {
                self.counts.insert(class.to_string(), 1);
                1
            }
        };
        if count <= SHOWN_PER_CLASS {
            let d = make().into();
            self.shown.push(Finding {
                rule: self.rule.name().to_string(),
                class: class.to_string(),
                summary: d.summary,
                txns: d.txns,
                details: d.details,
                cycle: d.cycle,
            });
        }
    }

    /// Files what `later` holds after what this sink holds, as if its
    /// findings had been filed here, after these: the counts add up, and
    /// of each class only the first [`SHOWN_PER_CLASS`] are kept.
    pub(crate) fn absorb(&mut self, later: Sink<C>) {
        self.total += later.total;
        let before = self.counts.clone();
        let mut taken: BTreeMap<String, u64> = BTreeMap::new();
        for f in later.shown {
            let shown = before.get(&f.class).copied().unwrap_or(0);
            let k = taken.entry(f.class.clone()).or_default();
            *k += 1;
            if shown + *k <= SHOWN_PER_CLASS {
                self.shown.push(f);
            }
        }
        for (class, n) in later.counts {
            *self.counts.entry(class).or_default() += n;
        }
        // As `note` does: the last one set stands.
        if later.note.is_some() {
            self.note = later.note;
        }
    }

    fn sorted_findings(&mut self) -> (u64, BTreeMap<String, u64>, Vec<Finding>) {
        // Stable: keeps discovery order within a class.
        self.shown.sort_by(|a, b| a.class.cmp(&b.class));
        (
            self.total,
            std::mem::take(&mut self.counts),
            std::mem::take(&mut self.shown),
        )
    }

    pub(crate) fn into_rule(mut self, name: &str) -> RuleReport {
        let id = self.rule.name().to_string();
        let (total, counts, violations) = self.sorted_findings();
        RuleReport {
            id,
            name: name.to_string(),
            passed: total == 0,
            total,
            counts,
            violations,
            note: self.note,
        }
    }
}

impl Sink<FindingClass> {
    pub(crate) fn into_allowed(mut self) -> AllowedAnomalies {
        let (total, counts, examples) = self.sorted_findings();
        AllowedAnomalies {
            total,
            counts,
            examples,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rule;

    #[test]
    fn a_class_is_filed_under_its_rule_by_name() {
        let mut sink = Sink::new(Rule::AtomicCommits);
        sink.add(FindingClass::LockLeft, || {
            Draft::new("s".into(), vec![1], vec![])
        });
        let r = sink.into_rule("n");
        assert_eq!(r.id, "atomic_commits");
        assert_eq!(r.counts.get("lock_left"), Some(&1));
        assert_eq!(r.violations[0].class, "lock_left");
    }

    /// Findings filed in two sinks, the second absorbed into the first,
    /// report as the same findings filed in one: every count, and the
    /// first five of each class in filing order (each part holds more
    /// than five of a class).
    #[test]
    fn an_absorbed_sink_reports_as_if_filed_in_one() {
        let filed: Vec<(FindingClass, u64)> = (0..26)
            .map(|i| match i % 3 {
                0 | 1 => (FindingClass::G1a, i),
                _ => (FindingClass::G1b, i),
            })
            .collect();
        let file = |sink: &mut Sink, part: &[(FindingClass, u64)]| {
            for &(class, i) in part {
                sink.add(class, || {
                    Draft::new(format!("finding {i}"), vec![i], vec![])
                });
            }
        };
        let mut one = Sink::new(Rule::NoDependencyCycles);
        file(&mut one, &filed);
        let one = one.into_rule("n");
        for split in [0, 1, 4, 13, 25, 26] {
            let mut first = Sink::new(Rule::NoDependencyCycles);
            let mut second = Sink::new(Rule::NoDependencyCycles);
            file(&mut first, &filed[..split]);
            file(&mut second, &filed[split..]);
            first.absorb(second);
            assert_eq!(first.into_rule("n"), one, "split at {split}");
        }
        let r = one;
        assert_eq!(r.counts.get("G1a"), Some(&18));
        assert_eq!(r.violations.len(), 10);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "lock_left filed under snapshot_reads")]
    fn a_class_filed_under_another_rule_trips_an_assertion() {
        let mut sink = Sink::new(Rule::SnapshotReads);
        sink.add(FindingClass::LockLeft, || {
            Draft::new("s".into(), vec![1], vec![])
        });
    }
}
