//! Reads a history from a `percsim-history/1` file or from a failure capsule
//! (`percsim-capsule/1`, which carries the history of the failing run).

use percsim_checker::History;
use std::path::Path;

/// A history and, when it came from a capsule, the capsule around it.
pub struct Loaded {
    /// The history.
    pub history: History,
    /// The whole capsule (scenario, verdict, replay command), if the file was one.
    pub capsule: Option<serde_json::Value>,
    /// Why the history breaks the format's validation, when a capsule's
    /// history does (capsules written before `data_missing` existed hold a
    /// put without a value where the store lost the data); it is then read
    /// as it is and judged as well as it can be.
    pub warning: Option<String>,
}

/// Reads `path`: a history, or a capsule holding one. The error names the
/// file and what is wrong with it.
pub fn load(path: &Path) -> Result<Loaded, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    let is_capsule = value.get("format").and_then(|f| f.as_str()) == Some("percsim-capsule/1");
    if !is_capsule {
        let history = percsim_checker::parse(&text)
            .map_err(|e| format!("{} is not a valid history: {e}", path.display()))?;
        return Ok(Loaded {
            history,
            capsule: None,
            warning: None,
        });
    }
    let inner = value
        .get("history")
        .filter(|h| !h.is_null())
        .ok_or_else(|| format!("the capsule {} holds no history", path.display()))?;
    let (history, warning) = match percsim_checker::parse(&inner.to_string()) {
        Ok(h) => (h, None),
        Err(strict) => {
            let h: History = serde_json::from_value(inner.clone())
                .map_err(|e| format!("the history in capsule {}: {e}", path.display()))?;
            (
                h,
                Some(format!(
                    "the history breaks the format's validation: {strict}"
                )),
            )
        }
    };
    Ok(Loaded {
        history,
        capsule: Some(value),
        warning,
    })
}

/// A transaction's lane: the client and which of its concurrent workers ran
/// it (histories name only the client).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lane {
    /// The client, as the history names it.
    pub client: u64,
    /// The worker slot within the client, from 0.
    pub slot: u32,
}

/// Assigns each transaction to a lane: a client's transactions are packed
/// into the fewest slots that never overlap in time (a slot is free again
/// once its transaction completed; one that never completed keeps its slot
/// to the end), so each lane runs one transaction at a time like a worker.
pub fn lanes(h: &History) -> Vec<Lane> {
    let mut order: Vec<usize> = (0..h.transactions.len()).collect();
    order.sort_by_key(|&i| (h.transactions[i].invoke_ns, i));
    let mut busy: std::collections::HashMap<u64, Vec<Option<u64>>> = Default::default();
    let mut out = vec![Lane { client: 0, slot: 0 }; h.transactions.len()];
    for i in order {
        let t = &h.transactions[i];
        let slots = busy.entry(t.client).or_default();
        let free = slots
            .iter()
            .position(|b| b.is_some_and(|until| until <= t.invoke_ns));
        let slot = match free {
            Some(s) => s,
            None => {
                slots.push(None);
                slots.len() - 1
            }
        };
        slots[slot] = t.complete_ns.map(|c| c.max(t.invoke_ns));
        out[i] = Lane {
            client: t.client,
            slot: slot as u32,
        };
    }
    out
}
