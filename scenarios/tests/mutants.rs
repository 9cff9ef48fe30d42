//! The test cargo-mutants runs against each mutant of `protocol/` (see
//! `.ci/mutants` and docs/mutants.md): a few hundred seeds of the default
//! campaign must all pass, Percolator's and Pulsar's alike. Ignored in a
//! plain `cargo test`, where the campaign tests already cover the same
//! ground; run it with
//! `cargo test -p percsim-scenarios --test mutants -- --include-ignored`.
//! `PERCSIM_MUTANT_SEEDS` sets how many Percolator seeds (default 300),
//! `PERCSIM_MUTANT_PULSAR_SEEDS` how many Pulsar seeds (default half as
//! many; a Pulsar seed runs in about a fifth of a Percolator seed's time): a mutant of `protocol/src/pulsar/` can only fail on a Pulsar seed,
//! whose run the stream checker judges.

use percsim_scenarios::campaign::{Mix, Verdict};
use percsim_scenarios::fuzz;
use percsim_scenarios::system::SystemDef;
use percsim_scenarios::systems::percolator::PERCOLATOR;
use percsim_scenarios::systems::pulsar::PULSAR;
use percsim_scenarios::systems::pulsar::campaign::PULSAR_SEED_BASE;

/// A number from the environment variable `name`, or `default`.
fn env_count(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The seeds to run, with their system: `PERCSIM_MUTANT_SEEDS` Percolator
/// seeds from 0, then `PERCSIM_MUTANT_PULSAR_SEEDS` Pulsar seeds from
/// [`PULSAR_SEED_BASE`].
fn seeds() -> Vec<(&'static dyn SystemDef, u64)> {
    let percolator = env_count("PERCSIM_MUTANT_SEEDS", 300);
    let pulsar = env_count("PERCSIM_MUTANT_PULSAR_SEEDS", percolator / 2);
    let p: &'static dyn SystemDef = &PERCOLATOR;
    let q: &'static dyn SystemDef = &PULSAR;
    (0..percolator)
        .map(|s| (p, s))
        .chain((0..pulsar).map(|i| (q, PULSAR_SEED_BASE + i)))
        .collect()
}

/// The first of `seeds` that does not pass, with its verdict and
/// explanation.
fn first_failure(seeds: &[(&'static dyn SystemDef, u64)]) -> Option<String> {
    let mix = Mix::default();
    seeds.iter().find_map(|&(system, seed)| {
        let judged = fuzz::judge(&system.generate(seed, &mix), false);
        (judged.result.verdict != Verdict::Pass).then(|| {
            format!(
                "seed {seed}: {:?}\n{}",
                judged.result.verdict,
                judged.result.explanation.unwrap_or_default()
            )
        })
    })
}

#[test]
#[ignore = "the mutation-testing campaign; run by .ci/mutants"]
fn default_campaign_passes() {
    let all = seeds();
    // Two threads, each taking every other seed, so both systems' seeds
    // are shared between them.
    let halves: [Vec<(&'static dyn SystemDef, u64)>; 2] =
        [0, 1].map(|k| all.iter().copied().skip(k).step_by(2).collect());
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = halves
            .iter()
            .map(|half| s.spawn(move || first_failure(half)))
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().expect("a campaign thread panicked"))
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
