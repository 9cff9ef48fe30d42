//! The one thread pool of `fuzz`, `ablations` and `bench`: indices handed
//! out in order to `jobs` threads. Each simulated run still gets a fresh
//! OS thread of its own (see `Scenario::run`), except `explore`'s, which
//! run on the pool's threads (see `Scenario::run_here`).

use std::sync::atomic::{AtomicU64, Ordering};

/// Run `work(i)` for `i` in `0..total` on `jobs` threads, and `done(i, r)`
/// with each result (in completion order). A thread takes the next index
/// only while `go(i)` holds.
pub(crate) fn for_each<R>(
    jobs: usize,
    total: u64,
    go: impl Fn(u64) -> bool + Sync,
    work: impl Fn(u64) -> R + Sync,
    done: impl Fn(u64, R) + Sync,
) {
    let next = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total || !go(i) {
                        return;
                    }
                    done(i, work(i));
                }
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::for_each;
    use std::sync::Mutex;

    #[test]
    fn every_index_runs_once_until_go_refuses() {
        let seen = Mutex::new(Vec::new());
        for_each(
            3,
            50,
            |_| true,
            |i| i * 2,
            |i, r| seen.lock().unwrap().push((i, r)),
        );
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        assert_eq!(seen, (0..50).map(|i| (i, i * 2)).collect::<Vec<_>>());
        let few = Mutex::new(0);
        for_each(2, 50, |i| i < 7, |_| (), |_, _| *few.lock().unwrap() += 1);
        assert_eq!(few.into_inner().unwrap(), 7);
    }
}
