//! `percsim bench`'s exploration numbers: schedules and distinct states per
//! wall second of `percsim explore` on a three-transaction Percolator
//! script, beside the same script's plain runs per second (no schedule:
//! the world's choices all the seed's) in the same process.

use crate::explore::{ExploreOptions, Strategy, explore};
use crate::scenario::Scenario;
use std::time::Instant;

/// The three-transaction Percolator script explored.
const SCRIPT: &str = include_str!("../../../examples/percolator/explore/three-txns.json");

/// Explore `schedules` schedules of the script (depth-first, bound 2,
/// pruning on, one worker) and run it `schedules` times without a schedule;
/// print both rates.
pub fn measure(schedules: u64) {
    let base = match Scenario::parse(SCRIPT) {
        Ok(s) => s,
        Err(e) => return println!("  explore: the bench script does not load: {e}"),
    };
    let started = Instant::now();
    for _ in 0..schedules {
        if let Err(e) = base.run() {
            return println!("  explore: the bench script fails to run: {e}");
        }
    }
    let plain = schedules as f64 / started.elapsed().as_secs_f64();
    let opts = ExploreOptions {
        strategy: Strategy::Bounded { bound: 2 },
        max_schedules: schedules,
        ..ExploreOptions::default()
    };
    let started = Instant::now();
    let report = match explore(&base, &opts) {
        Ok(r) => r,
        Err(e) => return println!("  explore: {e}"),
    };
    let secs = started.elapsed().as_secs_f64();
    println!(
        "  {:<34} {:>9.0} schedules/wall s, {:.0} distinct states/wall s ({} schedules, {} states; goal 10,000 schedules/s)",
        "explore, 3-txn Percolator script",
        report.schedules as f64 / secs,
        report.distinct_states as f64 / secs,
        report.schedules,
        report.distinct_states
    );
    println!(
        "  {:<34} {plain:>9.0} runs/wall s  (same run: the script without a schedule)",
        "the same script, plain runs"
    );
}
