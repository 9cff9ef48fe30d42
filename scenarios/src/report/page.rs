//! Page pieces shared by the transaction report (`mod.rs`) and the stream
//! report (`stream.rs`): the replay line, the checker's truncation notes,
//! the finding cards and shortened values.

use super::svg::{self, esc};
use percsim_checker::Finding;
use serde_json::Value;
use std::fmt::Write as _;

/// Longest value (in characters) the page embeds; longer ones keep their end.
pub(super) const VALUE_CHARS: usize = 160;

/// The report's replay line: the command that re-runs the history drawn
/// (a capsule's full scenario, not its shrunk one, which is named after
/// it), or `fallback` for a history without a capsule.
pub(crate) fn replay_line(capsule: Option<&Value>, fallback: &str) -> String {
    let field = |k: &str| capsule.and_then(|c| c.get(k)).and_then(Value::as_str);
    match (field("replay"), field("replay_shrunk")) {
        (Some(full), Some(shrunk)) if !full.is_empty() => {
            format!("{full} (the history drawn; a smaller failing scenario: {shrunk})")
        }
        (Some(full), _) if !full.is_empty() => full.to_string(),
        _ => fallback.to_string(),
    }
}

/// A line for each broken rule with more violations than it explains.
pub(super) fn truncation_notes(page: &mut String, rules: &[percsim_checker::RuleReport]) {
    for rule in rules.iter().filter(|x| !x.violations.is_empty()) {
        if (rule.violations.len() as u64) < rule.total {
            let _ = writeln!(
                page,
                "<p>{}: {} violations; the checker explains the first few of each class ({} shown below).</p>",
                esc(&rule.id),
                rule.total,
                rule.violations.len()
            );
        }
    }
}

/// `text`, escaped, with every `T<digits>` a link to that transaction.
pub(super) fn link_txns(text: &str) -> String {
    // Turn every "T<digits>" into a clickable reference.
    let mut out = String::with_capacity(text.len() + 32);
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let boundary = i == 0 || !chars[i - 1].is_alphanumeric();
        if chars[i] == 'T' && boundary && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
            let mut j = i + 1;
            while chars.get(j).is_some_and(char::is_ascii_digit) {
                j += 1;
            }
            let id: String = chars[i + 1..j].iter().collect();
            let _ = write!(out, "<a data-t=\"{id}\">T{id}</a>");
            i = j;
        } else {
            out.push_str(&esc(&chars[i].to_string()));
            i += 1;
        }
    }
    out
}

/// One finding as a card: its class, rule and summary, its cycle drawn
/// and explained step by step, and its details.
pub(super) fn finding_card(page: &mut String, f: &Finding, allowed: bool, k: usize) {
    let kind = if allowed { "allowed" } else { "violation" };
    let ids: Vec<String> = f.txns.iter().map(u64::to_string).collect();
    let _ = write!(
        page,
        "<div class=\"finding {kind}\" data-txns=\"{}\"><div><span class=\"class\">{}</span> <small>({}{})</small></div><p>{}</p><div class=\"body\">",
        ids.join(" "),
        esc(&f.class),
        esc(&f.rule),
        if allowed {
            ", allowed under snapshot isolation"
        } else {
            ""
        },
        link_txns(&f.summary)
    );
    if !f.cycle.is_empty() {
        page.push_str(&svg::cycle_graph(&f.cycle, k));
        page.push_str("<ol>");
        for st in &f.cycle {
            let _ = write!(
                page,
                "<li><b>T{} -{}-&gt; T{}</b>: {}</li>",
                st.from,
                esc(&st.edge),
                st.to,
                link_txns(&st.explanation)
            );
        }
        page.push_str("</ol>");
    }
    page.push_str("</div><div class=\"details\">");
    for d in &f.details {
        let _ = writeln!(page, "{}", link_txns(d));
    }
    page.push_str("</div></div>\n");
}

/// `v` cut to its last [`VALUE_CHARS`] characters, saying its length.
pub(super) fn short(v: &str) -> String {
    let n = v.chars().count();
    if n <= VALUE_CHARS {
        return v.to_string();
    }
    let tail: String = v.chars().skip(n - VALUE_CHARS).collect();
    format!("...{tail} ({n} chars)")
}
