//! A shard's JSON lines as a whole: a header line naming the campaign, one
//! line per seed, and a completion line. `percsim merge` merges only shards
//! that make up one campaign exactly: every shard present once, each
//! complete, all of the same campaign.
//!
//! ```text
//! {"campaign":{"format":"percsim-campaign/1","seeds":{"start":0,"end":100},"shard":{"index":1,"count":4},...}}
//! {"system":"percolator","seed":0,...}
//! ...
//! {"complete":{"seeds":25,"time_limit_reached":false}}
//! ```

use crate::summary::{LineMerge, Summary};
use serde::{Deserialize, Serialize};
use std::io::BufRead;

/// The header's `format`.
pub const FORMAT: &str = "percsim-campaign/1";

/// The first line of a shard's JSON lines: which campaign, which shard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// [`FORMAT`].
    pub format: String,
    /// The campaign's seed range.
    pub seeds: SeedRange,
    /// This shard.
    pub shard: ShardId,
    /// Each system's seeds, in campaign order (the campaign runs the first
    /// system's seeds from the range's start, then the next system's).
    pub systems: Vec<SystemSeeds>,
    /// Workloads named (`--workload`, sorted; empty: each system's default).
    pub workloads: Vec<String>,
    /// Fault classes named (`--faults`, sorted; empty: every class).
    pub faults: Vec<String>,
    /// Planted bugs switched on (`--ablate`, sorted; empty: faithful).
    pub ablations: Vec<String>,
    /// Whether every seed ran twice to compare its histories.
    pub check_determinism: bool,
    /// The commit the binary was built from.
    pub commit: String,
}

/// A campaign's seed range, `start..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedRange {
    /// First seed (included).
    pub start: u64,
    /// Last seed (excluded).
    pub end: u64,
}

/// Shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardId {
    /// 1-based.
    pub index: u64,
    /// Number of shards.
    pub count: u64,
}

/// How many seeds one system runs in the campaign.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemSeeds {
    /// The system's name.
    pub name: String,
    /// Its seeds: `start..start + seeds` of the range.
    pub seeds: u64,
}

/// The last line of a shard that ran to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Completion {
    /// Seed lines written.
    pub seeds: u64,
    /// Whether `--time-limit` stopped the shard before its last seed.
    pub time_limit_reached: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HeaderLine {
    campaign: Header,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CompletionLine {
    complete: Completion,
}

impl Header {
    /// The header as one JSON line (without its newline).
    pub fn line(&self) -> String {
        let line = HeaderLine {
            campaign: self.clone(),
        };
        serde_json::to_string(&line).unwrap_or_default()
    }

    /// The seeds of the whole campaign (every shard).
    fn campaign_len(&self) -> u64 {
        self.systems.iter().map(|s| s.seeds).sum()
    }

    /// How many seeds shard `k` of this campaign runs.
    fn shard_len(&self, k: u64) -> u64 {
        let len = self.campaign_len();
        if k > len {
            0
        } else {
            (len - (k - 1)).div_ceil(self.shard.count)
        }
    }

    /// The `i`-th seed of shard `k`: its system's name and the seed.
    fn seed_at(&self, k: u64, i: u64) -> Option<(&str, u64)> {
        let mut j = (k - 1) + i * self.shard.count;
        for s in &self.systems {
            if j < s.seeds {
                return Some((&s.name, self.seeds.start + j));
            }
            j -= s.seeds;
        }
        None
    }

    /// The seeds of shard `k` from its `from`-th on, for a message: each
    /// system's first and last seed and the step between them.
    fn describe_seeds(&self, k: u64, from: u64) -> String {
        let n = self.shard.count;
        let mut parts = Vec::new();
        let mut first_of_system = 0;
        for s in &self.systems {
            // Offsets j of this system with j % n == k - 1 and j >= the shard's `from`-th.
            let lo = (k - 1 + from * n).max(first_of_system);
            let first = lo + ((k - 1 + n) - lo % n) % n;
            let end = first_of_system + s.seeds;
            if first < end {
                let count = (end - first).div_ceil(n);
                let last = first + (count - 1) * n;
                let at = |j: u64| self.seeds.start + j - first_of_system;
                let what = match count {
                    1 => format!("{} seed {}", s.name, at(first)),
                    2 => format!("{} seeds {}, {}", s.name, at(first), at(last)),
                    _ => format!(
                        "{} seeds {}, {}, ..., {} ({count} seeds, one in every {n})",
                        s.name,
                        at(first),
                        at(first + n),
                        at(last)
                    ),
                };
                parts.push(what);
            }
            first_of_system = end;
        }
        parts.join("; ")
    }

    /// The first field in which `other` is not the same campaign, with
    /// both values.
    fn differs(&self, other: &Header) -> Option<String> {
        let fields: [(&str, String, String); 8] = [
            ("format", self.format.clone(), other.format.clone()),
            (
                "seed range",
                format!("{}..{}", self.seeds.start, self.seeds.end),
                format!("{}..{}", other.seeds.start, other.seeds.end),
            ),
            (
                "shard count",
                self.shard.count.to_string(),
                other.shard.count.to_string(),
            ),
            ("systems", systems(self), systems(other)),
            ("workloads", list(&self.workloads), list(&other.workloads)),
            ("fault classes", list(&self.faults), list(&other.faults)),
            (
                "planted bugs (--ablate)",
                ablated(&self.ablations),
                ablated(&other.ablations),
            ),
            (
                "--check-determinism",
                self.check_determinism.to_string(),
                other.check_determinism.to_string(),
            ),
        ];
        if let Some((name, a, b)) = fields.into_iter().find(|(_, a, b)| a != b) {
            return Some(format!("{name}: {a} vs {b}"));
        }
        (self.commit != other.commit)
            .then(|| format!("commit: {} vs {}", self.commit, other.commit))
    }
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "(defaults)".into()
    } else {
        v.join(",")
    }
}

fn ablated(v: &[String]) -> String {
    if v.is_empty() {
        "none (faithful)".into()
    } else {
        v.join(",")
    }
}

fn systems(h: &Header) -> String {
    let s: Vec<String> = h
        .systems
        .iter()
        .map(|s| format!("{} {}", s.seeds, s.name))
        .collect();
    s.join(", ")
}

impl Completion {
    /// The completion as one JSON line (without its newline).
    pub fn line(&self) -> String {
        serde_json::to_string(&CompletionLine { complete: *self }).unwrap_or_default()
    }
}

/// One shard file as read: its header, the seed lines counted, its
/// completion line if it had one.
struct ShardRead {
    name: String,
    header: Header,
    seeds: u64,
    completion: Option<Completion>,
}

/// Why a set of shard files is not one complete campaign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeRefused {
    /// Every problem found, one sentence each.
    pub problems: Vec<String>,
}

impl std::fmt::Display for MergeRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.problems.join("\n"))
    }
}

/// Merge the JSON lines of a campaign's shards into one summary, refusing
/// (with every problem named) unless they are exactly one campaign's
/// shards, each present once and complete. `inputs` pairs a name for
/// messages with a reader.
pub fn merge<R: BufRead>(inputs: Vec<(String, R)>) -> Result<Summary, MergeRefused> {
    let mut lines = LineMerge::default();
    let mut shards = Vec::new();
    let mut problems = Vec::new();
    for (name, reader) in inputs {
        match read_shard(&name, reader, &mut lines) {
            Ok(s) => shards.push(s),
            Err(e) => problems.push(e),
        }
    }
    problems.extend(campaign_problems(&shards));
    if problems.is_empty() {
        Ok(lines.finish())
    } else {
        Err(MergeRefused { problems })
    }
}

/// Read one shard's lines: the header first, then seed lines (each the
/// seed the shard runs next), then the completion line last.
fn read_shard<R: BufRead>(
    name: &str,
    reader: R,
    lines: &mut LineMerge,
) -> Result<ShardRead, String> {
    let mut shard: Option<ShardRead> = None;
    for (i, line) in reader.lines().enumerate() {
        let at = format!("{name}:{}", i + 1);
        let line = line.map_err(|e| format!("{at}: cannot read: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        let Some(s) = shard.as_mut() else {
            shard = Some(read_header(name, &at, &line)?);
            continue;
        };
        if s.completion.is_some() {
            return Err(format!("{at}: a line after the completion line"));
        }
        if line.starts_with("{\"complete\"") {
            let c: CompletionLine = serde_json::from_str(&line)
                .map_err(|e| format!("{at}: not a completion line: {e}"))?;
            s.completion = Some(c.complete);
            continue;
        }
        let r = lines.add_line(&at, &line)?;
        let want = s.header.seed_at(s.header.shard.index, s.seeds);
        if want != Some((r.system.as_str(), r.seed)) {
            let want = want.map_or("no more seeds".into(), |(n, s)| format!("{n} seed {s}"));
            return Err(format!(
                "{at}: {} seed {} is not this shard's next seed ({want})",
                r.system, r.seed
            ));
        }
        s.seeds += 1;
    }
    shard.ok_or_else(|| format!("{name}: empty (no campaign header)"))
}

fn read_header(name: &str, at: &str, line: &str) -> Result<ShardRead, String> {
    let h: HeaderLine = serde_json::from_str(line).map_err(|e| {
        format!(
            "{at}: not a campaign header ({e}); a shard's lines start with one \
             (lines written by an older percsim have none)"
        )
    })?;
    if h.campaign.format != FORMAT {
        return Err(format!(
            "{at}: campaign format {:?}, this build reads {FORMAT:?}",
            h.campaign.format
        ));
    }
    let s = h.campaign.shard;
    if s.count == 0 || s.index == 0 || s.index > s.count {
        return Err(format!(
            "{at}: shard {}/{}: need 1 <= K <= N",
            s.index, s.count
        ));
    }
    Ok(ShardRead {
        name: name.to_string(),
        header: h.campaign,
        seeds: 0,
        completion: None,
    })
}

/// What keeps the shards read from being one complete campaign: shards
/// cut short, shards of different campaigns, a shard twice, a shard missing.
fn campaign_problems(shards: &[ShardRead]) -> Vec<String> {
    let mut problems: Vec<String> = shards.iter().filter_map(cut_short).collect();
    let Some(first) = shards.first() else {
        problems.push("no shard files given".into());
        return problems;
    };
    for s in &shards[1..] {
        if let Some(d) = first.header.differs(&s.header) {
            problems.push(format!(
                "{} and {} are shards of different campaigns ({d})",
                first.name, s.name
            ));
        }
    }
    if problems.iter().any(|p| p.contains("different campaigns")) {
        return problems;
    }
    let h = &first.header;
    for k in 1..=h.shard.count {
        let with_k: Vec<&str> = shards
            .iter()
            .filter(|s| s.header.shard.index == k)
            .map(|s| s.name.as_str())
            .collect();
        match with_k.len() {
            0 => problems.push(format!(
                "shard {k}/{} is missing: {}",
                h.shard.count,
                missing(h, k, 0)
            )),
            1 => {}
            _ => problems.push(format!(
                "shard {k}/{} is given {} times (overlapping seeds): {}",
                h.shard.count,
                with_k.len(),
                with_k.join(", ")
            )),
        }
    }
    problems
}

/// A shard without its completion line, or one that stopped early.
fn cut_short(s: &ShardRead) -> Option<String> {
    let h = &s.header;
    let (k, n) = (h.shard.index, h.shard.count);
    let planned = h.shard_len(k);
    match s.completion {
        None => Some(format!(
            "{}: shard {k}/{n} was cut short (no completion line after {} of its {planned} seeds); missing: {}",
            s.name,
            s.seeds,
            missing(h, k, s.seeds)
        )),
        Some(c) if c.seeds != s.seeds => Some(format!(
            "{}: shard {k}/{n}'s completion line counts {} seeds but it holds {}",
            s.name, c.seeds, s.seeds
        )),
        Some(c) if s.seeds < planned => Some(format!(
            "{}: shard {k}/{n} ran {} of its {planned} seeds{}; missing: {}",
            s.name,
            s.seeds,
            if c.time_limit_reached {
                " (stopped by --time-limit)"
            } else {
                ""
            },
            missing(h, k, s.seeds)
        )),
        Some(_) => None,
    }
}

/// The seeds of shard `k` from its `from`-th on, or "none".
fn missing(h: &Header, k: u64, from: u64) -> String {
    let d = h.describe_seeds(k, from);
    if d.is_empty() { "no seeds".into() } else { d }
}

#[cfg(test)]
mod tests;
