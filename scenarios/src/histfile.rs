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
}

/// Reads `path`: a history, or a capsule holding one. The error names the
/// file and what is wrong with it.
pub fn load(path: &Path) -> Result<Loaded, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    let is_capsule = value.get("format").and_then(|f| f.as_str()) == Some("percsim-capsule/1");
    if !is_capsule {
        let history = percsim_checker::parse(&text)
            .map_err(|e| format!("{} is not a valid history: {e}", path.display()))?;
        return Ok(Loaded {
            history,
            capsule: None,
        });
    }
    let inner = value
        .get("history")
        .filter(|h| !h.is_null())
        .ok_or_else(|| format!("the capsule {} holds no history", path.display()))?;
    let history = percsim_checker::parse(&inner.to_string())
        .map_err(|e| format!("the history in capsule {}: {e}", path.display()))?;
    Ok(Loaded {
        history,
        capsule: Some(value),
    })
}
