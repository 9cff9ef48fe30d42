//! The test cargo-mutants runs against each mutant of `protocol/` (see
//! `.ci/mutants` and docs/mutants.md): a few hundred seeds of the default
//! campaign must all pass. Ignored in a plain `cargo test`, where the
//! campaign tests already cover the same ground; run it with
//! `cargo test -p percsim-scenarios --test mutants -- --include-ignored`.
//! `PERCSIM_MUTANT_SEEDS` sets how many seeds (default 300).

use percsim_scenarios::campaign::{self, Mix, Verdict};
use percsim_scenarios::fuzz;

fn seeds() -> u64 {
    std::env::var("PERCSIM_MUTANT_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300)
}

/// The first seed of `seeds` (stepping by `step` from `first`) that does
/// not pass, with its verdict and explanation.
fn first_failure(first: u64, step: u64, seeds: u64) -> Option<String> {
    let mix = Mix::default();
    (first..seeds).step_by(step as usize).find_map(|seed| {
        let judged = fuzz::judge(&campaign::generate(seed, &mix), false);
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
    let n = seeds();
    let failures: Vec<String> = std::thread::scope(|s| {
        let a = s.spawn(move || first_failure(0, 2, n));
        let b = s.spawn(move || first_failure(1, 2, n));
        [a, b]
            .into_iter()
            .filter_map(|h| h.join().expect("a campaign thread panicked"))
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
