//! `percsim shrink`'s driver: judge a failing scenario, then shrink it with
//! its system's [`crate::system::SystemDef::shrink_scenario`] (the
//! mechanics are in [`crate::shrink`]).

use crate::judge::{Judged, SeedResult, Verdict};
use crate::scenario::Scenario;
use crate::shrink::same_failure;

/// A failing scenario shrunk by [`failure`].
pub struct Shrunk {
    /// The run of the scenario given.
    pub judged: Judged,
    /// The smallest scenario found that fails the same way.
    pub smallest: Scenario,
    /// Runs spent shrinking.
    pub runs: usize,
    /// The run of the smallest scenario (which fails the same way).
    pub again: SeedResult,
}

/// Judge `failing` as `percsim run` does (a configured fault that never
/// fired fails it) and shrink it with its system's
/// [`crate::system::SystemDef::shrink_scenario`] within `budget` runs,
/// keeping an edit only while the run fails the same way
/// ([`same_failure`]). A scenario that passes, or whose failure a rerun
/// could not tell apart (nondeterministic, stuck), is refused: the error
/// says why.
pub fn failure(failing: &Scenario, budget: usize) -> Result<Shrunk, String> {
    let system = crate::systems::find(failing.system())?;
    let judged = judged(failing);
    let failed = judged.result.clone();
    match failed.verdict {
        Verdict::Pass => {
            return Err(
                "it passes (verdict pass): nothing to shrink; shrink takes a failing scenario or capsule (add --ablate NAME to run it under a planted bug)"
                    .to_string(),
            );
        }
        Verdict::Nondeterministic | Verdict::Stuck => {
            return Err(format!(
                "its run ends {:?}, which a rerun cannot be told to repeat: it does not shrink",
                failed.verdict
            ));
        }
        _ => {}
    }
    let mut still = |s: &Scenario| same_failure(&failed, &judged_result(s));
    let (smallest, runs) = system.shrink_scenario(failing, &mut still, budget);
    let again = judged_result(&smallest);
    Ok(Shrunk {
        judged,
        smallest,
        runs,
        again,
    })
}

/// `s` run and judged as `percsim run` judges it.
fn judged(s: &Scenario) -> Judged {
    let mut j = crate::judge::judge(s, false);
    crate::judge::require_fired(s, &mut j);
    j
}

fn judged_result(s: &Scenario) -> SeedResult {
    judged(s).result
}
