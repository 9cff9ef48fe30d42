//! The per-seed watchdog: a run that stops making progress ends with a
//! "stuck" verdict instead of hanging the campaign.
//!
//! Three budgets, checked from inside the simulation (its own thread cannot
//! be stopped from outside):
//! - simulated time: the run may last at most its workload and healed
//!   phases plus [`STUCK_MARGIN_MS`]; madsim stops the run past that limit
//!   (a reader retrying a lock forever, a sweep that never ends);
//! - wall time, checked every [`CHECK_EVERY`] RPCs a client sends, and
//!   resident memory, every [`MEMORY_EVERY`] such checks (a retry loop that barely advances simulated time, or a
//!   history that grows without bound). These two are the only places the
//!   simulator looks at the machine; they decide only whether a run is cut
//!   short, never what it records before.
//!
//! A tripped budget panics with a message starting with [`STUCK_MARKER`],
//! which the caller turns into the verdict.

use std::sync::atomic::{AtomicU64, Ordering};

/// How a watchdog's panic message starts.
pub const STUCK_MARKER: &str = "percsim watchdog: stuck:";

/// Simulated time a run may take beyond its workload and healed phases
/// (the final sweep and the workload's own check).
pub const STUCK_MARGIN_MS: u64 = 120_000;

/// How many RPCs between two checks of wall time.
const CHECK_EVERY: u64 = 256;

/// How many wall-time checks between two checks of memory (reading
/// `/proc` costs more than reading the clock).
const MEMORY_EVERY: u64 = 16;

/// Wall-time and memory budgets of one run.
pub(crate) struct Watchdog {
    started: std::time::Instant,
    wall_budget_ms: u64,
    rss_budget_mb: u64,
    calls: AtomicU64,
}

impl Watchdog {
    /// Budgets from `PERCSIM_WATCHDOG_WALL_S` (default 600 s) and
    /// `PERCSIM_WATCHDOG_RSS_MB` (default 12,000 MB of the whole process).
    pub(crate) fn from_env() -> Self {
        let var = |name: &str, default: u64| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(default)
        };
        Watchdog {
            started: std::time::Instant::now(),
            wall_budget_ms: var("PERCSIM_WATCHDOG_WALL_S", 600).saturating_mul(1000),
            rss_budget_mb: var("PERCSIM_WATCHDOG_RSS_MB", 12_000),
            calls: AtomicU64::new(0),
        }
    }

    /// Count one RPC; at the first and then every [`CHECK_EVERY`] calls,
    /// end the run if a budget
    /// is exceeded.
    pub(crate) fn tick(&self) {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        if !n.is_multiple_of(CHECK_EVERY) {
            return;
        }
        if let Some(why) = self.exceeded(n, n.is_multiple_of(CHECK_EVERY * MEMORY_EVERY)) {
            panic!("{STUCK_MARKER} {why}");
        }
    }

    fn exceeded(&self, calls: u64, memory: bool) -> Option<String> {
        let wall_ms = self.started.elapsed().as_millis() as u64;
        if wall_ms > self.wall_budget_ms {
            return Some(format!(
                "{wall_ms} ms of wall time (budget {} ms) after {calls} RPCs",
                self.wall_budget_ms
            ));
        }
        if !memory {
            return None;
        }
        let rss_mb = resident_mb()?;
        (rss_mb > self.rss_budget_mb).then(|| {
            format!(
                "{rss_mb} MB resident (budget {} MB) after {calls} RPCs",
                self.rss_budget_mb
            )
        })
    }
}

/// The process's resident memory, from `/proc/self/statm` (Linux only).
fn resident_mb() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096 / (1 << 20))
}

/// The simulated-time limit of a run whose phases last `phases_ms`.
pub(crate) fn time_limit_ms(phases_ms: u64) -> u64 {
    phases_ms.saturating_add(STUCK_MARGIN_MS)
}

/// Whether a panic message says the run was stuck (the watchdog or
/// madsim's simulated-time limit).
pub fn is_stuck(panic_message: &str) -> bool {
    panic_message.starts_with(STUCK_MARKER) || panic_message.starts_with("time limit exceeded")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_past_its_limit_trips() {
        let w = Watchdog {
            started: std::time::Instant::now(),
            wall_budget_ms: 0,
            rss_budget_mb: u64::MAX,
            calls: AtomicU64::new(0),
        };
        std::thread::sleep(std::time::Duration::from_millis(2));
        let why = w
            .exceeded(1, true)
            .expect("the wall budget of 0 ms is exceeded");
        assert!(why.contains("wall time"), "{why}");
        let tripped = std::panic::catch_unwind(|| {
            for _ in 0..CHECK_EVERY {
                w.tick();
            }
        });
        let msg = tripped.expect_err("tick panics once the budget is gone");
        let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(is_stuck(&msg), "{msg}");
    }

    #[test]
    fn budgets_within_limits_do_not_trip() {
        let w = Watchdog {
            started: std::time::Instant::now(),
            wall_budget_ms: 3_600_000,
            rss_budget_mb: u64::MAX,
            calls: AtomicU64::new(0),
        };
        assert_eq!(w.exceeded(1, true), None);
        for _ in 0..2 * CHECK_EVERY * MEMORY_EVERY {
            w.tick();
        }
        assert!(!is_stuck("index out of bounds"));
        assert!(is_stuck("time limit exceeded: 10s"));
    }
}
