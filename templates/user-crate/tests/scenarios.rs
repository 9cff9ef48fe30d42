//! One test per scenario file of `tests/scenarios/`: each runs with its own
//! seed and fails naming the file, the seed and the replay command.

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    percsim::regress::file_tests_main(&dir, "scenarios");
}
