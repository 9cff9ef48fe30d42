//! The toy's protocol steps, pure (no simulation, no I/O): how the primary
//! applies a write and numbers it, how it serves a read, the timestamps
//! each becomes in the history, its named crash points and its planted bug.
//!
//! Timestamps come from versions. Version `v` (the `v`-th value the primary
//! stored, from 1) commits at `v << STRIDE_BITS`, and its write starts one
//! below; a read of version `v` reads at `commit_ts(v) + n`, where `n`
//! numbers the primary's reads (kept in its durable storage, so a restart
//! never hands a timestamp out twice). Every read of `v` thus reads above
//! `v`'s commit and below `v + 1`'s start, and the history's timestamps
//! follow the primary's own order of events.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How many bits of a timestamp number the reads of one version.
pub const STRIDE_BITS: u32 = 32;

/// The most reads the primary serves in one run: each read's timestamp
/// stays below the next version's start.
pub const MAX_READS: u64 = (1 << STRIDE_BITS) - 2;

/// The commit timestamp of version `version` (from 1).
pub fn commit_ts(version: u64) -> u64 {
    version << STRIDE_BITS
}

/// The start timestamp of the write that made version `version` (from 1).
pub fn write_start_ts(version: u64) -> u64 {
    commit_ts(version) - 1
}

/// The timestamp of the `nth` read (from 1) the primary served, which saw
/// version `version` (0: the register was never written).
pub fn read_ts(version: u64, nth: u64) -> u64 {
    commit_ts(version) + nth
}

percsim_sim::identities! {
    /// The primary's named crash points, in the order a write reaches them.
    pub enum ToyPoint {
        /// A write is applied in the primary's memory and not yet durable.
        AfterApply => ("after_apply", "a write is applied in memory and not yet durable"),
        /// A write is durable and its reply has not left.
        AfterDurable => ("after_durable", "a write is durable and its reply has not left"),
    }
}

percsim_sim::identities! {
    /// The toy's planted bugs: each removes one named mechanism.
    pub enum ToyAblation {
        /// Durable before visible: without it the primary acknowledges a
        /// write, and lets reads see it, as soon as the write is applied in
        /// memory, and makes it durable afterwards.
        AckBeforeDurable => ("ack-before-durable", "the primary acknowledges a write, and lets reads see it, before the write is durable"),
    }
}

/// Serialize and deserialize a closed enum of identities by its name; an
/// unknown name is an error listing the known ones.
macro_rules! by_name {
    ($ty:ident, $what:expr) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = String::deserialize(d)?;
                $ty::from_name(&name).ok_or_else(|| {
                    let known: Vec<&str> = $ty::ALL.iter().map(|v| v.name()).collect();
                    serde::de::Error::custom(format!(
                        "unknown {} {name:?} (known: {})",
                        $what,
                        known.join(", ")
                    ))
                })
            }
        }
    };
}

by_name!(ToyPoint, "crash point");
by_name!(ToyAblation, "planted bug");

/// The register as the primary's durable storage holds it: every value
/// stored, version `v` at index `v - 1`, and how many reads it served.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Disk {
    /// The values stored, oldest first.
    pub versions: Vec<String>,
    /// Reads served so far.
    pub reads: u64,
}

/// What applying a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    /// The version that holds the write's value.
    pub version: u64,
    /// Whether this write stored it (false: it was stored before, by an
    /// earlier copy of the same write).
    pub fresh: bool,
}

/// Apply a write of `value` to `versions` (the primary's memory). Values
/// are unique per write, so a value already stored is an earlier copy of
/// the same write (a retry, a late or duplicated request): it is not
/// stored twice, and the write learns the version that holds it.
pub fn apply(versions: &mut Vec<String>, value: &str) -> Applied {
    if let Some(i) = versions.iter().rposition(|v| v == value) {
        return Applied {
            version: i as u64 + 1,
            fresh: false,
        };
    }
    versions.push(value.to_string());
    Applied {
        version: versions.len() as u64,
        fresh: true,
    }
}

/// The newest version of `versions` and its value (0 and none before the
/// first write).
pub fn newest(versions: &[String]) -> (u64, Option<String>) {
    (versions.len() as u64, versions.last().cloned())
}

/// Number the next read in `disk`; `None` once [`MAX_READS`] were served.
pub fn next_read(disk: &mut Disk) -> Option<u64> {
    if disk.reads >= MAX_READS {
        return None;
    }
    disk.reads += 1;
    Some(disk.reads)
}

/// The final check: every value stored more than once (a write applied
/// twice), as violations.
pub fn stored_twice(versions: &[String]) -> Vec<String> {
    let mut seen = std::collections::BTreeMap::<&str, u64>::new();
    let mut out = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let version = i as u64 + 1;
        if let Some(first) = seen.insert(v, version) {
            out.push(format!(
                "value {v:?} is stored twice, at versions {first} and {version}"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_numbered_once_and_a_copy_finds_its_version() {
        let mut m = Vec::new();
        assert_eq!(
            apply(&mut m, "a"),
            Applied {
                version: 1,
                fresh: true
            }
        );
        assert_eq!(
            apply(&mut m, "b"),
            Applied {
                version: 2,
                fresh: true
            }
        );
        assert_eq!(
            apply(&mut m, "a"),
            Applied {
                version: 1,
                fresh: false
            }
        );
        assert_eq!(m, ["a", "b"]);
        assert_eq!(newest(&m), (2, Some("b".to_string())));
        assert_eq!(newest(&[]), (0, None));
    }

    #[test]
    fn reads_of_a_version_fall_between_its_commit_and_the_next_start() {
        assert!(write_start_ts(1) < commit_ts(1));
        assert!(read_ts(0, 1) < write_start_ts(1));
        assert!(commit_ts(3) < read_ts(3, 1));
        assert!(read_ts(3, MAX_READS) < write_start_ts(4));
    }

    #[test]
    fn reads_are_numbered_until_the_timestamps_run_out() {
        let mut d = Disk::default();
        assert_eq!(next_read(&mut d), Some(1));
        d.reads = MAX_READS;
        assert_eq!(next_read(&mut d), None);
    }

    #[test]
    fn the_final_check_names_a_value_stored_twice() {
        assert!(stored_twice(&["a".into(), "b".into()]).is_empty());
        let twice = stored_twice(&["a".into(), "b".into(), "a".into()]);
        assert_eq!(twice, ["value \"a\" is stored twice, at versions 1 and 3"]);
    }

    #[test]
    fn points_and_planted_bugs_read_and_write_by_name() {
        let p: ToyPoint = serde_json::from_str("\"after_apply\"").unwrap();
        assert_eq!(p, ToyPoint::AfterApply);
        assert_eq!(serde_json::to_string(&p).unwrap(), "\"after_apply\"");
        let e = serde_json::from_str::<ToyPoint>("\"nowhere\"").unwrap_err();
        assert!(
            e.to_string()
                .contains("unknown crash point \"nowhere\" (known: after_apply, after_durable)"),
            "{e}"
        );
        let a: ToyAblation = serde_json::from_str("\"ack-before-durable\"").unwrap();
        assert_eq!(a, ToyAblation::AckBeforeDurable);
    }
}
