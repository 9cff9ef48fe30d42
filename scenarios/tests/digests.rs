//! Behaviour fingerprints: the digest of the history (and the run's counts)
//! of a fixed set of runs, kept in `digests.txt`. A refactor that is meant
//! to change nothing must reproduce every digest; an intended behaviour
//! change re-records them (`PERCSIM_BLESS_DIGESTS=1 cargo test --test
//! digests`) and says so in its commit message.

use percsim_scenarios::Scenario;
use percsim_scenarios::campaign::{self, Mix};
use percsim_scenarios::systems::omid;
use percsim_scenarios::systems::percolator::campaign::DEFAULT_WORKLOADS;
use percsim_scenarios::systems::pulsar::campaign::{self as pulsar_campaign, PULSAR_SEED_BASE};
use std::hash::Hasher;
use std::path::{Path, PathBuf};

/// Seeds per workload of the default mix (5 workloads, 200 runs).
const SEEDS_PER_WORKLOAD: u64 = 40;

/// Generated Pulsar scenarios (the `i`-th Pulsar seed of a campaign).
const PULSAR_SEEDS: u64 = 40;

/// Generated Omid scenarios (seeds `0..OMID_SEEDS` of an Omid campaign).
const OMID_SEEDS: u64 = 20;

fn digests_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/digests.txt")
}

/// The digest of one run: the system's history (in its own format)
/// without its informational scenario description, plus the counts and
/// failures the run reported.
fn digest(scenario: &Scenario) -> String {
    let out = scenario
        .run()
        .unwrap_or_else(|e| panic!("seed {}: {e}", scenario.seed));
    let mut history = out.history;
    history.set_scenario(serde_json::Value::Null);
    let mut h = fnv::FnvHasher::default();
    h.write(&serde_json::to_vec(&history).expect("a history serializes"));
    h.write(&serde_json::to_vec(&out.summary).expect("a summary serializes"));
    format!("{:016x}", h.finish())
}

fn example_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("examples directory")
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            example_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
}

/// Every run of the fingerprint set, named.
fn runs() -> Vec<(String, Scenario)> {
    let mut runs = Vec::new();
    for w in DEFAULT_WORKLOADS {
        let mix = Mix {
            workloads: vec![w.to_string()],
            ..Mix::default()
        };
        for seed in 0..SEEDS_PER_WORKLOAD {
            runs.push((
                format!("campaign {w} {seed}"),
                campaign::generate(seed, &mix),
            ));
        }
    }
    for i in 0..PULSAR_SEEDS {
        runs.push((
            format!("campaign pulsar {}", PULSAR_SEED_BASE + i),
            pulsar_campaign::generate(PULSAR_SEED_BASE + i, &Mix::default()),
        ));
    }
    for seed in 0..OMID_SEEDS {
        runs.push((
            format!("campaign omid {seed}"),
            omid::generate(seed, &Mix::default()),
        ));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files = Vec::new();
    example_files(&root, &mut files);
    for f in files {
        let name = f
            .strip_prefix(&root)
            .expect("under examples")
            .display()
            .to_string();
        let scenario = Scenario::load(&f).unwrap_or_else(|e| panic!("{name}: {e}"));
        runs.push((format!("example {name} {}", scenario.seed), scenario));
    }
    runs
}

fn compute() -> Vec<String> {
    let runs = runs();
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(4);
    let chunks: Vec<Vec<(usize, String, Scenario)>> = {
        let mut c: Vec<Vec<_>> = (0..threads).map(|_| Vec::new()).collect();
        for (i, (name, s)) in runs.into_iter().enumerate() {
            c[i % threads].push((i, name, s));
        }
        c
    };
    let mut lines: Vec<(usize, String)> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .into_iter()
                        .map(|(i, name, s)| (i, format!("{name} {}", digest(&s))))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a digest thread panicked"))
            .collect()
    });
    lines.sort();
    lines.into_iter().map(|(_, l)| l).collect()
}

/// The runs whose line differs from the recorded ones, and the recorded
/// lines no run reproduced.
fn differences(now: &[String], recorded: &str) -> (Vec<String>, Vec<String>) {
    let recorded: Vec<&str> = recorded.lines().collect();
    let differ = now
        .iter()
        .filter(|l| !recorded.contains(&l.as_str()))
        .cloned()
        .collect();
    let gone = recorded
        .iter()
        .filter(|l| !now.iter().any(|n| n == *l))
        .map(|l| l.to_string())
        .collect();
    (differ, gone)
}

#[test]
fn histories_match_the_recorded_digests() {
    let now = compute();
    assert!(
        now.len() >= 200,
        "the fingerprint set shrank to {} runs",
        now.len()
    );
    if std::env::var_os("PERCSIM_BLESS_DIGESTS").is_some() {
        std::fs::write(digests_file(), now.join("\n") + "\n").expect("write digests.txt");
        return;
    }
    let text = std::fs::read_to_string(digests_file()).expect("read tests/digests.txt");
    let (differ, gone) = differences(&now, &text);
    assert!(
        differ.is_empty() && gone.is_empty(),
        "{} of {} runs changed behaviour.\nnow:\n{}\nrecorded:\n{}\n\
         If the change is intended, re-record with PERCSIM_BLESS_DIGESTS=1 and say so in the commit.",
        differ.len(),
        now.len(),
        differ.join("\n"),
        gone.join("\n")
    );
}

#[test]
fn a_changed_digest_is_detected() {
    let recorded = "campaign bank 0 4548273663fbd749\ncampaign bank 1 cbe8560e0276ff26\n";
    let now = vec![
        "campaign bank 0 4548273663fbd749".to_string(),
        "campaign bank 1 cbe8560e0276ff27".to_string(),
    ];
    let (differ, gone) = differences(&now, recorded);
    assert_eq!(differ, vec!["campaign bank 1 cbe8560e0276ff27".to_string()]);
    assert_eq!(gone, vec!["campaign bank 1 cbe8560e0276ff26".to_string()]);
    let (differ, gone) = differences(&now[..1], recorded);
    assert!(differ.is_empty());
    assert_eq!(gone.len(), 1, "a run that disappeared is reported");
}
