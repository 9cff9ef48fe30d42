//! `percsim bench`'s exploration numbers: schedules and distinct states per
//! wall second of `percsim explore` on a three-transaction Percolator
//! script, beside the same script's plain runs per second (no schedule:
//! the world's choices all the seed's) in the same process.

use crate::explore::{ExploreOptions, Strategy, explore};
use crate::scenario::Scenario;
use std::time::Instant;

/// The three-transaction Percolator script explored.
const SCRIPT: &str = include_str!("../../../examples/percolator/explore/three-txns.json");

/// Explore the script (depth-first, bound 2, pruning on, one worker: 592
/// schedules) whole, again and again until at least `schedules` schedules
/// ran, and run it as many times without a schedule; print both rates.
pub fn measure(schedules: u64) {
    let base = match Scenario::parse(SCRIPT) {
        Ok(s) => s,
        Err(e) => return println!("  explore: the bench script does not load: {e}"),
    };
    let opts = ExploreOptions {
        strategy: Strategy::Bounded { bound: 2 },
        ..ExploreOptions::default()
    };
    let (mut ran, mut states, mut explorations) = (0, 0, 0);
    let started = Instant::now();
    while ran < schedules.max(1) {
        match explore(&base, &opts) {
            Ok(r) if r.schedules > 0 => {
                ran += r.schedules;
                states += r.distinct_states;
                explorations += 1;
            }
            Ok(_) => return println!("  explore: the bench script has no schedule"),
            Err(e) => return println!("  explore: {e}"),
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let started = Instant::now();
    for _ in 0..ran {
        if let Err(e) = base.run() {
            return println!("  explore: the bench script fails to run: {e}");
        }
    }
    let plain = ran as f64 / started.elapsed().as_secs_f64();
    println!(
        "  {:<34} {:>9.0} schedules/wall s, {:.0} distinct states/wall s ({explorations} explorations of {} schedules and {} states each; goal 10,000 schedules/s)",
        "explore, 3-txn Percolator script",
        ran as f64 / secs,
        states as f64 / secs,
        ran / explorations,
        states / explorations
    );
    println!(
        "  {:<34} {plain:>9.0} runs/wall s  (same run, {ran} runs: the script without a schedule)",
        "the same script, plain runs"
    );
}
