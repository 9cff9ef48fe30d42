//! The world's fault classes by name, and how each turns into the world's
//! settings. A campaign switches classes on and off per seed (swarm
//! testing); a system adds its own classes (crashes at its named points)
//! and says which classes it honours.

use percsim_sim::{ClockEntry, ClockSkew, FaultClass, FaultKind, Role, WorldConfig};
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

/// The class `name` means for a system whose nodes play `roles` (each
/// with the name the system gives it): `kill:<role>` is the kill class of
/// that role (the system's name for it or the world's), an old name is its
/// class now, any other name is itself (an unknown name stays unknown, and
/// a role the system has not, for their errors).
pub fn resolve(name: &str, roles: &[(Role, &str)]) -> String {
    let Some(role) = name.strip_prefix(KILL_PREFIX) else {
        return canonical(name).to_string();
    };
    let found = roles
        .iter()
        .find(|(r, label)| *label == role || r.name() == role);
    match found {
        Some((r, _)) => FaultKind::kill_of(*r).name().to_string(),
        None => name.to_string(),
    }
}

/// The name a campaign of a system whose nodes play `roles` gives class
/// `class`: a kill by the system's name for its role (`kill:broker`),
/// any other class by its own name.
pub fn display(class: &str, roles: &[(Role, &str)]) -> String {
    let kill = roles
        .iter()
        .find(|(r, _)| FaultKind::kill_of(*r).name() == class);
    match kill {
        Some((_, label)) => format!("{KILL_PREFIX}{label}"),
        None => class.to_string(),
    }
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
