//! Expectations of a step, the same for every system's verbs: how a
//! transaction ended, as a script's `expect` spells it, and judging what a
//! step got against what it expects.

use super::{Mismatch, Script, ScriptSystem};
use serde::{Deserialize, Serialize};

/// How a transaction ended for its client, as a step's `expect` names it
/// (`"committed"`, `"aborted"`, `"unknown"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The client was told committed.
    Committed,
    /// The client was told aborted: it did not commit and never will.
    Aborted,
    /// The client cannot tell.
    Unknown,
}

impl Outcome {
    /// The word a script spells it with.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Committed => "committed",
            Outcome::Aborted => "aborted",
            Outcome::Unknown => "unknown",
        }
    }
}

/// Judge what a step got against what it expects: `None` when it expects
/// nothing (`expect` is `None`) or `got` meets the expectation; else the
/// mismatch, in the words `words` gives (expected, happened).
pub fn judge<E, G: ?Sized>(
    expect: Option<E>,
    got: &G,
    meets: impl FnOnce(&E, &G) -> bool,
    words: impl FnOnce(&E, &G) -> (String, String),
) -> Option<Mismatch> {
    let want = expect?;
    if meets(&want, got) {
        return None;
    }
    let (expected, happened) = words(&want, got);
    Some(Mismatch { expected, happened })
}

/// [`judge`] for an expectation met by equality: `expect` against `got`,
/// each shown by `show`.
pub fn judge_eq<T: PartialEq>(
    expect: Option<T>,
    got: &T,
    show: impl Fn(&T) -> String,
) -> Option<Mismatch> {
    judge(expect, got, |e, g| e == g, |e, g| (show(e), show(g)))
}

impl<S: ScriptSystem> Script<S> {
    /// Record step `i`'s mismatch, if any, as its failure ([`Script::fail`]).
    pub fn fail_on(&self, i: usize, mismatch: Option<Mismatch>) {
        if let Some(m) = mismatch {
            self.fail(i, m.expected, m.happened);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_expected_or_met_is_no_mismatch_and_a_miss_is_in_its_words() {
        let show = |v: &u64| format!("version {v}");
        assert_eq!(judge_eq(None, &3, show), None);
        assert_eq!(judge_eq(Some(3), &3, show), None);
        assert_eq!(
            judge_eq(Some(2), &3, show),
            Some(Mismatch::new("version 2", "version 3"))
        );
        let told = |want: &Outcome, got: &str| want.word() == got;
        let words = |w: &Outcome, g: &str| (w.word().to_string(), g.to_string());
        assert_eq!(judge(Some(Outcome::Aborted), "aborted", told, words), None);
        assert_eq!(
            judge(Some(Outcome::Committed), "unknown", told, words),
            Some(Mismatch::new("committed", "unknown"))
        );
    }

    #[test]
    fn outcomes_are_spelled_as_scripts_write_them() {
        for o in [Outcome::Committed, Outcome::Aborted, Outcome::Unknown] {
            let json = serde_json::to_string(&o).unwrap();
            assert_eq!(json, format!("\"{}\"", o.word()));
            assert_eq!(serde_json::from_str::<Outcome>(&json).unwrap(), o);
        }
    }
}
