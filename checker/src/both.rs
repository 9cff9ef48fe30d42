//! Two pieces of work at once, on two threads: how the index and the rules
//! share a large history's work between the cores (reading the file has a
//! pipeline of its own, in `reader.rs`).

/// Runs `a` on this thread and `b` on a second one when `two_threads` is
/// set, else `a` then `b` here; returns both results. A panic in `b`
/// panics here, as it would have on this thread.
pub(crate) fn both<A, B: Send>(
    two_threads: bool,
    a: impl FnOnce() -> A,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if !two_threads {
        let a = a();
        return (a, b());
    }
    std::thread::scope(|scope| {
        let b = scope.spawn(b);
        let a = a();
        let b = b.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        (a, b)
    })
}

/// Below this many transactions the checker's index and rules are built
/// and run on one thread: a second thread costs more than it saves on a
/// small history, and a campaign checks thousands of small histories, each
/// on a core of its own already.
pub(crate) const PARALLEL_FROM_TXNS: usize = 100_000;
