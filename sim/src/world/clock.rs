//! Skewed clocks: a node's wall clock relative to true simulated time, and
//! the entries of the world's `clocks` list that give them to nodes.

use crate::world::node::NodeName;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Wall clocks start here (ms), so negative offsets stay positive.
const WALL_BASE_MS: u64 = 1_000_000_000;

/// A node's wall clock relative to true simulated time.
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

    /// The simulated time (ms) at which a clock that is not skewed shows
    /// `wall_ms` (0 for a wall time before the clocks' start).
    pub fn unskewed_true_ms(wall_ms: u64) -> u64 {
        wall_ms.saturating_sub(WALL_BASE_MS)
    }
}

/// One entry of the world's `clocks` list: the skew of the node it names
/// (`{"node": "tablet-1", "offset_ms": .., "drift_ppm": ..}`), or, without
/// a node (the list form of before), of the client whose index is the
/// entry's position in the list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockEntry {
    /// The node whose clock it is; none: the client at this position.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Constant offset added to the clock (ms; may be negative).
    pub offset_ms: i64,
    /// Drift in parts per million (positive runs fast).
    pub drift_ppm: i64,
}

impl ClockEntry {
    /// An entry of the list form: `skew` for the client at its position.
    pub fn by_position(skew: ClockSkew) -> ClockEntry {
        ClockEntry {
            node: None,
            offset_ms: skew.offset_ms,
            drift_ppm: skew.drift_ppm,
        }
    }

    /// The clock it gives.
    pub fn skew(&self) -> ClockSkew {
        ClockSkew {
            offset_ms: self.offset_ms,
            drift_ppm: self.drift_ppm,
        }
    }

    /// Whether the clock it gives is off at all.
    pub fn is_skewed(&self) -> bool {
        self.skew().is_skewed()
    }

    /// Whether the entry at position `position` of the list is `node`'s.
    pub fn is_for(&self, position: usize, node: &NodeName) -> bool {
        match &self.node {
            Some(name) => *name == node.to_string(),
            None => node.is_client(position),
        }
    }

    /// The fields of the `clock_skew` event of the entry at `position`:
    /// the client's index for the list form, else the node's name.
    pub(crate) fn event_fields(&self, position: usize) -> serde_json::Value {
        let (offset_ms, drift_ppm) = (self.offset_ms, self.drift_ppm);
        match &self.node {
            None => json!({"client": position, "offset_ms": offset_ms, "drift_ppm": drift_ppm}),
            Some(n) => json!({"node": n, "offset_ms": offset_ms, "drift_ppm": drift_ppm}),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::ids::Role;
    use crate::world::node::NodeKind;

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

    const CLIENT: NodeKind = NodeKind {
        role: Role::Client,
        label: "client",
        numbered: true,
        reads_clock: true,
        stalls: true,
    };

    #[test]
    fn an_entry_is_a_clock_of_the_node_it_names_or_of_the_client_at_its_position() {
        let list: Vec<ClockEntry> = serde_json::from_str(
            r#"[{"offset_ms": 5, "drift_ppm": 1}, {"node": "client-0", "offset_ms": 7, "drift_ppm": 0}]"#,
        )
        .unwrap();
        assert!(list[0].is_for(0, &CLIENT.nth(0)) && !list[0].is_for(0, &CLIENT.nth(1)));
        assert!(list[1].is_for(1, &CLIENT.nth(0)) && !list[1].is_for(1, &CLIENT.nth(1)));
        assert_eq!(
            list[0].skew(),
            ClockSkew {
                offset_ms: 5,
                drift_ppm: 1
            }
        );
        // The list form saves as it always did; the node form names its node.
        let saved = serde_json::to_string(&list).unwrap();
        assert_eq!(
            saved,
            r#"[{"offset_ms":5,"drift_ppm":1},{"node":"client-0","offset_ms":7,"drift_ppm":0}]"#
        );
        assert_eq!(
            list[0].event_fields(0),
            json!({"client": 0, "offset_ms": 5, "drift_ppm": 1})
        );
        assert_eq!(list[1].event_fields(1)["node"], json!("client-0"));
        let unknown =
            serde_json::from_str::<ClockEntry>(r#"{"host": "a", "offset_ms": 1, "drift_ppm": 0}"#);
        assert!(
            unknown
                .unwrap_err()
                .to_string()
                .contains("unknown field `host`")
        );
    }
}
