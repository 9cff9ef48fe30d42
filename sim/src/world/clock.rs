//! Skewed clocks: a node's wall clock relative to true simulated time.

use serde::{Deserialize, Serialize};

/// Wall clocks start here (ms), so negative offsets stay positive.
const WALL_BASE_MS: u64 = 1_000_000_000;

/// A client's wall clock relative to true simulated time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSkew {
    /// Constant offset added to the clock (ms; may be negative).
    pub offset_ms: i64,
    /// Drift in parts per million (positive runs fast).
    pub drift_ppm: i64,
}

impl ClockSkew {
    /// The wall time (ms) this clock shows at `true_ns` of simulated time.
    pub fn wall_ms(&self, true_ns: u64) -> u64 {
        let true_ms = true_ns / 1_000_000;
        let drift = (true_ms as i128 * self.drift_ppm as i128 / 1_000_000) as i64;
        (WALL_BASE_MS as i64 + true_ms as i64 + self.offset_ms + drift).max(0) as u64
    }

    /// Whether the clock is off at all.
    pub fn is_skewed(&self) -> bool {
        self.offset_ms != 0 || self.drift_ppm != 0
    }
}

#[cfg(test)]
mod tests {
    use super::ClockSkew;

    #[test]
    fn offset_and_drift_move_the_wall_clock() {
        let perfect = ClockSkew::default();
        let fast = ClockSkew {
            offset_ms: -5,
            drift_ppm: 1_000,
        };
        assert_eq!(perfect.wall_ms(2_000_000_000), 1_000_002_000);
        assert_eq!(fast.wall_ms(2_000_000_000), 1_000_002_000 - 5 + 2);
        assert!(!perfect.is_skewed() && fast.is_skewed());
    }
}
