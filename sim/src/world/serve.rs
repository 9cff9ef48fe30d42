//! How a node takes in requests and spends simulated CPU time on them.
//!
//! madsim's own `add_rpc_handler` ran one receive loop per request kind,
//! and every receive slept at least 1 ms of simulated time (the timer's
//! floor): a node took in at most 1,000 requests of one kind per simulated
//! second, whatever its load (the scale-out table in docs/measurements.md).
//! On the world's transport ([`Port`]) a request is taken in when it arrives, however many
//! arrive at once, so intake is no bottleneck, and what a node can serve is
//! set by the explicit `Cpu` model: a node has cores, every request costs
//! CPU time, and requests queue when every core is busy.
//!
//! One task per request kind serves a node: it runs the handler of each
//! request as it arrives and drives the replies (the handlers' futures)
//! itself, so a reply that waits (for CPU time, at a pause point, forever at
//! a halt point) does not hold up the next request. The node's death drops
//! the task and every reply not yet sent. Callers use [`Port::call`] under a
//! time-out from `crate::world::deadline`.

use crate::world::World;
use crate::world::net::Delivery;
use crate::world::port::{Answer, Port};
use madsim::net::rpc::Request;
use madsim::time::{Duration, Instant, sleep, sleep_until};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// Serve requests of kind `R` at `ep` with `handler`, in a task of this
/// node (see the module's docs). Public for systems that live outside this
/// crate (a test's system).
pub fn serve<R, F, Fut>(ep: &Port, handler: F)
where
    R: Request,
    F: Fn(R) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R::Response> + Send + 'static,
{
    serve_from(ep, move |req, _| Answer::Later(handler(req)))
}

/// [`serve`] that counts, as `serve_costed` does, a late or duplicated
/// copy of a request when it reaches this receiver (`World::delivered`).
/// Public for systems that live outside this crate.
pub fn serve_counting<R, F, Fut>(ep: &Port, handler: F)
where
    R: Request,
    F: Fn(R) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R::Response> + Send + 'static,
{
    let world = ep.world();
    serve_from(ep, move |req, from| {
        if let Some(world) = &world {
            world.count_delivery(from);
        }
        Answer::Later(handler(req))
    })
}

/// [`serve`], with the handler also told where the request came from and
/// answering at once or later.
fn serve_from<R, F, Fut>(ep: &Port, handler: F)
where
    R: Request,
    F: Fn(R, SocketAddr) -> Answer<R::Response, Fut> + Send + Sync + 'static,
    Fut: Future<Output = R::Response> + Send + 'static,
{
    madsim::task::spawn(ep.clone().serve(handler));
}

/// Where a node serves: its port, its world, the system state its
/// handlers read (`C`), and its processor.
pub(crate) struct Server<'a, C> {
    ep: &'a Port,
    world: &'a Arc<World>,
    ctx: &'a Arc<C>,
    cpu: Arc<Mutex<Cpu>>,
    /// Whether requests cost CPU time at all (the cost model is on).
    costed: bool,
}

impl<'a, C: Send + Sync + 'static> Server<'a, C> {
    /// A node serving at `ep` with handlers over `ctx`, and an idle
    /// processor of `cores` cores whose busy time is counted under
    /// `counter`; requests cost CPU time only if `costed`.
    pub(crate) fn new(
        ep: &'a Port,
        world: &'a Arc<World>,
        ctx: &'a Arc<C>,
        cpu: (&'static str, usize),
        costed: bool,
    ) -> Self {
        Server {
            ep,
            world,
            ctx,
            cpu: Cpu::new(cpu.0, cpu.1),
            costed,
        }
    }
}

/// What a server does once a handler ran: reply, or stop at a crash or
/// pause point between its effect and its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterHandler {
    /// Send the reply.
    Reply,
    /// A kill of this node was requested: the reply never leaves.
    Halt,
    /// A pause of this node was requested: let it take effect, then reply.
    Yield,
}

/// Serve one kind of request whose handler runs at once (its effect is
/// applied on arrival) and reports its CPU cost in µs; the reply leaves when
/// `cpu` has done that work (see [`spend`]). Costs are charged only when the
/// cost model is on.
pub(crate) fn serve_costed<C, R, F>(at: &Server<'_, C>, f: F)
where
    C: Send + Sync + 'static,
    R: Request,
    F: Fn(&C, R) -> (R::Response, u64) + Clone + Send + Sync + 'static,
{
    serve_costed_at_points(at, move |c: &C, req: R| {
        let (reply, cost_us) = f(c, req);
        (reply, cost_us, AfterHandler::Reply)
    });
}

/// [`serve_costed`] for a handler that may stop at a crash or pause point
/// after its effect and before its reply.
pub(crate) fn serve_costed_at_points<C, R, F>(at: &Server<'_, C>, f: F)
where
    C: Send + Sync + 'static,
    R: Request,
    F: Fn(&C, R) -> (R::Response, u64, AfterHandler) + Clone + Send + Sync + 'static,
{
    let (world, ctx, cpu, costed) = (at.world.clone(), at.ctx.clone(), at.cpu.clone(), at.costed);
    serve_from(at.ep, move |req: R, from| {
        // A late or duplicated copy counts once it reaches its receiver.
        world.delivered(Delivery::of(from));
        // The effect is applied on arrival.
        let (reply, cost_us, after) = f(&ctx, req);
        let cost_us = if costed { cost_us } else { 0 };
        if after == AfterHandler::Reply && cost_us == 0 {
            return Answer::Now(reply);
        }
        let (world, cpu) = (world.clone(), cpu.clone());
        Answer::Later(async move {
            match after {
                AfterHandler::Reply => {}
                // The kill drops this node's tasks before it can answer.
                AfterHandler::Halt => std::future::pending::<()>().await,
                // The pause freezes this node's tasks here until it resumes.
                AfterHandler::Yield => sleep(Duration::from_millis(1)).await,
            }
            spend(&world, &cpu, cost_us).await;
            reply
        })
    });
}

/// One node incarnation's processor: `cores` cores, each free from some
/// simulated instant on. It lives in the node's memory and dies with it.
pub(crate) struct Cpu {
    /// The counter of busy CPU microseconds of this kind of node.
    counter: &'static str,
    free_at_ns: Vec<u64>,
}

impl Cpu {
    /// A processor with `cores` cores (at least one), all idle.
    pub(crate) fn new(counter: &'static str, cores: usize) -> Arc<Mutex<Cpu>> {
        Arc::new(Mutex::new(Cpu {
            counter,
            free_at_ns: vec![0; cores.max(1)],
        }))
    }

    /// Book `cost_ns` of work arriving at `now_ns` on the core that frees
    /// first (first come, first served); returns when the work finishes.
    fn book(&mut self, now_ns: u64, cost_ns: u64) -> u64 {
        let (core, free) = self
            .free_at_ns
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(i, t)| (t, i))
            .expect("a cpu has at least one core");
        let finish = free.max(now_ns) + cost_ns;
        self.free_at_ns[core] = finish;
        finish
    }
}

/// Spend `cost_us` of CPU time on `cpu` for a request that arrived now:
/// returns when the work is done, after waiting for a core if all are busy.
/// A zero cost (the cost model off) returns at once. The request's effect
/// is applied by the caller when it arrives; only its reply waits, which is
/// indistinguishable from first-come-first-served execution to any client.
/// madsim cannot sleep less than 1 ms, so a wait shorter than that (an
/// idle or lightly loaded node) is not slept at all: the reply leaves at
/// once, early by less than 1 ms. The work is booked all the same, so a
/// node never serves more than its cores allow: as load grows, waits grow
/// past 1 ms and are slept exactly.
pub(crate) async fn spend(world: &World, cpu: &Mutex<Cpu>, cost_us: u64) {
    if cost_us == 0 {
        return;
    }
    let now = world.now_ns();
    let (counter, finish) = {
        let mut c = cpu.lock().unwrap_or_else(|e| e.into_inner());
        (c.counter, c.book(now, cost_us * 1_000))
    };
    if !world.stopping() {
        // "Cores used" is measured over the workload phase.
        world.recorder().add(counter, cost_us);
    }
    let wait = Duration::from_nanos(finish - now);
    if wait >= Duration::from_millis(1) {
        sleep_until(Instant::now() + wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_core_queues_work_first_come_first_served() {
        let cpu = Cpu::new("cpu.busy_us.test", 1);
        let mut c = cpu.lock().unwrap();
        assert_eq!(c.book(1_000, 50), 1_050);
        assert_eq!(c.book(1_010, 50), 1_100, "waits for the busy core");
        assert_eq!(c.book(5_000, 50), 5_050, "an idle core starts at once");
    }

    #[test]
    fn several_cores_serve_in_parallel() {
        let cpu = Cpu::new("cpu.busy_us.test", 2);
        let mut c = cpu.lock().unwrap();
        assert_eq!(c.book(0, 100), 100);
        assert_eq!(c.book(0, 100), 100, "second core");
        assert_eq!(c.book(0, 100), 200, "third request queues");
    }
}
