//! A run leaves nothing behind: the live heap after many campaign seeds
//! stays where it was after the first few. (Before the harness killed every
//! node at the end of a run, each seed leaked its whole simulated cluster,
//! about 400 KB, and long campaigns ran out of memory.)

use percsim_scenarios::campaign::{self, Mix};
use percsim_scenarios::fuzz;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// The system allocator, counting the bytes currently allocated.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn campaign_seeds_leave_nothing_behind() {
    let mix = Mix::default();
    let judge = |seed: u64| {
        let judged = fuzz::judge(&campaign::generate(seed, &mix), false);
        assert!(judged.history.is_some(), "seed {seed} did not run");
    };
    // Warm-up: statics and lazily built tables allocate once.
    for seed in 0..3 {
        judge(seed);
    }
    let before = LIVE.load(Ordering::Relaxed);
    let seeds: isize = 20;
    for seed in 3..3 + seeds as u64 {
        judge(seed);
    }
    let grown = LIVE.load(Ordering::Relaxed) - before;
    assert!(
        grown < 20_000 * seeds,
        "{seeds} seeds left {grown} bytes allocated ({} per seed)",
        grown / seeds
    );
}
