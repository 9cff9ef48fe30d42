//! The per-seed watchdog: a run that stops making progress ends with a
//! "stuck" verdict instead of hanging the campaign.
//!
//! Three budgets, checked from inside the simulation (its own thread cannot
//! be stopped from outside):
//! - simulated time: the run may last at most its workload and healed
//!   phases plus [`STUCK_MARGIN_MS`]; madsim stops the run past that limit
//!   (a reader retrying a lock forever, a sweep that never ends);
//! - wall time, checked every `CHECK_EVERY` RPCs a client sends, and
//!   resident memory, every `MEMORY_EVERY` such checks (a retry loop that barely advances simulated time, or a
//!   history that grows without bound). These two are the only places the
//!   simulator looks at the machine; they decide only whether a run is cut
//!   short, never what it records before.
//!
//! A tripped budget panics with a message starting with [`STUCK_MARKER`],
//! which the caller turns into the verdict.
//!
//! Wall time is the machine's, read by `real_ms`: madsim replaces the C
//! library's `clock_gettime` and `gettimeofday` on simulation threads, so
//! `std::time::Instant` there is simulated time (a run of more than 600
//! simulated seconds would look 600 s old to it within a second of real
//! time). A raw `clock_gettime` system call does not go through the C
//! library and reads the machine's monotonic clock.

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
    /// The machine's clock when the run started ([`real_ms`]), if it can
    /// be read.
    started_ms: Option<u64>,
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
        Watchdog::new(
            var("PERCSIM_WATCHDOG_WALL_S", 600).saturating_mul(1000),
            var("PERCSIM_WATCHDOG_RSS_MB", 12_000),
        )
    }

    /// A watchdog whose run starts now, with these budgets.
    fn new(wall_budget_ms: u64, rss_budget_mb: u64) -> Self {
        Watchdog {
            started_ms: real_ms(),
            wall_budget_ms,
            rss_budget_mb,
            calls: AtomicU64::new(0),
        }
    }

    /// Count one RPC; at the first and then every [`CHECK_EVERY`] calls,
    /// end the run if its wall time is used up, and every
    /// [`MEMORY_EVERY`] such checks after the first if the memory is (not
    /// at the first call: a short run, such as each of an exploration's
    /// schedules, would read `/proc` once for a handful of RPCs).
    pub(crate) fn tick(&self) {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        if !n.is_multiple_of(CHECK_EVERY) {
            return;
        }
        let memory = n > 0 && n.is_multiple_of(CHECK_EVERY * MEMORY_EVERY);
        if let Some(why) = self.exceeded(n, memory) {
            panic!("{STUCK_MARKER} {why}");
        }
    }

    /// Real time since the run started, in ms (None where the machine's
    /// clock cannot be read).
    fn wall_ms(&self) -> Option<u64> {
        Some(real_ms()?.saturating_sub(self.started_ms?))
    }

    /// Why the run must end, if a budget is used up: all its wall time (a
    /// budget of 0 ends the run at the first check, however fast the
    /// machine), or more than its memory.
    fn exceeded(&self, calls: u64, memory: bool) -> Option<String> {
        let wall_ms = self.wall_ms().unwrap_or(0);
        if wall_ms >= self.wall_budget_ms {
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

/// The machine's monotonic clock in ms, from an arbitrary origin, read with
/// a raw system call that madsim does not intercept (see the module's
/// docs). Linux only: elsewhere `None`, and the wall-time budget is not
/// checked.
#[cfg(target_os = "linux")]
pub(crate) fn real_ms() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec` through the pointer,
    // which points to a live, writable one.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clock_gettime,
            libc::CLOCK_MONOTONIC,
            &mut ts as *mut libc::timespec,
        )
    };
    if rc != 0 {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    Some(secs.saturating_mul(1000).saturating_add(nanos / 1_000_000))
}

/// The machine's monotonic clock: not readable past madsim off Linux.
#[cfg(not(target_os = "linux"))]
pub(crate) fn real_ms() -> Option<u64> {
    None
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
    use madsim::time::{Duration, sleep};

    /// `f` inside a madsim runtime, where `std::time::Instant` is simulated.
    fn simulated<T: Send + 'static>(f: impl Future<Output = T> + Send + 'static) -> T {
        madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default()).block_on(f)
    }

    #[test]
    fn a_zero_budget_trips_at_the_first_check() {
        let w = Watchdog::new(0, u64::MAX);
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
    fn memory_is_checked_after_the_first_call_not_at_it() {
        let w = Watchdog::new(3_600_000, 0);
        // The first call checks wall time only: a budget of 0 MB holds.
        w.tick();
        let tripped = std::panic::catch_unwind(|| {
            for _ in 0..CHECK_EVERY * MEMORY_EVERY {
                w.tick();
            }
        });
        let msg = tripped.expect_err("the memory check comes and trips");
        let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(is_stuck(&msg) && msg.contains("resident"), "{msg}");
    }

    #[test]
    fn real_time_uses_up_a_budget_inside_a_simulation() {
        let (before, after) = simulated(async {
            let w = Watchdog::new(50, u64::MAX);
            let before = w.exceeded(1, false);
            // A real sleep: simulated time stands still meanwhile.
            std::thread::sleep(std::time::Duration::from_millis(100));
            (before, w.exceeded(1, false))
        });
        assert_eq!(before, None);
        assert!(after.is_some_and(|w| w.contains("wall time")));
    }

    #[test]
    fn simulated_time_past_the_budget_is_not_wall_time() {
        let (simulated_s, why, real_s) = simulated(async {
            let t0 = std::time::Instant::now();
            let w = Watchdog::new(600_000, u64::MAX);
            sleep(Duration::from_secs(3_000)).await;
            // Here `std::time::Instant` is simulated: 3,000 s have passed,
            // five times the default wall budget.
            let simulated_s = t0.elapsed().as_secs();
            (
                simulated_s,
                w.exceeded(1, true),
                w.wall_ms().unwrap() / 1000,
            )
        });
        assert!(simulated_s >= 3_000, "{simulated_s}");
        assert_eq!(why, None);
        assert!(real_s < 600, "{real_s}");
    }

    #[test]
    fn budgets_within_limits_do_not_trip() {
        let w = Watchdog::new(3_600_000, u64::MAX);
        assert_eq!(w.exceeded(1, true), None);
        for _ in 0..2 * CHECK_EVERY * MEMORY_EVERY {
            w.tick();
        }
        assert!(!is_stuck("index out of bounds"));
        assert!(is_stuck("time limit exceeded: 10s"));
    }
}
