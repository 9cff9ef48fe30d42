//! An `unknown` transaction whose client had obtained its commit_ts keeps it
//! in the history: the checker then matches its writes against the store's
//! write records at that timestamp, and counts the timestamp as handed out.
//! In `valid_basic`, T4 (unknown, commit_ts 18) was rolled forward at 18 and
//! T6 (unknown, no commit_ts) was rolled back.

mod common;

use common::*;
use percsim_checker::{History, check};

const ATOMIC: &str = "atomic_commits";
const TIMESTAMPS: &str = "timestamp_order";

fn with_commit_ts(id: u64, commit_ts: u64) -> History {
    let mut h = load("valid_basic");
    let t = h.transactions.iter_mut().find(|t| t.id == id).expect("txn");
    t.commit_ts = Some(commit_ts);
    h
}

#[test]
fn an_unknown_commit_ts_the_store_matches_passes() {
    let h = load("valid_basic");
    assert_eq!(h.transactions[3].commit_ts, Some(18));
    assert_failed(&check(&h), &[]);
    // T6 took commit_ts 23 and was rolled back: not committed at all is fine.
    assert_failed(&check(&with_commit_ts(6, 23)), &[]);
}

#[test]
fn the_store_committing_it_at_another_timestamp_is_a_mismatch() {
    let r = check(&with_commit_ts(4, 19));
    assert_failed(&r, &[ATOMIC]);
    let f = assert_one(&r, ATOMIC, "commit_ts_mismatch", &[4]);
    assert!(
        f.summary.contains("commit_ts 19") && f.summary.contains("at 18"),
        "{}",
        f.summary
    );
}

#[test]
fn an_unknown_commit_ts_counts_as_handed_out() {
    // 14 is T2's commit_ts: the oracle cannot have handed it out twice.
    let r = check(&with_commit_ts(6, 14));
    assert_failed(&r, &[TIMESTAMPS]);
    assert_eq!(count(&r, TIMESTAMPS, "duplicate_timestamp"), 1);
}
