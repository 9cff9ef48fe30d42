use super::*;
use crate::campaign::{SeedResult, Verdict};

/// A campaign of seeds 0..10 of one system, or 0..10 then 0..4 of two.
fn header(k: u64, n: u64, two_systems: bool) -> Header {
    let mut systems = vec![SystemSeeds {
        name: "alpha".into(),
        seeds: 10,
    }];
    if two_systems {
        systems.push(SystemSeeds {
            name: "beta".into(),
            seeds: 4,
        });
    }
    Header {
        format: FORMAT.into(),
        seeds: SeedRange { start: 0, end: 10 },
        shard: ShardId { index: k, count: n },
        systems,
        workloads: Vec::new(),
        faults: Vec::new(),
        ablations: Vec::new(),
        check_determinism: false,
        commit: "abc1234".into(),
    }
}

/// Shard `h`'s whole file: header, its seeds in order, completion.
fn file(h: &Header) -> String {
    let k = h.shard.index;
    let mut out = h.line() + "\n";
    let n = h.shard_len(k);
    for i in 0..n {
        let (system, seed) = h.seed_at(k, i).expect("a seed of the shard");
        let mut r = SeedResult::empty(system, seed, "bank");
        r.verdict = Verdict::Pass;
        r.committed = 1;
        out += &(serde_json::to_string(&r).unwrap() + "\n");
    }
    let c = Completion {
        seeds: n,
        time_limit_reached: false,
    };
    out + &c.line() + "\n"
}

fn merged(files: &[(&str, String)]) -> Result<Summary, MergeRefused> {
    merge(
        files
            .iter()
            .map(|(name, text)| (name.to_string(), text.as_bytes()))
            .collect(),
    )
}

/// Merging must fail with a problem containing every needle.
fn refused(files: &[(&str, String)], needles: &[&str]) {
    let e = merged(files).expect_err("the merge was refused");
    let text = e.to_string();
    for n in needles {
        assert!(text.contains(n), "{n:?} not in:\n{text}");
    }
}

#[test]
fn every_shard_complete_merges_every_seed_once() {
    for two in [false, true] {
        let files: Vec<(&str, String)> = ["a", "b", "c"]
            .iter()
            .zip(1..=3)
            .map(|(name, k)| (*name, file(&header(k, 3, two))))
            .collect();
        let s = merged(&files).expect("one complete campaign");
        assert_eq!(s.seeds, if two { 14 } else { 10 });
        assert_eq!(s.transactions.committed, s.seeds);
    }
}

#[test]
fn a_missing_shard_names_its_seeds() {
    refused(
        &[("a", file(&header(1, 2, false)))],
        &["shard 2/2 is missing: alpha seeds 1, 3, ..., 9 (5 seeds, one in every 2)"],
    );
    // With two systems, the missing shard's seeds of each.
    refused(
        &[
            ("a", file(&header(1, 3, true))),
            ("c", file(&header(3, 3, true))),
        ],
        &[
            "shard 2/3 is missing: alpha seeds 1, 4, ..., 7 (3 seeds, one in every 3); beta seeds 0, 3",
        ],
    );
}

#[test]
fn a_shard_without_its_completion_line_was_cut_short() {
    let whole = file(&header(2, 2, false));
    let lines: Vec<&str> = whole.lines().collect();
    // The header, two seeds; the third (seed 5) and the completion lost.
    let cut = lines[..3].join("\n") + "\n";
    refused(
        &[("a", file(&header(1, 2, false))), ("b", cut)],
        &[
            "b: shard 2/2 was cut short (no completion line after 2 of its 5 seeds); missing: alpha seeds 5, 7, ..., 9 (3 seeds, one in every 2)",
        ],
    );
    // A completion line that counts more seeds than the file holds.
    let short = lines[..3].join("\n") + "\n" + lines[lines.len() - 1] + "\n";
    refused(
        &[("a", file(&header(1, 2, false))), ("b", short)],
        &["b: shard 2/2's completion line counts 5 seeds but it holds 2"],
    );
}

#[test]
fn a_shard_stopped_by_its_time_limit_is_incomplete() {
    let whole = file(&header(2, 2, false));
    let lines: Vec<&str> = whole.lines().collect();
    let c = Completion {
        seeds: 4,
        time_limit_reached: true,
    };
    let stopped = lines[..5].join("\n") + "\n" + &c.line() + "\n";
    refused(
        &[("a", file(&header(1, 2, false))), ("b", stopped)],
        &["b: shard 2/2 ran 4 of its 5 seeds (stopped by --time-limit); missing: alpha seed 9"],
    );
}

#[test]
fn shards_of_different_campaigns_are_refused() {
    let mut ablated = header(2, 2, false);
    ablated.ablations = vec!["secondaries-first".into()];
    refused(
        &[("a", file(&header(1, 2, false))), ("b", file(&ablated))],
        &[
            "a and b are shards of different campaigns (planted bugs (--ablate): none (faithful) vs secondaries-first)",
        ],
    );
    let mut other_range = header(2, 2, false);
    other_range.seeds.end = 20;
    refused(
        &[("a", file(&header(1, 2, false))), ("b", file(&other_range))],
        &["(seed range: 0..10 vs 0..20)"],
    );
    let mut other_count = header(2, 3, false);
    other_count.commit = "def5678".into();
    refused(
        &[("a", file(&header(1, 2, false))), ("b", file(&other_count))],
        &["(shard count: 2 vs 3)"],
    );
    let mut other_commit = header(2, 2, false);
    other_commit.commit = "def5678".into();
    refused(
        &[
            ("a", file(&header(1, 2, false))),
            ("b", file(&other_commit)),
        ],
        &["(commit: abc1234 vs def5678)"],
    );
}

#[test]
fn a_shard_given_twice_overlaps() {
    refused(
        &[
            ("a", file(&header(1, 2, false))),
            ("a2", file(&header(1, 2, false))),
            ("b", file(&header(2, 2, false))),
        ],
        &["shard 1/2 is given 2 times (overlapping seeds): a, a2"],
    );
}

#[test]
fn lines_without_a_header_or_out_of_place_are_refused() {
    let whole = file(&header(1, 1, false));
    let lines: Vec<&str> = whole.lines().collect();
    let headless = lines[1..].join("\n");
    refused(&[("old", headless)], &["old:1: not a campaign header"]);
    // Shard 1/1's seeds 0 and 2 with seed 1 left out.
    let gap = [lines[0], lines[1], lines[3]].join("\n");
    refused(
        &[("gap", gap)],
        &["gap:3: alpha seed 2 is not this shard's next seed (alpha seed 1)"],
    );
    let after = whole.clone() + lines[1] + "\n";
    refused(
        &[("after", after)],
        &["after:13: a line after the completion line"],
    );
    refused(
        &[("empty", String::new())],
        &["empty: empty (no campaign header)"],
    );
    refused(&[], &["no shard files given"]);
}
