//! The world's fault classes by name, and how each turns into the world's
//! settings. A campaign switches classes on and off per seed (swarm
//! testing); a system adds its own classes (crashes at its named points)
//! and says which classes it honours.

use percsim_sim::{ClockEntry, ClockSkew, FaultClass, FaultKind, NodeKind, Role, WorldConfig};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

/// Every fault class percsim injects, by name: the names of
/// [`FaultKind::ALL`], in its order (a test keeps them equal; the order is
/// part of what a campaign seed means).
pub const CLASSES: &[&str] = &[
    "kill_client",
    "kill_data_server",
    "kill_coordinator",
    "kill_liveness",
    "kill_master",
    "pause",
    "stall",
    "partition",
    "packet_loss",
    "latency",
    "duplicate",
    "session_expiry",
    "clock_skew",
    "crash_at_step",
    "pause_at_step",
];

/// The names fault classes had before they were named by the role they
/// kill, each with its name now; `--faults` still accepts them.
pub const OLD_NAMES: &[(&str, &str)] = &[
    ("kill_tablet_server", "kill_data_server"),
    ("kill_oracle", "kill_coordinator"),
];

/// The class `name` means: its name now if it is an old name of a class,
/// else `name` itself (an unknown name stays unknown, for its error).
pub fn canonical(name: &str) -> &str {
    OLD_NAMES
        .iter()
        .find(|(old, _)| *old == name)
        .map_or(name, |(_, new)| new)
}

/// How a kill class is named by the role it kills: `kill:<role>`, the
/// role spelled as its system names it (`kill:tablet_server`,
/// `kill:broker`) or as the world does (`kill:data_server`).
pub const KILL_PREFIX: &str = "kill:";

/// What a class named by a role does to a node of the role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleVerb {
    /// `kill:<role>`: the world's kill class of the role.
    Kill,
    /// `pause:<role>`: freeze a node of the role that is up.
    Pause,
    /// `stall:<role>`: hold the transaction threads of a node of the role
    /// (only a role whose nodes honour stalls).
    Stall,
}

impl RoleVerb {
    /// Every verb, in the order classes are listed.
    pub const ALL: [RoleVerb; 3] = [RoleVerb::Kill, RoleVerb::Pause, RoleVerb::Stall];

    /// The verb as a class name spells it before the `:`.
    pub fn name(self) -> &'static str {
        match self {
            RoleVerb::Kill => "kill",
            RoleVerb::Pause => "pause",
            RoleVerb::Stall => "stall",
        }
    }
}

/// A class named by a role: `name`'s verb and role as written, when it has
/// the form `<verb>:<role>`.
pub fn role_named(name: &str) -> Option<(RoleVerb, &str)> {
    let (verb, role) = name.split_once(':')?;
    let verb = RoleVerb::ALL.into_iter().find(|v| v.name() == verb)?;
    Some((verb, role))
}

/// The role `written` names among `roles` (each with the name its system
/// gives it): by that name or by the world's.
fn find_role(written: &str, roles: &[(Role, &str)]) -> Option<Role> {
    roles
        .iter()
        .find(|(r, label)| *label == written || r.name() == written)
        .map(|(r, _)| *r)
}

/// The class `name` means for a system whose nodes play `roles` (each
/// with the name the system gives it): `kill:<role>` is the kill class of
/// that role (the system's name for it or the world's), `pause:<role>` and
/// `stall:<role>` are named by the world's name of the role
/// (`pause:data_server`), an old name is its class now, any other name is
/// itself (an unknown name stays unknown, and a role the system has not,
/// for their errors).
pub fn resolve(name: &str, roles: &[(Role, &str)]) -> String {
    let Some((verb, written)) = role_named(name) else {
        return canonical(name).to_string();
    };
    match (verb, find_role(written, roles)) {
        (RoleVerb::Kill, Some(r)) => FaultKind::kill_of(r).name().to_string(),
        (_, Some(r)) => format!("{}:{}", verb.name(), r.name()),
        (_, None) => name.to_string(),
    }
}

/// The name a campaign of a system whose nodes play `roles` gives class
/// `class`: a kill, pause or stall of a role by the system's name for the
/// role (`kill:broker`, `pause:broker`), any other class by its own name.
pub fn display(class: &str, roles: &[(Role, &str)]) -> String {
    let kill = roles
        .iter()
        .find(|(r, _)| FaultKind::kill_of(*r).name() == class);
    if let Some((_, label)) = kill {
        return format!("{KILL_PREFIX}{label}");
    }
    let by_role = role_named(class).and_then(|(verb, world)| {
        let (_, label) = roles.iter().find(|(r, _)| r.name() == world)?;
        Some(format!("{}:{label}", verb.name()))
    });
    by_role.unwrap_or_else(|| class.to_string())
}

/// The pause and stall classes aimed at a role that a system whose nodes
/// are of `kinds` honours, by their names now: a pause of every role its
/// nodes play, a stall of every role whose nodes honour stalls
/// (`pause:client`, `pause:data_server`, `stall:client`).
pub fn role_classes(kinds: &[NodeKind]) -> Vec<String> {
    let mut out = Vec::new();
    for verb in [RoleVerb::Pause, RoleVerb::Stall] {
        for role in Role::ALL {
            let plays = |k: &NodeKind| k.role == *role && (verb != RoleVerb::Stall || k.stalls);
            if kinds.iter().any(plays) {
                out.push(format!("{}:{}", verb.name(), role.name()));
            }
        }
    }
    out
}

/// Switch the pause or stall class aimed at a role (`class`, by its name
/// now: `pause:data_server`) on in `world` with an intensity in (0, 1];
/// `false` when `class` is no such class.
pub fn enable_by_role(world: &mut WorldConfig, class: &str, intensity: f64) -> bool {
    let Some((verb, role)) = role_named(class) else {
        return false;
    };
    let Some(role) = Role::from_name(role) else {
        return false;
    };
    let p = (0.05 + 0.25 * intensity).min(1.0);
    let (classes, min, max) = match verb {
        RoleVerb::Kill => return false,
        RoleVerb::Pause => (&mut world.faults.random.pause_of, 100, 2_500),
        RoleVerb::Stall => (&mut world.faults.random.stall_of, 500, 5_000),
    };
    classes.entry(role).or_insert(FaultClass {
        probability: p,
        min_duration_ms: min,
        max_duration_ms: max,
        rate: 0.0,
    });
    true
}

/// Switch the world's fault class `class` on in `world` (whose system runs
/// `clients` clients) with an intensity in (0, 1]. A class of the world's
/// list that a system implements itself (a crash at a named step) is an
/// error here: the system switches it on.
pub fn enable_world(
    world: &mut WorldConfig,
    clients: usize,
    class: &str,
    intensity: f64,
    rng: &mut ChaCha8Rng,
) -> Result<(), String> {
    let p = (0.05 + 0.25 * intensity).min(1.0);
    let class_of = |min, max| FaultClass {
        probability: p,
        min_duration_ms: min,
        max_duration_ms: max,
        rate: 0.0,
    };
    let Some(kind) = FaultKind::from_name(canonical(class)) else {
        return Err(format!(
            "unknown fault class {class:?} (classes: {})",
            CLASSES.join(", ")
        ));
    };
    let r = &mut world.faults.random;
    match kind {
        FaultKind::KillClient => r.kill_client = Some(class_of(100, 1_500)),
        FaultKind::KillDataServer => r.kill_data_server = Some(class_of(100, 1_500)),
        FaultKind::KillCoordinator => r.kill_coordinator = Some(class_of(50, 800)),
        FaultKind::KillLiveness => r.kill_liveness = Some(class_of(50, 800)),
        FaultKind::KillMaster => r.kill_master = Some(class_of(100, 1_500)),
        FaultKind::Pause => r.pause = Some(class_of(100, 2_500)),
        FaultKind::Stall => r.stall = Some(class_of(500, 5_000)),
        FaultKind::Partition => r.partition = Some(class_of(100, 1_500)),
        FaultKind::PacketLoss => {
            r.packet_loss = Some(FaultClass {
                rate: 0.05 + 0.25 * intensity,
                ..class_of(100, 1_000)
            })
        }
        // Copies arrive up to seconds late: long enough to land after a
        // cleanup has rolled their transaction back.
        FaultKind::Latency => {
            r.latency = Some(FaultClass {
                rate: 0.05 + 0.5 * intensity,
                ..class_of(200, 3_000)
            })
        }
        FaultKind::Duplicate => {
            r.duplicate = Some(FaultClass {
                rate: 0.2 + 0.6 * intensity,
                ..class_of(200, 4_000)
            })
        }
        FaultKind::SessionExpiry => r.session_expiry = Some(class_of(0, 0)),
        FaultKind::ClockSkew => skew_clocks(world, clients, intensity, rng),
        FaultKind::CrashAtStep | FaultKind::PauseAtStep => {
            return Err(format!(
                "fault class {class:?} is a system's own: its system switches it on"
            ));
        }
    }
    Ok(())
}

/// Skew every client's clock by up to 0.5-4.5 s and drift by up to 5%.
fn skew_clocks(world: &mut WorldConfig, clients: usize, intensity: f64, rng: &mut ChaCha8Rng) {
    let spread = (500.0 + 4_000.0 * intensity) as i64;
    world.clocks = (0..clients)
        .map(|_| {
            ClockEntry::by_position(ClockSkew {
                offset_ms: rng.random_range(-spread..=spread),
                drift_ppm: rng.random_range(-50_000..=50_000),
            })
        })
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_class_names_are_the_fault_kinds() {
        let kinds: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(CLASSES, kinds.as_slice());
    }

    #[test]
    fn an_old_name_means_its_class_now() {
        assert_eq!(canonical("kill_oracle"), "kill_coordinator");
        assert_eq!(canonical("kill_tablet_server"), "kill_data_server");
        assert_eq!(canonical("pause"), "pause");
        assert_eq!(canonical("kill_everything"), "kill_everything");
        for (old, new) in OLD_NAMES {
            assert!(!CLASSES.contains(old), "{old}");
            assert!(CLASSES.contains(new), "{new}");
        }
        let mut w = WorldConfig::default();
        let mut rng = rand_core::SeedableRng::seed_from_u64(1);
        enable_world(&mut w, 2, "kill_tablet_server", 0.5, &mut rng).unwrap();
        assert!(w.faults.random.kill_data_server.is_some());
        assert!(w.faults.random.kill_coordinator.is_none());
    }

    /// A kill is named by the role it kills, as the system names the role
    /// or as the world does; a role the system has not stays unresolved.
    #[test]
    fn a_kill_is_named_by_its_role() {
        let roles = [(Role::DataServer, "broker"), (Role::Client, "client")];
        assert_eq!(resolve("kill:broker", &roles), "kill_data_server");
        assert_eq!(resolve("kill:data_server", &roles), "kill_data_server");
        assert_eq!(resolve("kill:client", &roles), "kill_client");
        assert_eq!(resolve("kill:oracle", &roles), "kill:oracle");
        assert_eq!(resolve("kill_oracle", &roles), "kill_coordinator");
        assert_eq!(resolve("partition", &roles), "partition");
        assert_eq!(display("kill_data_server", &roles), "kill:broker");
        assert_eq!(display("kill_coordinator", &roles), "kill_coordinator");
        assert_eq!(display("pause", &roles), "pause");
    }

    #[test]
    fn an_unknown_class_and_a_systems_own_class_are_refused() {
        let mut w = WorldConfig::default();
        let mut rng = rand_core::SeedableRng::seed_from_u64(1);
        let e = enable_world(&mut w, 2, "kill_everything", 0.5, &mut rng).unwrap_err();
        assert!(e.contains("unknown fault class \"kill_everything\""), "{e}");
        let e = enable_world(&mut w, 2, "crash_at_step", 0.5, &mut rng).unwrap_err();
        assert!(e.contains("a system's own"), "{e}");
        enable_world(&mut w, 2, "kill_coordinator", 0.5, &mut rng).unwrap();
        assert!(w.faults.random.kill_coordinator.is_some());
        enable_world(&mut w, 3, "clock_skew", 0.5, &mut rng).unwrap();
        assert_eq!(w.clocks.len(), 3);
    }
}
