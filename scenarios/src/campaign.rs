//! Fuzzing campaigns: each seed of a system generates a whole scenario
//! (cluster size, workload parameters, which faults are on), runs it and
//! checks it. What a seed draws is the system's own
//! ([`crate::system::SystemDef::generate`]); the campaign's choices of
//! systems, workloads, fault classes and planted bugs are a [`Mix`].

use crate::faultmix;
pub use crate::judge::{Judged, SeedResult, Verdict, judge};
use crate::scenario::Scenario;
pub use crate::system::Mix;
use crate::system::SystemDef;
use crate::systems;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

impl Mix {
    /// The systems, in the registry's order of the names given.
    pub fn systems(&self) -> Result<Vec<&'static dyn SystemDef>, String> {
        if self.systems.is_empty() {
            return Ok(vec![systems::default_system()]);
        }
        self.systems.iter().map(|n| systems::find(n)).collect()
    }

    /// The mix as `system` draws from it: each fault class by its name
    /// now ([`faultmix::resolve`]: a kill named by the role it kills, an
    /// old name), as its [`SystemDef::generate`] and shrink expect.
    pub fn for_system(&self, system: &dyn SystemDef) -> Mix {
        let roles = system.roles();
        Mix {
            faults: self
                .faults
                .iter()
                .map(|f| faultmix::resolve(f, &roles))
                .collect(),
            ..self.clone()
        }
    }

    /// The first system (the one a seed of [`generate`] runs).
    pub fn first_system(&self) -> Result<&'static dyn SystemDef, String> {
        Ok(self.systems()?[0])
    }

    /// Check every name: each system exists; each workload, fault class
    /// and planted bug is known, and every chosen system has a workload
    /// among those named and honours every named class; each planted bug
    /// is one of a chosen system's.
    pub fn validate(&self) -> Result<(), String> {
        let systems = self.systems()?;
        for s in &systems {
            check_workloads(*s, &self.workloads)?;
            check_faults(*s, &self.faults)?;
        }
        for a in &self.ablations {
            if !systems
                .iter()
                .any(|s| s.ablations().iter().any(|(n, _)| n == a))
            {
                return Err(unknown_ablation(a, &systems));
            }
        }
        Ok(())
    }

    /// With every registered system chosen by default: keep the systems
    /// the named workloads, fault classes and planted bugs apply to (a
    /// planted bug of one system makes a campaign of that system).
    pub fn narrowed(mut self) -> Result<Mix, String> {
        let all = self.systems()?;
        let keep: Vec<String> = all
            .iter()
            .filter(|s| check_workloads(**s, &self.workloads).is_ok())
            .filter(|s| check_faults(**s, &self.faults).is_ok())
            .filter(|s| {
                self.ablations.is_empty()
                    || self
                        .ablations
                        .iter()
                        .any(|a| s.ablations().iter().any(|(n, _)| n == a))
            })
            .map(|s| s.name().to_string())
            .collect();
        if keep.is_empty() {
            // No system takes them all: say why for the first one.
            self.validate()?;
        }
        self.systems = keep;
        Ok(self)
    }
}

/// `system` has a workload among `named` (or none are named), and each
/// named workload is some system's.
fn check_workloads(system: &dyn SystemDef, named: &[String]) -> Result<(), String> {
    let known = all_workloads();
    if let Some(w) = named.iter().find(|w| !known.contains(&w.as_str())) {
        return Err(format!(
            "unknown workload {w:?} for a campaign (choose from {})",
            known.join(", ")
        ));
    }
    let own = system.campaign_workloads();
    if !named.is_empty() && !named.iter().any(|w| own.contains(&w.as_str())) {
        return Err(format!(
            "no workload named for system {}: {} {} not its (its workloads: {}); name one, or choose another system with --system",
            system.name(),
            named.join(", "),
            if named.len() == 1 { "is" } else { "are" },
            own.join(", ")
        ));
    }
    Ok(())
}

/// `system` honours every class in `named` (a kill named by the role it
/// kills and an old name of a class, see [`faultmix::resolve`], stand for
/// the class).
fn check_faults(system: &dyn SystemDef, named: &[String]) -> Result<(), String> {
    for f in named {
        if faultmix::role_named(f).is_some() {
            check_role_class(system, f)?;
            continue;
        }
        let known = systems::all().iter().any(|s| honours(*s, f));
        if !known {
            let mut all: Vec<String> = systems::all()
                .iter()
                .flat_map(|s| s.class_names())
                .collect();
            all.sort();
            all.dedup();
            return Err(format!(
                "unknown fault class {f:?} (choose from {})",
                all.join(", ")
            ));
        }
        if !honours(system, f) {
            return Err(format!(
                "system {} does not honour fault class {f:?} (its classes: {})",
                system.name(),
                system.class_names().join(", ")
            ));
        }
    }
    Ok(())
}

/// Whether `system` honours class `f` (by any name it takes).
fn honours(system: &dyn SystemDef, f: &str) -> bool {
    let class = faultmix::resolve(f, &system.roles());
    system.fault_classes().contains(&class.as_str()) || system.role_classes().contains(&class)
}

/// `system` honours class `f`, named by a role (`pause:broker`): the role
/// is one of its roles, and it can do that to the role's nodes. The error
/// names the system, the class and the role.
fn check_role_class(system: &dyn SystemDef, f: &str) -> Result<(), String> {
    if honours(system, f) {
        return Ok(());
    }
    let refused = format!("system {} does not honour fault class {f:?}", system.name());
    let roles = system.roles();
    let (verb, written) = faultmix::role_named(f).expect("a class named by a role");
    let known = roles
        .iter()
        .any(|(r, label)| *label == written || r.name() == written);
    let labels: Vec<&str> = roles.iter().map(|(_, label)| *label).collect();
    let why = match known {
        false => format!(
            "it has no role {written:?} (its roles: {})",
            labels.join(", ")
        ),
        true => format!(
            "it cannot {} its {written} nodes (its classes: {})",
            verb.name(),
            system.class_names().join(", ")
        ),
    };
    Err(format!("{refused}: {why}"))
}

/// Every registered system's workloads.
fn all_workloads() -> Vec<&'static str> {
    systems::all()
        .iter()
        .flat_map(|s| s.workloads().iter().copied())
        .collect()
}

/// Why a planted bug's name is refused.
fn unknown_ablation(name: &str, chosen: &[&'static dyn SystemDef]) -> String {
    let list = |systems: &[&'static dyn SystemDef]| -> String {
        systems
            .iter()
            .flat_map(|s| s.ablations())
            .map(|(n, _)| n)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match systems::all()
        .into_iter()
        .find(|s| s.ablations().iter().any(|(n, _)| *n == name))
    {
        Some(owner) => format!(
            "planted bug {name:?} is system {}'s; choose that system with --system",
            owner.name()
        ),
        None => format!(
            "unknown planted bug {name:?} (choose from {})",
            list(chosen)
        ),
    }
}

/// Generate the scenario of `seed` of the mix's first system.
pub fn generate(seed: u64, mix: &Mix) -> Scenario {
    let system = mix
        .first_system()
        .unwrap_or_else(|_| systems::default_system());
    with_role_classes(system.generate(seed, &mix.for_system(system)), seed, mix)
}

/// `scenario` of `seed` with the pause and stall classes aimed at a role
/// that `mix` names (`pause:broker`) switched on, each at an intensity
/// drawn from the seed alone (the system's own draws are left as they
/// are). The core switches them on for every system, whatever its
/// [`SystemDef::generate`] does with the names it does not know.
pub fn with_role_classes(mut scenario: Scenario, seed: u64, mix: &Mix) -> Scenario {
    let Ok(system) = systems::find(scenario.system()) else {
        return scenario;
    };
    let roles = system.roles();
    let mut rng = <ChaCha8Rng as rand_core::SeedableRng>::seed_from_u64(seed ^ ROLE_CLASS_SALT);
    for f in &mix.faults {
        let class = faultmix::resolve(f, &roles);
        if system.role_classes().contains(&class) {
            let intensity = rng.random_range(0.0..1.0);
            faultmix::enable_by_role(&mut scenario.world, &class, intensity);
        }
    }
    scenario
}

/// Mixed into a seed for the intensities of the classes aimed at a role.
const ROLE_CLASS_SALT: u64 = 0x726f_6c65;

/// Shrink the failing scenario of `seed` of `system`: simplify it while the
/// run still fails with the same verdict and rule; returns the smallest
/// found and how many runs it took. `budget` bounds the runs.
pub fn shrink(
    system: &dyn SystemDef,
    seed: u64,
    mix: &Mix,
    failed: &SeedResult,
    budget: usize,
) -> (Scenario, usize) {
    let same = |r: &SeedResult| {
        r.verdict == failed.verdict
            && (failed.violated_rules.is_empty()
                || r.violated_rules
                    .iter()
                    .any(|x| failed.violated_rules.contains(x)))
    };
    // A system's shrink draws its own scenarios: the classes aimed at a
    // role stay on in every one tried.
    let full = |s: &Scenario| with_role_classes(s.clone(), seed, mix);
    let mut still = |s: &Scenario| same(&judge(&full(s), false).result);
    let (smallest, runs) = system.shrink(seed, &mix.for_system(system), &mut still, budget);
    (full(&smallest), runs)
}
