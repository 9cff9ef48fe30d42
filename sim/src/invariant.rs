//! Assertions on what must never happen, in the style of TigerBeetle: they
//! stay on in release builds. A tripped assertion panics with a message
//! starting with [`PREFIX`]; the run's thread dies, and the scenario runner
//! turns that into a crash verdict (exit code 4) naming the seed.

/// How a tripped assertion's panic message starts.
pub const PREFIX: &str = "invariant violated: ";

/// Stop the run: `what` must never happen.
#[track_caller]
pub fn violated(what: &str) -> ! {
    panic!("{PREFIX}{what}")
}

/// Stop the run unless `holds`; `what` says what must hold.
#[track_caller]
pub fn check(holds: bool, what: impl FnOnce() -> String) {
    if !holds {
        violated(&what());
    }
}
