//! A toy system for the world's own tests: nodes of chosen roles that do
//! nothing (clients may count RPCs towards the watchdog), and a healed
//! phase that settles at once or never. It records no transactions.

use crate::world::driver::{FaultControl, Faults, SharedFaults};
use crate::world::ids::Role;
use crate::world::node::NodeKind;
use crate::world::phases::{RunOutput, run_system, start_nodes};
use crate::world::system_history::SystemHistory;
use crate::world::{BoxFuture, NodeSpec, System, Tenant, Unsettled, World, WorldConfig};
use madsim::runtime::Runtime;
use madsim::time::{Duration, sleep};
use percsim_checker as history;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A toy system: its world settings, its nodes, how it settles.
#[derive(Clone, Default)]
pub(crate) struct Toy {
    /// The world's settings.
    pub cfg: WorldConfig,
    /// The nodes' roles, in start order (named `<role>-<index>`).
    pub roles: Vec<Role>,
    /// What stays unsettled in the healed phase (0: it settles at once).
    pub unsettled: u64,
    /// What the final check reports.
    pub violations: Vec<String>,
    /// Simulated ms between two watchdog ticks of each client (none if `None`).
    pub tick_ms: Option<u64>,
}

/// A toy system installed in a world.
pub(crate) struct ToyTenant {
    toy: Toy,
    world: Arc<World>,
    /// Whether the final check ran.
    pub final_checked: AtomicBool,
}

impl Toy {
    /// A toy of `roles` whose workload phase lasts `run_ms`, with a healed
    /// phase of 1 s.
    pub(crate) fn new(run_ms: u64, roles: &[Role]) -> Toy {
        Toy {
            cfg: WorldConfig {
                run_ms,
                quiesce_ms: 1_000,
                rpc_timeout_ms: 100,
                ..WorldConfig::default()
            },
            roles: roles.to_vec(),
            ..Toy::default()
        }
    }

    /// Run the toy with `seed`.
    pub(crate) fn run(&self, seed: u64) -> RunOutput {
        run_system(self, seed, serde_json::json!({"toy": true}))
    }
}

/// The toy's kind of node of `role`: labelled by the role's name; clients
/// read a skewed clock and stall, other nodes do neither.
pub(crate) fn kind(role: Role) -> NodeKind {
    let client = role == Role::Client;
    NodeKind {
        role,
        label: role.name(),
        numbered: true,
        reads_clock: client,
        stalls: client,
    }
}

impl System for Toy {
    fn world_config(&self) -> WorldConfig {
        self.cfg.clone()
    }

    fn install(&self, world: &Arc<World>) -> Arc<dyn Tenant> {
        Arc::new(ToyTenant {
            toy: self.clone(),
            world: world.clone(),
            final_checked: AtomicBool::new(false),
        })
    }
}

impl Tenant for ToyTenant {
    fn nodes(&self) -> Vec<NodeSpec> {
        let mut per_role = std::collections::BTreeMap::<Role, usize>::new();
        let mut specs = Vec::new();
        for (i, role) in self.toy.roles.iter().copied().enumerate() {
            let index = *per_role.entry(role).and_modify(|n| *n += 1).or_insert(0);
            let (world, tick_ms) = (self.world.clone(), self.toy.tick_ms);
            let ticks = role == Role::Client;
            specs.push(NodeSpec {
                name: kind(role).nth(index),
                ip: IpAddr::V4(Ipv4Addr::new(10, 9, 0, i as u8 + 1)),
                init: Arc::new(move || {
                    let world = world.clone();
                    Box::pin(async move {
                        match tick_ms.filter(|_| ticks) {
                            Some(ms) => loop {
                                sleep(Duration::from_millis(ms)).await;
                                world.watchdog_tick();
                            },
                            None => std::future::pending().await,
                        }
                    })
                }),
            });
        }
        specs
    }

    fn expire_session(&self, _client: usize) {}

    fn driver(&self, _control: FaultControl) -> Option<BoxFuture<()>> {
        None
    }

    fn begin_healed(&self) -> BoxFuture<()> {
        Box::pin(async {})
    }

    fn unsettled(&self) -> Vec<Unsettled> {
        vec![Unsettled {
            count: self.toy.unsettled,
            what: "toy chores left",
        }]
    }

    fn settle(&self, _unsettled: &[Unsettled]) -> BoxFuture<()> {
        Box::pin(sleep(Duration::from_millis(100)))
    }

    fn final_check(&self) -> BoxFuture<Vec<String>> {
        self.final_checked.store(true, Ordering::Relaxed);
        let violations = self.toy.violations.clone();
        Box::pin(async move { violations })
    }

    fn history(
        &self,
        seed: u64,
        scenario: serde_json::Value,
        events: Vec<history::Event>,
    ) -> SystemHistory {
        SystemHistory::Transactions(history::History {
            format: history::FORMAT.to_string(),
            // No transactions, so no promise to name.
            model: None,
            seed,
            scenario,
            transactions: Vec::new(),
            events,
            final_state: history::FinalState::default(),
            observers: Vec::new(),
        })
    }

    fn helper_nodes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Run `f` in a fresh seeded simulation on the fault state of a world whose
/// toy nodes of `roles` have started (the workload phase: no driver runs).
pub(crate) fn with_faults<T: Send + 'static, Fut>(
    roles: &[Role],
    f: impl FnOnce(SharedFaults, Arc<World>) -> Fut + Send + 'static,
) -> T
where
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    let toy = Toy::new(10_000, roles);
    let rt = Runtime::with_seed_and_config(3, madsim::Config::default());
    rt.block_on(async move {
        let (tx, _rx) = futures::channel::mpsc::unbounded();
        let world = Arc::new(World::new(toy.world_config(), tx));
        let tenant = toy.install(&world);
        crate::world::phases::start_wire(&world).await;
        let registry = start_nodes(&world, tenant.as_ref()).await;
        let faults = Faults::new(world.clone(), tenant, registry);
        f(faults, world).await
    })
}
