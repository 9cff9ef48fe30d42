//! Every history the simulator writes is judged the same offline: a small
//! ablation campaign saves each failing seed's capsule (with `save_capsule`,
//! as `percsim fuzz` does), the history is taken out of the capsule into a
//! file, and `percsim check`'s own entry point (`run_check_file`) must read
//! it (never exit 2) and give the in-process report exactly, with the rules
//! the run counted.

use percsim_protocol::percolator::Ablation;
use percsim_scenarios::campaign::{self, Mix, Verdict};
use percsim_scenarios::fuzz;
use std::path::{Path, PathBuf};

/// Classes that only restate a run that did not converge (the campaign
/// counts them as its liveness failure, not as a safety violation).
const UNCONVERGED: [&str; 4] = [
    "lock_left",
    "notify_left",
    "unprocessed_change",
    "partial_commit",
];

/// Runs `percsim check --json` on `path` in-process: (exit code, report).
fn check_file(path: &Path) -> (i32, serde_json::Value) {
    let mut out = Vec::new();
    let code = percsim_checker::run_check_file(path, true, &mut out);
    let text = String::from_utf8(out).expect("utf-8 report");
    let report = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (code, report)
}

/// Re-checks the capsule at `capsule` offline; returns whether its history
/// holds a put whose data is missing.
fn recheck(capsule: &Path, dir: &Path, judged: &campaign::Judged) -> bool {
    let text = std::fs::read_to_string(capsule).expect("capsule written");
    let value: serde_json::Value = serde_json::from_str(&text).expect("capsule is JSON");
    let history = serde_json::to_string(&value["history"]).expect("history");
    let file = dir.join("history.json");
    std::fs::write(&file, &history).expect("history written");
    let (code, mut offline) = check_file(&file);
    let name = capsule.display();
    assert_ne!(
        code, 2,
        "{name}: the written history does not parse: {offline}"
    );

    // The same report as the run's own check of its history, and the same
    // liveness verdict after it.
    let history_in = judged.transactions().expect("a history");
    let liveness = percsim_checker::check_liveness(history_in);
    let offline_liveness = offline
        .as_object_mut()
        .and_then(|o| o.remove("liveness"))
        .expect("a simulator's history is judged by the liveness rules");
    assert_eq!(
        offline_liveness,
        serde_json::to_value(&liveness).expect("liveness report"),
        "{name}: offline and in-process liveness verdicts differ"
    );
    let in_process = percsim_checker::check(history_in);
    let in_process = serde_json::to_value(&in_process).expect("report");
    assert_eq!(
        offline, in_process,
        "{name}: offline and in-process reports differ"
    );
    let expected = match (in_process["passed"] == true, liveness.passed()) {
        (false, _) => 1,
        (true, false) => 3,
        (true, true) => 0,
    };
    assert_eq!(code, expected);

    // The same rules the run counted (the campaign drops rules that only
    // restate a liveness failure, and adds the workload's invariants).
    let run: Vec<&str> = judged
        .result
        .violated_rules
        .iter()
        .map(String::as_str)
        .filter(|r| *r != "workload_invariant")
        .collect();
    let failed = offline["rules"].as_array().expect("rules");
    let failed: Vec<&serde_json::Value> = failed.iter().filter(|r| r["passed"] == false).collect();
    for rule in &run {
        assert!(
            failed.iter().any(|r| r["id"] == *rule),
            "{name}: the run broke {rule}, offline it holds"
        );
    }
    for r in &failed {
        let id = r["id"].as_str().expect("id");
        let classes = r["counts"].as_object().expect("counts");
        assert!(
            run.contains(&id) || classes.keys().all(|c| UNCONVERGED.contains(&c.as_str())),
            "{name}: offline {id} fails ({classes:?}), the run did not count it"
        );
    }
    if !run.is_empty() {
        assert_eq!(judged.result.verdict, Verdict::Safety);
        assert_eq!(code, 1);
    }
    history.contains("\"data_missing\":true")
}

#[test]
fn every_failing_capsule_of_an_ablation_campaign_rechecks_the_same_offline() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("percsim-offline-recheck-{}", std::process::id()));
    // no-write-conflict-check loses a put's data in some failing seeds:
    // seeds 5 and 12 before the change to one timer per time-out
    // (53c530e), 32 and 34 first after it; since owners refresh their
    // primary periodically, 12 of the 110 failing seeds of 0..200, the
    // first at 49.
    let campaign = [
        (Ablation::NoWriteConflictCheck, 0..50),
        (Ablation::CommitWithoutLockCheck, 0..6),
        (Ablation::GetIgnoresLocks, 0..6),
        (Ablation::SecondariesFirst, 0..6),
        (Ablation::OracleForgets, 0..6),
        (Ablation::NotifyClearedEarly, 0..10),
    ];
    let (mut failing, mut data_missing) = (0, 0);
    for (a, seeds) in campaign {
        let mix = Mix {
            ablations: vec![a.name().to_string()],
            ..Mix::default()
        };
        for seed in seeds {
            let scenario = campaign::generate(seed, &mix);
            let judged = fuzz::judge(&scenario, false);
            if judged.result.verdict == Verdict::Pass {
                continue;
            }
            let out = dir.join(a.name());
            let capsule = fuzz::save_capsule(&out, &scenario, &judged, None).expect("saved");
            failing += 1;
            data_missing += usize::from(recheck(&capsule, &out, &judged));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failing >= 10,
        "only {failing} failing seeds: the campaign checks too little"
    );
    // no-write-conflict-check erases committed data in these seeds: the
    // case that used to be written as an unreadable `put` without a value.
    assert!(
        data_missing > 0,
        "no history with a missing put's data was re-checked"
    );
}
