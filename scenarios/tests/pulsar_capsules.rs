//! A failing Pulsar seed is replayable like a Percolator one: for each
//! planted bug, the first failing seed of the default Pulsar campaign is
//! saved as a capsule (with `save_capsule`, as `percsim fuzz` does); the
//! capsule carries the stream history and the explanation, `percsim check
//! CAPSULE` (`histfile::check_capsule`) re-judges it offline with the same
//! verdict and rule names as the run, and `percsim replay CAPSULE` (the
//! capsule's scenario, run again) reproduces the same verdict, rules and
//! stream history.

use percsim_checker::Event;
use percsim_protocol::pulsar::PulsarAblation;
use percsim_scenarios::campaign::{self, Verdict};
use percsim_scenarios::fuzz;
use percsim_scenarios::histfile::{Document, check_capsule, is_capsule_file, load, load_document};
use percsim_scenarios::report;
use percsim_scenarios::scenario::Scenario;
use percsim_scenarios::systems::pulsar::PULSAR;
use percsim_scenarios::systems::pulsar::ablations::mix;
use percsim_scenarios::systems::pulsar::campaign::PULSAR_SEED_BASE;
use std::path::{Path, PathBuf};

/// Runs `percsim check --json CAPSULE` in-process: (exit code, report).
fn check_json(path: &Path) -> (i32, serde_json::Value) {
    let mut out = Vec::new();
    let code = check_capsule(path, true, &mut out);
    let text = String::from_utf8(out).expect("utf-8 report");
    let report = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (code, report)
}

/// The ids of the rules a JSON report says failed.
fn failed_rules(report: &serde_json::Value) -> Vec<String> {
    report["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .filter(|r| r["passed"] == false)
        .map(|r| r["id"].as_str().expect("id").to_string())
        .collect()
}

/// Finds `a`'s first failing seed within `seeds`, saves its capsule, and
/// checks that the capsule re-judges and replays the same way.
fn capsule_rechecks_and_replays(a: PulsarAblation, seeds: u64) {
    let mix = mix(Some(a));
    let (scenario, judged) = (0..seeds)
        .map(|i| campaign::generate(PULSAR_SEED_BASE + i, &mix))
        .map(|s| {
            let j = fuzz::judge(&s, false);
            (s, j)
        })
        .find(|(_, j)| j.result.verdict == Verdict::Safety)
        .unwrap_or_else(|| panic!("{a} not caught in {seeds} seeds"));
    let dir: PathBuf = std::env::temp_dir().join(format!(
        "percsim-pulsar-capsule-{}-{}",
        a.name(),
        std::process::id()
    ));
    let path = fuzz::save_capsule(&dir, &scenario, &judged, None).expect("capsule saved");
    assert!(is_capsule_file(&path));

    // The capsule carries the stream history and the explanation.
    let capsule: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
    let stream = judged.stream().expect("a Pulsar run has a stream history");
    assert_eq!(
        capsule["stream_history"],
        serde_json::to_value(stream).expect("JSON"),
        "{a}: the capsule's stream history is the run's"
    );
    let explanation = capsule["explanation"].as_str().expect("an explanation");
    let run_rules: Vec<String> = judged
        .result
        .violated_rules
        .iter()
        .filter(|r| *r != "workload_invariant")
        .cloned()
        .collect();
    assert!(
        !run_rules.is_empty(),
        "{a}: a safety verdict names its rules"
    );
    for rule in &run_rules {
        assert!(
            explanation.contains(rule.as_str()),
            "{a}: {rule} not explained"
        );
    }

    // `percsim check CAPSULE`: the same verdict and rule names, offline.
    let (code, mut report) = check_json(&path);
    assert_eq!(code, 1, "{a}: {report}");
    assert_eq!(failed_rules(&report), run_rules, "{a}");
    // The liveness verdict follows the report, as for a stream history file.
    let liveness = report
        .as_object_mut()
        .and_then(|r| r.remove("liveness"))
        .expect("the liveness verdict of a history that records its thresholds");
    assert!(liveness["thresholds"].is_object(), "{a}: {liveness}");
    assert_eq!(
        report,
        serde_json::to_value(judged.stream_report.as_ref().expect("report")).expect("JSON"),
        "{a}: the offline report is the run's own"
    );
    let mut text = Vec::new();
    assert_eq!(check_capsule(&path, false, &mut text), 1);
    let text = String::from_utf8(text).expect("utf-8");
    assert!(
        text.contains("the run recorded verdict \"safety\""),
        "{text}"
    );

    // `percsim replay CAPSULE`: the capsule's scenario fails the same way.
    let again = Scenario::parse(&capsule["scenario"].to_string()).expect("the capsule's scenario");
    let replayed = fuzz::judge(&again, false);
    assert_eq!(replayed.result.verdict, Verdict::Safety, "{a}");
    assert_eq!(
        replayed.result.violated_rules, judged.result.violated_rules,
        "{a}"
    );
    assert_eq!(
        replayed.stream(),
        judged.stream(),
        "{a}: the replay's stream history differs"
    );
    export_refuses_and_report_draws(&path, &capsule["stream_history"], &run_rules);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `percsim export` reads transaction histories only: a Pulsar capsule, or
/// its stream history as a file, is refused (exit code 2 in the CLI) with
/// the commands that read it, never turned into an empty export.
/// `percsim report` draws it: the failing transactions flagged on the
/// timeline, each broken rule's findings, the capsule's faults as bands.
fn export_refuses_and_report_draws(capsule: &Path, stream: &serde_json::Value, rules: &[String]) {
    let e = load(capsule).err().expect("a Pulsar capsule is refused");
    assert!(e.contains("is a capsule holding a stream history"), "{e}");
    assert!(e.contains("`percsim report "), "{e}");
    let file = capsule.with_extension("stream.json");
    std::fs::write(&file, stream.to_string()).expect("written");
    let e = load(&file).err().expect("a stream history is refused");
    assert!(
        e.contains("is a stream history (percsim-stream-history/1)"),
        "{e}"
    );

    let Ok(Document::Stream(from_capsule)) = load_document(capsule) else {
        panic!("a Pulsar capsule is a stream document");
    };
    assert!(
        !from_capsule.events.is_empty(),
        "the capsule's world events"
    );
    let page = report::stream_report(
        &from_capsule.stream,
        &from_capsule.events,
        from_capsule.capsule.as_ref(),
        "c.json",
        false,
    );
    assert!(page.contains("<span class=\"verdict-fail\">FAIL</span>"));
    for rule in rules {
        assert!(
            page.contains(&format!("<small>({rule})</small>")),
            "{rule} has no finding card"
        );
    }
    assert!(
        page.contains(" flagged\""),
        "no transaction flagged on the timeline"
    );
    assert!(page.contains("class=\"band\""), "no fault band");
    let Ok(Document::Stream(plain)) = load_document(&file) else {
        panic!("a stream history file is a stream document");
    };
    assert!(plain.capsule.is_none());
    assert_eq!(
        plain.events, from_capsule.events,
        "a stream history file carries the run's events"
    );
    let svg = report::stream_report(&plain.stream, &plain.events, None, "s.json", true);
    assert!(
        svg.starts_with("<svg") && svg.contains(" flagged\""),
        "{svg}"
    );
    assert!(
        svg.contains("class=\"band\""),
        "its events draw fault bands"
    );
    older_files_read_as_before(capsule, stream, &from_capsule.events);
}

/// Files written before the stream history carried the run's events: a
/// stream history without them draws no fault band, and a capsule keeps
/// them in an event-only transaction history, which is read instead.
fn older_files_read_as_before(capsule: &Path, stream: &serde_json::Value, events: &[Event]) {
    let mut bare = stream.clone();
    bare.as_object_mut().expect("an object").remove("events");
    let file = capsule.with_extension("bare.json");
    std::fs::write(&file, bare.to_string()).expect("written");
    let Ok(Document::Stream(plain)) = load_document(&file) else {
        panic!("a stream history file without events is a stream document");
    };
    assert!(plain.events.is_empty());
    let svg = report::stream_report(&plain.stream, &plain.events, None, "s.json", true);
    assert!(!svg.contains("class=\"band\""), "no events, no bands");

    let mut old: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(capsule).expect("read")).expect("JSON");
    old["stream_history"] = bare;
    old["history"] = serde_json::json!({"format": "percsim-history/1", "transactions": [],
        "events": events, "final_state": {"cells": []}});
    let file = capsule.with_extension("old.json");
    std::fs::write(&file, old.to_string()).expect("written");
    let Ok(Document::Stream(loaded)) = load_document(&file) else {
        panic!("an older Pulsar capsule is a stream document");
    };
    assert_eq!(loaded.events, events, "the older capsule's events");
}

#[test]
fn marker_by_producer_epoch_capsule() {
    capsule_rechecks_and_replays(PulsarAblation::MarkerByProducerEpoch, 40);
}

#[test]
fn replay_ignores_aborted_capsule() {
    capsule_rechecks_and_replays(PulsarAblation::ReplayIgnoresAborted, 20);
}

#[test]
fn no_max_read_position_capsule() {
    capsule_rechecks_and_replays(PulsarAblation::NoMaxReadPosition, 20);
}

#[test]
fn pending_ack_not_durable_capsule() {
    capsule_rechecks_and_replays(PulsarAblation::PendingAckNotDurable, 40);
}

#[test]
fn commit_before_log_durable_capsule() {
    capsule_rechecks_and_replays(PulsarAblation::CommitBeforeLogDurable, 150);
}

#[test]
fn timeout_races_commit_capsule() {
    capsule_rechecks_and_replays(PulsarAblation::TimeoutRacesCommit, 100);
}

/// A capsule of a Pulsar run saved without its stream history (by an older
/// percsim) is refused with the reason and the way out, exit code 2.
#[test]
fn a_pulsar_capsule_without_its_stream_history_is_refused() {
    let dir = std::env::temp_dir().join(format!("percsim-old-capsule-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("seed-1.json");
    let capsule = serde_json::json!({
        "format": "percsim-capsule/1",
        "verdict": "safety",
        "scenario": {
            "format": "percsim-scenario/1",
            "system": "pulsar",
            "cluster": {"clients": 2},
            "pulsar": {"brokers": 1},
            "workload": {"name": "stream"}
        },
        "history": null,
    });
    std::fs::write(&path, capsule.to_string()).expect("written");
    let mut out = Vec::new();
    assert_eq!(check_capsule(&path, false, &mut out), 2);
    let text = String::from_utf8(out).expect("utf-8");
    assert!(text.contains("holds no stream_history"), "{text}");
    assert!(text.contains("percsim replay"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// How big a Pulsar scenario is, in the measures its shrinking reduces.
fn size(s: &Scenario) -> u64 {
    let v = serde_json::to_value(s).expect("JSON");
    let count = |p: &str| v.pointer(p).and_then(|x| x.as_u64()).unwrap_or(0);
    let classes = v["world"]["faults"]["random"]
        .as_object()
        .map_or(0, |r| r.values().filter(|c| !c.is_null()).count()) as u64;
    let crashes = v["pulsar"]["crashes"].as_array().map_or(0, Vec::len) as u64;
    classes
        + crashes
        + count("/pulsar/clients")
        + count("/pulsar/brokers")
        + count("/pulsar/partitions")
}

/// A failing Pulsar seed shrinks (by editing its scenario) to a smaller
/// scenario that still fails the same way, within the budget of runs; with
/// no budget it stays as it was.
#[test]
fn a_failing_pulsar_seed_shrinks() {
    let a = PulsarAblation::ReplayIgnoresAborted;
    let mix = mix(Some(a));
    let (seed, judged) = (0..20)
        .map(|i| PULSAR_SEED_BASE + i)
        .map(|seed| (seed, fuzz::judge(&campaign::generate(seed, &mix), false)))
        .find(|(_, j)| j.result.verdict == Verdict::Safety)
        .expect("replay-ignores-aborted caught within 20 seeds");
    let original = campaign::generate(seed, &mix);
    let (same, runs) = campaign::shrink(&PULSAR, seed, &mix, &judged.result, 0);
    assert_eq!((size(&same), runs), (size(&original), 0));

    let (shrunk, runs) = campaign::shrink(&PULSAR, seed, &mix, &judged.result, 40);
    assert!(runs > 0 && runs <= 40, "{runs} runs");
    assert!(
        size(&shrunk) < size(&original),
        "{} -> {}",
        size(&original),
        size(&shrunk)
    );
    let again = fuzz::judge(&shrunk, false).result;
    assert_eq!(again.verdict, Verdict::Safety);
    assert!(
        again
            .violated_rules
            .iter()
            .any(|r| judged.result.violated_rules.contains(r)),
        "{:?} vs {:?}",
        again.violated_rules,
        judged.result.violated_rules
    );
    // Deterministic: the same failure shrinks to the same scenario.
    let (twice, _) = campaign::shrink(&PULSAR, seed, &mix, &judged.result, 40);
    assert_eq!(
        serde_json::to_string(&twice).expect("JSON"),
        serde_json::to_string(&shrunk).expect("JSON")
    );
}

/// `percsim check CAPSULE` judges a Pulsar capsule's stream history by the
/// stream liveness rule too, as it judges a stream history file: a dead
/// client's transaction left open past its bound is exit code 3 with the
/// thresholds and the explanation; the same capsule around a history whose
/// transactions were ended in time passes.
#[test]
fn a_pulsar_capsule_is_judged_by_the_stream_liveness_rule() {
    let dir = std::env::temp_dir().join(format!("percsim-live-capsule-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let fixtures = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../checker/tests/fixtures/stream/"
    );
    let capsule_of = |fixture: &str| {
        let text = std::fs::read_to_string(format!("{fixtures}{fixture}")).expect("fixture");
        let stream: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let capsule = serde_json::json!({
            "format": "percsim-capsule/1",
            "verdict": "liveness",
            "scenario": {"format": "percsim-scenario/1", "system": "pulsar"},
            "stream_history": stream,
        });
        let path = dir.join(fixture);
        std::fs::write(&path, capsule.to_string()).expect("written");
        path
    };
    let open = capsule_of("dead_client_txn_open.json");
    let mut out = Vec::new();
    assert_eq!(check_capsule(&open, false, &mut out), 3);
    let text = String::from_utf8(out).expect("utf-8");
    assert!(text.contains("dead_client_txn_open"), "{text}");
    let (code, report) = check_json(&open);
    assert_eq!(code, 3, "{report}");
    assert_eq!(report["passed"], true, "safety holds: {report}");
    let findings = report["liveness"]["findings"]
        .as_array()
        .expect("liveness findings");
    assert!(!findings.is_empty(), "{report}");

    let ended = capsule_of("dead_client_txn_ended.json");
    let mut out = Vec::new();
    assert_eq!(check_capsule(&ended, false, &mut out), 0);
    let text = String::from_utf8(out).expect("utf-8");
    assert!(
        text.contains("liveness"),
        "the thresholds are printed: {text}"
    );
    assert!(!text.contains("dead_client_txn_open"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the percsim binary: its exit code and its output.
fn percsim(args: &[&str]) -> (Option<i32>, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_percsim"))
        .args(args)
        .output()
        .expect("percsim runs");
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    (o.status.code(), text + &String::from_utf8_lossy(&o.stderr))
}

/// A campaign seed's Pulsar capsule shrinks with `percsim shrink` (the
/// shrunk capsule replays with the same verdict) and `percsim report`
/// draws both capsules with every lane a client's or the coordinator's,
/// never the coordinator's sentinel id as a client number.
#[test]
fn a_campaign_capsule_shrinks_and_is_drawn_with_named_lanes() {
    let mix = mix(Some(PulsarAblation::ReplayIgnoresAborted));
    let (scenario, judged) = (0..20)
        .map(|i| campaign::generate(PULSAR_SEED_BASE + i, &mix))
        .map(|s| {
            let j = fuzz::judge(&s, false);
            (s, j)
        })
        .find(|(_, j)| j.result.verdict == Verdict::Safety)
        .expect("replay-ignores-aborted caught within 20 seeds");
    let dir =
        std::env::temp_dir().join(format!("percsim-pulsar-shrink-cli-{}", std::process::id()));
    let path = fuzz::save_capsule(&dir, &scenario, &judged, None).expect("capsule saved");
    let shrunk_dir = dir.join("shrunk");
    let (code, said) = percsim(&[
        "shrink",
        path.to_str().expect("UTF-8"),
        "--budget",
        "40",
        "--out",
        shrunk_dir.to_str().expect("UTF-8"),
    ]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("still fails   Safety ["), "{said}");
    let shrunk = shrunk_dir.join(format!("pulsar-seed-{}-shrunk.json", scenario.seed));
    let shrunk = shrunk.to_str().expect("UTF-8");
    let (code, said) = percsim(&["replay", shrunk, "--shrunk"]);
    assert_eq!(code, Some(1), "{said}");
    let clients = serde_json::to_value(&scenario).expect("JSON")["pulsar"]["clients"]
        .as_u64()
        .expect("a client count");
    for capsule in [path.to_str().expect("UTF-8"), shrunk] {
        let page = dir.join("page.html");
        let (code, said) = percsim(&["report", capsule, "-o", page.to_str().expect("UTF-8")]);
        assert_eq!(code, Some(0), "{said}");
        let page = std::fs::read_to_string(&page).expect("the page");
        let labels: Vec<&str> = page
            .split("<text x=\"4\" y=\"")
            .skip(1)
            .filter_map(|rest| rest.split_once("\">")?.1.split("</text>").next())
            .collect();
        assert!(!labels.is_empty(), "no lane drawn");
        for l in &labels {
            // `client 2` or, for one of its workers, `client 2 / 1`.
            let client = l
                .strip_prefix("client ")
                .and_then(|n| n.split(" / ").next()?.parse::<u64>().ok())
                .is_some_and(|n| n < clients);
            assert!(
                client || *l == "coordinator (no known client)",
                "{l}: {labels:?}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
