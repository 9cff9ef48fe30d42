//! Property tests: random serial histories, executed one transaction after
//! another against an in-memory model store with unique values, must pass;
//! one mutated read or commit record must make them fail.

use percsim_checker::{
    CellState, FORMAT, FinalState, History, Op, Outcome, Transaction, Version, VersionKind, check,
    parse,
};
use proptest::prelude::*;
use proptest::sample::Index;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
struct Plan {
    client: u64,
    /// 0..70 committed, ..82 aborted, ..91 unknown but committed, else unknown and rolled back.
    fate: u8,
    /// Whether an unknown-but-committed client still reports its commit_ts,
    /// and whether a committed read-only one gets one at all (Percolator
    /// commits read-only transactions without a commit timestamp).
    report_commit: bool,
    /// (kind, cell): kind 0..5 read, 5..9 write, 9 delete.
    ops: Vec<(u8, u8)>,
}

fn plans() -> impl Strategy<Value = Vec<Plan>> {
    let plan = (
        0u64..4,
        0u8..100,
        any::<bool>(),
        prop::collection::vec((0u8..10, 0u8..6), 0..7),
    )
        .prop_map(|(client, fate, report_commit, ops)| Plan {
            client,
            fate,
            report_commit,
            ops,
        });
    prop::collection::vec(plan, 1..30)
}

/// Runs the plans serially against a model store and records the history.
fn build(plans: &[Plan]) -> History {
    let mut store: BTreeMap<String, Vec<Version>> = BTreeMap::new();
    let mut latest: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut ts = 1u64;
    let mut now = 1_000u64;
    let mut transactions = Vec::new();
    for (i, p) in plans.iter().enumerate() {
        let id = 100 + i as u64;
        let start = ts;
        ts += 1;
        let invoke = now;
        now += 10;
        let mut buffer: BTreeMap<String, Option<String>> = BTreeMap::new();
        let mut ops = Vec::new();
        for (k, &(kind, cell)) in p.ops.iter().enumerate() {
            let row = format!("r{cell}");
            let col = "c".to_string();
            match kind {
                0..5 => {
                    let value = match buffer.get(&row) {
                        Some(own) => own.clone(),
                        None => latest.get(&row).cloned().flatten(),
                    };
                    ops.push(Op::Read { row, col, value });
                }
                5..9 => {
                    let value = format!("v{id}_{k}");
                    buffer.insert(row.clone(), Some(value.clone()));
                    ops.push(Op::Write { row, col, value });
                }
                _ => {
                    buffer.insert(row.clone(), None);
                    ops.push(Op::Delete { row, col });
                }
            }
        }
        let (outcome, commits) = match p.fate {
            0..70 => (Outcome::Committed, true),
            70..82 => (Outcome::Aborted, false),
            82..91 => (Outcome::Unknown, true),
            _ => (Outcome::Unknown, false),
        };
        let mut commit_ts = None;
        let read_only_without_commit_ts =
            outcome == Outcome::Committed && buffer.is_empty() && !p.report_commit;
        if read_only_without_commit_ts {
            // Committed, with nothing to commit and no commit timestamp.
        } else if commits {
            let c = ts;
            ts += 1;
            for (row, value) in &buffer {
                store.entry(row.clone()).or_default().push(Version {
                    start_ts: start,
                    commit_ts: c,
                    kind: if value.is_some() {
                        VersionKind::Put
                    } else {
                        VersionKind::Delete
                    },
                    value: value.clone(),
                    data_missing: false,
                });
                latest.insert(row.clone(), value.clone());
            }
            if outcome == Outcome::Committed || p.report_commit {
                commit_ts = Some(c);
            }
        } else {
            for row in buffer.keys() {
                store.entry(row.clone()).or_default().push(Version {
                    start_ts: start,
                    commit_ts: start,
                    kind: VersionKind::Rollback,
                    value: None,
                    data_missing: false,
                });
            }
        }
        let complete_ns = if outcome == Outcome::Unknown {
            None
        } else {
            now += 10;
            Some(now)
        };
        transactions.push(Transaction {
            id,
            client: p.client,
            start_ts: start,
            commit_ts,
            invoke_ns: invoke,
            complete_ns,
            outcome,
            abort_reason: None,
            ops,
            scans: Vec::new(),
            observer: None,
        });
    }
    History {
        format: FORMAT.to_string(),
        model: None,
        seed: 0,
        scenario: serde_json::Value::Null,
        transactions,
        events: vec![],
        final_state: FinalState {
            cells: store
                .into_iter()
                .map(|(row, versions)| CellState {
                    row,
                    col: "c".to_string(),
                    versions,
                })
                .collect(),
            locks: vec![],
            notify: Vec::new(),
        },
        observers: Vec::new(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn serial_histories_pass(plans in plans()) {
        let h = build(&plans);
        let r = check(&h);
        prop_assert!(r.passed(), "{}", r.render_text());
        prop_assert_eq!(r.allowed.total, 0);
        // And through JSON, the way the CLI reads them.
        let again = parse(&serde_json::to_string(&h).unwrap()).expect("valid history");
        prop_assert_eq!(&again, &h);
        prop_assert!(check(&again).passed());
    }

    #[test]
    fn a_changed_read_fails(plans in plans(), pick in any::<Index>()) {
        let mut h = build(&plans);
        let reads: Vec<(usize, usize)> = h.transactions.iter().enumerate()
            .flat_map(|(i, t)| t.ops.iter().enumerate()
                .filter(|(_, o)| matches!(o, Op::Read { .. }))
                .map(move |(j, _)| (i, j)))
            .collect();
        prop_assume!(!reads.is_empty());
        let (i, j) = reads[pick.index(reads.len())];
        if let Op::Read { value, .. } = &mut h.transactions[i].ops[j] {
            *value = Some("mutated".to_string());
        }
        let r = check(&h);
        prop_assert!(r.violated_rules().contains(&"snapshot_reads"), "{}", r.render_text());
        let f = &r.rule("snapshot_reads").unwrap().violations[0];
        prop_assert_eq!(f.txns[0], h.transactions[i].id);
    }

    #[test]
    fn a_moved_commit_record_fails(plans in plans(), pick in any::<Index>(), delta in 1u64..5, down in any::<bool>()) {
        let mut h = build(&plans);
        let reported: BTreeMap<u64, u64> = h.transactions.iter()
            .filter_map(|t| t.commit_ts.map(|c| (t.start_ts, c)))
            .collect();
        let records: Vec<(usize, usize)> = h.final_state.cells.iter().enumerate()
            .flat_map(|(i, c)| c.versions.iter().enumerate()
                .filter(|(_, v)| v.kind != VersionKind::Rollback && reported.contains_key(&v.start_ts))
                .map(move |(j, _)| (i, j)))
            .collect();
        prop_assume!(!records.is_empty());
        let (i, j) = records[pick.index(records.len())];
        let v = &mut h.final_state.cells[i].versions[j];
        v.commit_ts = if down && v.commit_ts > delta { v.commit_ts - delta } else { v.commit_ts + delta };
        let r = check(&h);
        prop_assert!(r.violated_rules().contains(&"atomic_commits"), "{}", r.render_text());
    }

    #[test]
    fn a_dropped_commit_record_of_a_multi_write_transaction_fails(plans in plans(), pick in any::<Index>(), which in any::<Index>()) {
        let mut h = build(&plans);
        let mut by_start: BTreeMap<u64, Vec<(usize, usize)>> = BTreeMap::new();
        for (i, c) in h.final_state.cells.iter().enumerate() {
            for (j, v) in c.versions.iter().enumerate() {
                if v.kind != VersionKind::Rollback {
                    by_start.entry(v.start_ts).or_default().push((i, j));
                }
            }
        }
        let multi: Vec<&Vec<(usize, usize)>> = by_start.values().filter(|v| v.len() >= 2).collect();
        prop_assume!(!multi.is_empty());
        let group = multi[pick.index(multi.len())];
        let (i, j) = group[which.index(group.len())];
        let start = h.final_state.cells[i].versions[j].start_ts;
        h.final_state.cells[i].versions.remove(j);
        let r = check(&h);
        prop_assert!(r.violated_rules().contains(&"atomic_commits"), "{}", r.render_text());
        let id = h.transactions.iter().find(|t| t.start_ts == start).unwrap().id;
        let f = &r.rule("atomic_commits").unwrap().violations[0];
        prop_assert_eq!(&f.txns, &vec![id]);
    }
}

/// `h` with every value renamed by appending `suffix` (writes, reads and the
/// store's versions alike, so a passing history still passes).
fn renamed(mut h: History, suffix: &str) -> History {
    let rename = |v: &mut String| v.push_str(suffix);
    for t in &mut h.transactions {
        for op in &mut t.ops {
            match op {
                Op::Read { value: Some(v), .. } | Op::Write { value: v, .. } => rename(v),
                _ => {}
            }
        }
    }
    for c in &mut h.final_state.cells {
        for v in &mut c.versions {
            if let Some(v) = v.value.as_mut() {
                rename(v);
            }
        }
    }
    h
}

/// `percsim check FILE`'s JSON report on `h` written to a file: the
/// streaming reader, with its hand-written scanner for the usual shape of
/// transactions and cells.
fn file_report(h: &History, case: u64) -> (i32, serde_json::Value) {
    let path = std::env::temp_dir().join(format!(
        "percsim-properties-{}-{case}.json",
        std::process::id()
    ));
    std::fs::write(&path, serde_json::to_string(h).unwrap()).unwrap();
    let mut out = Vec::new();
    let code = percsim_checker::run_check_file(&path, true, &mut out);
    let _ = std::fs::remove_file(&path);
    (code, serde_json::from_slice(&out).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Reading a file gives the same report as checking the history in
    /// memory, passing or not, whether its values are plain ASCII (the
    /// scanner's shape) or need escapes or are not ASCII (the visitors'),
    /// mixed in one file.
    #[test]
    fn a_file_is_judged_as_the_history_in_memory(
        plans in plans(),
        suffix in prop::sample::select(vec!["", "x", "\"q\"", "\\", "é", "\n", "\u{1F600}"]),
        pick in any::<Index>(),
        mutate in any::<bool>(),
        case in any::<u64>(),
    ) {
        let mut h = renamed(build(&plans), suffix);
        let reads: Vec<(usize, usize)> = h.transactions.iter().enumerate()
            .flat_map(|(i, t)| t.ops.iter().enumerate()
                .filter(|(_, o)| matches!(o, Op::Read { .. }))
                .map(move |(j, _)| (i, j)))
            .collect();
        if mutate && !reads.is_empty() {
            let (i, j) = reads[pick.index(reads.len())];
            if let Op::Read { value, .. } = &mut h.transactions[i].ops[j] {
                *value = Some("mutated".to_string());
            }
        }
        let in_memory = check(&h);
        let (code, from_file) = file_report(&h, case);
        prop_assert_eq!(code, if in_memory.passed() { 0 } else { 1 });
        prop_assert_eq!(from_file, serde_json::to_value(&in_memory).unwrap());
    }
}
