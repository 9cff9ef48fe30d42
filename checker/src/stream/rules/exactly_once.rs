//! `exactly_once`: on an exactly-once subscription, each committed input
//! message has exactly one committed output (the consume-transform-produce
//! guarantee Jepsen's Kafka-style analyses test).

use crate::stream::history::StreamOp;
use crate::stream::index::Ix;
use crate::stream::report::Collector;
use crate::stream::{StreamFindingClass, StreamRule};
use std::collections::BTreeMap;

pub(crate) const ID: StreamRule = StreamRule::ExactlyOnce;
pub(crate) const NAME: &str = "on each exactly-once subscription, each committed input message's output appears \
     exactly once in the committed output";

/// Outputs are visible messages whose send names a `source` (a subscription
/// and an input message). For each subscription declared `exactly_once`,
/// each visible message of its topic is an input. Classes:
/// * `duplicate_output`: an input with two or more visible outputs;
/// * `missing_output`: an input with none, on a subscription declared
///   `drained` (its processors ran to the end of the healed phase);
/// * `output_without_input`: a visible output whose source is not a visible
///   message of the subscription's topic (it was made from an aborted or
///   unknown input).
pub(crate) fn check(ix: &Ix, c: &mut Collector) {
    if !ix.subs.values().any(|s| s.exactly_once) {
        c.note("no exactly-once subscription declared: nothing to check".to_string());
    }
    let mut outputs: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for op in &ix.h.ops {
        let StreamOp::Send(s) = op else { continue };
        let Some(src) = &s.source else { continue };
        if ix.loc(&s.message).is_some_and(|l| l.visible) {
            outputs
                .entry((src.subscription.as_str(), src.message.as_str()))
                .or_default()
                .push(s.message.as_str());
        }
    }
    for sub in ix.subs.values().filter(|s| s.exactly_once) {
        let is_input = |m: &str| {
            ix.loc(m).is_some_and(|l| {
                l.visible
                    && ix
                        .parts
                        .get(l.partition)
                        .is_some_and(|p| p.topic == sub.topic)
            })
        };
        for part in ix.parts.values().filter(|p| p.topic == sub.topic) {
            for m in part.entries.iter().filter_map(|e| e.message.as_deref()) {
                if !is_input(m) {
                    continue;
                }
                let outs = outputs
                    .get(&(sub.name.as_str(), m))
                    .map(Vec::as_slice)
                    .unwrap_or(&[]);
                let class = match outs.len() {
                    0 if sub.drained => StreamFindingClass::MissingOutput,
                    0 | 1 => continue,
                    _ => StreamFindingClass::DuplicateOutput,
                };
                c.add(class, || explain(ix, &sub.name, m, outs));
            }
        }
        for ((s, m), outs) in &outputs {
            if *s == sub.name && !is_input(m) {
                c.add(StreamFindingClass::OutputWithoutInput, || {
                    let (_, txns, mut details) = explain(ix, s, m, outs);
                    details.insert(0, ix.log_desc(m));
                    (
                        format!("{} committed output(s) of {m:?} on {s:?}, which is not a committed input", outs.len()),
                        txns,
                        details,
                    )
                });
            }
        }
    }
}

fn explain(ix: &Ix, sub: &str, input: &str, outs: &[&str]) -> (String, Vec<u64>, Vec<String>) {
    let mut details = vec![ix.send_desc(input)];
    let mut txns = Vec::new();
    for o in outs {
        details.push(format!("output {}; {}", ix.send_desc(o), ix.log_desc(o)));
        txns.extend(ix.txn_of(o));
    }
    details.push(format!(
        "subscription {sub:?} promises exactly-once processing: {input:?} must have exactly one committed output, it has {}",
        outs.len()
    ));
    (
        format!(
            "input {input:?} on {sub:?} has {} committed outputs",
            outs.len()
        ),
        txns,
        details,
    )
}
