//! The world's choices, made pluggable for systematic exploration.
//!
//! In an ordinary run the world decides everything from the seed: how long
//! each message takes, which random faults start. With an exploration
//! [`Schedule`] in the world's settings (`world.explore`), two kinds of
//! decision point become choices that a schedule can steer:
//!
//! - **every message** on the world's transport (requests and replies,
//!   late and duplicated copies included): delivered as the seed drew it
//!   (the default), delayed by `window_ms` (so messages due within the
//!   window of it overtake it), lost, or delivered late (past the caller's
//!   `rpc_timeout_ms`); losing and lateness spend the `fault_budget`;
//! - **every named point** a system's node reaches (its crash and pause
//!   points): go on (the default), crash there (restart `stop_ms` later) or
//!   freeze there for `stop_ms`; a stop spends the `stop_budget`.
//!
//! The choice points are numbered in the order the run reaches them. A
//! schedule names the choices that differ from the default ([`Forced`]);
//! every other choice takes its default, so the schedule with no forced
//! choice is exactly the seed's ordinary run. Or a [`Pct`] setting makes
//! the choices (randomised priorities, see [`Pct`]). The choices the run
//! made, with how many options each had, come back in
//! [`crate::RunSummary::choices`].
//!
//! Not under a schedule's control: madsim's own scheduler (which ready task
//! runs first at one instant, seeded), the latency the seed draws for each
//! message, the random fault classes and timed faults of the settings (they
//! still come from the seed), and everything a system decides itself.
//! Without a schedule nothing here runs: a world without `explore` costs
//! one branch per message.

use crate::world::guard::lock;
use madsim::task::NodeId;
use madsim::time::{Duration, Instant};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

pub use crate::world::schedule::*;

mod steer;

/// Where a world reads its system's state hash from: the installed
/// system's `Tenant::state_hash`, through a weak reference (`None` once the
/// system is gone or when it cannot tell).
pub(crate) type StateSource = Box<dyn Fn() -> Option<u64> + Send + Sync>;

/// PCT's running state.
struct PctState {
    rng: ChaCha8Rng,
    priorities: BTreeMap<NodeId, i64>,
    change_points: Vec<u32>,
    faults: BTreeMap<u32, u8>,
    lowest: i64,
}

/// The chooser of one run.
pub(crate) struct Chooser {
    schedule: Schedule,
    forced: BTreeMap<u32, u8>,
    faults_used: u32,
    stops_used: u32,
    pct: Option<PctState>,
    trace: Vec<Choice>,
}

/// Draw `count` distinct-ish points below `steps` (sorted).
fn draw_points(rng: &mut ChaCha8Rng, count: u32, steps: u32) -> Vec<u32> {
    let mut v: Vec<u32> = (0..count)
        .map(|_| rng.random_range(0..steps.max(1)))
        .collect();
    v.sort_unstable();
    v
}

impl Chooser {
    /// The chooser that follows `schedule`.
    pub(crate) fn new(schedule: Schedule) -> Chooser {
        let forced = schedule.forced.iter().map(|f| (f.at, f.option)).collect();
        let pct = schedule.pct.map(|p| {
            let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
            let change_points = draw_points(&mut rng, p.depth.saturating_sub(1), p.steps);
            let mut faults = BTreeMap::new();
            for at in draw_points(
                &mut rng,
                schedule.fault_budget + schedule.stop_budget,
                p.steps,
            ) {
                faults.insert(at, rng.random_range(1..4u8));
            }
            PctState {
                rng,
                priorities: BTreeMap::new(),
                change_points,
                faults,
                lowest: 0,
            }
        });
        Chooser {
            schedule,
            forced,
            faults_used: 0,
            stops_used: 0,
            pct,
            trace: Vec::new(),
        }
    }

    /// How many options a message may take now.
    fn message_options(&self) -> u8 {
        if self.faults_used < self.schedule.fault_budget {
            4
        } else {
            2
        }
    }

    /// How many options a stop may take now.
    fn stop_options(&self) -> u8 {
        if self.stops_used < self.schedule.stop_budget {
            3
        } else {
            1
        }
    }

    /// PCT's option for a message from `from` at choice point `at`.
    fn pct_message(&mut self, at: u32, from: NodeId, options: u8) -> u8 {
        let Some(p) = &mut self.pct else { return 0 };
        if let Some(&o) = p.faults.get(&at)
            && o < options
            && o >= MessageOption::Lost as u8
        {
            return o;
        }
        if !p.priorities.contains_key(&from) {
            let drawn = p.rng.random_range(1..i64::from(u32::MAX));
            p.priorities.insert(from, drawn);
        }
        if p.change_points.binary_search(&at).is_ok() {
            p.lowest -= 1;
            p.priorities.insert(from, p.lowest);
        }
        let mine = p.priorities[&from];
        let rank = p.priorities.values().filter(|&&v| v > mine).count() as u8;
        match rank {
            0 => 0,
            1 => 1,
            r => r.saturating_add(2),
        }
    }

    /// PCT's option for a stop at choice point `at`.
    fn pct_stop(&self, at: u32, options: u8) -> u8 {
        let Some(p) = &self.pct else { return 0 };
        match p.faults.get(&at) {
            Some(&o) if options > 1 => 1 + (o - 1) % 2,
            _ => 0,
        }
    }

    /// Record a choice point of `kind` at `place` (by `actor`) with
    /// `options` options; the option taken (forced, PCT's, or the default).
    fn choose(
        &mut self,
        kind: ChoiceKind,
        (place, actor): (u64, u64),
        options: u8,
        state: Option<u64>,
    ) -> u8 {
        let at = self.trace.len() as u32;
        let chosen = self.forced.get(&at).copied().unwrap_or(0);
        self.trace.push(Choice {
            kind,
            options,
            chosen,
            place,
            actor,
            state,
        });
        chosen
    }

    /// The trace so far (taken at the end of the run).
    pub(crate) fn take_trace(&mut self) -> Vec<Choice> {
        std::mem::take(&mut self.trace)
    }
}

/// A hash of `value`, the same in every run of one build.
pub fn hash_of(value: &impl Hash) -> u64 {
    let mut h = StateHasher::default();
    value.hash(&mut h);
    h.finish()
}

/// The hasher of states and places: fixed keys (the same in every run),
/// and a 64-bit folded multiply per word written, cheaper than the
/// standard library's SipHash on the many small integers and short
/// strings a state is made of. Not meant to resist chosen inputs: it
/// tells apart the states of one exploration.
#[derive(Debug, Clone, Copy)]
pub struct StateHasher {
    acc: u64,
}

impl Default for StateHasher {
    fn default() -> Self {
        StateHasher {
            acc: 0x243f_6a88_85a3_08d3,
        }
    }
}

impl StateHasher {
    /// The multiplier of each word (an odd constant from the digits of π).
    const MUL: u64 = 0x1319_8a2e_0370_7345;
    /// Mixed into each word, so that a zero word still moves the state.
    const SALT: u64 = 0xa409_3822_299f_31d1;

    /// Fold one 64-bit word into the state.
    fn mix(&mut self, word: u64) {
        let p = u128::from(self.acc ^ word ^ Self::SALT) * u128::from(Self::MUL);
        self.acc = (p as u64) ^ ((p >> 64) as u64);
    }
}

impl Hasher for StateHasher {
    fn write(&mut self, bytes: &[u8]) {
        // The length first: `ab` and `ab\0` end in the same padded word.
        self.mix(bytes.len() as u64);
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.mix(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.mix(u64::from_le_bytes(last));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.mix(u64::from(i));
    }

    fn write_u16(&mut self, i: u16) {
        self.mix(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.mix(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.mix(i);
    }

    fn write_u128(&mut self, i: u128) {
        self.mix(i as u64);
        self.mix((i >> 64) as u64);
    }

    fn write_usize(&mut self, i: usize) {
        self.mix(i as u64);
    }

    fn finish(&self) -> u64 {
        let p = u128::from(self.acc) * u128::from(Self::SALT);
        (p as u64) ^ ((p >> 64) as u64)
    }
}

/// A hash of `value`'s `Debug` text, the same in every run of one build:
/// for a state whose types print but do not hash. The text goes into the
/// hasher as it is written, never into a string.
pub fn hash_of_debug(value: &impl std::fmt::Debug) -> u64 {
    /// A `fmt::Write` that feeds what is written to a hasher.
    struct Feed(StateHasher);
    impl std::fmt::Write for Feed {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.write(s.as_bytes());
            Ok(())
        }
    }
    let mut feed = Feed(StateHasher::default());
    // Writing to a hasher cannot fail; a `Debug` impl that fails leaves
    // the hash of what it wrote.
    let _ = std::fmt::write(&mut feed, format_args!("{value:?}"));
    feed.0.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_hasher_is_fixed_and_tells_apart_what_differs() {
        let state = (7u64, "tablet-0", vec![(1u32, true), (2, false)]);
        assert_eq!(hash_of(&state), hash_of(&state.clone()));
        // Fixed keys: the value is the same in every run and every build.
        // A change of the hasher changes it, and then a progress file's
        // states seen no longer match: its format must change with it.
        assert_eq!(
            hash_of(&state),
            0xc20c_547b_dcd1_7755,
            "{:#x}",
            hash_of(&state)
        );
        let others = [
            hash_of(&(8u64, "tablet-0", vec![(1u32, true), (2, false)])),
            hash_of(&(7u64, "tablet-1", vec![(1u32, true), (2, false)])),
            hash_of(&(7u64, "tablet-0", vec![(1u32, true), (2, true)])),
            hash_of(&(7u64, "tablet-0", vec![(1u32, true)])),
            hash_of(&0u64),
            hash_of(&[0u64, 0]),
        ];
        let mut all: Vec<u64> = others.to_vec();
        all.push(hash_of(&state));
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), others.len() + 1, "{all:x?}");
        // Bytes of two lengths that pad to one word still differ.
        let (mut a, mut b) = (StateHasher::default(), StateHasher::default());
        a.write(b"ab");
        b.write(b"ab\0");
        assert_ne!(a.finish(), b.finish());
    }

    #[test]
    fn a_schedule_that_cannot_run_is_refused_by_name() {
        assert_eq!(Schedule::default().problem(), None);
        let zero = Schedule {
            window_ms: 0,
            ..Schedule::default()
        };
        assert!(zero.problem().unwrap().contains("window_ms"));
        let pct = Schedule {
            pct: Some(Pct {
                seed: 1,
                depth: 0,
                steps: 5,
            }),
            ..Schedule::default()
        };
        assert!(pct.problem().unwrap().contains("depth"));
        let f = |at, option| Forced { at, option };
        let twice = Schedule {
            forced: vec![f(3, 1), f(5, 2), f(3, 2)],
            ..Schedule::default()
        };
        assert!(twice.problem().unwrap().contains("choice point 3"));
    }
}
