//! What an exploration schedule says (a scenario's `world.explore`): the
//! choices it forces, its budgets and PCT's parameters. The world reads
//! it through [`crate::world::explore`].

use serde::{Deserialize, Serialize};

/// How an exploration steers one run (a scenario's `world.explore`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Schedule {
    /// How much later a delayed message arrives, in simulated ms: the
    /// messages due within this window of it may overtake it.
    pub window_ms: u64,
    /// How many messages may be lost or made late in one run.
    pub fault_budget: u32,
    /// How many crashes and pauses at named points one run may have.
    pub stop_budget: u32,
    /// How long a node stopped at a point stays down or frozen, in ms.
    pub stop_ms: u64,
    /// The choices that differ from the default, by choice point.
    pub forced: Vec<Forced>,
    /// Randomised priorities instead of forced choices (PCT).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pct: Option<Pct>,
    /// Hash the world's and the system's state at every choice point
    /// (for pruning states already seen).
    pub hash_states: bool,
    /// With `hash_states`, the first choice point hashed: the ones before
    /// it are the same as in the run this schedule extends, whose states
    /// are known already.
    #[serde(skip_serializing_if = "is_zero")]
    pub hash_from: u32,
}

/// Whether `n` is 0 (a field left out when written).
fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            window_ms: 20,
            fault_budget: 0,
            stop_budget: 0,
            stop_ms: 2_000,
            forced: Vec::new(),
            pct: None,
            hash_states: false,
            hash_from: 0,
        }
    }
}

impl Schedule {
    /// What makes the schedule unable to run, if anything: a window of 0
    /// ms, a PCT depth of 0, or two forced choices at one choice point.
    pub fn problem(&self) -> Option<String> {
        if self.window_ms == 0 {
            return Some("window_ms must be at least 1".into());
        }
        if self.pct.is_some_and(|p| p.depth == 0) {
            return Some("pct.depth must be at least 1".into());
        }
        let mut at: Vec<u32> = self.forced.iter().map(|f| f.at).collect();
        at.sort_unstable();
        let twice = at.windows(2).find(|w| w[0] == w[1]);
        twice.map(|w| format!("two forced choices at choice point {}", w[0]))
    }
}

/// One choice that differs from the default: at the `at`-th choice point
/// of the run (from 0), option `option` (see [`MessageOption`] and
/// [`StopOption`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Forced {
    /// The choice point, in the order the run reaches them.
    pub at: u32,
    /// The option taken there.
    pub option: u8,
}

/// PCT-style randomised priorities (Burckhardt et al., "A randomized
/// scheduler with probabilistic guarantees of finding bugs", ASPLOS 2010),
/// over the nodes that send messages: each node draws a priority; a
/// message from the node ranked `r` (0 the highest) among the senders seen
/// so far is delayed by `r` windows, so within a window the higher node's
/// messages arrive first. At `depth - 1` change points drawn among the
/// first `steps` choice points, the sender's priority drops below every
/// other. Up to `fault_budget` losses or late deliveries and `stop_budget`
/// stops are placed at choice points drawn the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pct {
    /// The seed of the priorities and change points.
    pub seed: u64,
    /// The bug depth `d` aimed at: `d - 1` priority change points.
    pub depth: u32,
    /// `k`: how many choice points the change points are drawn among
    /// (those of the default schedule).
    pub steps: u32,
}

/// What a choice point is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChoiceKind {
    /// A message about to be sent.
    Message,
    /// A node at one of its system's named points.
    Stop,
}

impl ChoiceKind {
    /// The kind's name, as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            ChoiceKind::Message => "message",
            ChoiceKind::Stop => "stop",
        }
    }

    /// What the kind of choice decides, in a sentence.
    pub fn describe(self) -> &'static str {
        match self {
            ChoiceKind::Message => {
                "whether a message arrives as drawn, a window later, never or late"
            }
            ChoiceKind::Stop => "whether a node goes on, crashes or freezes at a named point",
        }
    }
}

/// The options of a message choice. Values from 4 up (PCT's lower ranks)
/// delay the message by `value - 2` windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageOption {
    /// Arrives when the seed's latency says (the default).
    AsDrawn = 0,
    /// Arrives one window later.
    Delayed = 1,
    /// Never arrives (spends the fault budget).
    Lost = 2,
    /// Arrives after the caller's time-out (spends the fault budget).
    Late = 3,
}

/// The options of a stop choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopOption {
    /// The node goes on (the default).
    GoOn = 0,
    /// The node crashes here; it restarts `stop_ms` later.
    Crash = 1,
    /// The node freezes here for `stop_ms`.
    Pause = 2,
}

/// What a node does at a named point, as an exploration chose it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExploreStop {
    /// Crash; restart after this long.
    Crash {
        /// The restart delay.
        restart_after_ms: u64,
    },
    /// Freeze for this long.
    Pause {
        /// How long.
        duration_ms: u64,
    },
}

/// One choice point a run reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// What it decided.
    pub kind: ChoiceKind,
    /// How many options an exploration may try there (0 is the default).
    pub options: u8,
    /// The option taken.
    pub chosen: u8,
    /// Where it was: a hash of the sending node, the receiving node and
    /// what the message carries (the kind of request it is or answers), or
    /// of the point and node (a stop). Coverage counts places, and
    /// pruning tells choice points apart by place and state.
    pub place: u64,
    /// A hash of the node that sends the message or reaches the point
    /// (PCT's senders are the distinct actors of messages).
    #[serde(default)]
    pub actor: u64,
    /// The hash of the world's and the system's state there, if the
    /// schedule asked for it and the system gives one.
    pub state: Option<u64>,
}
