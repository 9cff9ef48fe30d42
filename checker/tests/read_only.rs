//! Read-only transactions that committed without a commit timestamp, as
//! Percolator commits them (its `Commit()` with no writes asks the oracle for
//! nothing) and percsim records them: `"outcome": "committed"` with
//! `commit_ts` null or absent. They are committed transactions for every rule.

mod common;

use common::*;
use percsim_checker::{Outcome, parse};

const SNAPSHOT: &str = "snapshot_reads";
const TIMESTAMPS: &str = "timestamp_order";
const CYCLES: &str = "no_dependency_cycles";

/// The ids of the fixture's committed transactions that have no commit_ts.
fn read_only_without_commit_ts(name: &str) -> Vec<u64> {
    load(name)
        .transactions
        .iter()
        .filter(|t| t.outcome == Outcome::Committed && t.commit_ts.is_none())
        .map(|t| t.id)
        .collect()
}

#[test]
fn read_only_commits_without_commit_ts_pass() {
    assert_eq!(read_only_without_commit_ts("valid_read_only"), [2, 4, 5, 7]);
    let r = report("valid_read_only");
    assert_failed(&r, &[]);
    assert_eq!(r.allowed.total, 0);
    assert_eq!(r.stats.transactions, 7);
    assert_eq!(r.stats.committed, 7);
    assert_eq!(r.stats.committed_in_store_only, 0);
    // They are nodes of the graph: 11 dependency edges (ww T1->T3; wr from
    // T1 to T2, T3 and T4 on x, to T2, T4 and T5 on y, from T3 to T5 and T6;
    // rw from T2 and T4 to T3) and 19 real-time links (7 completion points,
    // 6 chain links, 6 invocations after a completion). Without the
    // read-only ones there would be 3 and 7.
    assert_eq!(r.stats.graph_edges, 30);
    let (code, text) = run("valid_read_only", false);
    assert_eq!(code, 0, "{text}");
    let (code, json) = run("valid_read_only", true);
    assert_eq!(code, 0, "{json}");
}

#[test]
fn a_committed_writer_without_commit_ts_is_still_rejected() {
    let doc = |ops: &str| {
        format!(
            r#"{{"format": "percsim-history/1", "transactions": [
                {{"id": 9, "client": 1, "start_ts": 1, "commit_ts": null, "invoke_ns": 0,
                  "complete_ns": 5, "outcome": "committed", "ops": [{ops}]}}],
              "final_state": {{"cells": []}}}}"#
        )
    };
    let read = r#"{"f": "read", "row": "r", "col": "c", "value": null}"#;
    let delete = r#"{"f": "delete", "row": "d", "col": "c"}"#;
    let e = parse(&doc(&format!("{read}, {delete}"))).expect_err("a delete needs a commit_ts");
    assert_eq!(
        e.path(),
        Some("$.transactions[0] (transaction id 9).commit_ts")
    );
    let msg = e.to_string();
    assert!(msg.contains("ops[1] is a delete of d.c"), "{msg}");
    assert!(msg.contains("read-only"), "{msg}");

    // Only reads, or no ops at all: a read-only commit.
    for ops in [read.to_string(), format!("{read}, {read}"), String::new()] {
        let h = parse(&doc(&ops)).unwrap_or_else(|e| panic!("{ops}: {e}"));
        assert!(percsim_checker::check(&h).passed());
    }
}

#[test]
fn read_skew_by_a_read_only_commit_is_a_forbidden_cycle() {
    assert_eq!(read_only_without_commit_ts("cycle_read_only_g_single"), [2]);
    let r = report("cycle_read_only_g_single");
    // T2 read x1 and y2 of one atomic commit each: no snapshot holds both.
    assert_failed(&r, &[SNAPSHOT, CYCLES]);
    let f = assert_one(&r, SNAPSHOT, "future_read", &[1, 2, 3]);
    assert_eq!(f.txns[0], 2);
    says(&f.summary, &["read y.v = \"y2\""]);
    let f = assert_one(&r, CYCLES, "G-single", &[2, 3]);
    assert_eq!(steps(f), [(2, 3, "rw"), (3, 2, "wr")]);
    assert!(
        f.details
            .iter()
            .any(|d| d.starts_with("T2: ") && d.contains("read-only with no commit_ts")),
        "{:?}",
        f.details
    );
    assert_eq!(r.allowed.total, 0);
}

#[test]
fn real_time_order_reaches_a_read_only_commit() {
    assert_eq!(read_only_without_commit_ts("cycle_read_only_rt_in"), [3]);
    let r = report("cycle_read_only_rt_in");
    assert_failed(&r, &[SNAPSHOT, CYCLES]);
    assert_one(&r, SNAPSHOT, "stale_read", &[3, 2, 1]);
    let f = assert_one(&r, CYCLES, "G-single", &[2, 3]);
    let rt = f.cycle.iter().find(|s| s.edge == "rt").expect("an rt step");
    assert_eq!((rt.from, rt.to), (2, 3));
    let rw = f.cycle.iter().find(|s| s.edge == "rw").expect("an rw step");
    assert_eq!((rw.from, rw.to), (3, 2));
}

#[test]
fn real_time_order_leaves_a_read_only_commit() {
    assert_eq!(read_only_without_commit_ts("cycle_read_only_rt_out"), [1]);
    let r = report("cycle_read_only_rt_out");
    assert_failed(&r, &[SNAPSHOT, CYCLES]);
    assert_one(&r, SNAPSHOT, "future_read", &[1, 2]);
    let f = assert_one(&r, CYCLES, "G1c", &[1, 2]);
    assert_eq!(steps(f), [(1, 2, "rt"), (2, 1, "wr")]);
    says(&f.cycle[0].explanation, &["completed at 0.000200 ms"]);
}

#[test]
fn a_stale_read_by_a_read_only_commit() {
    assert_eq!(read_only_without_commit_ts("snapshot_read_only_stale"), [3]);
    let r = report("snapshot_read_only_stale");
    assert_failed(&r, &[SNAPSHOT]);
    let f = assert_one(&r, SNAPSHOT, "stale_read", &[1, 2, 3]);
    // The reader first, then the writer it should have seen, then the one it saw.
    assert_eq!(f.txns, [3, 2, 1]);
    says(&f.summary, &["T3 (client 3) read x.v = \"a\"", "\"b\""]);
    assert!(
        f.details[0]
            .starts_with("T3: client 3, committed, start_ts 5, read-only with no commit_ts"),
        "{}",
        f.details[0]
    );
    assert_eq!(run("snapshot_read_only_stale", false).0, 1);
}

#[test]
fn a_later_start_ts_than_a_completed_read_only_commit_is_required() {
    assert_eq!(
        read_only_without_commit_ts("timestamps_read_only_realtime"),
        [1]
    );
    let r = report("timestamps_read_only_realtime");
    assert_failed(&r, &[TIMESTAMPS]);
    let f = assert_one(&r, TIMESTAMPS, "realtime_order", &[1, 2]);
    assert_eq!(f.txns, [2, 1]);
    assert!(
        f.summary
            .contains("its start_ts 4 is not above T1's start_ts 5"),
        "{}",
        f.summary
    );
    // No commit_ts of T1 to compare against, and none is demanded.
    assert_eq!(count(&r, TIMESTAMPS, "commit_not_after_start"), 0);
}

#[test]
fn the_start_ts_of_a_read_only_commit_is_unique() {
    assert_eq!(
        read_only_without_commit_ts("timestamps_read_only_duplicate"),
        [2]
    );
    let r = report("timestamps_read_only_duplicate");
    assert_failed(&r, &[TIMESTAMPS]);
    let f = assert_one(&r, TIMESTAMPS, "duplicate_timestamp", &[1, 2]);
    says(&f.summary, &["commit_ts of T1", "start_ts of T2"]);
}
