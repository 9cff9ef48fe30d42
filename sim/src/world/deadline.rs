//! Time-outs that cost the simulator one timer each.
//!
//! madsim's `timeout` (and so `Endpoint::call_timeout`) polls a `Sleep`
//! every time the guarded future is polled while pending, and every such
//! poll adds a new timer to the simulator's heap: a call that was woken
//! four times (its send and receive delays, the reply) left four timers
//! behind, each holding a waker of the caller's task. None can be
//! withdrawn, so all of them later fire at the deadline and wake the task
//! again, long after the call ended (a spurious poll of whatever it does
//! then). [`within`] registers one timer per time-out, through a waker it
//! disarms when the time-out is dropped: the deadline is the same, the
//! caller wakes at it only if it is still waiting.
//!
//! Nothing simulated changes: a call still times out at exactly the same
//! simulated instant. What changes is the simulator's own work (fewer
//! timers, no stale wake-ups), and with it madsim's schedule, which draws a
//! random number for every task it polls.

use crate::world::port::Port;
use madsim::net::rpc::Request;
use madsim::time::{Duration, Instant};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// The guarded future did not finish by its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed;

/// Run `fut` for at most `duration` of simulated time (at least 1 ms, as
/// madsim's own timers): its output, or [`Elapsed`] at the deadline. When
/// both are ready at once the output wins, as with madsim's `timeout`.
pub async fn within<F: Future>(duration: Duration, fut: F) -> Result<F::Output, Elapsed> {
    let deadline = Instant::now() + duration.max(Duration::from_millis(1));
    let mut fut = pin!(fut);
    let mut alarm: Option<Alarm> = None;
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(out) = fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(out));
        }
        match &alarm {
            // Time reaches the deadline only by firing the alarm's timer:
            // no need to read the clock before.
            Some(a) if a.fired() => return Poll::Ready(Err(Elapsed)),
            Some(a) => a.follow(cx.waker()),
            None => alarm = Some(Alarm::set(deadline, cx.waker())),
        }
        Poll::Pending
    })
    .await
}

/// A call on the world's transport ([`Port::call`]) that gives up after
/// `timeout`, with one timer per call (see [`within`]).
pub async fn call<R: Request>(
    ep: &Port,
    dst: SocketAddr,
    req: R,
    timeout: Duration,
) -> std::io::Result<R::Response> {
    match within(timeout, ep.call(dst, req)).await {
        Ok(reply) => reply,
        Err(Elapsed) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "RPC timeout",
        )),
    }
}

/// The waker a deadline's timer holds: it passes the wake-up on to the
/// waiting task while the time-out lives, and does nothing once it is gone.
/// It remembers that the timer fired (the deadline has come).
struct Relay(Mutex<Option<Waker>>, AtomicBool);

impl Wake for Relay {
    fn wake(self: Arc<Self>) {
        self.1.store(true, Ordering::Relaxed);
        let waker = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// One armed timer; dropping it disarms the timer.
struct Alarm(Arc<Relay>);

impl Alarm {
    /// Register one timer at `deadline` that wakes `waker`.
    fn set(deadline: Instant, waker: &Waker) -> Alarm {
        let relay = Arc::new(Relay(
            Mutex::new(Some(waker.clone())),
            AtomicBool::new(false),
        ));
        let relay_waker = Waker::from(relay.clone());
        // Polling a Sleep once registers its timer; the Sleep itself is not
        // needed after that (the timer lives in the simulator's heap).
        let mut sleep = pin!(madsim::time::sleep_until(deadline));
        let _ = sleep.as_mut().poll(&mut Context::from_waker(&relay_waker));
        Alarm(relay)
    }

    /// Whether the timer fired: the deadline has come.
    fn fired(&self) -> bool {
        self.0.1.load(Ordering::Relaxed)
    }

    /// The task may have moved to another waker: the timer wakes that one.
    fn follow(&self, waker: &Waker) {
        let mut slot = self.0.0.lock().unwrap_or_else(|e| e.into_inner());
        if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *slot = Some(waker.clone());
        }
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        self.0.0.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use madsim::time::sleep;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Run `f` in a fresh simulation.
    fn simulate<T: Send + 'static>(f: impl Future<Output = T> + Send + 'static) -> T {
        let rt = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
        rt.block_on(f)
    }

    /// A future that counts how often it is polled.
    async fn counted<F: Future>(polls: &AtomicU64, fut: F) -> F::Output {
        let mut fut = pin!(fut);
        std::future::poll_fn(|cx| {
            polls.fetch_add(1, Ordering::Relaxed);
            fut.as_mut().poll(cx)
        })
        .await
    }

    #[test]
    fn a_future_that_finishes_in_time_gives_its_output() {
        let out = simulate(async {
            within(Duration::from_millis(100), async {
                sleep(Duration::from_millis(10)).await;
                7
            })
            .await
        });
        assert_eq!(out, Ok(7));
    }

    #[test]
    fn a_future_still_pending_at_the_deadline_times_out_exactly_then() {
        let (out, waited) = simulate(async {
            let t = Instant::now();
            let out = within(Duration::from_millis(100), std::future::pending::<()>()).await;
            (out, t.elapsed())
        });
        assert_eq!(out, Err(Elapsed));
        assert_eq!(waited.as_millis(), 100, "{waited:?}");
    }

    #[test]
    fn the_deadline_holds_however_often_the_future_wakes() {
        let out = simulate(async {
            within(Duration::from_millis(100), async {
                for _ in 0..50 {
                    sleep(Duration::from_millis(5)).await;
                }
            })
            .await
        });
        assert_eq!(out, Err(Elapsed), "50 x 5 ms is past the 100 ms deadline");
    }

    /// madsim's own `timeout` leaves a timer per poll behind, and each wakes
    /// the task again at the deadline although the call ended long before:
    /// the task below is polled again at 100 ms with madsim's, never with ours.
    #[test]
    fn a_finished_call_leaves_no_wake_up_behind() {
        let polls = |ours: bool| {
            simulate(async move {
                let polls = Arc::new(AtomicU64::new(0));
                let p = polls.clone();
                let task = madsim::task::spawn(async move {
                    counted(&p, async {
                        let work = async {
                            for _ in 0..3 {
                                sleep(Duration::from_millis(2)).await;
                            }
                        };
                        if ours {
                            let _ = within(Duration::from_millis(100), work).await;
                        } else {
                            let _ = madsim::time::timeout(Duration::from_millis(100), work).await;
                        }
                        // Waits past the deadline; only a timer can wake it.
                        sleep(Duration::from_millis(500)).await;
                    })
                    .await
                });
                let _ = task.await;
                polls.load(Ordering::Relaxed)
            })
        };
        let (ours, madsims) = (polls(true), polls(false));
        assert_eq!(ours, 5, "first poll, three sleeps, the final sleep");
        assert!(
            madsims > ours,
            "madsim's timeout: {madsims} polls, ours {ours}"
        );
    }
}
