//! The network owns what it carries: a late or duplicated request reaches
//! its receiver on the network's schedule whatever happens to its sender,
//! and messages between the same two nodes can overtake each other.

use crate::world::config::WorldConfig;
use crate::world::deadline;
use crate::world::net::{Carried, NetFaults, PORT};
use crate::world::phases::start_wire;
use crate::world::port::Port;
use crate::world::serve::{Server, serve_costed};
use crate::world::{World, lock};
use madsim::net::rpc::Request;
use madsim::runtime::{Handle, Runtime};
use madsim::time::{Duration, Instant, sleep};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

/// A numbered request.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Probe(u64);

impl Request for Probe {
    type Response = ();
    const ID: u64 = 77;
}

/// What the receiver saw: each probe's number and arrival time (ms since start).
type Arrivals = Mutex<Vec<(u64, u64)>>;

fn addr(last: u8) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)), PORT)
}

/// How a sender ends up after sending its probes.
#[derive(Clone, Copy, PartialEq)]
enum Fate {
    Killed,
    Paused,
}

/// A sender sends probes 0..`count` one after another (each carried by the
/// network under a duplication fault of rate 1 and delays up to 3 s), then
/// meets `fate`; returns the arrivals, the time of its fate (ms) and the
/// world's counters of copies and late requests delivered.
fn run(seed: u64, count: u64, fate: Fate) -> (Vec<(u64, u64)>, u64, u64, u64) {
    let rt = Runtime::with_seed_and_config(seed, madsim::Config::default());
    rt.block_on(async move {
        let (tx, _rx) = futures::channel::mpsc::unbounded();
        let cfg = WorldConfig {
            rpc_timeout_ms: 100,
            ..WorldConfig::default()
        };
        let world = Arc::new(World::new(cfg, tx));
        start_wire(&world).await;
        world.set_net(NetFaults {
            duplicate_rate: 1.0,
            duplicate_max_delay_ms: 3_000,
        });
        let arrivals: Arc<Arrivals> = Arc::default();
        let start = Instant::now();
        let receiver = Handle::current()
            .create_node()
            .name("receiver")
            .ip(addr(2).ip())
            .build();
        let (w, seen) = (world.clone(), arrivals.clone());
        receiver.spawn(async move {
            let ep = Port::bind(&w, addr(2));
            let at = Server::new(&ep, &w, &seen, ("cpu.test", 1), false);
            serve_costed(&at, move |seen: &Arrivals, p: Probe| {
                let ms = (Instant::now() - start).as_millis() as u64;
                lock(seen).push((p.0, ms));
                ((), 0)
            });
            std::future::pending::<()>().await
        });
        let sender = Handle::current()
            .create_node()
            .name("sender")
            .ip(addr(3).ip())
            .build();
        let w = world.clone();
        let sent = sender.spawn(async move {
            let ep = Port::bind(&w, addr(3));
            for i in 0..count {
                if w.carry(addr(2), &Probe(i)) == Carried::Now {
                    let timeout = Duration::from_millis(100);
                    let _ = deadline::call(&ep, addr(2), Probe(i), timeout).await;
                }
            }
        });
        let _ = sent.await;
        let fate_ms = (Instant::now() - start).as_millis() as u64;
        match fate {
            Fate::Killed => Handle::current().kill(sender.id()),
            Fate::Paused => Handle::current().pause(sender.id()),
        }
        sleep(Duration::from_millis(4_000)).await;
        let counters = world.recorder().counters().clone();
        let got = lock(&arrivals).clone();
        let n = |k: &str| counters.get(k).copied().unwrap_or(0);
        (got, fate_ms, n("net.duplicated"), n("net.late"))
    })
}

#[test]
fn a_killed_senders_late_requests_still_arrive() {
    let (got, killed_ms, copies, late) = run(1, 20, Fate::Killed);
    let after: Vec<_> = got.iter().filter(|(_, ms)| *ms > killed_ms).collect();
    assert!(
        !after.is_empty(),
        "nothing arrived after the sender died: {got:?}"
    );
    assert!(copies > 0 && late > 0, "copies {copies}, late {late}");
    // Every probe arrived at least once: a held-back one only late.
    for i in 0..20 {
        assert!(got.iter().any(|(p, _)| *p == i), "probe {i} never arrived");
    }
}

#[test]
fn a_paused_senders_late_requests_are_not_frozen() {
    let (got, paused_ms, _, _) = run(2, 20, Fate::Paused);
    assert!(
        got.iter().any(|(_, ms)| *ms > paused_ms),
        "nothing arrived while the sender was frozen: {got:?}"
    );
}

#[test]
fn messages_between_two_nodes_overtake_each_other() {
    let (got, _, _, _) = run(3, 20, Fate::Killed);
    let overtaken = got.windows(2).filter(|w| w[1].0 < w[0].0).count();
    assert!(overtaken > 0, "arrivals in send order: {got:?}");
}

#[test]
fn without_the_fault_nothing_is_late_or_reordered() {
    // The control: the same run without the fault delivers each probe once, in order.
    let rt = Runtime::with_seed_and_config(4, madsim::Config::default());
    let world_faults = rt.block_on(async {
        let (tx, _rx) = futures::channel::mpsc::unbounded();
        let world = Arc::new(World::new(WorldConfig::default(), tx));
        start_wire(&world).await;
        (0..50)
            .filter(|i| world.carry(addr(2), &Probe(*i)) != Carried::Now)
            .count()
    });
    assert_eq!(world_faults, 0);
}

#[test]
fn copies_in_flight_are_counted_until_they_land() {
    let rt = Runtime::with_seed_and_config(1, madsim::Config::default());
    let left = rt.block_on(async {
        let (tx, _rx) = futures::channel::mpsc::unbounded();
        let world = World::new(WorldConfig::default(), tx);
        world.copy_sent();
        world.copy_sent();
        world.copy_landed();
        world.in_flight()
    });
    assert_eq!(left, 1);
}

#[test]
#[should_panic(expected = "invariant violated: the network landed a copy it was not carrying")]
fn landing_a_copy_never_sent_trips_the_assertion() {
    let rt = Runtime::with_seed_and_config(1, madsim::Config::default());
    rt.block_on(async {
        let (tx, _rx) = futures::channel::mpsc::unbounded();
        let world = World::new(WorldConfig::default(), tx);
        world.copy_landed();
    });
}
