//! `percsim report`: one self-contained HTML page (no network, no external
//! scripts, fonts or styles) showing a history: a timeline with one lane per
//! client worker and fault bands, the checker's findings with each cycle
//! drawn as a graph beside its step-by-step explanation, and transaction
//! details on click. The timeline alone is also available as SVG.

mod model;
mod page;
mod stream;
mod svg;

use crate::histfile::Loaded;
use model::{Model, findings};
use page::replay_line;
use page::{finding_card, short, truncation_notes};
use percsim_checker::{History, Op, VersionKind};
use serde_json::{Value, json};
use std::fmt::Write as _;
use svg::esc;

/// Versions per cell the details panel lists (the newest).
const VERSIONS_SHOWN: usize = 12;

/// The report of a stream history (Pulsar's), as one HTML document: its
/// transactions on the timeline, the world's `events` (a capsule's
/// transaction history carries the faults; empty for a plain stream
/// history) as fault bands, and the stream checker's findings. `capsule` is
/// the capsule it came from, if any; `source` names the file. With `svg`,
/// the timeline alone as a standalone SVG document.
pub fn stream_report(
    stream: &percsim_checker::stream::StreamHistory,
    events: &[percsim_checker::Event],
    capsule: Option<&Value>,
    source: &str,
    svg: bool,
) -> String {
    let src = stream::StreamSource {
        stream,
        events,
        capsule,
        file: source,
    };
    if svg {
        stream::svg(&src)
    } else {
        stream::html(&src)
    }
}

/// The timeline of `history` as a standalone SVG document.
pub fn svg(history: &History) -> String {
    svg::timeline(&Model::build(history).timeline)
}

/// The whole report as one HTML document. `source` names the file it was
/// made from (shown, and used in the replay command of a plain history).
pub fn html(loaded: &Loaded, source: &str) -> String {
    let m = Model::build(&loaded.history);
    let mut page = String::with_capacity(400 * m.timeline.bars.len() + 65_536);
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{}</style></head><body>\n",
        esc(&title(&m)),
        include_str!("page.css")
    );
    header(&mut page, &m, loaded, source);
    page.push_str("<h2>Timeline</h2>\n<div class=\"legend\"><span><i style=\"background:#3a9d5d\"></i>committed</span><span><i style=\"background:#c9c9c9\"></i>aborted</span><span><i style=\"background:#8e6bbf\"></i>unknown (dashed: never completed)</span><span><i style=\"border:2px solid #d62728\"></i>named by a violation</span><span><i style=\"background:#1f4e9c;width:2px\"></i>start_ts</span><span><i style=\"background:#111;width:2px\"></i>commit_ts (marks: earliest time consistent with the oracle's order)</span><span><i style=\"background:#f4a582\"></i>fault</span></div>\n<div id=\"timeline\">");
    page.push_str(&svg::timeline(&m.timeline));
    page.push_str("</div>\n");
    findings_section(&mut page, &m);
    let data = data_json(&m).to_string().replace("</", "<\\/");
    let _ = write!(
        page,
        "<div id=\"panel\" hidden></div><div id=\"tip\" hidden></div>\n<script type=\"application/json\" id=\"data\">{data}</script>\n<script>{}</script>\n</body></html>\n",
        include_str!("page.js")
    );
    page
}

fn scenario_name(h: &History) -> String {
    let s = &h.scenario;
    let workload = s.pointer("/workload/name").and_then(Value::as_str);
    let name = s.get("name").and_then(Value::as_str);
    workload.or(name).unwrap_or("unnamed scenario").to_string()
}

fn title(m: &Model<'_>) -> String {
    format!(
        "percsim report: {} seed {} ({})",
        scenario_name(m.history),
        m.history.seed,
        if m.report.passed() { "PASS" } else { "FAIL" }
    )
}

fn header(page: &mut String, m: &Model<'_>, loaded: &Loaded, source: &str) {
    let r = &m.report;
    let s = &r.stats;
    let verdict = if r.passed() {
        "<span class=\"verdict-pass\">PASS</span> every rule holds".to_string()
    } else {
        format!(
            "<span class=\"verdict-fail\">FAIL</span> broken: {}",
            esc(&r.violated_rules().join(", "))
        )
    };
    let capsule = loaded.capsule.as_ref();
    let replay = replay_line(capsule, &format!("percsim check {source}"));
    let recorded = capsule
        .and_then(|c| c.get("verdict"))
        .map(|v| format!(" (capsule verdict: {v})"))
        .unwrap_or_default();
    let description = m
        .history
        .scenario
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("");
    let faults = m.timeline.bands.len();
    let _ = writeln!(
        page,
        "<header><h1>{}</h1><dl class=\"summary\"><dt>verdict</dt><dd>{verdict}{}</dd><dt>seed</dt><dd>{}</dd><dt>scenario</dt><dd>{} {}</dd><dt>transactions</dt><dd>{} ({} committed, {} aborted, {} unknown; {} committed in the store only)</dd><dt>ops</dt><dd>{} reads, {} writes over {} cells; {} lanes (client workers); {} fault bands</dd><dt>findings</dt><dd>{} violations, {} allowed anomalies (write skew)</dd><dt>replay</dt><dd><code>{}</code></dd><dt>file</dt><dd>{}{}</dd></dl><div id=\"status\">not rendered: scripts are off</div></header>",
        esc(&title(m)),
        esc(&recorded),
        m.history.seed,
        esc(&scenario_name(m.history)),
        esc(description),
        s.transactions,
        s.committed,
        s.aborted,
        s.unknown,
        s.committed_in_store_only,
        s.reads,
        s.writes,
        s.cells,
        m.timeline.lanes.len(),
        faults,
        r.rules.iter().map(|x| x.total).sum::<u64>(),
        r.allowed.total,
        esc(&replay),
        esc(source),
        loaded
            .warning
            .as_ref()
            .map(|w| format!("<br><b>note:</b> {}", esc(w)))
            .unwrap_or_default()
    );
}

fn findings_section(page: &mut String, m: &Model<'_>) {
    page.push_str("<h2>Findings</h2>\n");
    let r = &m.report;
    truncation_notes(page, &r.rules);
    let mut any = false;
    for (k, (f, allowed)) in findings(r).enumerate() {
        any = true;
        finding_card(page, f, allowed, k);
    }
    if !any {
        page.push_str("<p>No violation: every rule holds and no write skew was found.</p>\n");
    }
}

fn kind_name(k: VersionKind) -> &'static str {
    match k {
        VersionKind::Put => "put",
        VersionKind::Delete => "delete",
        VersionKind::Rollback => "rollback",
    }
}

/// The data the page's script reads: transactions and cells' versions.
fn data_json(m: &Model<'_>) -> Value {
    let h = m.history;
    let txns: Vec<Value> = m
        .timeline
        .bars
        .iter()
        .map(|b| {
            let t = &h.transactions[b.txn];
            let ops: Vec<Value> = t
                .ops
                .iter()
                .map(|o| match o {
                    Op::Read { row, col, value } => {
                        json!(["read", row, col, value.as_deref().map(short)])
                    }
                    Op::Write { row, col, value } => json!(["write", row, col, short(value)]),
                    Op::Delete { row, col } => json!(["delete", row, col, null]),
                })
                .collect();
            json!({
                "id": t.id,
                "lane": m.timeline.lanes[b.row],
                "outcome": format!("{:?}", t.outcome).to_lowercase(),
                "start_ts": t.start_ts,
                "commit_ts": t.commit_ts,
                "invoke_ns": t.invoke_ns,
                "complete_ns": t.complete_ns,
                "abort_reason": t.abort_reason,
                "ops": ops,
            })
        })
        .collect();
    let mut cells = serde_json::Map::new();
    for c in &h.final_state.cells {
        let versions: Vec<Value> = c
            .versions
            .iter()
            .map(|v| {
                json!([
                    v.start_ts,
                    v.commit_ts,
                    kind_name(v.kind),
                    v.value.as_deref().map(short)
                ])
            })
            .collect();
        cells.insert(format!("{}\u{0}{}", c.row, c.col), Value::Array(versions));
    }
    json!({"txns": txns, "cells": cells, "versions_shown": VERSIONS_SHOWN})
}

#[cfg(test)]
mod replay_tests {
    use super::replay_line;
    use serde_json::json;

    #[test]
    fn the_replay_line_replays_the_history_drawn_and_names_the_shrunk_one_after() {
        let c = json!({"replay": "percsim replay /f/c.json", "replay_shrunk": "percsim replay /f/c.json --shrunk"});
        let line = replay_line(Some(&c), "fallback");
        assert!(
            line.starts_with("percsim replay /f/c.json (the history drawn"),
            "{line}"
        );
        assert!(
            line.ends_with("percsim replay /f/c.json --shrunk)"),
            "{line}"
        );
        let c = json!({"replay": "percsim replay /f/c.json"});
        assert_eq!(
            replay_line(Some(&c), "fallback"),
            "percsim replay /f/c.json"
        );
        assert_eq!(
            replay_line(None, "percsim check h.json"),
            "percsim check h.json"
        );
    }
}
