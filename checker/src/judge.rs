//! A report judged against a consistency model: each finding is filed as a
//! violation of its rule when the model forbids its class, as an allowed
//! anomaly when it does not, and the models the history satisfies are
//! listed (see [`crate::model`]).

use crate::report::{Finding, Report};
use crate::{FindingClass, Model, ModelSource};
use std::collections::BTreeMap;

/// The findings of one class: how many, and the ones shown.
struct ClassFindings {
    class: FindingClass,
    name: String,
    count: u64,
    shown: Vec<Finding>,
}

impl Report {
    /// This report judged against `model`: a finding of a class the model
    /// forbids is a violation of its rule, one of a class it allows is an
    /// allowed anomaly; `passed`, each rule's verdict and `satisfies` follow.
    /// Judging again against another model gives that model's report.
    pub fn judged_by(mut self, model: Model, source: ModelSource) -> Report {
        let mut all = Vec::new();
        for rule in &mut self.rules {
            all.extend(take_classes(&mut rule.counts, &mut rule.violations));
            rule.total = 0;
        }
        all.extend(take_classes(
            &mut self.allowed.counts,
            &mut self.allowed.examples,
        ));
        self.allowed.total = 0;
        self.satisfies = Model::ALL
            .into_iter()
            .filter(|m| all.iter().all(|f| !m.forbids(f.class)))
            .map(|m| m.name().to_string())
            .collect();
        for found in all {
            let target = if model.forbids(found.class) {
                self.rules
                    .iter_mut()
                    .find(|r| r.id == found.class.rule().name())
                    .map(|r| (&mut r.total, &mut r.counts, &mut r.violations))
            } else {
                None
            };
            let a = &mut self.allowed;
            let (total, counts, shown) =
                target.unwrap_or((&mut a.total, &mut a.counts, &mut a.examples));
            *total += found.count;
            *counts.entry(found.name).or_insert(0) += found.count;
            shown.extend(found.shown);
        }
        for rule in &mut self.rules {
            rule.passed = rule.total == 0;
            sort_by_class(&mut rule.violations);
        }
        sort_by_class(&mut self.allowed.examples);
        self.passed = self.rules.iter().all(|r| r.passed);
        self.model = model.name().to_string();
        self.model_source = source.name().to_string();
        self
    }

    /// The model judged against, in words ("snapshot isolation").
    pub(crate) fn model_prose(&self) -> &'static str {
        Model::from_name(&self.model).map_or("the model", Model::prose)
    }

    /// Why the model was judged against, in words.
    pub(crate) fn model_source_words(&self) -> &'static str {
        ModelSource::ALL
            .into_iter()
            .find(|s| s.name() == self.model_source)
            .map_or("", ModelSource::describe)
    }
}

/// The findings of `counts` and `shown`, class by class, taken out of them.
/// A class name no class has (which no report made here holds) keeps its
/// findings where they are.
fn take_classes(
    counts: &mut BTreeMap<String, u64>,
    shown: &mut Vec<Finding>,
) -> Vec<ClassFindings> {
    let mut out = Vec::new();
    let names: Vec<String> = counts.keys().cloned().collect();
    for name in names {
        let Some(class) = class_named(&name) else {
            continue;
        };
        let count = counts.remove(&name).unwrap_or(0);
        let (mine, rest): (Vec<Finding>, Vec<Finding>) = std::mem::take(shown)
            .into_iter()
            .partition(|f| f.class == name);
        *shown = rest;
        out.push(ClassFindings {
            class,
            name,
            count,
            shown: mine,
        });
    }
    out
}

/// The class a report names `name`: its percsim name or its Elle name.
fn class_named(name: &str) -> Option<FindingClass> {
    FindingClass::ALL
        .into_iter()
        .find(|c| c.name() == name || c.elle_name() == name)
}

/// Findings grouped by class name, discovery order kept within a class
/// (as a report files them).
fn sort_by_class(findings: &mut [Finding]) {
    findings.sort_by(|a, b| a.class.cmp(&b.class));
}
