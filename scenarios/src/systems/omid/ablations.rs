//! Omid's kill table: each planted bug of [`OmidAblation`] runs the
//! default Omid campaign over `--ranges` disjoint seed ranges of
//! `--budget` seeds each, each until its first safety failure; the table
//! gives the median and the largest number of seeds to the first failure
//! over the ranges. The faithful build runs every seed of the ranges and
//! must pass them all.

use crate::campaign::{Mix, SeedResult, Verdict};
use crate::judge::judge;
use crate::system::SystemDef;
use percsim_protocol::omid::OmidAblation;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One line of Omid's kill table.
#[derive(Debug, Clone)]
pub struct OmidKillRow {
    /// The planted bug (`None`: the faithful build).
    pub ablation: Option<OmidAblation>,
    /// Seeds in each range.
    pub range_seeds: u64,
    /// For each range, how many of its seeds ran up to and including the
    /// first failure (`None`: no failure in the range).
    pub seeds_to_failure: Vec<Option<u64>>,
    /// The first failure of the first range that failed.
    pub first_failure: Option<SeedResult>,
    /// Wall time over every range.
    pub wall: Duration,
}

impl OmidKillRow {
    /// The median of the seeds to the first failure over the ranges (the
    /// upper of the two middle values; a range without a failure counts
    /// as more than its seeds): `None` if it is not reached.
    pub fn median(&self) -> Option<u64> {
        crate::system::ranged_median(&self.seeds_to_failure, crate::system::Middle::Upper)
    }

    /// The largest number of seeds to the first failure over the ranges
    /// (`None` if a range had no failure).
    pub fn max(&self) -> Option<u64> {
        crate::system::ranged_max(&self.seeds_to_failure)
    }

    /// Ranges with a failure.
    pub fn caught(&self) -> usize {
        self.seeds_to_failure.iter().flatten().count()
    }
}

/// The mix of the default Omid campaign with `ablation` switched on.
pub fn mix(ablation: Option<OmidAblation>) -> Mix {
    Mix {
        systems: vec![super::def::NAME.to_string()],
        ablations: ablation
            .map(|a| vec![a.name().to_string()])
            .unwrap_or_default(),
        ..Mix::default()
    }
}

/// Whether `r` fails the row of `ablation`: a safety failure under a
/// planted bug, any verdict but a pass for the faithful build.
fn fails(ablation: Option<OmidAblation>, r: &SeedResult) -> bool {
    match ablation {
        Some(_) => r.verdict == Verdict::Safety,
        None => r.verdict != Verdict::Pass,
    }
}

/// Run seeds `start..start + seeds` under `ablation` on `jobs` threads,
/// stopping at the first failure (the faithful build runs them all):
/// the first failure and how many seeds led to it.
fn first_in(
    ablation: Option<OmidAblation>,
    start: u64,
    seeds: u64,
    jobs: usize,
) -> Option<(u64, SeedResult)> {
    let mix = mix(ablation);
    let first_fail = AtomicU64::new(u64::MAX);
    let found: Mutex<Vec<SeedResult>> = Mutex::default();
    let stop = ablation.is_some();
    crate::pool::for_each(
        jobs,
        seeds,
        |i| !(stop && i > first_fail.load(Ordering::Relaxed)),
        |i| judge(&super::def::OMID.generate(start + i, &mix), false).result,
        |i, r| {
            if fails(ablation, &r) {
                first_fail.fetch_min(i, Ordering::Relaxed);
                found.lock().unwrap_or_else(|e| e.into_inner()).push(r);
            }
        },
    );
    let found = found.into_inner().unwrap_or_else(|e| e.into_inner());
    // The smallest failing seed: threads may have run past it, and which
    // ones they ran depends on timing; the row must not.
    let first = found.into_iter().min_by_key(|r| r.seed)?;
    Some((first.seed - start + 1, first))
}

/// Measure one planted bug (or the faithful build with `None`) over
/// `ranges` disjoint ranges of `range_seeds` seeds from seed 0 (range `r`
/// is seeds `r * range_seeds` to `(r + 1) * range_seeds - 1`).
pub fn measure(
    ablation: Option<OmidAblation>,
    ranges: u64,
    range_seeds: u64,
    jobs: usize,
) -> OmidKillRow {
    let started = Instant::now();
    let mut row = OmidKillRow {
        ablation,
        range_seeds,
        seeds_to_failure: Vec::new(),
        first_failure: None,
        wall: Duration::ZERO,
    };
    for r in 0..ranges {
        let found = first_in(ablation, r * range_seeds, range_seeds, jobs);
        row.seeds_to_failure.push(found.as_ref().map(|f| f.0));
        if row.first_failure.is_none() {
            row.first_failure = found.map(|f| f.1);
        }
    }
    row.wall = started.elapsed();
    row
}

/// Render the table.
pub fn render(rows: &[OmidKillRow]) -> String {
    use crate::system::{RangedColumns, RangedLine, ranged_cell};
    let columns = RangedColumns {
        name: "planted bug",
        safety: false,
        max: "most seeds",
        wall: true,
        rules: "rules that fired first",
    };
    let lines: Vec<RangedLine> = rows
        .iter()
        .map(|r| {
            let ranges = r.seeds_to_failure.len();
            let (name, caught, median, max) = match r.ablation {
                Some(a) => (
                    format!("{} ({})", a.name(), a.describe()),
                    format!("{} of {ranges}", r.caught()),
                    ranged_cell(r.median(), r.range_seeds),
                    ranged_cell(r.max(), r.range_seeds),
                ),
                None => (
                    "none (faithful build)".to_string(),
                    format!(
                        "{} of {ranges} ranges failed ({} seeds)",
                        r.caught(),
                        ranges as u64 * r.range_seeds
                    ),
                    "-".into(),
                    "-".into(),
                ),
            };
            RangedLine {
                name,
                safety: None,
                caught,
                median,
                max,
                wall: Some(r.wall),
                rules: r.first_failure.as_ref().map_or_else(
                    || "-".into(),
                    |f| format!("seed {}: {}", f.seed, f.violated_rules.join(", ")),
                ),
            }
        })
        .collect();
    crate::system::render_ranged(&columns, &lines)
}

/// Omid's kill table as `percsim ablations --system omid` prints it (see
/// [`crate::system::SystemDef::kill_table`]): `opts.ranges` ranges of
/// `opts.budget` seeds each, as Pulsar's; the faithful build runs every
/// one of them.
pub fn kill_table(opts: &crate::system::KillTable) -> Result<i32, String> {
    let mut chosen = Vec::new();
    for name in &opts.only {
        match OmidAblation::from_name(name) {
            Some(a) => chosen.push(a),
            None => return Err(format!("unknown omid planted bug {name:?}")),
        }
    }
    if chosen.is_empty() {
        chosen = OmidAblation::ALL.to_vec();
    }
    if opts.budget == 0 || opts.ranges == 0 {
        return Err(format!(
            "--budget {} --ranges {}: Omid's kill table needs at least one range of at least one seed",
            opts.budget, opts.ranges
        ));
    }
    let (ranges, range_seeds, jobs) = (opts.ranges, opts.budget, opts.jobs.max(1));
    let mut rows = vec![measure(None, ranges, range_seeds, jobs)];
    for a in chosen {
        let row = measure(Some(a), ranges, range_seeds, jobs);
        eprintln!(
            "{}: median {:?}, most {:?} seeds to the first failure",
            a.name(),
            row.median(),
            row.max()
        );
        rows.push(row);
    }
    print!("{}", render(&rows));
    let ok = rows[0].caught() == 0 && rows.iter().skip(1).all(|r| r.caught() > 0);
    Ok(i32::from(!ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(firsts: &[Option<u64>]) -> OmidKillRow {
        OmidKillRow {
            ablation: Some(OmidAblation::NoInvalidation),
            range_seeds: 10,
            seeds_to_failure: firsts.to_vec(),
            first_failure: None,
            wall: Duration::ZERO,
        }
    }

    /// The table as the core renders it, byte for byte as this module
    /// wrote it before: the faithful build's ranges failed, no median.
    #[test]
    fn the_ranged_table_renders_as_before() {
        let mut caught = row(&[Some(7), Some(4)]);
        caught.wall = Duration::from_millis(2_000);
        let mut failure = SeedResult::empty("omid", 9, "bank");
        failure.violated_rules = vec!["snapshot_reads".into(), "lost_update".into()];
        caught.first_failure = Some(failure);
        let mut baseline = row(&[None, None]);
        baseline.ablation = None;
        let a = OmidAblation::NoInvalidation;
        assert_eq!(
            render(&[baseline, caught]),
            format!(
                "| planted bug | ranges caught | median seeds to first failure | most seeds | wall time | rules that fired first |\n\
                 |---|---|---|---|---|---|\n\
                 | none (faithful build) | 0 of 2 ranges failed (20 seeds) | - | - | 0.0 s | - |\n\
                 | {} ({}) | 2 of 2 | 7 | 7 | 2.0 s | seed 9: snapshot_reads, lost_update |\n",
                a.name(),
                a.describe()
            )
        );
    }

    #[test]
    fn the_median_and_the_largest_count_a_range_without_failure_as_unreached() {
        let r = row(&[Some(1), Some(5), Some(2), Some(3)]);
        assert_eq!((r.median(), r.max(), r.caught()), (Some(3), Some(5), 4));
        let r = row(&[Some(1), None, Some(2), None]);
        assert_eq!((r.median(), r.max(), r.caught()), (None, None, 2));
        let r = row(&[Some(1), None, Some(2)]);
        assert_eq!((r.median(), r.max()), (Some(2), None));
    }

    #[test]
    fn an_unknown_bug_or_an_empty_range_is_refused_by_name() {
        let opts = |only: &[&str], budget| crate::system::KillTable {
            only: only.iter().map(|s| s.to_string()).collect(),
            budget,
            jobs: 1,
            shrink_budget: 0,
            ranges: 1,
        };
        let e = kill_table(&opts(&["no-such-bug"], 100)).unwrap_err();
        assert_eq!(e, "unknown omid planted bug \"no-such-bug\"");
        let e = kill_table(&opts(&["no-invalidation"], 0)).unwrap_err();
        assert!(
            e.starts_with("--budget 0 --ranges 1: Omid's kill table needs"),
            "{e}"
        );
    }
}
