//! The `percsim` command line: every shipped example runs and its history
//! passes `percsim check`; bad input is rejected with exit code 2 and a
//! message naming the problem; campaigns, merge and replay work end to end.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn percsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_percsim"))
        .args(args)
        .output()
        .expect("run percsim")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn examples() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut out = Vec::new();
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("examples dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("percsim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

#[test]
fn every_example_runs_and_its_history_passes_check() {
    let all = examples();
    assert!(
        all.len() >= 20,
        "expected the shipped examples, found {}",
        all.len()
    );
    for path in all {
        let history = tmp(&format!(
            "{}.history.json",
            path.file_stem().unwrap().to_string_lossy()
        ));
        let run = percsim(&[
            "run",
            path.to_str().unwrap(),
            "--history",
            history.to_str().unwrap(),
        ]);
        assert_eq!(
            run.status.code(),
            Some(0),
            "{}:\n{}",
            path.display(),
            text(&run)
        );
        let check = percsim(&["check", history.to_str().unwrap()]);
        assert_eq!(
            check.status.code(),
            Some(0),
            "check of {}:\n{}",
            path.display(),
            text(&check)
        );
        assert!(text(&check).contains("PASS"));
    }
}

fn bad_scenario(json: &str, must_mention: &str) {
    let path = tmp("bad.json");
    std::fs::write(&path, json).unwrap();
    let o = percsim(&["run", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{json}\n{}", text(&o));
    assert!(
        text(&o).contains(must_mention),
        "message should mention {must_mention:?}: {}",
        text(&o)
    );
    assert!(!text(&o).contains("panicked"), "{}", text(&o));
}

#[test]
fn bad_scenarios_are_rejected_with_the_field_named() {
    let base = |cluster: &str, workload: &str| {
        format!(
            r#"{{"format":"percsim-scenario/1","seed":1,"cluster":{cluster},"workload":{workload}}}"#
        )
    };
    let bank = r#"{"name":"bank"}"#;
    bad_scenario(&base("{}", r#"{"name":"nosuch"}"#), "nosuch");
    bad_scenario(&base(r#"{"clients":-1}"#, bank), "clients");
    bad_scenario(&base(r#"{"clients":0}"#, bank), "clients");
    bad_scenario(
        &base(r#"{"tablet_servers":100000}"#, bank),
        "tablet_servers",
    );
    bad_scenario(&base(r#"{"run_ms":999999999999}"#, bank), "run_ms");
    bad_scenario(
        &base(
            r#"{"faults":{"schedule":[{"at_ms":5,"fault":{"kind":"kill","node":"tablet-9"}}]}}"#,
            bank,
        ),
        "tablet-9",
    );
    bad_scenario(
        &base(
            r#"{"faults":{"random":{"packet_loss":{"probability":2.0,"min_duration_ms":1,"max_duration_ms":2}}}}"#,
            bank,
        ),
        "packet_loss",
    );
    bad_scenario(
        &base(
            r#"{"crashes":[{"client":9,"txn":1,"step":"after_commit_primary"}]}"#,
            bank,
        ),
        "crashes[0].client",
    );
    bad_scenario(&base("{}", r#"{"name":"bank","accounts":1}"#), "accounts");
    bad_scenario(&base(r#"{"colour":"blue"}"#, bank), "colour");
    bad_scenario(
        &base(
            r#"{"clients":2}"#,
            r#"{"name":"script","steps":[{"do":"get","txn":"T9","row":"x","col":"v"}]}"#,
        ),
        "T9",
    );
    bad_scenario(
        &base(
            r#"{"clients":2}"#,
            r#"{"name":"script","steps":[{"do":"begin","client":5,"txn":"T1"}]}"#,
        ),
        "client 5",
    );
    bad_scenario(
        r#"{"format":"percsim-scenario/9","workload":{"name":"bank"}}"#,
        "format",
    );
    bad_scenario("{ not json", "line 1");
    // The second format: a `world` section and the system's own.
    let v2 = |rest: &str| format!(r#"{{"format":"percsim-scenario/2","seed":1,{rest}}}"#);
    let bank_w = r#""workload":{"name":"bank"}"#;
    bad_scenario(&v2(&format!(r#""cluster":{{}},{bank_w}"#)), "cluster");
    bad_scenario(
        &v2(&format!(r#""world":{{"run_ms":999999999999}},{bank_w}"#)),
        "world.run_ms",
    );
    bad_scenario(
        &v2(&format!(r#""percolator":{{"clients":0}},{bank_w}"#)),
        "percolator.clients",
    );
    bad_scenario(
        &v2(&format!(r#""pulsar":{{"brokers":1}},{bank_w}"#)),
        "a section of system \"pulsar\"",
    );
    bad_scenario(
        &v2(r#""system":"pulsar","workload":{"name":"bank"}"#),
        "runs on system \"percolator\", not \"pulsar\"",
    );
    bad_scenario(
        r#"{"format":"percsim-scenario/1","system":"pulsr","workload":{"name":"bank"}}"#,
        &format!(
            "unknown system \"pulsr\" (known: {})",
            percsim_scenarios::systems::names().join(", ")
        ),
    );
    let o = percsim(&["run", "/nonexistent/scenario.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("cannot read"), "{}", text(&o));
}

/// A script whose own expectation does not hold is not a safety violation:
/// `percsim run` says "ExpectationFailed" with exit code 7, names the step,
/// and the checker's verdict on the same history stays a pass.
#[test]
fn a_failed_script_expectation_has_its_own_verdict_and_exit_code() {
    let script = |expect: &str| {
        format!(
            r#"{{"format":"percsim-scenario/1","seed":1,
            "cluster":{{"tablet_servers":1,"tablets":1,"clients":1,"workers_per_client":1,"run_ms":5000}},
            "workload":{{"name":"script",
              "initial":[{{"row":"a","col":"v","value":"a0"}}],
              "steps":[{{"do":"begin","client":0,"txn":"R"}},
                       {{"do":"get","txn":"R","row":"a","col":"v","expect":"{expect}"}},
                       {{"do":"commit","txn":"R","expect":"committed"}}]}}}}"#
        )
    };
    let path = tmp("expectation.json");
    let history = tmp("expectation.history.json");
    std::fs::write(&path, script("a0")).unwrap();
    let o = percsim(&["run", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    std::fs::write(&path, script("not-a0")).unwrap();
    let capsules = tmp("expectation-capsules");
    let o = percsim(&[
        "run",
        path.to_str().unwrap(),
        "--history",
        history.to_str().unwrap(),
        "--out",
        capsules.to_str().unwrap(),
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(7), "{out}");
    assert!(out.contains("verdict       ExpectationFailed"), "{out}");
    assert!(!out.contains("Safety"), "{out}");
    assert!(out.contains("expectation failed: step 1"), "{out}");
    assert!(out.contains("not-a0"), "{out}");
    let check = percsim(&["check", history.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
}

#[test]
fn check_rejects_a_malformed_history_with_exit_2() {
    let path = tmp("bad-history.json");
    std::fs::write(
        &path,
        r#"{"format":"percsim-history/1","transactions":[{"id":1}]}"#,
    )
    .unwrap();
    let o = percsim(&["check", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn fuzz_shards_merge_and_replay() {
    let out = tmp("failures");
    let a = tmp("shard1.jsonl");
    let b = tmp("shard2.jsonl");
    // The default campaign: seeds 0..30 of Percolator, then 3 Pulsar seeds,
    // then 3 Omid seeds.
    for (shard, file, n) in [("1/2", &a, 18), ("2/2", &b, 18)] {
        let o = percsim(&[
            "fuzz",
            "--seeds",
            "0..30",
            "--shard",
            shard,
            "--quiet",
            "--out",
            out.to_str().unwrap(),
            "--jsonl",
            file.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let line = format!("seeds               {n} ");
        assert!(text(&o).contains(&line), "{}", text(&o));
        assert!(text(&o).contains("coverage"), "{}", text(&o));
    }
    // Each seed's line between the campaign's header and the completion line.
    let lines = |p: &PathBuf| std::fs::read_to_string(p).unwrap().lines().count();
    assert_eq!((lines(&a), lines(&b)), (18 + 2, 18 + 2));
    let merged = percsim(&["merge", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(merged.status.code(), Some(0), "{}", text(&merged));
    assert!(
        text(&merged).contains("seeds               36 "),
        "{}",
        text(&merged)
    );
    assert!(
        text(&merged).contains("stream"),
        "no Pulsar seed: {}",
        text(&merged)
    );

    // A capsule holds the scenario; replaying it reruns exactly that run.
    let scenario =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/bank.json"))
            .unwrap();
    let capsule = tmp("capsule.json");
    std::fs::write(
        &capsule,
        format!(r#"{{"format":"percsim-capsule/1","verdict":"pass","scenario":{scenario}}}"#),
    )
    .unwrap();
    let replay = percsim(&["replay", capsule.to_str().unwrap()]);
    assert_eq!(replay.status.code(), Some(0), "{}", text(&replay));
    assert!(text(&replay).contains("verdict       Pass"));

    let bad = percsim(&["fuzz", "--shard", "3/2"]);
    assert_eq!(bad.status.code(), Some(2));
    let bad = percsim(&["fuzz", "--workload", "nosuch", "--count", "1"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad).contains("nosuch"));
}

/// The variables that choose a shard, cleared for every process below so
/// that the host's own (a CI matrix, a Slurm job) cannot leak in.
const SHARD_VARS: &[&str] = &[
    "PERCSIM_SHARD_INDEX",
    "PERCSIM_SHARD_COUNT",
    "JOB_COMPLETION_INDEX",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_STEP",
    "SLURM_ARRAY_TASK_MAX",
];

fn percsim_env(args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_percsim"));
    for v in SHARD_VARS {
        c.env_remove(v);
    }
    c.args(args)
        .envs(vars.iter().copied())
        .output()
        .expect("run percsim")
}

/// The summary without the lines that differ between runs of the same
/// seeds (the header and the wall time).
fn summary_body(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with("percsim fuzz:") && !l.starts_with("seeds "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// JSON lines by seed, without the wall time (nor the header and
/// completion lines).
fn seed_lines(paths: &[&PathBuf]) -> std::collections::BTreeMap<u64, serde_json::Value> {
    let mut out = std::collections::BTreeMap::new();
    for p in paths {
        for line in std::fs::read_to_string(p).unwrap().lines() {
            let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
            if v.get("campaign").is_some() || v.get("complete").is_some() {
                continue;
            }
            v.as_object_mut().unwrap().remove("wall_ms");
            let seed = v["seed"].as_u64().unwrap();
            assert!(out.insert(seed, v).is_none(), "seed {seed} twice");
        }
    }
    out
}

#[test]
fn four_shard_processes_merge_to_the_unsharded_campaign() {
    let out = tmp("shards-failures");
    // A broken protocol, so that the comparison covers failures and capsules.
    let args = |jsonl: &PathBuf| -> Vec<String> {
        [
            "fuzz",
            "--seeds",
            "200..240",
            "--system",
            "percolator",
            "--ablate",
            "wall-clock-start-ts",
            "--shrink-budget",
            "0",
            "--jobs",
            "1",
            "--quiet",
            "--out",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([
            out.display().to_string(),
            "--jsonl".into(),
            jsonl.display().to_string(),
        ])
        .collect()
    };
    let whole_file = tmp("whole.jsonl");
    let whole_args = args(&whole_file);
    let whole = percsim_env(
        &whole_args.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        &[],
    );
    assert_eq!(whole.status.code(), Some(1), "{}", text(&whole));
    assert!(
        text(&whole).contains("shard 1/1 from the default"),
        "{}",
        text(&whole)
    );
    // One shard per engine: the flag, a GitHub matrix, a Kubernetes Indexed
    // Job, and a Slurm array whose ids start at 1.
    type Engine<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let engines: [Engine; 4] = [
        (
            &[],
            &[("PERCSIM_SHARD_INDEX", "0"), ("PERCSIM_SHARD_COUNT", "4")],
            "1/4 from PERCSIM_SHARD_INDEX",
        ),
        (
            &[],
            &[("JOB_COMPLETION_INDEX", "1"), ("PERCSIM_SHARD_COUNT", "4")],
            "2/4 from JOB_COMPLETION_INDEX",
        ),
        (
            &[],
            &[
                ("SLURM_ARRAY_TASK_ID", "3"),
                ("SLURM_ARRAY_TASK_COUNT", "4"),
                ("SLURM_ARRAY_TASK_MIN", "1"),
            ],
            "3/4 from SLURM_ARRAY_TASK_ID",
        ),
        // The flag wins over the environment.
        (
            &["--shard", "4/4"],
            &[("JOB_COMPLETION_INDEX", "0"), ("PERCSIM_SHARD_COUNT", "4")],
            "4/4 from --shard",
        ),
    ];
    let files: Vec<PathBuf> = (1..=4)
        .map(|k| tmp(&format!("shard{k}-of-4.jsonl")))
        .collect();
    for ((flag, vars, expected), file) in engines.iter().zip(&files) {
        let mut a = args(file);
        a.extend(flag.iter().map(|s| s.to_string()));
        let o = percsim_env(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>(), vars);
        assert!(
            text(&o).contains(&format!("shard {expected}: 10 seeds")),
            "{}",
            text(&o)
        );
    }
    let names: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
    let merged = percsim_env(&[&["merge"], names.as_slice()].concat(), &[]);
    assert_eq!(
        merged.status.code(),
        whole.status.code(),
        "{}",
        text(&merged)
    );
    let body = summary_body(&whole);
    assert!(
        body.contains("failure: percolator seed"),
        "no failure to compare: {body}"
    );
    assert_eq!(summary_body(&merged), body);
    assert_eq!(
        seed_lines(&files.iter().collect::<Vec<_>>()),
        seed_lines(&[&whole_file])
    );
    merge_refuses_missing_and_cut_short_shards(&names);
}

/// `percsim merge` of four shards refuses (exit 2, naming the problem) when
/// one is left out or cut short.
fn merge_refuses_missing_and_cut_short_shards(names: &[&str]) {
    let without_third = [names[0], names[1], names[3]];
    let o = percsim_env(&[&["merge"], &without_third[..]].concat(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("shard 3/4 is missing: percolator seeds 202, 206, ..., 238"),
        "{}",
        text(&o)
    );
    let cut = tmp("shard2-cut.jsonl");
    let whole = std::fs::read_to_string(names[1]).unwrap();
    let kept: Vec<&str> = whole.lines().take(4).collect();
    std::fs::write(&cut, kept.join("\n") + "\n").unwrap();
    let o = percsim_env(
        &["merge", names[0], cut.to_str().unwrap(), names[2], names[3]],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("shard 2/4 was cut short (no completion line after 3 of its 10 seeds)"),
        "{}",
        text(&o)
    );
}

#[test]
fn an_unusable_shard_variable_is_bad_input() {
    let o = percsim_env(
        &["fuzz", "--count", "1", "--quiet"],
        &[("JOB_COMPLETION_INDEX", "4"), ("PERCSIM_SHARD_COUNT", "4")],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("JOB_COMPLETION_INDEX gives shard index 4"),
        "{}",
        text(&o)
    );
    let o = percsim_env(
        &["fuzz", "--count", "1", "--quiet"],
        &[("SLURM_ARRAY_TASK_ID", "1")],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("SLURM_ARRAY_TASK_COUNT is not"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_run_past_its_watchdog_budget_is_stuck_and_the_campaign_goes_on() {
    let register = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/register.json");
    let budget = [("PERCSIM_WATCHDOG_WALL_S", "0")];
    let run = percsim_env(&["run", register.to_str().unwrap()], &budget);
    assert_eq!(run.status.code(), Some(6), "{}", text(&run));
    assert!(text(&run).contains("verdict       Stuck"), "{}", text(&run));
    assert!(text(&run).contains("wall time"), "{}", text(&run));
    // The same run within its budget passes.
    let run = percsim_env(&["run", register.to_str().unwrap()], &[]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));

    let out = tmp("stuck-capsules");
    let jsonl = tmp("stuck.jsonl");
    let fuzz = percsim_env(
        &[
            "fuzz",
            "--seeds",
            "0..3",
            "--workload",
            "register",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
            "--jsonl",
            jsonl.to_str().unwrap(),
        ],
        &budget,
    );
    assert_eq!(fuzz.status.code(), Some(6), "{}", text(&fuzz));
    let lines = seed_lines(&[&jsonl]);
    assert_eq!(lines.len(), 3, "every seed is judged: {lines:?}");
    for (seed, line) in &lines {
        assert_eq!(line["verdict"], "stuck", "seed {seed}: {line}");
        let capsule = line["capsule"]
            .as_str()
            .expect("a stuck seed saves a capsule");
        let saved = std::fs::read_to_string(capsule).expect("read the capsule");
        assert!(saved.contains("percsim replay"), "{saved}");
    }
}

/// Every `fuzz` flag is obeyed for every system or refused naming the
/// problem: a class Pulsar does not honour, a workload of another system,
/// an unknown system; without `--system`, the named workloads choose it.
#[test]
fn fuzz_flags_are_obeyed_for_every_system_or_refused() {
    for (args, mention) in [
        (
            &["--system", "pulsar", "--faults", "kill_liveness"][..],
            "does not honour fault class \"kill_liveness\"",
        ),
        (&["--system", "pulsar", "--workload", "bank"][..], "bank"),
        (&["--system", "nosuch"][..], "unknown system \"nosuch\""),
        (
            &[
                "--system",
                "percolator",
                "--ablate",
                "marker-by-producer-epoch",
            ][..],
            "is system pulsar's",
        ),
    ] {
        let mut a = vec!["fuzz", "--count", "1", "--quiet"];
        a.extend(args);
        let o = percsim(&a);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {}", text(&o));
        assert!(text(&o).contains(mention), "{a:?}: {}", text(&o));
        assert!(!text(&o).contains("panicked"), "{}", text(&o));
    }
    let out = tmp("stream-only");
    let o = percsim(&[
        "fuzz",
        "--count",
        "2",
        "--workload",
        "stream",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        text(&o).contains("(2 pulsar seeds;"),
        "the named workload chooses its system: {}",
        text(&o)
    );
    assert!(text(&o).contains("stream=2"), "{}", text(&o));
    let o = percsim(&["ablations", "--system", "nosuch"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// A campaign of `system` over seeds `0..n` with `flags`: its exit code,
/// its output and its seed lines.
fn campaign_of(
    system: &str,
    n: u64,
    flags: &[&str],
) -> (
    Option<i32>,
    String,
    std::collections::BTreeMap<u64, serde_json::Value>,
) {
    let name = format!("{system}-{}", flags.join("-").replace([':', ','], "_"));
    let out = tmp(&format!("{name}-failures"));
    let jsonl = tmp(&format!("{name}.jsonl"));
    let _ = std::fs::remove_file(&jsonl);
    let seeds = format!("0..{n}");
    let mut a = vec!["fuzz", "--system", system, "--seeds", &seeds, "--quiet"];
    a.extend(flags);
    a.extend(["--out", out.to_str().unwrap()]);
    a.extend(["--jsonl", jsonl.to_str().unwrap()]);
    let o = percsim(&a);
    let lines = match jsonl.exists() {
        true => seed_lines(&[&jsonl]),
        false => Default::default(),
    };
    (o.status.code(), text(&o), lines)
}

/// The fault classes a seed line counts injections of.
fn classes_injected(line: &serde_json::Value) -> Vec<String> {
    let counters = line["counters"].as_object().expect("counters");
    counters
        .iter()
        .filter(|(k, v)| k.starts_with("fault.") && v.as_u64() > Some(0))
        .map(|(k, _)| k["fault.".len()..].to_string())
        .collect()
}

/// `--faults` is obeyed by Percolator and by Pulsar: only the named class
/// is injected, its kills are named by the role they kill, the coverage
/// lists no item of a class left out, and a class a system cannot honour
/// is refused naming the class and the system.
#[test]
fn faults_are_obeyed_by_each_system() {
    for (system, n) in [("percolator", 6), ("pulsar", 6)] {
        let (code, out, lines) = campaign_of(system, n, &["--faults", "partition"]);
        assert_eq!(code, Some(0), "{system}: {out}");
        assert_eq!(lines.len() as u64, n, "{out}");
        let mut partitions = 0;
        for line in lines.values() {
            let injected = classes_injected(line);
            assert!(
                injected.iter().all(|c| c == "partition"),
                "{system}: {injected:?}"
            );
            partitions += injected.len();
        }
        assert!(partitions > 0, "{system}: partition never injected: {out}");
        for absent in ["client killed", "node paused", "at a named point"] {
            assert!(!out.contains(absent), "{system}: {absent}: {out}");
        }
        assert!(out.contains("network partition"), "{out}");
    }
    // Twenty seeds: Pulsar's campaign starts its faults at a quarter of
    // the world's rate, and six seeds may kill no data server.
    let (code, out, lines) = campaign_of("pulsar", 20, &["--faults", "kill:broker"]);
    assert_eq!(code, Some(0), "{out}");
    let kills = ["kill_data_server", "kill_coordinator"];
    for line in lines.values() {
        let injected = classes_injected(line);
        assert!(
            injected.iter().all(|c| kills.contains(&c.as_str())),
            "{injected:?}"
        );
    }
    assert!(out.contains("  kill:broker "), "{out}");
    let (_, _, same) = campaign_of("pulsar", 20, &["--faults", "kill_data_server"]);
    assert_eq!(lines, same, "kill:broker is Pulsar's kill_data_server");
    let (code, out, lines) = campaign_of("percolator", 4, &["--faults", "kill:tablet_server"]);
    assert_eq!(code, Some(0), "{out}");
    let (_, _, same) = campaign_of("percolator", 4, &["--faults", "kill_data_server"]);
    assert_eq!(
        lines, same,
        "kill:tablet_server is Percolator's kill_data_server"
    );
    for (system, class) in [
        ("pulsar", "clock_skew"),
        ("pulsar", "session_expiry"),
        ("pulsar", "kill:tablet_server"),
        ("percolator", "kill:broker"),
    ] {
        let (code, out, lines) = campaign_of(system, 1, &["--faults", class]);
        assert_eq!(code, Some(2), "{system} {class}: {out}");
        let want = format!("system {system} does not honour fault class {class:?}");
        assert!(out.contains(&want), "{out}");
        assert!(lines.is_empty(), "{out}");
    }
}

/// `--workload` is obeyed by Percolator and by Pulsar (every seed runs a
/// named workload), and a workload of another system is refused.
#[test]
fn workloads_are_obeyed_by_each_system() {
    for (system, workload, other) in [
        ("percolator", "register", "stream"),
        ("pulsar", "stream-pipeline", "bank"),
    ] {
        let (code, out, lines) = campaign_of(system, 4, &["--workload", workload]);
        assert_eq!(code, Some(0), "{out}");
        assert!(
            lines.values().all(|l| l["workload"] == workload),
            "{system}: {lines:?}"
        );
        let (code, out, _) = campaign_of(system, 1, &["--workload", other]);
        assert_eq!(code, Some(2), "{out}");
        assert!(
            out.contains(&format!("no workload named for system {system}")),
            "{out}"
        );
    }
}

/// `--ablate` is obeyed by Percolator and by Pulsar (every seed runs with
/// the planted bug switched on, and only then), and another system's
/// planted bug is refused.
#[test]
fn planted_bugs_are_obeyed_by_each_system() {
    use percsim_scenarios::campaign::Mix;
    for (system, bug, other) in [
        (
            "percolator",
            "no-rollback-record",
            "marker-by-producer-epoch",
        ),
        ("pulsar", "marker-by-producer-epoch", "no-rollback-record"),
    ] {
        let (code, out, _) = campaign_of(system, 1, &["--ablate", other]);
        assert_eq!(code, Some(2), "{out}");
        assert!(out.contains("choose that system with --system"), "{out}");
        let def = percsim_scenarios::systems::find(system).unwrap();
        let ablated = Mix {
            systems: vec![system.into()],
            ablations: vec![bug.into()],
            ..Mix::default()
        };
        ablated.validate().unwrap();
        for seed in 0..5 {
            let section = |mix: &Mix| def.generate(seed, mix).spec.section().unwrap().to_string();
            assert!(section(&ablated).contains(bug), "{system} {seed}");
            assert!(!section(&Mix::default()).contains(bug), "{system} {seed}");
        }
    }
}

/// `percsim systems` lists every registered system with what a campaign
/// may name for it.
#[test]
fn systems_lists_every_system_with_its_workloads_faults_and_planted_bugs() {
    let o = percsim(&["systems"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = text(&o);
    for s in percsim_scenarios::systems::all() {
        assert!(t.contains(&format!("{}: ", s.name())), "{t}");
        for (bug, _) in s.ablations() {
            assert!(t.contains(bug), "{bug}: {t}");
        }
    }
    assert!(
        t.contains("stream-pipeline") && t.contains("kill:liveness"),
        "{t}"
    );
    // Each system names its kills by its own roles.
    assert!(
        t.contains("kill:tablet_server") && t.contains("kill:broker"),
        "{t}"
    );
}

/// A fault class's old name on `--faults` still works and means the class
/// by its name now: `kill_oracle` runs the same campaign as
/// `kill_coordinator`, whose kills are counted as `fault.kill_coordinator`.
#[test]
fn an_old_fault_class_name_means_its_class_now() {
    let run = |class: &str| {
        let out = tmp(&format!("old-name-{class}"));
        let jsonl = tmp(&format!("old-name-{class}.jsonl"));
        let _ = std::fs::remove_file(&jsonl);
        let o = percsim(&[
            "fuzz",
            "--system",
            "percolator",
            "--workload",
            "register",
            "--faults",
            class,
            "--count",
            "8",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
            "--jsonl",
            jsonl.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{class}: {}", text(&o));
        seed_lines(&[&jsonl])
    };
    let old = run("kill_oracle");
    assert_eq!(old, run("kill_coordinator"));
    let counted = |name: &str| {
        old.values()
            .filter(|l| {
                l["counters"]
                    .get(name)
                    .is_some_and(|n| n.as_u64() > Some(0))
            })
            .count()
    };
    assert!(counted("fault.kill_coordinator") > 0, "{old:?}");
    assert_eq!(counted("fault.kill_oracle"), 0, "{old:?}");
    assert_ne!(old, run("kill_data_server"), "the class is not ignored");
}

/// A failing script (its read expects a value the cell never had).
fn failing_script() -> String {
    r#"{"format":"percsim-scenario/2","seed":1,"world":{"run_ms":5000},
      "percolator":{"tablet_servers":1,"tablets":1,"clients":1,"workers_per_client":1},
      "workload":{"name":"script","initial":[{"row":"a","col":"v","value":"a0"}],
        "steps":[{"do":"begin","client":0,"txn":"R"},
                 {"do":"get","txn":"R","row":"a","col":"v","expect":"never"},
                 {"do":"commit","txn":"R","expect":"committed"}]}}"#
        .to_string()
}

/// A fresh directory outside percsim's checkout.
fn elsewhere(name: &str) -> PathBuf {
    let dir = tmp(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Run a command percsim printed (`percsim ARGS...`) with this build's
/// binary in `dir`.
fn run_printed(command: &str, dir: &Path) -> Output {
    let mut words = command.split_whitespace();
    assert_eq!(words.next(), Some("percsim"), "{command}");
    Command::new(env!("CARGO_BIN_EXE_percsim"))
        .args(words)
        .current_dir(dir)
        .output()
        .expect("run percsim")
}

/// The command printed after `label` (a line `label   percsim ...`).
fn printed(out: &str, label: &str) -> String {
    out.lines()
        .find_map(|l| l.strip_prefix(label))
        .map(|c| c.trim().to_string())
        .unwrap_or_else(|| panic!("no {label:?} line in:\n{out}"))
}

#[test]
fn a_failed_run_saves_a_capsule_whose_commands_work_from_another_directory() {
    let here = elsewhere("run-here");
    let there = elsewhere("run-there");
    std::fs::write(here.join("s.json"), failing_script()).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_percsim"))
        .args(["run", "s.json", "--out", "caps"])
        .current_dir(&here)
        .output()
        .unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(7), "{out}");
    assert!(here.join("caps/percolator-seed-1.json").exists(), "{out}");
    let replay = printed(&out, "replay");
    assert!(replay.starts_with("percsim replay /"), "{replay}");
    let again = run_printed(&replay, &there);
    assert_eq!(again.status.code(), Some(7), "{}", text(&again));
    assert!(text(&again).contains("recorded verdict: ExpectationFailed"));
    let draw = run_printed(&printed(&out, "draw"), &there);
    assert_eq!(draw.status.code(), Some(0), "{}", text(&draw));
    assert!(there.join("report.html").exists());
    let capsule = printed(&out, "capsule");
    let check = run_printed(&format!("percsim check {capsule}"), &there);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
}

#[test]
fn run_takes_planted_bugs_by_name_and_refuses_an_unknown_one() {
    let bank = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/bank.json");
    let bank = bank.to_str().unwrap();
    let o = percsim(&["run", bank, "--ablate", "no-such-bug"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no planted bug \"no-such-bug\""),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains("no-rollback-record"), "{}", text(&o));
    let history = tmp("ablated.history.json");
    let caps = tmp("ablated-capsules");
    let o = percsim(&[
        "run",
        bank,
        "--ablate",
        "no-rollback-record",
        "--history",
        history.to_str().unwrap(),
        "--out",
        caps.to_str().unwrap(),
    ]);
    assert_ne!(o.status.code(), Some(2), "{}", text(&o));
    let h = std::fs::read_to_string(&history).unwrap();
    assert!(
        h.contains("no-rollback-record"),
        "the history's scenario names it"
    );
}

#[test]
fn fuzz_sweeps_a_scenario_file_with_capsules_and_shrinking() {
    let file = tmp("sweep.json");
    std::fs::write(&file, failing_script()).unwrap();
    let out_dir = elsewhere("sweep-capsules");
    let f = file.to_str().unwrap();
    let o = percsim(&[
        "fuzz",
        "--scenario",
        f,
        "--count",
        "2",
        "--jobs",
        "1",
        "--shrink-budget",
        "2",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(7), "{out}");
    for seed in [0, 1] {
        let capsule = out_dir.join(format!("percolator-seed-{seed}.json"));
        let c: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&capsule).unwrap()).unwrap();
        assert_eq!(c["scenario"]["seed"], seed, "{c}");
        assert!(c["shrink_runs"].as_u64().is_some(), "shrinking ran: {c}");
        assert!(
            out.contains(&format!("seed {seed}: ExpectationFailed")),
            "{out}"
        );
    }
    assert!(out.contains("-> percsim replay /"), "{out}");
    let o = percsim(&["fuzz", "--scenario", f, "--system", "percolator"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--system does not apply to --scenario"));
    let o = percsim(&["fuzz", "--scenario", f, "--count", "1", "--ablate", "nope"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no planted bug \"nope\""), "{}", text(&o));
}

#[test]
fn a_misspelt_verb_is_named_by_its_step_index() {
    let json = failing_script().replace(r#""do":"commit""#, r#""do":"comit""#);
    bad_scenario(&json, "bad scenario: workload.steps[2]: unknown verb");
    bad_scenario(&json, "unknown verb \"comit\"");
}

/// A bank run whose cluster crashes and pauses client 0 in its 1000th
/// transaction: a run of 300 ms never gets there.
fn never_fired_scenario() -> String {
    r#"{"format":"percsim-scenario/2","seed":1,"world":{"run_ms":300},
      "percolator":{"tablet_servers":1,"tablets":1,"clients":2,
        "crashes":[{"client":0,"txn":1000,"step":"after_commit_primary"}],
        "pauses":[{"client":0,"txn":1000,"step":"before_prewrite","duration_ms":10}]},
      "workload":{"name":"bank","accounts":4}}"#
        .to_string()
}

#[test]
fn a_configured_crash_that_never_fires_fails_a_run_naming_the_entry() {
    let file = tmp("never-fired.json");
    std::fs::write(&file, never_fired_scenario()).unwrap();
    let o = percsim(&["run", file.to_str().unwrap()]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(7), "{out}");
    for entry in [
        "not fired: percolator.crashes[0] (kill client 0 in its transaction 1000 at after_commit_primary) never fired",
        "not fired: percolator.pauses[0] (freeze client 0 in its transaction 1000 at before_prewrite) never fired",
    ] {
        assert!(out.contains(entry), "{entry:?} not in:\n{out}");
    }
    assert!(out.contains("verdict       ExpectationFailed"), "{out}");
    // A fault that did not happen is not counted as injected.
    let faults = printed(&out, "faults");
    assert!(
        !faults.contains("crash_at_step") && !faults.contains("pause_at_step"),
        "{faults}"
    );
    // The same entries in a transaction the run reaches fire: it passes.
    let fired = never_fired_scenario()
        .replace("\"txn\":1000", "\"txn\":1")
        .replace("after_commit_primary", "before_prewrite");
    std::fs::write(&file, fired).unwrap();
    let o = percsim(&["run", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!text(&o).contains("not fired"), "{}", text(&o));
}

/// A Pulsar stream run whose section kills a node the 100000th time any
/// node reaches `after_open_logged` (never, in 500 ms) and freezes one the
/// first time a message is appended (at once).
fn pulsar_never_fired_scenario() -> String {
    r#"{"format":"percsim-scenario/2","seed":1,"system":"pulsar",
      "world":{"run_ms":500,"quiesce_ms":30000},
      "pulsar":{"clients":2,"brokers":2,"partitions":1,"crashes":[
        {"point":"after_open_logged","nth":100000},
        {"point":"after_append_logged","nth":1,"pause_ms":10}]},
      "workload":{"name":"stream"}}"#
        .to_string()
}

#[test]
fn a_configured_pulsar_crash_that_never_fires_fails_a_run_naming_the_entry() {
    let file = tmp("pulsar-never-fired.json");
    std::fs::write(&file, pulsar_never_fired_scenario()).unwrap();
    let o = percsim(&["run", file.to_str().unwrap()]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(7), "{out}");
    let entry = "not fired: pulsar.crashes[0] (kill the node reaching after_open_logged, the 100000th time it is reached in the run) never fired";
    assert!(out.contains(entry), "{entry:?} not in:\n{out}");
    assert!(
        !out.contains("pulsar.crashes[1]"),
        "the pause fired:\n{out}"
    );
    assert!(out.contains("verdict       ExpectationFailed"), "{out}");
    // Both entries keyed to times the run reaches fire: it passes (the
    // 2nd opening; a kill at the 1st leaves the pause's append unreached).
    let fired = pulsar_never_fired_scenario().replace("\"nth\":100000", "\"nth\":2");
    std::fs::write(&file, fired).unwrap();
    let o = percsim(&["run", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!text(&o).contains("not fired"), "{}", text(&o));
}

#[test]
fn a_sweep_lists_the_seeds_whose_configured_crash_never_fired_apart_from_failures() {
    let file = tmp("never-fired-sweep.json");
    std::fs::write(&file, never_fired_scenario()).unwrap();
    let out_dir = elsewhere("never-fired-capsules");
    let o = percsim(&[
        "fuzz",
        "--scenario",
        file.to_str().unwrap(),
        "--count",
        "2",
        "--jobs",
        "1",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "not a failure:\n{out}");
    assert!(
        out.contains("configured faults that never fired: 2 of 2 seeds"),
        "{out}"
    );
    for seed in [0, 1] {
        let line =
            format!("not fired: percolator seed {seed}: percolator.crashes[0] (kill client 0");
        assert!(out.contains(&line), "{line:?} not in:\n{out}");
    }
    assert!(!out.contains("failure:"), "{out}");
}

/// A command whose output goes to a pipe already closed (`percsim fuzz |
/// head` once `head` has exited) ends by SIGPIPE, as other command line
/// tools do, not with a panic about a broken pipe.
#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_the_command_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_percsim"))
        .args(["systems"])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run percsim");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(13), "{:?}: {stderr}", out.status);
}

/// An exploration whose output goes to a pipe already closed still saves
/// its failing schedule's capsule: the capsule is written before the
/// report is printed.
#[cfg(unix)]
#[test]
fn a_closed_pipe_does_not_lose_an_explorations_capsule() {
    let out = tmp("explore-closed-pipe");
    let _ = std::fs::remove_dir_all(&out);
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/percolator/explore/three-txns.json");
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let status = Command::new(env!("CARGO_BIN_EXE_percsim"))
        .arg("explore")
        .arg(&script)
        .args(["--ablate", "prewrite-ignores-locks", "--shrink-budget", "0"])
        .arg("--out")
        .arg(&out)
        .stdout(writer)
        .status()
        .expect("run percsim");
    assert!(!status.success(), "{status:?}");
    let saved: Vec<_> = std::fs::read_dir(&out)
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert_eq!(saved.len(), 1, "{saved:?} in {}", out.display());
}
