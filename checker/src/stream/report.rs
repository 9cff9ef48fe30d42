//! The verdict on a stream history: the checker's per-rule reports
//! ([`RuleReport`], [`crate::Finding`]) with stream statistics, and its text.

use super::StreamFindingClass;
use crate::RuleReport;
use crate::report::Sink;
use serde::Serialize;
use std::fmt::Write as _;

/// The checker's verdict on one stream history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamReport {
    /// Always `percsim-check/1`, as for every report of the checker.
    pub format: String,
    /// The format of the history judged: `percsim-stream-history/1`.
    pub history_format: String,
    /// True when every rule holds.
    pub passed: bool,
    /// The seed the history says it was made with.
    pub seed: u64,
    /// What the history contained.
    pub stats: StreamStats,
    /// One entry per rule, in a fixed order, whether it held or not.
    pub rules: Vec<RuleReport>,
}

/// Counts describing the stream history that was checked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StreamStats {
    /// Transactions in the history.
    pub transactions: u64,
    /// Transactions their client was told committed.
    pub committed: u64,
    /// Transactions their client was told aborted.
    pub aborted: u64,
    /// Transactions whose client could not tell.
    pub unknown: u64,
    /// Send operations.
    pub sends: u64,
    /// Receive operations.
    pub receives: u64,
    /// Acknowledgment operations.
    pub acks: u64,
    /// Topic partitions in the final state.
    pub partitions: u64,
    /// Message entries in the partitions' logs.
    pub log_messages: u64,
    /// Commit and abort markers in the partitions' logs.
    pub log_markers: u64,
    /// Subscriptions declared.
    pub subscriptions: u64,
}

impl StreamReport {
    /// True when every rule holds.
    pub fn passed(&self) -> bool {
        self.rules.iter().all(|r| r.passed)
    }

    /// The ids of the rules that were broken, in report order.
    pub fn violated_rules(&self) -> Vec<&str> {
        crate::report::violated(&self.rules)
    }

    /// The result of the rule with this id, if there is such a rule.
    pub fn rule(&self, id: &str) -> Option<&RuleReport> {
        crate::report::find_rule(&self.rules, id)
    }

    /// A human-readable rendering of the whole report.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let broken = self.violated_rules().len();
        let verdict = if broken == 0 {
            format!("PASS, all {} rules hold", self.rules.len())
        } else {
            format!("FAIL, {broken} of {} rules broken", self.rules.len())
        };
        let _ = writeln!(
            out,
            "percsim check ({}): {verdict} (seed {})",
            self.history_format, self.seed
        );
        let s = &self.stats;
        let _ = writeln!(
            out,
            "{} transactions ({} committed, {} aborted, {} unknown), {} sends, {} receives, {} acks; \
             {} partitions holding {} messages and {} markers; {} subscriptions",
            s.transactions,
            s.committed,
            s.aborted,
            s.unknown,
            s.sends,
            s.receives,
            s.acks,
            s.partitions,
            s.log_messages,
            s.log_markers,
            s.subscriptions
        );
        crate::report::render_rules(&mut out, &self.rules, crate::report::Details::Numbered);
        out
    }
}

/// Collects one stream rule's findings (the checker's one [`Sink`], over
/// the stream classes).
pub(crate) type Collector = Sink<StreamFindingClass>;

// The one test needs debug assertions (a release test build has nothing here).
#[cfg(all(test, debug_assertions))]
mod tests {
    use super::*;
    use crate::stream::StreamRule;

    #[test]
    #[should_panic(expected = "acked_twice filed under lost_write")]
    fn a_class_filed_under_another_rule_trips_an_assertion() {
        let mut c = Collector::new(StreamRule::LostWrite);
        c.add(StreamFindingClass::AckedTwice, || {
            ("s".into(), vec![], vec![])
        });
    }
}
