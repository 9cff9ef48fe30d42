//! Fast version of the kill table: each safety ablation must be caught in
//! a fixed seed range of the default campaign, with the rule that must
//! fire; the liveness-only ablations must not raise a safety violation.
//! (`percsim ablations` runs the full table.)

use percsim_protocol::percolator::Ablation;
use percsim_scenarios::campaign::{self, Mix, Verdict};
use percsim_scenarios::fuzz;

fn mix(a: Ablation) -> Mix {
    Mix {
        ablations: vec![a.name().to_string()],
        ..Mix::default()
    }
}

/// Seeds `0..seeds` under `a` must produce a safety failure naming `rule`.
fn caught(a: Ablation, seeds: u64, rule: &str) {
    caught_in(&mix(a), a, seeds, rule)
}

fn caught_in(mix: &Mix, a: Ablation, seeds: u64, rule: &str) {
    let mut seen = Vec::new();
    for seed in 0..seeds {
        let r = fuzz::judge(&campaign::generate(seed, mix), false).result;
        if r.verdict != Verdict::Pass {
            let why = r.explanation.as_deref().unwrap_or("").lines().next();
            seen.push(format!(
                "seed {seed}: {:?} {:?} {why:?}",
                r.verdict, r.violated_rules
            ));
        }
        if r.verdict == Verdict::Safety {
            assert!(
                r.violated_rules.iter().any(|x| x == rule),
                "{a}: seed {seed} failed with {:?}, expected {rule}",
                r.violated_rules
            );
            return;
        }
    }
    panic!(
        "{a} was not caught in seeds 0..{seeds}; other verdicts:\n{}",
        seen.join("\n")
    );
}

#[test]
fn get_ignores_locks() {
    caught(Ablation::GetIgnoresLocks, 10, "snapshot_reads");
}

#[test]
fn no_write_conflict_check() {
    caught(Ablation::NoWriteConflictCheck, 5, "no_write_conflicts");
}

#[test]
fn prewrite_ignores_locks() {
    caught(Ablation::PrewriteIgnoresLocks, 5, "no_write_conflicts");
}

#[test]
fn commit_without_lock_check() {
    caught(Ablation::CommitWithoutLockCheck, 10, "atomic_commits");
}

#[test]
fn secondaries_first() {
    caught(Ablation::SecondariesFirst, 10, "atomic_commits");
}

#[test]
fn rollback_without_primary_check() {
    caught(Ablation::RollbackWithoutPrimaryCheck, 10, "atomic_commits");
}

#[test]
fn roll_forward_reader_ts() {
    caught(Ablation::RollForwardReaderTs, 25, "atomic_commits");
}

/// Losing rollback records harms only if a prewrite of the primary lands
/// after a reader rolled the transaction back, and its owner then commits
/// there while a secondary stays rolled back (or a reader's snapshot read
/// around the rollback). Since commits 39ce4da and 53539cc a commit requests every lock
/// at once and a caller may wait up to 3 s for a reply, so a reader can meet
/// a secondary's lock and roll the transaction back while the primary's
/// prewrite is still on its way: 102 of seeds 0..5000 fail (2%; was about
/// 0.1%), the first at seed 0. At 2% a seed, 89 of the 500 runs of ten
/// seeds in 0..5000 hold a failure: the bound of 10 (the target)
/// holds for seeds 0..10 mostly by luck, and a change of schedules can
/// move it (the mean gap between failures is 49 seeds).
#[test]
fn no_rollback_record() {
    caught(Ablation::NoRollbackRecord, 10, "snapshot_reads");
}

#[test]
fn oracle_forgets() {
    caught(Ablation::OracleForgets, 5, "timestamp_order");
}

#[test]
fn wall_clock_start_ts() {
    caught(Ablation::WallClockStartTs, 5, "timestamp_order");
}

/// A liveness-only ablation costs aborts or waiting, never safety: the
/// only rules it may break are liveness rules (a liveness verdict).
fn no_safety_violation(a: Ablation) -> f64 {
    let liveness: Vec<&str> = percsim_checker::LivenessRule::ALL
        .iter()
        .map(|r| r.name())
        .collect();
    let (mut aborted, mut finished) = (0, 0);
    for seed in 0..30 {
        let r = fuzz::judge(&campaign::generate(seed, &mix(a)), false).result;
        assert!(
            r.violated_rules
                .iter()
                .all(|x| liveness.contains(&x.as_str())),
            "{a}: seed {seed} reported {:?}",
            r.violated_rules
        );
        assert_ne!(r.verdict, Verdict::Safety);
        aborted += r.aborted;
        finished += r.aborted + r.committed;
    }
    aborted as f64 / finished.max(1) as f64
}

#[test]
fn no_lock_refresh_is_not_a_safety_bug() {
    let rate = no_safety_violation(Ablation::NoLockRefresh);
    eprintln!(
        "no-lock-refresh abort rate over 30 seeds: {:.1}%",
        100.0 * rate
    );
}

#[test]
fn stale_by_wall_time_only_is_not_a_safety_bug() {
    let rate = no_safety_violation(Ablation::StaleByWallTimeOnly);
    eprintln!(
        "stale-by-wall-time-only abort rate over 30 seeds: {:.1}%",
        100.0 * rate
    );
}

#[test]
fn observer_ignores_ack() {
    caught(Ablation::ObserverIgnoresAck, 20, "observer_at_most_once");
}

/// The cleared notification is lost only when the observer's transaction
/// then fails. Since the client refreshes its primary every
/// `lock_ttl_ms / refreshes_per_ttl` while it holds its locks, 38 of seeds
/// 0..300 fail (12.7%), the first at seed 22 (none in 0..20): a bound of
/// 40 seeds misses with probability 0.4%.
#[test]
fn notify_cleared_early() {
    caught(Ablation::NotifyClearedEarly, 40, "no_lost_notification");
}

#[test]
fn every_ablation_applies() {
    assert_eq!(
        percsim_scenarios::systems::percolator::ablations::applicable().len(),
        Ablation::ALL.len()
    );
}

#[test]
fn scan_skips_locks() {
    // Bank's audits and the harness's sweeper scan; a skipped lock of a
    // committed owner is a row missing from the scan's answer.
    caught(Ablation::ScanSkipsLocks, 20, "predicate_reads");
}

/// A kill-table row is measured over exactly the seeds up to the first
/// failure, whatever the threads ran past it before they stopped: one
/// thread and two give the same row (seeds, rates), as do Pulsar's rows.
#[test]
fn a_rows_rates_do_not_depend_on_the_threads() {
    use percsim_scenarios::systems::percolator::ablations;
    use percsim_scenarios::systems::pulsar::ablations as pulsar_ablations;
    let a = Ablation::SecondariesFirst;
    let (one, two) = (
        ablations::measure(Some(a), 50, 1, 0),
        ablations::measure(Some(a), 50, 2, 0),
    );
    let seeds = one.seeds_to_failure.expect("caught within 50 seeds");
    assert_eq!(one.seeds, seeds);
    assert_eq!(
        (
            two.seeds,
            two.seeds_to_failure,
            two.abort_rate,
            two.rolled_back_per_mille
        ),
        (
            one.seeds,
            one.seeds_to_failure,
            one.abort_rate,
            one.rolled_back_per_mille
        )
    );
    let p = percsim_protocol::pulsar::PulsarAblation::MarkerByProducerEpoch;
    let (one, two) = (
        pulsar_ablations::measure(Some(p), 60, 1),
        pulsar_ablations::measure(Some(p), 60, 2),
    );
    assert_eq!(
        one.seeds,
        one.seeds_to_failure.expect("caught within 60 seeds")
    );
    assert_eq!(
        (two.seeds, two.seeds_to_failure, two.abort_rate),
        (one.seeds, one.seeds_to_failure, one.abort_rate)
    );
}
