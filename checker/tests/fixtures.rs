//! One fixture per rule and anomaly class: the rule fires, names the right
//! transactions, and unrelated rules stay quiet where that is possible.

mod common;

use common::*;
use percsim_checker::{Op, check, parse};

const SNAPSHOT: &str = "snapshot_reads";
const CONFLICTS: &str = "no_write_conflicts";
const TIMESTAMPS: &str = "timestamp_order";
const ATOMIC: &str = "atomic_commits";
const CYCLES: &str = "no_dependency_cycles";
const ONCE: &str = "observer_at_most_once";
const LOST: &str = "no_lost_notification";
const SCANS: &str = "predicate_reads";

#[test]
fn every_rule_is_reported_in_a_fixed_order() {
    let r = report("valid_basic");
    let ids: Vec<&str> = r.rules.iter().map(|x| x.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            SNAPSHOT, CONFLICTS, TIMESTAMPS, ATOMIC, CYCLES, ONCE, LOST, SCANS
        ]
    );
    assert!(r.rules.iter().all(|x| !x.name.is_empty()));
}

// ---------- valid histories ----------

#[test]
fn valid_basic_passes() {
    let r = report("valid_basic");
    assert_failed(&r, &[]);
    assert_eq!(r.allowed.total, 0);
    assert_eq!(r.stats.transactions, 6);
    assert_eq!(r.stats.committed_in_store_only, 1);
    // joe.balance has a delete, so only bob and amy are unique-value cells.
    assert_eq!(r.stats.unique_value_cells, 2);
    assert_eq!(run("valid_basic", false).0, 0);
}

#[test]
fn write_skew_is_allowed_not_a_violation() {
    let r = report("valid_write_skew");
    assert_failed(&r, &[]);
    assert_eq!(r.allowed.total, 1);
    assert_eq!(r.allowed.counts.get("G2-item"), Some(&1));
    let f = &r.allowed.examples[0];
    assert_eq!(f.class, "G2-item");
    let mut txns = f.txns.clone();
    txns.sort_unstable();
    assert_eq!(txns, [2, 3]);
    assert_eq!(f.cycle.len(), 2);
    assert!(f.cycle.iter().all(|s| s.edge == "rw"));
    let (code, text) = run("valid_write_skew", false);
    assert_eq!(code, 0);
    assert!(text.contains("Allowed under snapshot isolation"), "{text}");
    assert!(text.contains("G2-item"), "{text}");
}

/// The fixtures that break one rule once, with nothing more to say: each
/// fails only its rule, with one finding of its class over its transactions.
#[test]
fn each_single_finding_fixture_fails_only_its_rule() {
    let cases: [(&str, &str, &str, &[u64]); 9] = [
        ("write_conflict", CONFLICTS, "overlapping_writes", &[1, 2]),
        (
            "timestamps_client_order",
            TIMESTAMPS,
            "client_order",
            &[2, 1],
        ),
        (
            "timestamps_commit_before_start",
            TIMESTAMPS,
            "commit_not_after_start",
            &[1],
        ),
        (
            "atomicity_committed_missing",
            ATOMIC,
            "committed_not_in_store",
            &[1],
        ),
        (
            "atomicity_aborted_committed",
            ATOMIC,
            "aborted_but_committed",
            &[1],
        ),
        (
            "atomicity_commit_and_rollback",
            ATOMIC,
            "commit_and_rollback",
            &[1],
        ),
        ("atomicity_value_mismatch", ATOMIC, "value_mismatch", &[1]),
        (
            "atomicity_commit_ts_mismatch",
            ATOMIC,
            "commit_ts_mismatch",
            &[1],
        ),
        (
            "atomicity_multiple_commit_ts",
            ATOMIC,
            "multiple_commit_ts",
            &[1],
        ),
    ];
    for (fixture, rule, class, txns) in cases {
        one_finding(fixture, &[rule], rule, class, txns);
    }
}

// ---------- rule 1: snapshot_reads ----------

#[test]
fn stale_read_by_a_committed_transaction() {
    let (_, f) = one_finding(
        "snapshot_stale_read",
        &[SNAPSHOT],
        SNAPSHOT,
        "stale_read",
        &[1, 2, 3],
    );
    // The reader first, then the writer it should have seen, then the one it saw.
    assert_eq!(f.txns, [3, 2, 1]);
    says(&f.summary, &["read x.v = \"a\"", "\"b\""]);
}

#[test]
fn reads_of_aborted_and_unknown_transactions_are_judged_too() {
    let r = report("snapshot_aborted_reader");
    assert_failed(&r, &[SNAPSHOT]);
    let f = assert_one(&r, SNAPSHOT, "future_read", &[3, 1, 2]);
    assert_eq!(f.txns[0], 3);
    let f = assert_one(&r, SNAPSHOT, "uncommitted_read", &[4, 2]);
    says(&f.summary, &["no transaction ever wrote"]);
    assert_eq!(r.rule(SNAPSHOT).unwrap().total, 2);
}

// ---------- rule 3: timestamp_order ----------

#[test]
fn duplicate_timestamp() {
    let (_, f) = one_finding(
        "timestamps_duplicate",
        &[TIMESTAMPS],
        TIMESTAMPS,
        "duplicate_timestamp",
        &[1, 2],
    );
    says(&f.summary, &["timestamp 3"]);
}

#[test]
fn start_ts_below_an_earlier_completed_commit() {
    let (_, f) = one_finding(
        "timestamps_realtime",
        &[TIMESTAMPS],
        TIMESTAMPS,
        "realtime_order",
        &[2, 1],
    );
    assert_eq!(f.txns, [2, 1]);
}

// ---------- rule 4: atomic_commits ----------

#[test]
fn unknown_outcome_partly_committed() {
    let (_, f) = one_finding(
        "atomicity_partial",
        &[ATOMIC],
        ATOMIC,
        "partial_commit",
        &[1],
    );
    says(&f.summary, &["y.v"]);
    // The roll-forward event is shown for context.
    a_detail_says(&f.details, &["roll_forward"]);
}

#[test]
fn locks_left_after_quiescence() {
    let r = report("atomicity_lock_left");
    assert_failed(&r, &[ATOMIC]);
    let fs = findings(&r, ATOMIC, "lock_left");
    assert_eq!(fs.len(), 2);
    assert!(fs.iter().all(|f| f.txns == [1]));
}

#[test]
fn data_nobody_wrote() {
    let r = report("atomicity_unwritten_data");
    assert_failed(&r, &[ATOMIC]);
    let fs = findings(&r, ATOMIC, "unwritten_data");
    assert_eq!(fs.len(), 2);
    assert_eq!(fs[0].txns, [1]); // a cell T1 never wrote
    assert!(fs[1].txns.is_empty()); // a start_ts no transaction has
    says(&fs[1].summary, &["start_ts 50"]);
}

#[test]
fn committed_put_whose_data_is_missing() {
    // Read through the same path as `percsim check`: a verdict, not an input error.
    let (code, text) = run("atomicity_missing_data", false);
    assert_eq!(code, 1, "{text}");
    let r = report("atomicity_missing_data");
    // T3's read of null is what the store serves: only atomicity is broken.
    assert_failed(&r, &[ATOMIC]);
    let f = assert_one(&r, ATOMIC, "missing_data", &[2]);
    says(&f.summary, &["no data at start_ts 3", "\"b\" is lost"]);
    a_detail_says(&f.details, &["whose data is missing"]);
    assert_eq!(count(&r, ATOMIC, "value_mismatch"), 0);

    // With its data in place (and T3 reading it) the same history passes.
    let mut h = load("atomicity_missing_data");
    let v = &mut h.final_state.cells[0].versions[1];
    v.data_missing = false;
    v.value = Some("b".into());
    let Op::Read { value, .. } = &mut h.transactions[2].ops[0] else {
        panic!("T3 reads");
    };
    *value = Some("b".into());
    assert_failed(&check(&h), &[]);
    let back = parse(&serde_json::to_string(&h).expect("serializes")).expect("parses");
    assert!(
        back.final_state.cells[0]
            .versions
            .iter()
            .all(|v| !v.data_missing)
    );
}

/// A read of the value a put whose data the store lost had written is
/// explained as that lost put, neither as a delete nor as a write that never
/// committed.
#[test]
fn a_read_of_a_lost_put_is_explained_as_one() {
    let mut h = load("atomicity_missing_data");
    let Op::Read { value, .. } = &mut h.transactions[2].ops[0] else {
        panic!("T3 reads");
    };
    *value = Some("b".into());
    let r = check(&h);
    let f = &r.rule("snapshot_reads").expect("rule reported").violations[0];
    let text = format!("{}\n{}", f.summary, f.details.join("\n"));
    assert!(!text.contains("a delete"), "{text}");
    assert!(!text.contains("never committed"), "{text}");
    assert!(
        text.contains("a put whose data the store lost (its writer wrote \"b\"")
            && text.contains("committed at 4, whose data the store lost"),
        "{text}"
    );
}

#[test]
fn data_missing_round_trips() {
    let h = load("atomicity_missing_data");
    let text = serde_json::to_string(&h).expect("serializes");
    assert!(text.contains("\"data_missing\":true"), "{text}");
    assert_eq!(text.matches("data_missing").count(), 1, "{text}");
    assert_eq!(parse(&text).expect("parses"), h);
}

// ---------- rule 5: no_dependency_cycles ----------
// A forbidden cycle always comes with another rule's violation in a
// Percolator history (that is the point of the cross-check), so these assert
// the expected companions exactly.

#[test]
fn g0_write_cycle() {
    let r = report("cycle_g0");
    assert_failed(&r, &[ATOMIC, CYCLES]);
    let f = assert_one(&r, CYCLES, "G0", &[1, 2]);
    assert!(f.cycle.iter().all(|s| s.edge == "ww"));
    assert_eq!(count(&r, ATOMIC, "multiple_commit_ts"), 2);
}

#[test]
fn g1a_aborted_read() {
    let (_, f) = one_finding("cycle_g1a", &[SNAPSHOT, CYCLES], CYCLES, "G1a", &[1, 2]);
    assert_eq!(f.txns, [2, 1]);
}

#[test]
fn g1b_intermediate_read() {
    one_finding("cycle_g1b", &[SNAPSHOT, CYCLES], CYCLES, "G1b", &[2, 1]);
}

#[test]
fn g1c_circular_information_flow() {
    let (_, f) = one_finding(
        "cycle_g1c",
        &[SNAPSHOT, CONFLICTS, CYCLES],
        CYCLES,
        "G1c",
        &[1, 2],
    );
    let edges: Vec<&str> = f.cycle.iter().map(|s| s.edge.as_str()).collect();
    assert_eq!(edges, ["wr", "ww"]);
}

#[test]
fn g_single_read_skew() {
    let r = report("cycle_g_single");
    assert_failed(&r, &[SNAPSHOT, CYCLES]);
    let f = assert_one(&r, CYCLES, "G-single", &[2, 3]);
    assert_eq!(f.cycle.iter().filter(|s| s.edge == "rw").count(), 1);
    assert_eq!(r.allowed.total, 0);
}

#[test]
fn lost_update() {
    let r = report("cycle_lost_update");
    assert_failed(&r, &[CONFLICTS, CYCLES]);
    assert_one(&r, CYCLES, "lost-update", &[2, 3]);
    assert_one(&r, CYCLES, "G-single", &[2, 3]);
}

#[test]
fn g2_item_with_non_adjacent_rw_edges_is_forbidden() {
    let (r, f) = one_finding(
        "cycle_g2_nonadjacent",
        &[SNAPSHOT, CYCLES],
        CYCLES,
        "G2-item-nonadjacent",
        &[1, 2, 3, 4],
    );
    let edges: Vec<&str> = f.cycle.iter().map(|s| s.edge.as_str()).collect();
    assert_eq!(edges, ["rw", "wr", "rw", "wr"]);
    assert_eq!(r.allowed.total, 0);
}

#[test]
fn real_time_edges_take_part_in_cycles() {
    let (_, f) = one_finding(
        "cycle_realtime",
        &[SNAPSHOT, CYCLES],
        CYCLES,
        "G-single",
        &[2, 3],
    );
    let rt = f.cycle.iter().find(|s| s.edge == "rt").expect("an rt step");
    assert_eq!((rt.from, rt.to), (2, 3));
    says(&rt.explanation, &["completed at 0.000400 ms"]);
}

// ---------- rules 6 and 7: observer_at_most_once, no_lost_notification ----------

#[test]
fn without_observers_the_observer_rules_pass_and_say_so() {
    let r = report("valid_basic");
    for id in [ONCE, LOST] {
        let rule = r.rule(id).unwrap();
        assert!(rule.passed);
        assert_eq!(
            rule.note.as_deref(),
            Some("no observers declared: nothing to check")
        );
    }
    let (code, text) = run("valid_basic", false);
    assert_eq!(code, 0);
    assert!(text.contains("PASS  observer_at_most_once"), "{text}");
    assert!(
        text.contains("(no observers declared: nothing to check)"),
        "{text}"
    );
    assert!(text.contains("all 8 rules hold"), "{text}");
    let (_, json) = run("valid_basic", true);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rules = v["rules"].as_array().unwrap();
    let lost = rules.iter().find(|r| r["id"] == LOST).unwrap();
    assert_eq!(lost["note"], "no observers declared: nothing to check");
    // Rules that always apply carry no note.
    let snapshot = rules.iter().find(|r| r["id"] == SNAPSHOT).unwrap();
    assert!(snapshot.get("note").is_none());
}

#[test]
fn valid_observers_pass() {
    // x.v is written twice (T1, T2) and processed by one run (T3): the two
    // notifications collapse. T4 found nothing new and is not marked. On y.v
    // T6 committed and T7, a concurrent run for the same change, aborted.
    // The weak observer "pinger" committed two runs (T8, T9) for one weak
    // notification of p.ping, a cell never written.
    let r = report("valid_observers");
    assert_failed(&r, &[]);
    assert_eq!(r.allowed.total, 0);
    assert_eq!(r.stats.observers, 2);
    assert_eq!(r.stats.observer_runs, 5);
    assert_eq!(r.stats.notify_entries, 0);
    for id in [ONCE, LOST] {
        assert_eq!(r.rule(id).unwrap().note, None);
    }
    let (code, text) = run("valid_observers", false);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("2 observers declared, 5 observer runs, 0 notify entries left"),
        "{text}"
    );
}

#[test]
fn two_committed_runs_for_one_change() {
    let r = report("observer_duplicate_run");
    assert_failed(&r, &[ONCE]);
    let f = assert_one(&r, ONCE, "duplicate_run", &[2, 3]);
    assert_eq!(f.txns, [2, 3]);
    assert_eq!(r.rule(ONCE).unwrap().total, 1);
    says(
        &f.summary,
        &[
            "x.v",
            "\"summer\"",
            "between 3 and 5",
            "committed at 2 by T1",
        ],
    );
    a_detail_says(
        &f.details,
        &["T3: client 3", "ran observer \"summer\" for x.v"],
    );
}

#[test]
fn a_run_before_any_change() {
    let (r, f) = one_finding(
        "observer_run_without_change",
        &[ONCE],
        ONCE,
        "run_without_change",
        &[1],
    );
    says(&f.summary, &["start_ts 1"]);
    // T3 processed T2's change: not a duplicate of T1.
    assert_eq!(count(&r, ONCE, "duplicate_run"), 0);
    assert_eq!(r.rule(ONCE).unwrap().total, 1);
}

#[test]
fn a_change_no_committed_run_saw() {
    let (r, f) = one_finding(
        "notify_unprocessed_change",
        &[LOST],
        LOST,
        "unprocessed_change",
        &[3, 2],
    );
    // The writer of the last change first, then the last committed run.
    assert_eq!(f.txns, [3, 2]);
    let summary = [
        "(a delete) of x.v",
        "committed at 6 by T3",
        "T2, started at 3",
    ];
    says(&f.summary, &summary);
    // The aborted run after the change is shown, but does not count.
    a_detail_says(&f.details, &["did not commit", "T4: client 2, aborted"]);
    assert_eq!(count(&r, LOST, "notify_left"), 0);
}

#[test]
fn notify_entries_left_after_quiescence() {
    let r = report("notify_left");
    assert_failed(&r, &[LOST]);
    let fs = findings(&r, LOST, "notify_left");
    assert_eq!(fs.len(), 2);
    assert_eq!(count(&r, LOST, "notify_left"), 2);
    // x.v: written by T1, processed by T2, but its entry was never cleared.
    assert_eq!(fs[0].txns, [1, 2]);
    says(&fs[0].summary, &["notify entry for x.v"]);
    // p.ping: a weak notification nobody processed; no transaction involved.
    assert!(fs[1].txns.is_empty());
    says(
        &fs[1].summary,
        &["notify entry for p.ping", "\"pinger\" (weak)"],
    );
    assert_eq!(count(&r, LOST, "unprocessed_change"), 0);
    assert_eq!(r.stats.notify_entries, 2);
}

// ---------- output ----------

#[test]
fn exit_code_is_one_when_a_rule_is_broken() {
    let (code, text) = run("write_conflict", false);
    assert_eq!(code, 1);
    assert!(text.contains("FAIL  no_write_conflicts"), "{text}");
    assert!(text.contains("PASS  snapshot_reads"), "{text}");
    // The explanation names the transactions with their clients, timestamps and ops.
    assert!(
        text.contains("T1: client 1, committed, start_ts 1, commit_ts 4"),
        "{text}"
    );
    assert!(text.contains("write x.v = \"a\""), "{text}");
}

#[test]
fn json_report_is_machine_readable() {
    let (code, text) = run("cycle_g_single", true);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(v["format"], "percsim-check/1");
    assert_eq!(v["passed"], false);
    let rules = v["rules"].as_array().unwrap();
    let cycles = rules.iter().find(|r| r["id"] == CYCLES).unwrap();
    assert_eq!(cycles["passed"], false);
    assert_eq!(cycles["counts"]["G-single"], 1);
    let f = &cycles["violations"][0];
    assert_eq!(f["rule"], CYCLES);
    assert_eq!(f["class"], "G-single");
    assert!(f["cycle"].as_array().is_some_and(|c| c.len() == 2));

    let (code, text) = run("valid_write_skew", true);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(v["passed"], true);
    assert_eq!(v["allowed"]["counts"]["G2-item"], 1);
}
