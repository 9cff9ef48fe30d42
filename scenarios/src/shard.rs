//! Which share of a campaign's seeds this process runs: `--shard K/N`, or
//! the environment of the engine that started it (a Kubernetes Indexed Job,
//! a GitHub Actions matrix, a Slurm job array). The explicit flag wins.

use std::fmt;

/// A process's share of a campaign: shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 1-based.
    pub index: u64,
    /// Number of shards.
    pub count: u64,
}

/// Where a shard came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardSource {
    /// No flag and no engine: the whole campaign.
    Whole,
    /// `--shard K/N`.
    Flag,
    /// `PERCSIM_SHARD_INDEX` (0-based) and `PERCSIM_SHARD_COUNT`, e.g. set
    /// from a GitHub Actions matrix's `strategy.job-index`/`job-total`.
    Percsim,
    /// A Kubernetes Indexed Job: `JOB_COMPLETION_INDEX` (0-based) with
    /// `PERCSIM_SHARD_COUNT` set to the Job's `completions`.
    Kubernetes,
    /// A Slurm job array: `SLURM_ARRAY_TASK_ID`, `SLURM_ARRAY_TASK_COUNT`,
    /// and `SLURM_ARRAY_TASK_MIN`/`_MAX`/`_STEP` when set (ids need not
    /// start at 0; sparse ids and one-task arrays are refused).
    Slurm,
}

impl ShardSource {
    /// A name for messages.
    pub fn name(self) -> &'static str {
        match self {
            ShardSource::Whole => "the default (no flag, no engine)",
            ShardSource::Flag => "--shard",
            ShardSource::Percsim => "PERCSIM_SHARD_INDEX",
            ShardSource::Kubernetes => "JOB_COMPLETION_INDEX",
            ShardSource::Slurm => "SLURM_ARRAY_TASK_ID",
        }
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The whole campaign.
    pub const WHOLE: Shard = Shard { index: 1, count: 1 };

    /// Parse `K/N` (1-based K).
    pub fn parse(s: &str) -> Result<Shard, String> {
        let (k, n) = s.split_once('/').ok_or("expected K/N")?;
        let index: u64 = k.trim().parse().map_err(|_| format!("bad shard {k:?}"))?;
        let count: u64 = n
            .trim()
            .parse()
            .map_err(|_| format!("bad shard count {n:?}"))?;
        if count == 0 || index == 0 || index > count {
            return Err(format!("shard {index}/{count}: need 1 <= K <= N"));
        }
        Ok(Shard { index, count })
    }
}

/// The shard to run: the flag if given, else the first engine whose
/// variables are set (`PERCSIM_SHARD_INDEX`, then Kubernetes, then Slurm),
/// else the whole campaign. `env` looks a variable up (`std::env::var`
/// in the CLI). A variable that is set but unusable is an error naming it.
pub fn resolve(
    flag: Option<Shard>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(Shard, ShardSource), String> {
    if let Some(s) = flag {
        return Ok((s, ShardSource::Flag));
    }
    let number = |name: &str| -> Result<Option<u64>, String> {
        match env(name) {
            None => Ok(None),
            Some(v) => v.trim().parse().map(Some).map_err(|_| {
                format!("{name}={v:?} is not a whole number (it sets this process's shard)")
            }),
        }
    };
    let zero_based = |source: ShardSource, index: u64, count_var: &str| {
        let count = number(count_var)?.ok_or_else(|| {
            format!(
                "{} is set but {count_var} is not: set it to the number of shards",
                source.name()
            )
        })?;
        checked(source, index, count)
    };
    if let Some(i) = number("PERCSIM_SHARD_INDEX")? {
        return zero_based(ShardSource::Percsim, i, "PERCSIM_SHARD_COUNT");
    }
    if let Some(i) = number("JOB_COMPLETION_INDEX")? {
        return zero_based(ShardSource::Kubernetes, i, "PERCSIM_SHARD_COUNT");
    }
    if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
        return slurm(id, &number);
    }
    if env("PERCSIM_SHARD_COUNT").is_some() {
        return Err(
            "PERCSIM_SHARD_COUNT is set but neither PERCSIM_SHARD_INDEX nor JOB_COMPLETION_INDEX is"
                .into(),
        );
    }
    Ok((Shard::WHOLE, ShardSource::Whole))
}

/// The shard of Slurm array task `id`: `(id - MIN) / STEP` of the array's
/// COUNT tasks. Refused when the array cannot say which shard a task is:
/// sparse ids (`--array=0,3,5`: COUNT is not the span from MIN to MAX) and
/// a one-task array (a re-run of one index of a larger array would run the
/// whole range as 1/1); `--shard` names the shard in both cases.
fn slurm(
    id: u64,
    number: &dyn Fn(&str) -> Result<Option<u64>, String>,
) -> Result<(Shard, ShardSource), String> {
    let count = number("SLURM_ARRAY_TASK_COUNT")?
        .ok_or("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not")?;
    let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
    let step = number("SLURM_ARRAY_TASK_STEP")?.unwrap_or(1).max(1);
    if id < min || !(id - min).is_multiple_of(step) {
        return Err(format!(
            "SLURM_ARRAY_TASK_ID={id} is not in the array starting at {min} with step {step}"
        ));
    }
    if count == 1 {
        return Err(format!(
            "SLURM_ARRAY_TASK_COUNT=1: a one-task array (task {id}) cannot tell which shard it is \
             (a re-run of one index would run the whole range); pass --shard K/N \
             (deploy/slurm/shard.sbatch does)"
        ));
    }
    if let Some(max) = number("SLURM_ARRAY_TASK_MAX")?
        && (max < min || (max - min) / step + 1 != count)
    {
        return Err(format!(
            "SLURM_ARRAY_TASK_COUNT={count} but ids {min}..={max} with step {step} span {}: \
             sparse array ids cannot name shards; use a range (--array=0-{}) or pass --shard K/N",
            max.saturating_sub(min) / step + 1,
            count - 1
        ));
    }
    checked(ShardSource::Slurm, (id - min) / step, count)
}

/// A 0-based index of `count` shards, checked.
fn checked(source: ShardSource, index: u64, count: u64) -> Result<(Shard, ShardSource), String> {
    if count == 0 || index >= count {
        return Err(format!(
            "{} gives shard index {index} (0-based) of {count}: need 0 <= index < count",
            source.name()
        ));
    }
    Ok((
        Shard {
            index: index + 1,
            count,
        },
        source,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    fn shard(index: u64, count: u64) -> Shard {
        Shard { index, count }
    }

    #[test]
    fn the_flag_wins_over_every_engine() {
        let e = env(&[
            ("JOB_COMPLETION_INDEX", "0"),
            ("PERCSIM_SHARD_COUNT", "4"),
            ("SLURM_ARRAY_TASK_ID", "3"),
        ]);
        let flag = Shard::parse("2/3").unwrap();
        assert_eq!(resolve(Some(flag), e), Ok((shard(2, 3), ShardSource::Flag)));
        assert_eq!(
            resolve(None, env(&[])),
            Ok((Shard::WHOLE, ShardSource::Whole))
        );
    }

    #[test]
    fn engines_give_one_based_shards() {
        let k8s = env(&[("JOB_COMPLETION_INDEX", "3"), ("PERCSIM_SHARD_COUNT", "4")]);
        assert_eq!(
            resolve(None, k8s),
            Ok((shard(4, 4), ShardSource::Kubernetes))
        );
        let gha = env(&[
            ("PERCSIM_SHARD_INDEX", "0"),
            ("PERCSIM_SHARD_COUNT", "8"),
            ("JOB_COMPLETION_INDEX", "5"),
        ]);
        assert_eq!(resolve(None, gha), Ok((shard(1, 8), ShardSource::Percsim)));
        // Slurm ids start where the array says (--array=1-4) and may step (--array=10-16:2).
        let slurm = env(&[
            ("SLURM_ARRAY_TASK_ID", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
        ]);
        assert_eq!(resolve(None, slurm), Ok((shard(1, 4), ShardSource::Slurm)));
        let stepped = env(&[
            ("SLURM_ARRAY_TASK_ID", "14"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_ARRAY_TASK_MIN", "10"),
            ("SLURM_ARRAY_TASK_STEP", "2"),
        ]);
        let with_max = env(&[
            ("SLURM_ARRAY_TASK_ID", "16"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_ARRAY_TASK_MIN", "10"),
            ("SLURM_ARRAY_TASK_MAX", "16"),
            ("SLURM_ARRAY_TASK_STEP", "2"),
        ]);
        assert_eq!(
            resolve(None, with_max),
            Ok((shard(4, 4), ShardSource::Slurm))
        );
        assert_eq!(
            resolve(None, stepped),
            Ok((shard(3, 4), ShardSource::Slurm))
        );
        let no_min = env(&[
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
        ]);
        assert_eq!(resolve(None, no_min), Ok((shard(1, 2), ShardSource::Slurm)));
    }

    #[test]
    fn bad_values_name_the_variable() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (
                &[("JOB_COMPLETION_INDEX", "2")],
                "PERCSIM_SHARD_COUNT is not",
            ),
            (
                &[("JOB_COMPLETION_INDEX", "4"), ("PERCSIM_SHARD_COUNT", "4")],
                "index 4 (0-based) of 4",
            ),
            (
                &[("JOB_COMPLETION_INDEX", "x"), ("PERCSIM_SHARD_COUNT", "4")],
                "JOB_COMPLETION_INDEX=\"x\" is not a whole number",
            ),
            (
                &[("PERCSIM_SHARD_INDEX", "0"), ("PERCSIM_SHARD_COUNT", "0")],
                "of 0",
            ),
            (&[("PERCSIM_SHARD_COUNT", "3")], "neither"),
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "4"),
                    ("SLURM_ARRAY_TASK_COUNT", "4"),
                ],
                "index 4 (0-based) of 4",
            ),
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "0"),
                    ("SLURM_ARRAY_TASK_COUNT", "4"),
                    ("SLURM_ARRAY_TASK_MIN", "1"),
                ],
                "not in the array starting at 1",
            ),
            (
                &[("SLURM_ARRAY_TASK_ID", "1")],
                "SLURM_ARRAY_TASK_COUNT is not",
            ),
            // A lone re-run of index 2 of a 4-task array (--array=2).
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "2"),
                    ("SLURM_ARRAY_TASK_COUNT", "1"),
                    ("SLURM_ARRAY_TASK_MIN", "2"),
                    ("SLURM_ARRAY_TASK_MAX", "2"),
                ],
                "a one-task array (task 2) cannot tell which shard it is",
            ),
            // --array=0,3,5: three tasks whose ids span six.
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "3"),
                    ("SLURM_ARRAY_TASK_COUNT", "3"),
                    ("SLURM_ARRAY_TASK_MIN", "0"),
                    ("SLURM_ARRAY_TASK_MAX", "5"),
                ],
                "ids 0..=5 with step 1 span 6: sparse array ids",
            ),
        ];
        for (vars, expected) in cases {
            let err = resolve(None, env(vars)).expect_err(expected);
            assert!(err.contains(expected), "{vars:?}: {err}");
        }
        assert!(Shard::parse("3/2").is_err());
        assert!(Shard::parse("0/2").is_err());
        assert!(Shard::parse("1").is_err());
    }
}
