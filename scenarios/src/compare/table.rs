//! The comparison table: rows are metrics, columns system x fault mix;
//! as text or JSON.

use super::facts::Metrics;
use super::mix::FaultMix;
use serde::Serialize;
use serde::ser::{SerializeStruct, Serializer};

/// One column: a system under one fault mix.
#[derive(Debug, Clone)]
pub struct Cell {
    /// The system's name.
    pub system: &'static str,
    /// The fault mix.
    pub mix: FaultMix,
    /// What was measured.
    pub metrics: Metrics,
    /// Runs that produced no history (the simulation crashed or got stuck), why.
    pub failed: Vec<String>,
}

impl Serialize for Cell {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Cell", 4)?;
        st.serialize_field("system", self.system)?;
        st.serialize_field("mix", self.mix.name())?;
        st.serialize_field("metrics", &self.metrics)?;
        st.serialize_field("failed", &self.failed)?;
        st.end()
    }
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Table {
    /// The seed range, first included, last excluded.
    pub seeds: (u64, u64),
    /// Each run's workload phase, simulated ms.
    pub run_ms: u64,
    /// The columns, systems outermost.
    pub cells: Vec<Cell>,
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
}

/// Aborts by cause, as `cause 1.2%` joined, or `-` when none aborted.
fn causes(causes: &[(String, f64)]) -> String {
    if causes.is_empty() {
        return "-".to_string();
    }
    let each: Vec<String> = causes
        .iter()
        .map(|(c, r)| format!("{c} {:.1}%", r * 100.0))
        .collect();
    each.join(", ")
}

/// Each row: its label and how to print it from a column's metrics.
type Row = (&'static str, fn(&Metrics) -> String);

const ROWS: &[Row] = &[
    ("runs", |m| m.runs.to_string()),
    ("documents loaded / sim s (offered)", |m| {
        format!("{:.2}", m.docs_loaded_per_sim_s)
    }),
    ("documents processed / sim s", |m| {
        format!("{:.2}", m.docs_per_sim_s)
    }),
    ("document load-to-processed p50 ms", |m| {
        num(m.doc_latency_p50_ms, 0)
    }),
    ("commit latency p50 ms (begin to outcome)", |m| {
        num(m.commit_p50_ms, 1)
    }),
    ("commit latency p99 ms (begin to outcome)", |m| {
        num(m.commit_p99_ms, 1)
    }),
    ("abort rate", |m| {
        num(m.abort_rate.map(|r| r * 100.0), 1) + "%"
    }),
    ("abort causes (share of begun)", |m| causes(&m.abort_causes)),
    ("deaths (clients, coordinator)", |m| m.deaths.to_string()),
    ("dead work blocking others p50 ms", |m| {
        num(m.blocked_p50_ms, 0)
    }),
    ("dead work blocking others max ms", |m| {
        num(m.blocked_max_ms, 0)
    }),
    ("dead work never resolved", |m| m.never_resolved.to_string()),
    ("recovery after a death p50 ms", |m| {
        num(m.recovery_p50_ms, 0)
    }),
    ("recovery after a death max ms", |m| {
        num(m.recovery_max_ms, 0)
    }),
    ("deaths never recovered from", |m| {
        m.never_recovered.to_string()
    }),
    ("deaths with no work after (not measurable)", |m| {
        m.unmeasured.to_string()
    }),
];

impl Table {
    /// The table as Markdown (it reads as text too), with a line per run
    /// that produced no history.
    pub fn render(&self) -> String {
        let mut out = format!(
            "percsim compare: seeds {}..{}, workload phase {} simulated ms per run\n\n",
            self.seeds.0, self.seeds.1, self.run_ms
        );
        let heads: Vec<String> = self
            .cells
            .iter()
            .map(|c| format!("{} {}", c.system, c.mix.name()))
            .collect();
        out += &format!("| metric | {} |\n", heads.join(" | "));
        out += &format!("|---|{}\n", "---|".repeat(heads.len()));
        for (label, show) in ROWS {
            let vals: Vec<String> = self.cells.iter().map(|c| show(&c.metrics)).collect();
            out += &format!("| {label} | {} |\n", vals.join(" | "));
        }
        for c in &self.cells {
            for f in &c.failed {
                out += &format!("\n{} {}: no history: {f}", c.system, c.mix.name());
            }
        }
        out
    }
}
