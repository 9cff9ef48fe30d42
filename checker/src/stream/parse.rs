//! Reading a stream history: JSON syntax and types (via serde_json, with line
//! and column), then the references serde cannot check.

use super::history::{STREAM_FORMAT, StreamFinalState, StreamHistory, StreamOp};
use std::collections::{BTreeMap, BTreeSet};

/// Why a stream history could not be read. Its message names the problem and
/// where it is: a JSON path such as `$.ops[3].partition`, and for syntax and
/// type errors the line and column.
/// Why a stream history was refused: the same error type as the Percolator
/// history's (a message, and the JSON path or the line and column).
pub type StreamHistoryError = crate::parse::HistoryError;

/// Parses and validates a `percsim-stream-history/1` document.
///
/// Unknown fields are ignored. A syntax error, a missing required field, a
/// value of the wrong type, or a broken reference (see
/// `docs/history-format.md`, "Stream histories: validation") is an error
/// whose message says what and where.
pub fn parse(json: &str) -> Result<StreamHistory, StreamHistoryError> {
    let history: StreamHistory = serde_json::from_str(json).map_err(|e| {
        use serde_json::error::Category;
        let kind = match e.classify() {
            Category::Syntax | Category::Eof => "JSON syntax error",
            Category::Io => "read error",
            Category::Data => "invalid stream history",
        };
        StreamHistoryError {
            message: format!("{kind}: {e}"),
            path: None,
            line: (e.line() > 0).then_some(e.line()),
            column: (e.line() > 0).then_some(e.column()),
        }
    })?;
    validate(&history)?;
    Ok(history)
}

/// The names the ops and the final state may refer to.
struct Names<'a> {
    txns: BTreeSet<u64>,
    /// Subscription name to its topic.
    subs: BTreeMap<&'a str, &'a str>,
    /// Partition name to its topic.
    parts: BTreeMap<&'a str, &'a str>,
}

fn validate(h: &StreamHistory) -> Result<(), StreamHistoryError> {
    if h.format != STREAM_FORMAT {
        return Err(StreamHistoryError::at(
            "$.format".into(),
            format!("expected {STREAM_FORMAT:?}, found {:?}", h.format),
        ));
    }
    let names = declarations(h)?;
    validate_ops(h, &names)?;
    validate_final(&h.final_state, &names)
}

fn declarations(h: &StreamHistory) -> Result<Names<'_>, StreamHistoryError> {
    let mut txns = BTreeSet::new();
    for (i, t) in h.transactions.iter().enumerate() {
        let path = format!("$.transactions[{i}] (transaction id {})", t.id);
        if !txns.insert(t.id) {
            return Err(StreamHistoryError::at(
                format!("{path}.id"),
                "a second transaction with this id",
            ));
        }
        if let Some(d) = &t.coordinator
            && d.outcome == crate::Outcome::Unknown
        {
            return Err(StreamHistoryError::at(
                format!("{path}.coordinator.outcome"),
                "a coordinator's decision is \"committed\" or \"aborted\", not \"unknown\"",
            ));
        }
        for (field, t_ns) in [
            ("commit_request_ns", t.commit_request_ns),
            ("complete_ns", t.complete_ns),
            ("coordinator.t_ns", t.coordinator.as_ref().map(|d| d.t_ns)),
            ("commit_logged_ns", t.commit_logged_ns),
            ("abort_logged_ns", t.abort_logged_ns),
        ] {
            if t_ns.is_some_and(|x| x < t.invoke_ns) {
                return Err(StreamHistoryError::at(
                    format!("{path}.{field}"),
                    "earlier than invoke_ns",
                ));
            }
        }
    }
    let mut subs = BTreeMap::new();
    for (i, s) in h.subscriptions.iter().enumerate() {
        if subs.insert(s.name.as_str(), s.topic.as_str()).is_some() {
            return Err(StreamHistoryError::at(
                format!("$.subscriptions[{i}].name"),
                format!("a second subscription named {:?}", s.name),
            ));
        }
    }
    let mut parts = BTreeMap::new();
    for (i, p) in h.final_state.partitions.iter().enumerate() {
        if parts.insert(p.name.as_str(), p.topic.as_str()).is_some() {
            return Err(StreamHistoryError::at(
                format!("$.final_state.partitions[{i}].name"),
                format!("a second partition named {:?}", p.name),
            ));
        }
    }
    Ok(Names { txns, subs, parts })
}

impl Names<'_> {
    fn txn(&self, path: &str, txn: Option<u64>) -> Result<(), StreamHistoryError> {
        match txn {
            Some(t) if !self.txns.contains(&t) => Err(StreamHistoryError::at(
                format!("{path}.txn"),
                format!("transaction {t} is not in $.transactions"),
            )),
            _ => Ok(()),
        }
    }

    fn partition(&self, path: &str, name: &str) -> Result<&str, StreamHistoryError> {
        self.parts.get(name).copied().ok_or_else(|| {
            StreamHistoryError::at(
                format!("{path}.partition"),
                format!("partition {name:?} is not in $.final_state.partitions"),
            )
        })
    }

    /// The subscription exists and follows the partition's topic.
    fn sub_on(&self, path: &str, sub: &str, part: &str) -> Result<(), StreamHistoryError> {
        let topic = self.partition(path, part)?;
        match self.subs.get(sub) {
            None => Err(StreamHistoryError::at(
                format!("{path}.subscription"),
                format!("subscription {sub:?} is not in $.subscriptions"),
            )),
            Some(t) if *t != topic => Err(StreamHistoryError::at(
                format!("{path}.partition"),
                format!(
                    "partition {part:?} is of topic {topic:?}, but subscription {sub:?} follows {t:?}"
                ),
            )),
            Some(_) => Ok(()),
        }
    }
}

fn validate_ops(h: &StreamHistory, names: &Names) -> Result<(), StreamHistoryError> {
    let mut sent = BTreeMap::new();
    let mut last_t = 0;
    for (i, op) in h.ops.iter().enumerate() {
        let path = format!("$.ops[{i}]");
        let t_ns = match op {
            StreamOp::Send(s) => {
                names.txn(&path, s.txn)?;
                names.partition(&path, &s.partition)?;
                if let Some(src) = &s.source
                    && !names.subs.contains_key(src.subscription.as_str())
                {
                    return Err(StreamHistoryError::at(
                        format!("{path}.source.subscription"),
                        format!(
                            "subscription {:?} is not in $.subscriptions",
                            src.subscription
                        ),
                    ));
                }
                if let Some(j) = sent.insert(s.message.as_str(), i) {
                    return Err(StreamHistoryError::at(
                        format!("{path}.message"),
                        format!(
                            "message {:?} was already sent by $.ops[{j}]: messages must be unique",
                            s.message
                        ),
                    ));
                }
                s.t_ns
            }
            StreamOp::Receive(r) => {
                names.sub_on(&path, &r.subscription, &r.partition)?;
                r.t_ns
            }
            StreamOp::Ack(a) => {
                names.txn(&path, a.txn)?;
                names.sub_on(&path, &a.subscription, &a.partition)?;
                a.t_ns
            }
        };
        if t_ns < last_t {
            return Err(StreamHistoryError::at(
                format!("{path}.t_ns"),
                format!(
                    "{t_ns} is earlier than the op before it ({last_t}): ops must be in time order"
                ),
            ));
        }
        last_t = t_ns;
    }
    Ok(())
}

fn validate_final(fs: &StreamFinalState, names: &Names) -> Result<(), StreamHistoryError> {
    for (i, p) in fs.partitions.iter().enumerate() {
        let mut last: Option<u64> = None;
        for (j, e) in p.entries.iter().enumerate() {
            let path = format!("$.final_state.partitions[{i}].entries[{j}]");
            if last.is_some_and(|l| e.offset <= l) {
                return Err(StreamHistoryError::at(
                    format!("{path}.offset"),
                    format!(
                        "offset {} does not follow {} of the entry before it: offsets must increase",
                        e.offset,
                        last.unwrap_or(0)
                    ),
                ));
            }
            last = Some(e.offset);
            match (&e.message, e.marker) {
                (Some(_), Some(_)) => {
                    return Err(StreamHistoryError::at(
                        path,
                        "has both `message` and `marker`: an entry is one or the other",
                    ));
                }
                (None, None) => {
                    return Err(StreamHistoryError::at(
                        path,
                        "has neither `message` nor `marker`",
                    ));
                }
                (None, Some(_)) if e.txn.is_none() => {
                    return Err(StreamHistoryError::at(
                        format!("{path}.txn"),
                        "a marker must name its transaction",
                    ));
                }
                _ => {}
            }
            names.txn(&path, e.txn)?;
        }
    }
    let mut seen = BTreeSet::new();
    for (i, a) in fs.acks.iter().enumerate() {
        let path = format!("$.final_state.acks[{i}]");
        names.sub_on(&path, &a.subscription, &a.partition)?;
        if !seen.insert((a.subscription.as_str(), a.partition.as_str())) {
            return Err(StreamHistoryError::at(
                path,
                format!(
                    "subscription {:?} on partition {:?} is listed twice",
                    a.subscription, a.partition
                ),
            ));
        }
    }
    Ok(())
}
