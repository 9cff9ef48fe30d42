//! The named fault mixes of `percsim compare`: the same random fault
//! classes, at the same rates, for every system compared.

use percsim_sim::{FaultClass, RandomFaults};

percsim_sim::identities! {
    /// A named fault mix of the comparison: the same fault classes, at the
    /// same rates, for every system (each system maps a class onto its own
    /// nodes: Percolator's coordinator-side server is its timestamp oracle).
    pub enum FaultMix {
        /// No faults.
        None => ("none", "no faults"),
        /// Clients killed at random moments (about one kill per simulated second), restarted after 0.5-1.5 s.
        CrashClients => ("crash-clients", "clients killed at random moments (about one per simulated second), restarted after 0.5-1.5 s"),
        /// The coordinator-side server killed at random moments (about one kill per 2 simulated seconds), restarted after 0.2-1 s.
        CrashCoordinator => ("crash-coordinator", "the coordinator-side server (the node of the coordinator role) killed about once per 2 simulated s, restarted after 0.2-1 s"),
        /// Lossy network: periods of 0.5-2 s in which 10% of messages are lost.
        Lossy => ("lossy", "lossy network: periods of 0.5-2 s losing 10% of messages, starting about once per simulated second"),
    }
}

/// Fault ticks per simulated second (the driver draws each class once per tick).
const TICKS_PER_S: f64 = 1_000.0 / percsim_sim::FAULT_TICK_MS as f64;

impl FaultMix {
    /// The random fault classes the mix switches on.
    pub fn faults(self) -> RandomFaults {
        let per_s = |n: f64, min, max, rate| {
            Some(FaultClass {
                probability: n / TICKS_PER_S,
                min_duration_ms: min,
                max_duration_ms: max,
                rate,
            })
        };
        let mut r = RandomFaults::default();
        match self {
            FaultMix::None => {}
            FaultMix::CrashClients => r.kill_client = per_s(1.0, 500, 1_500, 0.0),
            FaultMix::CrashCoordinator => r.kill_coordinator = per_s(0.5, 200, 1_000, 0.0),
            FaultMix::Lossy => r.packet_loss = per_s(1.0, 500, 2_000, 0.1),
        }
        r
    }
}

/// The fault mix named `name`.
pub fn parse_mix(name: &str) -> Result<FaultMix, String> {
    FaultMix::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = FaultMix::ALL.iter().map(|m| m.name()).collect();
        format!("unknown fault mix {name:?} (known: {})", known.join(", "))
    })
}
