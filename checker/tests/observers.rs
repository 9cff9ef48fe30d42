//! The observer rules on histories built in code: a serial model of
//! Percolator's notifications must pass, and one marked run added or removed,
//! or one notify entry left, must fail the right rule; plus edge cases the
//! fixtures do not cover.

mod common;

use common::{HistoryBuilder, put, write};
use percsim_checker::{
    CellRef, CellState, FORMAT, FinalState, History, ObserverDecl, ObserverRun, Op, Outcome,
    Transaction, Version, VersionKind, check, parse,
};
use proptest::prelude::*;
use proptest::sample::Index;
use std::collections::BTreeMap;

const ONCE: &str = "observer_at_most_once";
const LOST: &str = "no_lost_notification";
const OBS: &str = "summer";
const WEAK: &str = "pinger";

fn ack_col() -> String {
    format!("v:ack:{OBS}")
}

fn decls() -> Vec<ObserverDecl> {
    vec![
        ObserverDecl {
            name: OBS.into(),
            col: "v".into(),
            weak: false,
        },
        ObserverDecl {
            name: WEAK.into(),
            col: "ping".into(),
            weak: true,
        },
    ]
}

#[derive(Debug, Clone, Copy)]
enum Step {
    /// Write row k's observed cell; the bool says whether it commits.
    Write(u8, bool),
    /// An observer scan of row k; the bool says whether its transaction commits.
    Run(u8, bool),
    /// A weak notification of row k, processed by this many runs.
    Weak(u8, u8),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        4 => (0u8..4, prop::bool::weighted(0.85)).prop_map(|(k, c)| Step::Write(k, c)),
        4 => (0u8..4, prop::bool::weighted(0.8)).prop_map(|(k, c)| Step::Run(k, c)),
        1 => (0u8..4, 1u8..3).prop_map(|(k, n)| Step::Weak(k, n)),
    ];
    prop::collection::vec(step, 0..30)
}

/// The serial model: one transaction at a time, against a store.
struct Model {
    ts: u64,
    now: u64,
    transactions: Vec<Transaction>,
    store: BTreeMap<(String, String), Vec<Version>>,
    /// Row -> (newest commit_ts of its observed cell, its value).
    latest: BTreeMap<u8, (u64, Option<String>)>,
    /// Row -> the acknowledgment (start_ts of the last committed run).
    ack: BTreeMap<u8, u64>,
    /// Row -> the last value written to its weak run's output cell.
    out: BTreeMap<u8, String>,
    dirty: BTreeMap<u8, bool>,
}

impl Model {
    fn new() -> Model {
        Model {
            ts: 1,
            now: 1_000,
            transactions: Vec::new(),
            store: BTreeMap::new(),
            latest: BTreeMap::new(),
            ack: BTreeMap::new(),
            out: BTreeMap::new(),
            dirty: BTreeMap::new(),
        }
    }

    fn record(&mut self, cell: (String, String), v: Version) {
        self.store.entry(cell).or_default().push(v);
    }

    /// Runs one transaction: `writes` are (row, col, value) committed at a
    /// fresh commit_ts when `commits`, rolled back otherwise.
    fn txn(
        &mut self,
        ops: Vec<Op>,
        writes: Vec<(String, String, String)>,
        commits: bool,
        observer: Option<ObserverRun>,
    ) -> (u64, Option<u64>) {
        let id = self.transactions.len() as u64 + 1;
        let start = self.ts;
        self.ts += 1;
        let commit = (commits && !writes.is_empty()).then(|| {
            self.ts += 1;
            self.ts - 1
        });
        for (row, col, value) in writes {
            let v = match commit {
                Some(c) => Version {
                    start_ts: start,
                    commit_ts: c,
                    kind: VersionKind::Put,
                    value: Some(value),
                    data_missing: false,
                },
                None => Version {
                    start_ts: start,
                    commit_ts: start,
                    kind: VersionKind::Rollback,
                    value: None,
                    data_missing: false,
                },
            };
            self.record((row, col), v);
        }
        let invoke = self.now;
        self.now += 100;
        self.transactions.push(Transaction {
            id,
            client: 1,
            start_ts: start,
            commit_ts: commit,
            invoke_ns: invoke,
            complete_ns: Some(invoke + 50),
            outcome: if commits {
                Outcome::Committed
            } else {
                Outcome::Aborted
            },
            abort_reason: None,
            ops,
            scans: Vec::new(),
            observer,
        });
        (start, commit)
    }

    fn read(row: u8, col: &str, value: Option<String>) -> Op {
        Op::Read {
            row: format!("r{row}"),
            col: col.into(),
            value,
        }
    }

    fn write(&mut self, k: u8, commits: bool) {
        let value = format!("w{}", self.ts);
        let op = Op::Write {
            row: format!("r{k}"),
            col: "v".into(),
            value: value.clone(),
        };
        let w = vec![(format!("r{k}"), "v".into(), value.clone())];
        if let (_, Some(c)) = self.txn(vec![op], w, commits, None) {
            self.latest.insert(k, (c, Some(value)));
            self.dirty.insert(k, true);
        }
    }

    /// An observer scan of row k: runs the body only if the cell changed
    /// after the last acknowledgment.
    fn run(&mut self, k: u8, commits: bool) {
        let (version, value) = self.latest.get(&k).cloned().unwrap_or((0, None));
        let ack = self.ack.get(&k).copied();
        let mut ops = vec![
            Self::read(k, "v", value),
            Self::read(k, &ack_col(), ack.map(|a| a.to_string())),
        ];
        let changed = version > 0 && ack.is_none_or(|a| version > a);
        if !changed {
            // Nothing new: a read-only transaction, not marked.
            self.txn(ops, vec![], true, None);
            self.dirty.insert(k, false);
            return;
        }
        let start = self.ts;
        ops.push(Op::Write {
            row: format!("r{k}"),
            col: ack_col(),
            value: start.to_string(),
        });
        let mark = ObserverRun {
            name: OBS.into(),
            row: format!("r{k}"),
            col: "v".into(),
        };
        let w = vec![(format!("r{k}"), ack_col(), start.to_string())];
        if let (s, Some(_)) = self.txn(ops, w, commits, Some(mark)) {
            self.ack.insert(k, s);
            self.dirty.insert(k, false);
        }
    }

    /// A weak notification of row k's `ping` (never written), processed by
    /// `runs` committed runs that each write the row's `out` cell.
    fn weak(&mut self, k: u8, runs: u8) {
        for _ in 0..runs {
            let value = format!("o{}", self.ts);
            let seen = self.out.get(&k).cloned();
            let ops = vec![
                Self::read(k, "out", seen),
                Op::Write {
                    row: format!("r{k}"),
                    col: "out".into(),
                    value: value.clone(),
                },
            ];
            let mark = ObserverRun {
                name: WEAK.into(),
                row: format!("r{k}"),
                col: "ping".into(),
            };
            let w = vec![(format!("r{k}"), "out".into(), value.clone())];
            self.txn(ops, w, true, Some(mark));
            self.out.insert(k, value);
        }
    }

    fn history(mut self, steps: &[Step]) -> History {
        for &s in steps {
            match s {
                Step::Write(k, c) => self.write(k, c),
                Step::Run(k, c) => self.run(k, c),
                Step::Weak(k, n) => self.weak(k, n),
            }
        }
        // Quiescence: the scanners process every dirty cell.
        let dirty: Vec<u8> = self
            .dirty
            .iter()
            .filter(|(_, d)| **d)
            .map(|(k, _)| *k)
            .collect();
        for k in dirty {
            self.run(k, true);
        }
        History {
            format: FORMAT.into(),
            model: None,
            seed: 1,
            scenario: serde_json::Value::Null,
            transactions: self.transactions,
            events: vec![],
            final_state: FinalState {
                cells: self
                    .store
                    .into_iter()
                    .map(|((row, col), versions)| CellState { row, col, versions })
                    .collect(),
                locks: vec![],
                notify: vec![],
            },
            observers: decls(),
        }
    }
}

fn model(steps: &[Step]) -> History {
    Model::new().history(steps)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn serial_observer_histories_pass(steps in steps()) {
        let h = model(&steps);
        let r = check(&h);
        prop_assert!(r.passed(), "{}", r.render_text());
        let again = parse(&serde_json::to_string(&h).unwrap()).expect("valid history");
        prop_assert_eq!(&again, &h);
    }

    #[test]
    fn marking_a_run_that_found_nothing_new_fails(steps in steps(), pick in any::<Index>()) {
        let mut h = model(&steps);
        // Committed read-only scans of the observed column: they found nothing new.
        let idle: Vec<usize> = h.transactions.iter().enumerate()
            .filter(|(_, t)| t.observer.is_none() && t.commit_ts.is_none()
                && t.outcome == Outcome::Committed)
            .map(|(i, _)| i)
            .collect();
        prop_assume!(!idle.is_empty());
        let i = idle[pick.index(idle.len())];
        let row = match &h.transactions[i].ops[0] {
            Op::Read { row, .. } => row.clone(),
            _ => unreachable!(),
        };
        h.transactions[i].observer = Some(ObserverRun { name: OBS.into(), row, col: "v".into() });
        let r = check(&h);
        prop_assert_eq!(r.violated_rules(), vec![ONCE], "{}", r.render_text());
        let f = &r.rule(ONCE).unwrap().violations[0];
        prop_assert!(f.txns.contains(&h.transactions[i].id));
    }

    #[test]
    fn unmarking_the_run_that_saw_the_last_change_fails(steps in steps(), pick in any::<Index>()) {
        let mut h = model(&steps);
        // The last committed marked run of the (non-weak) observer on each cell.
        let mut last: BTreeMap<String, usize> = BTreeMap::new();
        for (i, t) in h.transactions.iter().enumerate() {
            if let Some(o) = &t.observer
                && o.name == OBS
                && t.outcome == Outcome::Committed
            {
                last.insert(o.row.clone(), i);
            }
        }
        prop_assume!(!last.is_empty());
        let runs: Vec<usize> = last.into_values().collect();
        let i = runs[pick.index(runs.len())];
        h.transactions[i].observer = None;
        let r = check(&h);
        prop_assert_eq!(r.violated_rules(), vec![LOST], "{}", r.render_text());
        let rule = r.rule(LOST).unwrap();
        prop_assert_eq!(rule.counts.get("unprocessed_change"), Some(&1));
    }

    #[test]
    fn a_notify_entry_left_fails(steps in steps(), row in 0u8..4, weak in any::<bool>()) {
        let mut h = model(&steps);
        let col = if weak { "ping" } else { "v" };
        h.final_state.notify.push(CellRef { row: format!("r{row}"), col: col.into() });
        let r = check(&h);
        prop_assert_eq!(r.violated_rules(), vec![LOST], "{}", r.render_text());
        prop_assert_eq!(r.rule(LOST).unwrap().counts.get("notify_left"), Some(&1));
    }
}

#[test]
fn the_model_covers_collapsing_aborted_runs_and_weak_runs() {
    use Step::*;
    let h = model(&[
        Write(0, true),
        Write(0, true),
        Run(0, false),
        Run(0, true),
        Run(0, true),
        Weak(1, 2),
    ]);
    let marked = |name: &str| {
        h.transactions
            .iter()
            .filter(|t| t.observer.as_ref().is_some_and(|o| o.name == name))
            .count()
    };
    // One aborted and one committed run for two writes; the third scan found
    // nothing new; two weak runs.
    assert_eq!(marked(OBS), 2);
    assert_eq!(marked(WEAK), 2);
    let r = check(&h);
    assert!(r.passed(), "{}", r.render_text());
}

/// [`common::txn`], invoked at `10 * start` and completed 5 ns later.
fn txn(id: u64, start: u64, commit: Option<u64>, outcome: Outcome, ops: Vec<Op>) -> Transaction {
    Transaction {
        invoke_ns: 10 * start,
        complete_ns: Some(10 * start + 5),
        ..common::txn(id, start, commit, outcome, ops)
    }
}

fn marked(mut t: Transaction, name: &str, row: &str, col: &str) -> Transaction {
    t.observer = Some(ObserverRun {
        name: name.into(),
        row: row.into(),
        col: col.into(),
    });
    t
}

fn history(
    transactions: Vec<Transaction>,
    cells: Vec<((&str, &str), Vec<Version>)>,
    observers: Vec<ObserverDecl>,
) -> History {
    let b = HistoryBuilder::new()
        .txns(transactions)
        .observers(observers);
    cells
        .into_iter()
        .fold(b, |b, ((row, col), versions)| b.cell(row, col, versions))
        .build()
}

#[test]
fn without_observers_notify_entries_are_ignored_and_counted_in_the_note() {
    let mut h = history(vec![], vec![], vec![]);
    h.final_state.notify = vec![
        CellRef {
            row: "a".into(),
            col: "v".into(),
        },
        CellRef {
            row: "b".into(),
            col: "v".into(),
        },
    ];
    let r = check(&h);
    assert!(r.passed(), "{}", r.render_text());
    assert_eq!(
        r.rule(LOST).unwrap().note.as_deref(),
        Some("no observers declared: nothing to check (2 notify entries ignored)")
    );
    assert_eq!(r.stats.notify_entries, 2);
}

#[test]
fn a_run_committed_only_in_the_store_counts() {
    use Outcome::*;
    // T3's client does not know it committed; the store does. It is a second
    // run for T1's one change.
    let ack = ack_col();
    let t1 = txn(1, 1, Some(2), Committed, vec![write("x", "v", "a")]);
    let t2 = marked(
        txn(2, 3, Some(4), Committed, vec![write("x", &ack, "3")]),
        OBS,
        "x",
        "v",
    );
    let mut t3 = marked(
        txn(3, 5, None, Unknown, vec![write("x", &ack, "5")]),
        OBS,
        "x",
        "v",
    );
    t3.complete_ns = None;
    let h = history(
        vec![t1, t2, t3],
        vec![
            (("x", "v"), vec![put(1, 2, "a")]),
            (("x", ack.as_str()), vec![put(3, 4, "3"), put(5, 6, "5")]),
        ],
        decls(),
    );
    let r = check(&h);
    assert_eq!(r.violated_rules(), [ONCE], "{}", r.render_text());
    assert_eq!(r.rule(ONCE).unwrap().violations[0].txns, [2, 3]);
}

#[test]
fn two_observers_of_one_column_are_judged_separately() {
    use Outcome::*;
    let mut observers = decls();
    observers.push(ObserverDecl {
        name: "counter".into(),
        col: "v".into(),
        weak: false,
    });
    // T2 is summer's run after T1's change; counter never ran.
    let h = history(
        vec![
            txn(1, 1, Some(2), Committed, vec![write("x", "v", "a")]),
            marked(
                txn(
                    2,
                    3,
                    Some(4),
                    Committed,
                    vec![write("x", "v:ack:summer", "3")],
                ),
                OBS,
                "x",
                "v",
            ),
        ],
        vec![
            (("x", "v"), vec![put(1, 2, "a")]),
            (("x", "v:ack:summer"), vec![put(3, 4, "3")]),
        ],
        observers,
    );
    let r = check(&h);
    assert_eq!(r.violated_rules(), [LOST], "{}", r.render_text());
    let rule = r.rule(LOST).unwrap();
    assert_eq!(rule.total, 1);
    let f = &rule.violations[0];
    assert_eq!(f.class, "unprocessed_change");
    assert_eq!(f.txns, [1]);
    assert!(
        f.summary
            .contains("\"counter\" never committed a run on x.v"),
        "{}",
        f.summary
    );
}

#[test]
fn unprocessed_changes_are_capped_but_all_counted() {
    use Outcome::*;
    let mut txns = Vec::new();
    let mut cells = Vec::new();
    let rows: Vec<String> = (0..12).map(|i| format!("r{i}")).collect();
    for (i, row) in rows.iter().enumerate() {
        let s = 2 * i as u64 + 1;
        txns.push(txn(
            i as u64 + 1,
            s,
            Some(s + 1),
            Committed,
            vec![write(row, "v", "x")],
        ));
        cells.push(((row.as_str(), "v"), vec![put(s, s + 1, "x")]));
    }
    let r = check(&history(txns, cells, decls()));
    let rule = r.rule(LOST).unwrap();
    assert_eq!(rule.total, 12);
    assert_eq!(rule.counts.get("unprocessed_change"), Some(&12));
    assert_eq!(rule.violations.len(), 5);
    assert_eq!(rule.violations[0].txns, [1]);
    assert!(r.render_text().contains("showing the first 5 of 12"));
}

#[test]
fn check_never_panics_on_bad_observer_references() {
    use Outcome::*;
    // Parse would reject all of these; check judges what it can.
    let mut observers = decls();
    observers.push(observers[0].clone()); // a duplicate name
    let h = history(
        vec![
            txn(1, 1, Some(2), Committed, vec![write("x", "v", "a")]),
            marked(txn(2, 3, Some(4), Committed, vec![]), "nobody", "x", "v"),
            marked(txn(3, 5, Some(6), Committed, vec![]), OBS, "x", "elsewhere"),
            marked(txn(4, 7, Some(8), Committed, vec![]), OBS, "x", "v"),
            marked(txn(5, 7, Some(8), Committed, vec![]), OBS, "x", "v"),
        ],
        vec![(("x", "v"), vec![put(1, 2, "a")])],
        observers,
    );
    let r = check(&h);
    // T4 and T5 share a start_ts: a duplicate run (and a timestamp error).
    assert_eq!(r.rule(ONCE).unwrap().counts.get("duplicate_run"), Some(&1));
    assert!(r.rule(LOST).unwrap().passed);
    serde_json::to_string(&r).expect("serializable");
    let e = parse(&serde_json::to_string(&h).unwrap()).unwrap_err();
    assert_eq!(e.path(), Some("$.observers[2].name"));
}

#[test]
fn a_large_observer_history_is_judged_quickly() {
    // 50 000 cells, each written twice and processed once: linear work.
    let n = 50_000u64;
    let mut txns = Vec::new();
    let mut cells = Vec::new();
    let rows: Vec<String> = (0..n).map(|i| format!("r{i}")).collect();
    let ack = ack_col();
    for (i, row) in rows.iter().enumerate() {
        let s = 10 * i as u64 + 1;
        let id = 3 * i as u64;
        txns.push(txn(
            id + 1,
            s,
            Some(s + 1),
            Outcome::Committed,
            vec![write(row, "v", "a")],
        ));
        txns.push(txn(
            id + 2,
            s + 2,
            Some(s + 3),
            Outcome::Committed,
            vec![write(row, "v", "b")],
        ));
        let run = txn(
            id + 3,
            s + 4,
            Some(s + 5),
            Outcome::Committed,
            vec![write(row, &ack, "r")],
        );
        txns.push(marked(run, OBS, row, "v"));
        cells.push((
            (row.as_str(), "v"),
            vec![put(s, s + 1, "a"), put(s + 2, s + 3, "b")],
        ));
        cells.push(((row.as_str(), ack.as_str()), vec![put(s + 4, s + 5, "r")]));
    }
    let h = history(txns, cells, decls());
    let start = std::time::Instant::now();
    let r = check(&h);
    assert!(r.passed(), "{}", r.render_text());
    assert_eq!(r.stats.observer_runs, n);
    assert!(start.elapsed().as_secs() < 30, "took {:?}", start.elapsed());
}

#[test]
fn the_documented_observer_example_is_a_valid_passing_history() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/history-format.md"
    ))
    .expect("docs/history-format.md exists");
    let section = doc
        .find("### Observers and notifications")
        .expect("an observers section");
    let start = section + doc[section..].find("```json\n").expect("a json example") + 8;
    let end = start + doc[start..].find("```").expect("closed block");
    let h = parse(&doc[start..end]).expect("the example parses");
    assert_eq!(h.observers.len(), 2);
    let r = check(&h);
    assert!(r.passed(), "{}", r.render_text());
    assert_eq!(r.stats.observer_runs, 3);
    for id in [ONCE, LOST] {
        assert_eq!(r.rule(id).unwrap().note, None);
    }
    // The variants the text describes fail as it says.
    let mut dup = h.clone();
    let mut again = dup.transactions[2].clone();
    again.id = 6;
    again.client = 3;
    again.start_ts = 11;
    again.commit_ts = Some(12);
    again.invoke_ns = 1100;
    again.complete_ns = Some(1200);
    again.ops = vec![Op::Write {
        row: "x".into(),
        col: "v:ack:summer".into(),
        value: "11".into(),
    }];
    dup.transactions.push(again);
    dup.final_state.cells[1].versions.push(put(11, 12, "11"));
    assert_eq!(check(&dup).violated_rules(), [ONCE]);
    let mut left = h.clone();
    left.final_state.notify.push(CellRef {
        row: "x".into(),
        col: "v".into(),
    });
    assert_eq!(check(&left).violated_rules(), [LOST]);
}
