//! Reads a history from a `percsim-history/1` or `percsim-stream-history/1`
//! file or from a failure capsule (`percsim-capsule/1`, which carries the
//! failing run's history: `history` for the first format, `stream_history`
//! for the second), and judges a capsule again (`percsim check CAPSULE`).

use percsim_checker::History;
use std::io::Write;
use std::path::Path;

/// A history and, when it came from a capsule, the capsule around it.
pub struct Loaded {
    /// The history.
    pub history: History,
    /// The whole capsule (scenario, verdict, replay command), if the file was one.
    pub capsule: Option<serde_json::Value>,
    /// Why the history breaks the format's validation, when a capsule's
    /// history does (capsules written before `data_missing` existed hold a
    /// put without a value where the store lost the data); it is then read
    /// as it is and judged as well as it can be.
    pub warning: Option<String>,
}

/// What a history file holds: a transaction history (Percolator's, or any
/// `percsim-history/1`), or a stream history (Pulsar's).
pub enum Document {
    /// A `percsim-history/1` history, or a capsule holding one.
    Transactions(Loaded),
    /// A `percsim-stream-history/1` history, or a capsule holding one.
    Stream(LoadedStream),
}

/// A stream history and, when it came from a capsule, the capsule around
/// it, with the run's events (the faults).
pub struct LoadedStream {
    /// The stream history.
    pub stream: percsim_checker::stream::StreamHistory,
    /// The run's events: the stream history's own, or, for a capsule saved
    /// by an older percsim (whose stream history has none), those of the
    /// capsule's event-only transaction history.
    pub events: Vec<percsim_checker::Event>,
    /// The whole capsule, if the file was one.
    pub capsule: Option<serde_json::Value>,
}

/// Reads `path`: a history, or a capsule holding one. The error names the
/// file and what is wrong with it; a stream history (a file, or a
/// capsule carrying one) is refused, naming the commands that read it.
pub fn load(path: &Path) -> Result<Loaded, String> {
    match load_document(path)? {
        Document::Transactions(l) => Ok(l),
        Document::Stream(l) => Err(format!(
            "{} {} a stream history ({}), and this reads transaction histories \
             (percsim-history/1) only; `percsim check {p}` judges it and `percsim report {p}` draws it",
            path.display(),
            if l.capsule.is_some() {
                "is a capsule holding"
            } else {
                "is"
            },
            percsim_checker::stream::STREAM_FORMAT,
            p = path.display()
        )),
    }
}

/// Reads `path`, whichever kind of history it holds (see [`Document`]).
pub fn load_document(path: &Path) -> Result<Document, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    let format = value.get("format").and_then(|f| f.as_str());
    let is_capsule = format == Some(CAPSULE_FORMAT);
    let stream = if is_capsule {
        value.get("stream_history").filter(|h| !h.is_null())
    } else {
        (format == Some(percsim_checker::stream::STREAM_FORMAT)).then_some(&value)
    };
    if let Some(stream) = stream {
        return load_stream(path, stream, is_capsule.then_some(&value)).map(Document::Stream);
    }
    if !is_capsule {
        let history = percsim_checker::parse(&text)
            .map_err(|e| format!("{} is not a valid history: {e}", path.display()))?;
        return Ok(Document::Transactions(Loaded {
            history,
            capsule: None,
            warning: None,
        }));
    }
    let inner = value
        .get("history")
        .filter(|h| !h.is_null())
        .ok_or_else(|| format!("the capsule {} holds no history", path.display()))?;
    let (history, warning) = match percsim_checker::parse(&inner.to_string()) {
        Ok(h) => (h, None),
        Err(strict) => {
            let h: History = serde_json::from_value(inner.clone())
                .map_err(|e| format!("the history in capsule {}: {e}", path.display()))?;
            (
                h,
                Some(format!(
                    "the history breaks the format's validation: {strict}"
                )),
            )
        }
    };
    Ok(Document::Transactions(Loaded {
        history,
        capsule: Some(value),
        warning,
    }))
}

/// The stream history `stream` (the file's whole value, or a capsule's
/// `stream_history`), with its events (see [`LoadedStream::events`]).
fn load_stream(
    path: &Path,
    stream: &serde_json::Value,
    capsule: Option<&serde_json::Value>,
) -> Result<LoadedStream, String> {
    let where_ = if capsule.is_some() {
        format!("the stream history in capsule {}", path.display())
    } else {
        path.display().to_string()
    };
    let parsed = percsim_checker::stream::parse(&stream.to_string())
        .map_err(|e| format!("{where_} is not a valid stream history: {e}"))?;
    let older = match capsule.and_then(|c| c.pointer("/history/events")) {
        Some(e) if parsed.events.is_empty() => serde_json::from_value(e.clone())
            .map_err(|e| format!("the events in capsule {}: {e}", path.display()))?,
        _ => Vec::new(),
    };
    let events = match older.is_empty() {
        true => parsed.events.clone(),
        false => older,
    };
    Ok(LoadedStream {
        stream: parsed,
        events,
        capsule: capsule.cloned(),
    })
}

/// The `format` of a failure capsule.
pub const CAPSULE_FORMAT: &str = "percsim-capsule/1";

/// Whether `path` holds a failure capsule (its top-level `format` is
/// [`CAPSULE_FORMAT`]; the tag is looked for in the first 64 KiB, as for
/// stream histories).
pub fn is_capsule_file(path: &Path) -> bool {
    percsim_checker::file_format(path, CAPSULE_FORMAT).is_some_and(|f| f == CAPSULE_FORMAT)
}

/// `percsim check` on a capsule: judge the history it carries again, with
/// the checker only (no simulation). A capsule of a system that records a
/// stream history (Pulsar) is judged by the stream checker on its
/// `stream_history`; any other by the history checker on its `history`.
/// Both are also judged by their liveness rules when the history records
/// their thresholds. Writes the report (text after a line with the verdict
/// the run recorded, or JSON) to `out`; returns the exit code: 0 pass, 1 a
/// safety rule broken, 3 only a liveness rule broken, 2 the capsule cannot
/// be read or holds no history to judge.
pub fn check_capsule(path: &Path, json: bool, out: &mut dyn Write) -> i32 {
    let options = percsim_checker::CheckOptions { json, model: None };
    check_capsule_with(path, options, out)
}

/// [`check_capsule`], judged against `options.model` when one is given
/// (a capsule holding a stream history takes none: exit code 2).
pub fn check_capsule_with(
    path: &Path,
    options: percsim_checker::CheckOptions,
    out: &mut dyn Write,
) -> i32 {
    let json = options.json;
    let fail = |out: &mut dyn Write, message: String| {
        let _ = if json {
            let e =
                serde_json::json!({"format": "percsim-check/1", "passed": false, "error": message});
            writeln!(out, "{e:#}")
        } else {
            writeln!(out, "error: {message}")
        };
        2
    };
    let value: serde_json::Value = match std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
        .and_then(|t| {
            serde_json::from_str(&t).map_err(|e| format!("{} is not JSON: {e}", path.display()))
        }) {
        Ok(v) => v,
        Err(e) => return fail(out, e),
    };
    if !json {
        let _ = writeln!(
            out,
            "capsule {}: the run recorded verdict {}, rules {}",
            path.display(),
            value.get("verdict").unwrap_or(&serde_json::Value::Null),
            value
                .get("violated_rules")
                .unwrap_or(&serde_json::Value::Null)
        );
    }
    let judged = match value.get("stream_history").filter(|h| !h.is_null()) {
        Some(_) if let Some(m) = options.model => {
            let m = format!(
                "the capsule {} holds a stream history, judged by the stream rules, which take \
                 no consistency model (--model {m} was given); leave --model out",
                path.display()
            );
            return fail(out, m);
        }
        Some(stream) => match percsim_checker::stream::parse(&stream.to_string()) {
            Ok(h) => percsim_checker::Judged::stream(&h),
            Err(e) => {
                let m = format!("the stream history in capsule {}: {e}", path.display());
                return fail(out, m);
            }
        },
        None if let Some(system) = stream_system(&value) => {
            let m = format!(
                "the capsule {} is of a {system} run, judged on its stream history, but holds no \
                 stream_history (saved by an older percsim); re-run it with `percsim replay`",
                path.display()
            );
            return fail(out, m);
        }
        None => match load(path) {
            Ok(loaded) => percsim_checker::Judged::transactions(&loaded.history, options.model),
            Err(e) => return fail(out, e),
        },
    };
    // A failed write cannot change the verdict, which the exit code carries.
    let _ = judged.write(out, json);
    judged.exit_code()
}

/// The system of a capsule's scenario, if its runs are judged on a stream
/// history.
fn stream_system(capsule: &serde_json::Value) -> Option<&'static str> {
    let def = match capsule.pointer("/scenario/system") {
        Some(name) => crate::systems::find(name.as_str()?).ok()?,
        None => crate::systems::default_system(),
    };
    (def.history_format() == percsim_checker::stream::STREAM_FORMAT).then(|| def.name())
}

/// A transaction's lane: the client and which of its concurrent workers ran
/// it (histories name only the client).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lane {
    /// The client, as the history names it.
    pub client: u64,
    /// The worker slot within the client, from 0.
    pub slot: u32,
}

/// Assigns each transaction to a lane: a client's transactions are packed
/// into the fewest slots that never overlap in time (a slot is free again
/// once its transaction completed; one that never completed keeps its slot
/// to the end), so each lane runs one transaction at a time like a worker.
pub fn lanes(h: &History) -> Vec<Lane> {
    lanes_of(
        &h.transactions
            .iter()
            .map(|t| Span {
                client: t.client,
                invoke_ns: t.invoke_ns,
                complete_ns: t.complete_ns,
            })
            .collect::<Vec<_>>(),
    )
}

/// When a client ran one transaction (or any piece of work with a span).
#[derive(Debug, Clone, Copy)]
pub struct Span {
    /// The client.
    pub client: u64,
    /// When it began.
    pub invoke_ns: u64,
    /// When the client learnt how it ended; `None`: never.
    pub complete_ns: Option<u64>,
}

/// [`lanes`] for any list of spans: each span's lane, in the list's order.
pub fn lanes_of(spans: &[Span]) -> Vec<Lane> {
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| (spans[i].invoke_ns, i));
    let mut busy: std::collections::HashMap<u64, Vec<Option<u64>>> = Default::default();
    let mut out = vec![Lane { client: 0, slot: 0 }; spans.len()];
    for i in order {
        let t = &spans[i];
        let slots = busy.entry(t.client).or_default();
        let free = slots
            .iter()
            .position(|b| b.is_some_and(|until| until <= t.invoke_ns));
        let slot = match free {
            Some(s) => s,
            None => {
                slots.push(None);
                slots.len() - 1
            }
        };
        slots[slot] = t.complete_ns.map(|c| c.max(t.invoke_ns));
        out[i] = Lane {
            client: t.client,
            slot: slot as u32,
        };
    }
    out
}
