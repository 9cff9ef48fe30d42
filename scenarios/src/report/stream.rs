//! The report of a stream history (Pulsar's transactions): the same page as
//! a transaction history's, with one lane per client worker holding its
//! transactions (the moment it asked to commit and the coordinator's own
//! decision marked), the world's fault bands when a capsule carries them,
//! and the stream checker's findings step by step.

use super::model::{
    Bar, Timeline, end_of, fault_bands, healed_at, lane_labels, lane_names_of, node_kinds_of,
};
use super::page::{finding_card, replay_line, short, truncation_notes};
use super::svg::{self, esc, outcome_class};
use crate::histfile::{Lane, Span, lanes_of};
use percsim_checker::Event;
use percsim_checker::stream::{
    AckOp, MarkerKind, OpResult, SendOp, StreamHistory, StreamOp, StreamReport, StreamTxn,
};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// What the page is made from: the stream history, the world's events (a
/// capsule's transaction history carries the faults), and the capsule.
pub(crate) struct StreamSource<'a> {
    pub(crate) stream: &'a StreamHistory,
    pub(crate) events: &'a [Event],
    pub(crate) capsule: Option<&'a Value>,
    /// The file it was read from, as the user named it.
    pub(crate) file: &'a str,
}

/// The timeline alone, as a standalone SVG document.
pub(crate) fn svg(src: &StreamSource<'_>) -> String {
    let report = percsim_checker::stream::check(src.stream);
    svg::timeline(&timeline(src, &report))
}

/// The whole page for a stream history.
pub(crate) fn html(src: &StreamSource<'_>) -> String {
    let report = percsim_checker::stream::check(src.stream);
    let timeline = timeline(src, &report);
    let mut page = String::with_capacity(600 * timeline.bars.len() + 65_536);
    let title = format!(
        "percsim report: stream history seed {} ({})",
        src.stream.seed,
        if report.passed { "PASS" } else { "FAIL" }
    );
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{}</style></head><body>\n",
        esc(&title),
        include_str!("page.css")
    );
    header(&mut page, src, &report, &timeline, &title);
    page.push_str("<h2>Timeline</h2>\n<div class=\"legend\"><span><i style=\"background:#3a9d5d\"></i>committed</span><span><i style=\"background:#c9c9c9\"></i>aborted</span><span><i style=\"background:#8e6bbf\"></i>unknown (dashed: never completed)</span><span><i style=\"border:2px solid #d62728\"></i>named by a violation</span><span><i style=\"background:#1f4e9c;width:2px\"></i>commit requested</span><span><i style=\"background:#111;width:2px\"></i>the coordinator decided on its own (timeout)</span><span><i style=\"background:#f4a582\"></i>fault</span></div>\n<div id=\"timeline\">");
    page.push_str(&svg::timeline(&timeline));
    page.push_str("</div>\n<h2>Findings</h2>\n");
    truncation_notes(&mut page, &report.rules);
    let violations = report.rules.iter().flat_map(|r| &r.violations);
    for (k, f) in violations.clone().enumerate() {
        finding_card(&mut page, f, false, k);
    }
    if violations.count() == 0 {
        page.push_str("<p>No violation: every rule holds.</p>\n");
    }
    let data = data_json(src.stream, &timeline)
        .to_string()
        .replace("</", "<\\/");
    let _ = write!(
        page,
        "<div id=\"panel\" hidden></div><div id=\"tip\" hidden></div>\n<script type=\"application/json\" id=\"data\">{data}</script>\n<script>{}</script>\n</body></html>\n",
        include_str!("page.js")
    );
    page
}

/// The timeline: a bar per transaction from invocation to outcome.
fn timeline(src: &StreamSource<'_>, report: &StreamReport) -> Timeline {
    let txns = &src.stream.transactions;
    let spans: Vec<Span> = txns
        .iter()
        .map(|t| Span {
            client: t.client,
            invoke_ns: t.invoke_ns,
            complete_ns: t.complete_ns,
        })
        .collect();
    let txn_lanes = lanes_of(&spans);
    // Clients that only sent, received or acknowledged get a lane too.
    let mut distinct: BTreeSet<Lane> = txn_lanes.iter().copied().collect();
    distinct.extend(src.stream.ops.iter().map(|o| Lane {
        client: op_client(o),
        slot: 0,
    }));
    let lanes: Vec<Lane> = distinct.into_iter().collect();
    let row_of: BTreeMap<Lane, usize> = lanes.iter().enumerate().map(|(i, l)| (*l, i)).collect();
    let flagged: BTreeSet<u64> = report
        .rules
        .iter()
        .flat_map(|r| r.violations.iter().flat_map(|f| f.txns.iter().copied()))
        .collect();
    let times = txns
        .iter()
        .map(|t| t.complete_ns.unwrap_or(t.invoke_ns))
        .chain(src.stream.ops.iter().map(op_time));
    let end_ns = end_of(src.events, times);
    let bars = txns
        .iter()
        .enumerate()
        .map(|(i, t)| Bar {
            txn: i,
            id: t.id,
            outcome: t.outcome,
            row: row_of[&txn_lanes[i]],
            from_ns: t.invoke_ns,
            to_ns: t.complete_ns,
            start_mark_ns: t.commit_request_ns,
            commit_mark_ns: t.coordinator.as_ref().map(|c| c.t_ns),
            flagged: flagged.contains(&t.id),
        })
        .collect();
    Timeline {
        lanes: lane_labels(&lanes, &lane_names_of(&src.stream.scenario)),
        bars,
        bands: fault_bands(
            src.events,
            node_kinds_of(&src.stream.scenario),
            &lanes,
            end_ns,
        ),
        healed_ns: healed_at(src.events),
        end_ns,
    }
}

fn op_client(o: &StreamOp) -> u64 {
    match o {
        StreamOp::Send(s) => s.client,
        StreamOp::Receive(r) => r.client,
        StreamOp::Ack(a) => a.client,
    }
}

fn op_time(o: &StreamOp) -> u64 {
    match o {
        StreamOp::Send(s) => s.t_ns,
        StreamOp::Receive(r) => r.t_ns,
        StreamOp::Ack(a) => a.t_ns,
    }
}

fn header(
    page: &mut String,
    src: &StreamSource<'_>,
    report: &StreamReport,
    timeline: &Timeline,
    title: &str,
) {
    let s = &report.stats;
    let broken: Vec<&str> = report
        .rules
        .iter()
        .filter(|r| !r.passed)
        .map(|r| r.id.as_str())
        .collect();
    let verdict = if report.passed {
        "<span class=\"verdict-pass\">PASS</span> every rule holds".to_string()
    } else {
        format!(
            "<span class=\"verdict-fail\">FAIL</span> broken: {}",
            esc(&broken.join(", "))
        )
    };
    let field = |k: &str| src.capsule.and_then(|c| c.get(k));
    let replay = replay_line(src.capsule, &format!("percsim check {}", src.file));
    let recorded = field("verdict")
        .map(|v| format!(" (capsule verdict: {v})"))
        .unwrap_or_default();
    let _ = writeln!(
        page,
        "<header><h1>{}</h1><dl class=\"summary\"><dt>verdict</dt><dd>{verdict}{}</dd><dt>seed</dt><dd>{}</dd><dt>transactions</dt><dd>{} ({} committed, {} aborted, {} unknown)</dd><dt>ops</dt><dd>{} sends, {} receives, {} acknowledgments; {} partitions holding {} messages and {} markers; {} subscriptions; {} lanes (client workers); {} fault bands</dd><dt>findings</dt><dd>{} violations</dd><dt>replay</dt><dd><code>{}</code></dd><dt>file</dt><dd>{}</dd></dl><div id=\"status\">not rendered: scripts are off</div></header>",
        esc(title),
        esc(&recorded),
        src.stream.seed,
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
        s.subscriptions,
        timeline.lanes.len(),
        timeline.bands.len(),
        report.rules.iter().map(|r| r.total).sum::<u64>(),
        esc(&replay),
        esc(src.file),
    );
}

fn result_name(r: OpResult) -> &'static str {
    match r {
        OpResult::Ok => "ok",
        OpResult::Failed => "failed",
        OpResult::Unknown => "unknown",
    }
}

fn ms(ns: Option<u64>) -> String {
    ns.map_or("never".to_string(), |n| format!("{:.3} ms", n as f64 / 1e6))
}

/// Each transaction's sends and acknowledgments (as its panel lists them),
/// and its markers in the partition logs (partition, offset, decision),
/// gathered in one pass over the history.
#[derive(Default)]
struct ByTxn<'h> {
    ops: BTreeMap<u64, Vec<String>>,
    markers: BTreeMap<u64, Vec<(&'h str, u64, MarkerKind)>>,
}

impl<'h> ByTxn<'h> {
    fn of(h: &'h StreamHistory) -> Self {
        let mut by = ByTxn::default();
        for op in &h.ops {
            let (txn, line) = match op {
                StreamOp::Send(s) => (s.txn, send_line(s)),
                StreamOp::Ack(a) => (a.txn, ack_line(a)),
                StreamOp::Receive(_) => continue,
            };
            if let Some(t) = txn {
                by.ops.entry(t).or_default().push(line);
            }
        }
        for p in &h.final_state.partitions {
            for e in &p.entries {
                if let (Some(t), Some(m)) = (e.txn, e.marker) {
                    by.markers
                        .entry(t)
                        .or_default()
                        .push((&p.name, e.offset, m));
                }
            }
        }
        by
    }
}

fn send_line(s: &SendOp) -> String {
    format!(
        "send \"{}\" to {} at {}: {}{}",
        esc(&short(&s.message)),
        esc(&s.partition),
        ms(Some(s.t_ns)),
        result_name(s.result),
        s.offset
            .map(|x| format!(", offset {x}"))
            .unwrap_or_default()
    )
}

fn ack_line(a: &AckOp) -> String {
    format!(
        "acknowledge \"{}\" ({}@{}) on {} at {}: {}",
        esc(&short(&a.message)),
        esc(&a.partition),
        a.offset,
        esc(&a.subscription),
        ms(Some(a.t_ns)),
        result_name(a.result)
    )
}

/// A transaction's panel, as HTML: what its client saw, what the
/// coordinator decided, its sends and acknowledgments, and its markers in
/// the partition logs.
fn details(t: &StreamTxn, lane: &str, by: &ByTxn<'_>, labels: &str) -> String {
    let mut o = format!(
        "<p>{}{}<br>invoked {}, commit requested {}, completed {}{}{}</p><h4>operations</h4><ol>",
        esc(lane),
        t.label
            .as_ref()
            .map(|l| format!("; {} {}", esc(labels), esc(l)))
            .unwrap_or_default(),
        ms(Some(t.invoke_ns)),
        ms(t.commit_request_ns),
        ms(t.complete_ns),
        t.abort_reason
            .as_ref()
            .map(|r| format!("<br>abort reason: {}", esc(r)))
            .unwrap_or_default(),
        t.coordinator
            .as_ref()
            .map(|c| format!(
                "<br>the coordinator decided {} at {}{}",
                outcome_class(c.outcome),
                ms(Some(c.t_ns)),
                c.reason
                    .as_ref()
                    .map(|r| format!(" ({})", esc(r)))
                    .unwrap_or_default()
            ))
            .unwrap_or_default()
    );
    for line in by.ops.get(&t.id).into_iter().flatten() {
        let _ = write!(o, "<li>{line}</li>");
    }
    o.push_str("</ol><h4>its markers in the partition logs</h4><ul>");
    for (partition, offset, m) in by.markers.get(&t.id).into_iter().flatten() {
        let _ = write!(
            o,
            "<li>{} marker at {}@{offset}</li>",
            esc(&format!("{m:?}").to_lowercase()),
            esc(partition)
        );
    }
    o.push_str("</ul>");
    o
}

/// What a transaction's label is, given the history's scenario: the
/// system's own transaction id, named after the system the scenario runs.
fn label_name(scenario: &Value) -> String {
    match scenario.get("system").and_then(Value::as_str) {
        Some(system) => format!("{system} transaction id"),
        None => "the system's transaction id".to_string(),
    }
}

/// The data the page's script reads: each transaction's panel and tooltip.
fn data_json(h: &StreamHistory, timeline: &Timeline) -> Value {
    let by = ByTxn::of(h);
    let labels = label_name(&h.scenario);
    let txns: Vec<Value> = timeline
        .bars
        .iter()
        .map(|b| {
            let t = &h.transactions[b.txn];
            let lane = &timeline.lanes[b.row];
            let ops = by.ops.get(&t.id).map_or(0, Vec::len);
            let outcome = outcome_class(t.outcome);
            json!({
                "id": t.id,
                "outcome": outcome,
                "html": details(t, lane, &by, &labels),
                "tip": format!("T{} {outcome}, {ops} sends and acknowledgments, {lane}", t.id),
            })
        })
        .collect();
    json!({"txns": txns})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_named_after_the_scenario_s_system() {
        let named = json!({"system": "toy", "seed": 1});
        assert_eq!(label_name(&named), "toy transaction id");
        assert_eq!(label_name(&json!({})), "the system's transaction id");
    }
}
