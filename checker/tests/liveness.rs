//! The liveness rules on hand-made histories: each rule has one that trips
//! it and one that does not.

use percsim_checker::{LivenessRule, check_liveness, parse};
use std::path::PathBuf;

/// The liveness report of fixture `name`.
fn judge(name: &str) -> percsim_checker::LivenessReport {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/liveness/{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap();
    check_liveness(&parse(&text).unwrap())
}

#[test]
fn a_live_owners_refreshed_or_unfaulted_primary_rolled_back_trips_the_rule() {
    let r = judge("live_owner_rolled_back");
    assert!(!r.passed());
    let rules: Vec<LivenessRule> = r.findings.iter().map(|f| f.rule).collect();
    assert_eq!(rules, [LivenessRule::LiveOwnerRolledBack; 2]);
    let fresh = &r.findings[0].summary;
    assert!(fresh.contains("T1 (start_ts 10, client 0)"), "{fresh}");
    assert!(
        fresh.contains("rolled back at 2500 ms by client 1"),
        "{fresh}"
    );
    assert!(fresh.contains("lock a/v"), "{fresh}");
    assert!(fresh.contains("refreshed 490 ms before"), "{fresh}");
    assert!(fresh.contains("lock_ttl - bound = 2800 ms"), "{fresh}");
    let stale = &r.findings[1].summary;
    assert!(stale.contains("T2 (start_ts 20, client 2)"), "{stale}");
    assert!(stale.contains("went 3990 ms without a refresh"), "{stale}");
    let text = r.render_text();
    assert!(
        text.starts_with(
            "liveness thresholds: lock_ttl 3000 ms, session_ttl 1000 ms, bound 200 ms"
        ),
        "{text}"
    );
    assert!(
        text.contains("liveness live_owner_rolled_back: T1"),
        "{text}"
    );
}

#[test]
fn a_frozen_owner_a_faulted_path_an_own_abort_or_a_secondary_do_not_trip_it() {
    let r = judge("live_owner_not_rolled_back");
    assert!(r.passed(), "{:#?}", r.findings);
    assert!(r.thresholds.is_some());
}

#[test]
fn a_reader_backing_off_from_a_long_dead_owner_trips_the_rule() {
    let r = judge("dead_owner_blocks");
    assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
    let f = &r.findings[0];
    assert_eq!(f.rule, LivenessRule::DeadOwnerBlocks);
    assert_eq!(f.txns, [3]);
    for part in [
        "client 1 backed off at 1500 ms from lock b/v of T3 (start_ts 20, client 2)",
        "died at 100 ms",
        "1400 ms later, past session_ttl + bound = 1200 ms",
    ] {
        assert!(f.summary.contains(part), "{part}: {}", f.summary);
    }
}

#[test]
fn a_wait_within_the_bound_or_on_a_slow_network_or_on_a_live_owner_does_not_trip_it() {
    let r = judge("dead_owner_does_not_block");
    assert!(r.passed(), "{:#?}", r.findings);
}

#[test]
fn a_history_without_thresholds_is_not_judged() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/liveness/dead_owner_blocks.json");
    let text = std::fs::read_to_string(path).unwrap();
    let mut h = parse(&text).unwrap();
    h.events.retain(|e| e.kind != "liveness_thresholds");
    let r = check_liveness(&h);
    assert!(r.passed() && r.thresholds.is_none());
    assert!(r.render_text().contains("not judged"));
}

#[test]
fn every_rule_has_a_name_and_a_description() {
    for rule in LivenessRule::ALL {
        assert!(!rule.name().is_empty() && !rule.description().is_empty());
    }
    assert_eq!(LivenessRule::DeadOwnerBlocks.name(), "dead_owner_blocks");
}

/// `percsim check FILE` on fixture `name`: (exit code, text, JSON report).
fn check_file(name: &str) -> (i32, String, serde_json::Value) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/liveness/{name}.json"));
    let (mut text, mut json) = (Vec::new(), Vec::new());
    let code = percsim_checker::run_check_file(&path, false, &mut text);
    assert_eq!(
        percsim_checker::run_check_file(&path, true, &mut json),
        code
    );
    let json = serde_json::from_slice(&json).expect("a JSON report");
    (code, String::from_utf8(text).unwrap(), json)
}

#[test]
fn checking_a_file_runs_the_liveness_rules_and_exits_3_with_the_explanation() {
    let (code, text, json) = check_file("dead_owner_blocks");
    assert_eq!(code, 3, "{text}");
    assert!(
        text.contains("liveness thresholds: lock_ttl 3000 ms, session_ttl 1000 ms, bound 200 ms"),
        "{text}"
    );
    assert!(
        text.contains("liveness dead_owner_blocks: client 1 backed off at 1500 ms"),
        "{text}"
    );
    assert_eq!(json["passed"], true, "the safety rules hold");
    assert_eq!(json["liveness"]["findings"][0]["rule"], "dead_owner_blocks");
    assert_eq!(json["liveness"]["thresholds"]["bound_ms"], 200);
}

#[test]
fn checking_a_file_whose_owners_were_treated_fairly_exits_0() {
    for name in ["dead_owner_does_not_block", "live_owner_not_rolled_back"] {
        let (code, text, json) = check_file(name);
        assert_eq!(code, 0, "{name}: {text}");
        assert!(text.contains("liveness thresholds:"), "{name}: {text}");
        assert_eq!(
            json["liveness"]["findings"],
            serde_json::json!([]),
            "{name}"
        );
    }
}

/// The trip fixture with a network fault of `kind` from 0 to 5 ms whose
/// late copies land up to `delay_ms` after it (`delay_field`).
fn after_network_fault(kind: &str, delay_field: &str, delay_ms: u64) -> percsim_checker::History {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/liveness/live_owner_rolled_back.json");
    let mut h = parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let event =
        serde_json::json!({"t_ns": 0, "kind": kind, "duration_ms": 5, delay_field: delay_ms});
    h.events
        .insert(1, serde_json::from_value(event).expect("an event"));
    h
}

/// A primary written at 10 ms by a copy a network fault held back (the
/// fault ended at 5 ms, its copies land up to 20 ms later) has no
/// trustworthy refresh times: not judged. Copies held back no longer than
/// the fault lasted leave both findings.
#[test]
fn a_primary_written_by_a_late_copy_after_a_network_fault_is_not_judged() {
    for (kind, field) in [("duplicate", "max_delay_ms"), ("latency", "max_ms")] {
        let r = check_liveness(&after_network_fault(kind, field, 20));
        assert!(r.passed(), "{kind}: {:#?}", r.findings);
        let r = check_liveness(&after_network_fault(kind, field, 0));
        assert_eq!(r.findings.len(), 2, "{kind}: {:#?}", r.findings);
    }
}

#[test]
fn a_killed_liveness_service_excuses_a_reader_but_another_servers_death_does_not() {
    // The reader cannot learn that the owner's session ended while the
    // liveness service is down: it waits out the lock's own TTL.
    assert!(judge("dead_owner_blocks_liveness_killed").passed());
    let r = judge("dead_owner_blocks_tablet_killed");
    let rules: Vec<LivenessRule> = r.findings.iter().map(|f| f.rule).collect();
    assert_eq!(rules, [LivenessRule::DeadOwnerBlocks]);
}

/// Fixture `name` with every event field `field` taken off.
fn without_field(name: &str, field: &str) -> percsim_checker::History {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/liveness/{name}.json"));
    let mut h = parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    for e in &mut h.events {
        e.fields.remove(field);
    }
    h
}

/// The transactions the findings of `r` name, in order.
fn named(r: &percsim_checker::LivenessReport) -> Vec<u64> {
    r.findings.iter().flat_map(|f| f.txns.clone()).collect()
}

#[test]
fn a_primary_is_as_fresh_as_the_wall_time_stamped_in_it_not_as_its_write() {
    // T1's prewrite was stamped 3230 ms before its rollback, though the
    // store wrote it 30 ms before: a reader sees the stamp, and the
    // primary's server was down, so the owner could not refresh it. T2's
    // refresh was stamped 230 ms before: a live owner rolled back.
    let r = judge("live_owner_late_stamp");
    assert_eq!(named(&r), [2], "{:#?}", r.findings);
    assert!(
        r.findings[0].summary.contains("refreshed 230 ms before"),
        "{}",
        r.findings[0].summary
    );
    // Judged by the write times, T1 would look refreshed 30 ms before.
    let r = check_liveness(&without_field("live_owner_late_stamp", "stamped_ms"));
    assert_eq!(named(&r), [1, 2], "{:#?}", r.findings);
    assert!(r.findings[0].summary.contains("refreshed 30 ms before"));
}

#[test]
fn a_session_is_dated_from_its_opening_not_from_its_clients_restart() {
    // Client 2's sessions expired at 100 ms, before its session 3 was
    // opened: T3's owner lives. Client 4's session 5 expired after it was
    // opened: T5's owner is dead and its lock blocks a reader.
    let r = judge("dead_owner_session_opened");
    assert_eq!(named(&r), [5], "{:#?}", r.findings);
    assert!(r.findings[0].summary.contains("died at 300 ms"));
    // Without the openings, the expiry at the restart seems to end its session 3.
    let mut h = without_field("dead_owner_session_opened", "none");
    h.events.retain(|e| e.kind != "session_opened");
    let r = check_liveness(&h);
    assert_eq!(named(&r), [3, 5], "{:#?}", r.findings);
}

#[test]
fn an_owner_is_not_blamed_for_the_time_its_lock_spent_on_the_way() {
    // T1's prewrite landed 2200 ms after it was stamped, already past
    // lock_ttl: its owner could not refresh a lock the store did not hold,
    // so the rollback 10 ms later is fair. T2's landed at once and its
    // owner held it unrefreshed for 2200 ms: a live owner let it go stale.
    let r = judge("live_owner_landed_stale");
    assert_eq!(named(&r), [2], "{:#?}", r.findings);
    let summary = &r.findings[0].summary;
    assert!(
        summary.contains("went 2210 ms without a refresh (lock_ttl 2000 ms)"),
        "{summary}"
    );
    assert!(
        summary.contains("the store holding it for 2200 ms of them"),
        "{summary}"
    );
    // Had the store written T1's prewrite when it was stamped, its owner
    // would have let it go stale too.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/liveness/live_owner_landed_stale.json");
    let mut h = parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    for e in &mut h.events {
        if e.kind == "primary_refreshed" {
            e.t_ns = 110_000_000;
        }
    }
    h.events.sort_by_key(|e| e.t_ns);
    assert_eq!(named(&check_liveness(&h)), [1, 2]);
}

#[test]
fn a_dead_master_touches_the_refresh_path_but_another_node_does_not() {
    // T2's owner never refreshed its primary in 3990 ms. With the master
    // dead for part of that time, a refresh may have waited out the time-out
    // of a tablet location asked of it: not judged. T1's primary was
    // refreshed 490 ms before its rollback, a finding whatever the faults.
    let with_fault = |node: &str| {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/liveness/live_owner_rolled_back.json");
        let mut h = parse(&std::fs::read_to_string(path).unwrap()).unwrap();
        let kill = serde_json::json!({"t_ns": 100_000_000, "kind": "kill", "node": node});
        let restart = serde_json::json!({"t_ns": 300_000_000, "kind": "restart", "node": node});
        h.events.insert(3, serde_json::from_value(restart).unwrap());
        h.events.insert(3, serde_json::from_value(kill).unwrap());
        check_liveness(&h)
    };
    assert_eq!(named(&with_fault("master")), [1]);
    assert_eq!(named(&with_fault("oracle")), [1, 2]);
}

/// The fixture `name` of `tests/fixtures/liveness/`, parsed.
fn fixture(name: &str) -> percsim_checker::History {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/liveness/{name}.json"));
    parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_notification_pending_past_the_bound_after_the_heal_trips_the_rule() {
    let r = judge("notification_pending");
    let rules: Vec<LivenessRule> = r.findings.iter().map(|f| f.rule).collect();
    assert_eq!(rules, [LivenessRule::NotificationPending; 2], "{r:#?}");
    assert_eq!(named(&r), [1, 3, 2, 4]);
    let y = &r.findings[0].summary;
    for part in [
        "the notification of y/v for observer \"summer\", set by T1 (start_ts 10, committed at 11, known committed at 800 ms)",
        "was pending 1700 ms from the heal at 1000 ms",
        "processed only by T3 (start_ts 30), known committed at 2700 ms",
        "past scan_interval + observer_run + notify_bound = 40 + 1000 + 460 = 1500 ms",
    ] {
        assert!(y.contains(part), "{part}: {y}");
    }
    // z/v's writer never learnt its outcome: the change is due from its
    // roll-forward at 1200 ms, after the heal.
    let z = &r.findings[1].summary;
    assert!(
        z.contains("known committed at 1200 ms), was pending 1600 ms from 1200 ms, after the heal at 1000 ms"),
        "{z}"
    );
    let text = r.render_text();
    assert!(
        text.contains(
            "notifications: scan_interval 40 ms, observer_run 1000 ms, notify_bound 460 ms"
        ),
        "{text}"
    );
    assert!(
        text.contains("liveness notification_pending: the notification of y/v"),
        "{text}"
    );
}

#[test]
fn notifications_processed_in_time_set_late_or_of_unknown_time_do_not_trip_it() {
    let r = judge("notification_processed");
    assert!(r.passed(), "{:#?}", r.findings);
    assert!(
        r.render_text()
            .contains("notifications: scan_interval 40 ms")
    );
    // One millisecond less of slack and a/v, processed exactly 1500 ms
    // after the heal, is late.
    let mut h = fixture("notification_processed");
    for e in h
        .events
        .iter_mut()
        .filter(|e| e.kind == "liveness_thresholds")
    {
        e.fields
            .insert("notify_bound_ms".into(), serde_json::json!(459));
    }
    let r = check_liveness(&h);
    assert_eq!(named(&r), [1, 2], "{:#?}", r.findings);
    // b/v counts from its commit at 3000 ms: judged from the heal, its
    // 3400 ms would be late.
    let mut h = fixture("notification_processed");
    h.transactions[2].complete_ns = Some(900_000_000);
    h.transactions[2].invoke_ns = 800_000_000;
    assert_eq!(named(&check_liveness(&h)), [3, 4]);
    // c/v's change, processed at 6200 ms, is judged only once a cleanup
    // says when it was rolled forward (4600 ms: 1600 ms before).
    let mut h = fixture("notification_processed");
    h.transactions[5].complete_ns = Some(6_200_000_000);
    assert!(check_liveness(&h).passed());
    let rolled = serde_json::json!({"t_ns": 4_600_000_000u64, "kind": "roll_forward",
        "start_ts": 50, "row": "c", "col": "v", "by_client": 3, "suspicion": "token_gone"});
    h.events.push(serde_json::from_value(rolled).unwrap());
    assert_eq!(named(&check_liveness(&h)), [5, 6]);
}

#[test]
fn a_notification_never_processed_is_pending_to_the_end_of_the_history() {
    let mut h = fixture("notification_pending");
    h.transactions.retain(|t| t.id != 3);
    h.final_state
        .cells
        .retain(|c| c.col != "v:ack:summer" || c.row != "y");
    h.final_state.notify.push(percsim_checker::CellRef {
        row: "y".into(),
        col: "v".into(),
    });
    let r = check_liveness(&h);
    assert_eq!(named(&r), [1, 2, 4], "{:#?}", r.findings);
    let y = &r.findings[0].summary;
    assert!(
        y.contains("was pending 1800 ms from the heal at 1000 ms: no committed run of the observer started after it, up to the end of the history at 2800 ms (its notify entry is still in the store)"),
        "{y}"
    );
}

#[test]
fn notifications_are_not_judged_without_their_thresholds_or_the_heal() {
    let r = check_liveness(&without_field("notification_pending", "observer_run_ms"));
    assert!(r.passed() && r.thresholds.is_some(), "{:#?}", r.findings);
    assert!(
        r.render_text()
            .contains("notifications not judged (no thresholds recorded)")
    );
    let mut h = fixture("notification_pending");
    h.events.retain(|e| e.kind != "phase_healed");
    assert!(check_liveness(&h).passed());
    // A weak observer's notifications are set without a write: not judged.
    let mut h = fixture("notification_pending");
    h.observers[0].weak = true;
    assert!(check_liveness(&h).passed());
}

#[test]
fn checking_a_file_with_a_late_notification_exits_3() {
    let (code, text, json) = check_file("notification_pending");
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("liveness notification_pending: "), "{text}");
    assert_eq!(json["passed"], true, "the safety rules hold");
    assert_eq!(
        json["liveness"]["thresholds"]["notify"]["observer_run_ms"],
        1000
    );
    let (code, text, _) = check_file("notification_processed");
    assert_eq!(code, 0, "{text}");
}

#[test]
fn a_stall_outlasting_the_heal_puts_off_when_a_change_is_due() {
    // Client 3, whose scanners run the observer, stalls from 900 to
    // 1900 ms: y/v (processed at 2700 ms) and z/v (2800 ms) are due from
    // 1900 ms, 800 and 900 ms before.
    let mut h = fixture("notification_pending");
    let stall =
        serde_json::json!({"t_ns": 900_000_000, "kind": "stall", "client": 3, "duration_ms": 1000});
    h.events.insert(1, serde_json::from_value(stall).unwrap());
    assert!(check_liveness(&h).passed());
    // Ending at 1100 ms, it leaves both late, y/v from the stall's end.
    h.events[1]
        .fields
        .insert("duration_ms".into(), serde_json::json!(200));
    let r = check_liveness(&h);
    assert_eq!(named(&r), [1, 3, 2, 4], "{:#?}", r.findings);
    assert!(
        r.findings[0].summary.contains(
            "pending 1600 ms from the end of the last fault at 1100 ms, after the heal at 1000 ms"
        ),
        "{}",
        r.findings[0].summary
    );
    // A fault with no recorded end leaves the rule unjudged.
    h.events[1].fields.remove("duration_ms");
    assert!(check_liveness(&h).passed());
}

/// The back-off fixture (the owner died at 100 ms, the reader backs off at
/// 1500 ms) with two partitions: a short one of other nodes from 40 ms,
/// healed at 60 ms, and one cutting the reader off from the liveness
/// service from 50 ms, healed at `long_heal_ms`.
fn with_overlapping_partitions(long_heal_ms: u64) -> percsim_checker::History {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/liveness/dead_owner_blocks.json");
    let mut h = parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let ms = 1_000_000u64;
    for event in [
        serde_json::json!({"t_ns": 40 * ms, "kind": "partition", "a": ["oracle"],
            "b": ["client-9"], "duration_ms": 20, "one_way": false}),
        serde_json::json!({"t_ns": 50 * ms, "kind": "partition", "a": ["client-1"],
            "b": ["liveness"], "duration_ms": long_heal_ms - 50, "one_way": false}),
        serde_json::json!({"t_ns": 60 * ms, "kind": "partition_healed"}),
        serde_json::json!({"t_ns": long_heal_ms * ms, "kind": "partition_healed"}),
    ] {
        h.events.push(serde_json::from_value(event).unwrap());
    }
    h.events.sort_by_key(|e| e.t_ns);
    h
}

#[test]
fn a_short_partitions_heal_does_not_end_an_overlapping_longer_one() {
    // The reader was cut off from the liveness service until 1050 ms,
    // after its owner died: its back-off is excused.
    let r = check_liveness(&with_overlapping_partitions(1_050));
    assert!(r.passed(), "{:#?}", r.findings);
    // Healed at 80 ms, before the death, the cut excuses nothing.
    let r = check_liveness(&with_overlapping_partitions(80));
    let rules: Vec<LivenessRule> = r.findings.iter().map(|f| f.rule).collect();
    assert_eq!(rules, [LivenessRule::DeadOwnerBlocks]);
}
