//! The rules, one module each, named after Jepsen's analyses of Kafka-style
//! transactions ("Jepsen: Redpanda 21.10.1", 2022; "Jepsen: Bufstream
//! 0.1.0", 2024), in report order.

use super::StreamRule;
use super::index::Ix;
use super::report::Collector;
use crate::RuleReport;

mod aborted_read;
mod duplicate;
mod exactly_once;
mod lost_write;
mod offsets;
mod read_uncommitted;
mod torn;

/// Runs every rule over the index, in report order.
pub(crate) fn run_all(ix: &Ix) -> Vec<RuleReport> {
    type Rule = (StreamRule, &'static str, fn(&Ix, &mut Collector));
    let rules: [Rule; 7] = [
        (aborted_read::ID, aborted_read::NAME, aborted_read::check),
        (
            read_uncommitted::ID,
            read_uncommitted::NAME,
            read_uncommitted::check,
        ),
        (lost_write::ID, lost_write::NAME, lost_write::check),
        (duplicate::ID, duplicate::NAME, duplicate::check),
        (torn::ID, torn::NAME, torn::check),
        (offsets::ID, offsets::NAME, offsets::check),
        (exactly_once::ID, exactly_once::NAME, exactly_once::check),
    ];
    rules
        .iter()
        .map(|(id, name, check)| {
            let mut c = Collector::new(*id);
            check(ix, &mut c);
            c.into_rule(name)
        })
        .collect()
}
