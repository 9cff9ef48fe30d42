//! The SVG pieces of a report: the timeline (one lane per client worker,
//! fault bands, transaction bars with timestamp marks) and a dependency
//! cycle drawn as a small graph.

use super::model::Timeline;
use percsim_checker::{CycleStep, Outcome};
use std::fmt::Write as _;

/// Width of the lane labels on the left.
const LABEL_W: f64 = 120.0;
/// Height of one lane and of a bar within it.
const ROW_H: f64 = 16.0;
const BAR_H: f64 = 10.0;
/// Room for the time axis at the top.
const AXIS_H: f64 = 28.0;

/// Escapes text for HTML and SVG.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// An outcome's name, also the bar's CSS class.
pub(crate) fn outcome_class(o: Outcome) -> &'static str {
    match o {
        Outcome::Committed => "committed",
        Outcome::Aborted => "aborted",
        Outcome::Unknown => "unknown",
    }
}

/// A round step for the time axis: 1, 2 or 5 times a power of ten (ms).
fn tick_ms(span_ms: f64) -> f64 {
    let raw = (span_ms / 10.0).max(1e-3);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * p)
}

/// The whole timeline as one standalone SVG document.
pub(crate) fn timeline(m: &Timeline) -> String {
    let plot_w = (m.bars.len() as f64 * 2.5).clamp(1100.0, 8000.0);
    let width = LABEL_W + plot_w + 20.0;
    let height = AXIS_H + ROW_H * m.lanes.len() as f64 + 10.0;
    let scale = plot_w / m.end_ns as f64;
    let x = |t: u64| LABEL_W + t as f64 * scale;
    let y = |row: usize| AXIS_H + ROW_H * row as f64;
    let mut s = String::with_capacity(200 * m.bars.len() + 4096);
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" id="timeline-svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="10">
<style>.committed{{fill:#3a9d5d}}.aborted{{fill:#c9c9c9}}.unknown{{fill:#8e6bbf}}.flagged{{stroke:#d62728;stroke-width:2.5}}.hl{{stroke:#ff7f0e;stroke-width:3}}.band{{fill:#f4a582;fill-opacity:.28}}.sts{{stroke:#1f4e9c;stroke-width:1.5}}.cts{{stroke:#111;stroke-width:1.5}}.lane{{fill:#fafafa}}.lane2{{fill:#f0f0f0}}</style>
<rect width="100%" height="100%" fill="white"/>
"##
    );
    for row in 0..m.lanes.len() {
        let _ = writeln!(
            s,
            r#"<rect class="{}" x="0" y="{:.1}" width="{width:.0}" height="{ROW_H}"/><text x="4" y="{:.1}">{}</text>"#,
            if row % 2 == 0 { "lane" } else { "lane2" },
            y(row),
            y(row) + 11.5,
            esc(&m.lanes[row])
        );
    }
    let step = tick_ms(m.end_ns as f64 / 1e6);
    let mut t = 0.0;
    while t * 1e6 <= m.end_ns as f64 {
        let tx = x((t * 1e6) as u64);
        let _ = writeln!(
            s,
            r##"<line x1="{tx:.1}" y1="{}" x2="{tx:.1}" y2="{height:.0}" stroke="#ddd"/><text x="{tx:.1}" y="12" text-anchor="middle">{t} ms</text>"##,
            AXIS_H - 6.0
        );
        t += step;
    }
    for b in &m.bands {
        let (x0, x1) = (
            x(b.from_ns),
            x(b.to_ns.max(b.from_ns)).max(x(b.from_ns) + 2.0),
        );
        for &row in &b.rows {
            let _ = writeln!(
                s,
                r#"<rect class="band" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{ROW_H}"><title>{}</title></rect>"#,
                y(row),
                x1 - x0,
                esc(&b.label)
            );
        }
    }
    if let Some(h) = m.healed_ns {
        let _ = writeln!(
            s,
            r##"<line x1="{0:.1}" y1="{1}" x2="{0:.1}" y2="{height:.0}" stroke="#2b7bba" stroke-dasharray="4 3"/><text x="{0:.1}" y="{2}" fill="#2b7bba">healed</text>"##,
            x(h),
            AXIS_H - 4.0,
            AXIS_H - 8.0
        );
    }
    bars(&mut s, m, &x, &y);
    s.push_str("</svg>\n");
    s
}

/// The transaction bars with their timestamp marks.
fn bars(s: &mut String, m: &Timeline, x: &dyn Fn(u64) -> f64, y: &dyn Fn(usize) -> f64) {
    for b in &m.bars {
        let x0 = x(b.from_ns);
        let x1 = x(b.to_ns.unwrap_or(m.end_ns)).max(x0 + 1.5);
        let yb = y(b.row) + (ROW_H - BAR_H) / 2.0;
        let flagged = if b.flagged { " flagged" } else { "" };
        let open = if b.to_ns.is_none() {
            r#" stroke-dasharray="3 2" fill-opacity="0.5""#
        } else {
            ""
        };
        let _ = write!(
            *s,
            r#"<rect id="t{}" class="txn {}{flagged}" data-i="{}" x="{x0:.1}" y="{yb:.1}" width="{:.1}" height="{BAR_H}"{open}/>"#,
            b.id,
            outcome_class(b.outcome),
            b.txn,
            x1 - x0
        );
        if let Some(st) = b.start_mark_ns {
            let sx = x(st);
            let _ = write!(
                *s,
                r#"<line class="sts" x1="{sx:.1}" y1="{yb:.1}" x2="{sx:.1}" y2="{:.1}"/>"#,
                yb + BAR_H
            );
        }
        if let Some(c) = b.commit_mark_ns {
            let cx = x(c);
            let _ = write!(
                s,
                r#"<line class="cts" x1="{cx:.1}" y1="{:.1}" x2="{cx:.1}" y2="{:.1}"/>"#,
                yb - 2.0,
                yb + BAR_H + 2.0
            );
        }
        s.push('\n');
    }
}

fn edge_colour(edge: &str) -> &'static str {
    match edge {
        "ww" => "#d62728",
        "wr" => "#1f77b4",
        "rw" => "#ff7f0e",
        _ => "#7f7f7f",
    }
}

/// A dependency cycle as a small graph: its transactions on a circle, its
/// edges as labelled arrows. `key` makes the arrowhead ids unique.
pub(crate) fn cycle_graph(steps: &[CycleStep], key: usize) -> String {
    let mut nodes: Vec<u64> = Vec::new();
    for st in steps {
        for t in [st.from, st.to] {
            if !nodes.contains(&t) {
                nodes.push(t);
            }
        }
    }
    let n = nodes.len().max(1) as f64;
    let r = (40.0 + 14.0 * n).min(150.0);
    let size = 2.0 * r + 80.0;
    let c = size / 2.0;
    let pos = |t: u64| {
        let i = nodes.iter().position(|&x| x == t).unwrap_or(0) as f64;
        let a = -std::f64::consts::FRAC_PI_2 + 2.0 * std::f64::consts::PI * i / n;
        (c + r * a.cos(), c + r * a.sin())
    };
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="cycle" width="{size:.0}" height="{size:.0}" viewBox="0 0 {size:.0} {size:.0}" font-family="sans-serif" font-size="11"><defs>"#
    );
    for edge in ["ww", "wr", "rw", "rt"] {
        let _ = write!(
            s,
            r#"<marker id="a{key}{edge}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{}"/></marker>"#,
            edge_colour(edge)
        );
    }
    s.push_str("</defs>");
    for (k, st) in steps.iter().enumerate() {
        let ((x0, y0), (x1, y1)) = (pos(st.from), pos(st.to));
        let (dx, dy) = (x1 - x0, y1 - y0);
        let len = (dx * dx + dy * dy).sqrt().max(1.0);
        let (ux, uy) = (dx / len, dy / len);
        // Curve sideways so that a -> b and b -> a do not overlap.
        let (mx, my) = ((x0 + x1) / 2.0 - uy * 18.0, (y0 + y1) / 2.0 + ux * 18.0);
        let (sx, sy, ex, ey) = (
            x0 + ux * 16.0,
            y0 + uy * 16.0,
            x1 - ux * 16.0,
            y1 - uy * 16.0,
        );
        let colour = edge_colour(&st.edge);
        let edge = esc(&st.edge);
        let _ = write!(
            s,
            r#"<path d="M{sx:.1},{sy:.1} Q{mx:.1},{my:.1} {ex:.1},{ey:.1}" fill="none" stroke="{colour}" stroke-width="2" marker-end="url(#a{key}{edge})"/><text x="{mx:.1}" y="{my:.1}" fill="{colour}" text-anchor="middle">{}. {edge}</text>"#,
            k + 1
        );
    }
    for &t in &nodes {
        let (x, y) = pos(t);
        let _ = write!(
            s,
            r##"<g class="node" data-t="{t}"><circle cx="{x:.1}" cy="{y:.1}" r="15" fill="#fff" stroke="#333" stroke-width="1.5"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">T{t}</text></g>"##,
            y + 4.0
        );
    }
    s.push_str("</svg>");
    s
}
