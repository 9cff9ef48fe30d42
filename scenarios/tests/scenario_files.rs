//! One test per scenario file of `scenarios/examples/script/`: each runs
//! with its own seed and must pass; a failure names the file, the seed,
//! what was expected and what happened, and the replay command.

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/script");
    let trials =
        percsim_scenarios::regress::file_trials(&dir, "script").unwrap_or_else(|e| panic!("{e}"));
    assert!(trials.len() >= 5, "the examples are missing");
    libtest_mimic::run(&libtest_mimic::Arguments::from_args(), trials).exit();
}
