//! The rule ids and finding classes the docs list are exactly those the
//! checker's enums name: a rename on either side fails here.

use percsim_checker::stream::{StreamFindingClass, StreamRule};
use percsim_checker::{FindingClass, Rule, RuleOf};
use std::collections::BTreeMap;

/// The rows `| `rule_id` | ... | classes |` of the tables in `doc`: rule id
/// -> the backquoted names of the last column, sorted.
fn doc_table(doc: &str) -> BTreeMap<String, Vec<String>> {
    table_of(&doc_text(doc))
}

fn doc_text(doc: &str) -> String {
    let path = format!("{}/../docs/{doc}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn table_of(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split(" | ").collect();
        let Some(id) = cols[0]
            .strip_prefix("| `")
            .and_then(|c| c.strip_suffix('`'))
        else {
            continue;
        };
        if cols.len() < 3 {
            continue;
        }
        let last = cols[cols.len() - 1];
        let mut names: Vec<String> = last
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        names.sort();
        rows.insert(id.to_string(), names);
    }
    rows
}

fn sorted(names: impl Iterator<Item = &'static str>) -> Vec<String> {
    let mut v: Vec<String> = names.map(str::to_string).collect();
    v.sort();
    v
}

/// The names (spelt by `name`) of the classes `rule` reports that fail a
/// check: the allowed class (write skew) is described below the tables.
fn failing_classes(rule: Rule, name: fn(FindingClass) -> &'static str) -> Vec<String> {
    sorted(rule.classes().filter(|c| !c.is_allowed()).map(name))
}

#[test]
fn history_format_lists_every_rule_and_class() {
    let table = doc_table("history-format.md");
    for rule in &Rule::ALL[..8] {
        let want = failing_classes(*rule, FindingClass::name);
        assert_eq!(table.get(rule.name()), Some(&want), "rule {rule}");
    }
}

#[test]
fn interop_lists_the_elle_rules_classes() {
    let table = doc_table("interop.md");
    for rule in [Rule::ConsistentLists, Rule::NoDependencyCycles] {
        let want = failing_classes(rule, FindingClass::elle_name);
        assert_eq!(table.get(rule.name()), Some(&want), "rule {rule}");
    }
}

#[test]
fn history_format_lists_every_stream_rule_and_class() {
    let table = doc_table("history-format.md");
    for rule in StreamRule::ALL {
        let want = sorted(rule.classes().map(StreamFindingClass::name));
        assert_eq!(table.get(rule.name()), Some(&want), "rule {rule}");
    }
}

#[test]
fn a_renamed_class_in_the_docs_is_caught() {
    let text = doc_text("history-format.md").replace("`lock_left`", "`locks_left`");
    let table = table_of(&text);
    let rule = Rule::AtomicCommits;
    let want = sorted(rule.classes().map(FindingClass::name));
    let got = table.get(rule.name()).expect("the row is still there");
    assert_ne!(got, &want);
    assert!(got.contains(&"locks_left".to_string()));
}
