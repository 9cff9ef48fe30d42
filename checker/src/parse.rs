//! Reading a history: JSON syntax and types (via serde_json, with line and
//! column), then the references serde cannot check.

use crate::compact::{CVersion, Compact, Mark, NIL, OpKind};
use crate::fx::FxMap;
use crate::history::{
    CellRef, CellState, Event, FORMAT, FinalState, History, LockState, ObserverDecl, ObserverRun,
    Op, Outcome, Transaction, Version, VersionKind,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Why a history could not be read. Its message names the problem and where
/// it is: a JSON path such as `$.transactions[3] (transaction id 7).commit_ts`,
/// and for syntax and type errors the line and column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HistoryError {
    pub(crate) message: String,
    pub(crate) path: Option<String>,
    pub(crate) line: Option<usize>,
    pub(crate) column: Option<usize>,
}

impl HistoryError {
    pub(crate) fn at(path: String, problem: impl std::fmt::Display) -> HistoryError {
        HistoryError {
            message: format!("{path}: {problem}"),
            path: Some(path),
            line: None,
            column: None,
        }
    }

    /// The JSON path of the offending value, when known (`$` is the document).
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// The 1-based line of a syntax or type error, when known.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// The 1-based column of a syntax or type error, when known.
    pub fn column(&self) -> Option<usize> {
        self.column
    }
}

/// Parses and validates a `percsim-history/1` document.
///
/// Unknown fields are ignored. A syntax error, a missing required field, a
/// value of the wrong type, or a broken reference (wrong format tag, duplicate
/// transaction id, a committed transaction with a write or delete but without
/// `commit_ts` (a read-only one may omit it), an aborted one with it,
/// `complete_ns` before `invoke_ns`, a malformed store record, a cell listed
/// twice, two observers with one name, an observer run naming an undeclared
/// observer or another column than its observer's) is an error whose message
/// says what and where.
pub fn parse(json: &str) -> Result<History, HistoryError> {
    let history: History = serde_json::from_str(json).map_err(|e| from_serde(json, &e))?;
    validate(&Compact::from_history(&history))?;
    Ok(history)
}

fn from_serde(json: &str, e: &serde_json::Error) -> HistoryError {
    use serde_json::error::Category;
    let line = (e.line() > 0).then_some(e.line());
    let column = (e.line() > 0).then_some(e.column());
    let (message, path) = match e.classify() {
        Category::Syntax | Category::Eof => (format!("JSON syntax error: {e}"), None),
        Category::Io => (format!("read error: {e}"), None),
        Category::Data => match locate(json) {
            Some(path) => (format!("{path}: {e}"), Some(path)),
            None => (format!("invalid history: {e}"), None),
        },
    };
    HistoryError {
        message,
        path,
        line,
        column,
    }
}

/// Finds the JSON path of the first value that does not fit the format.
/// Only runs after serde has already failed, so its cost does not matter.
fn locate(json: &str) -> Option<String> {
    let root: Value = serde_json::from_str(json).ok()?;
    let Some(obj) = root.as_object() else {
        return Some("$".to_string());
    };
    if let Some(p) = bad_field::<String>(obj, "$", "format")
        .or_else(|| bad_field::<Option<crate::Model>>(obj, "$", "model"))
        .or_else(|| bad_field::<u64>(obj, "$", "seed"))
        .or_else(|| locate_array(obj.get("transactions")?, "$.transactions", locate_txn))
        .or_else(|| locate_array(obj.get("events")?, "$.events", locate_event))
        .or_else(|| locate_array(obj.get("observers")?, "$.observers", locate_decl))
    {
        return Some(p);
    }
    match obj.get("final_state") {
        Some(v) => Some(locate_final_state(v)),
        None => Some("$".to_string()),
    }
}

/// A field of an object: its name, and whether a value fits its type.
type Field = (&'static str, fn(&Value) -> bool);

/// Whether `v` reads as a `T`.
fn fits<T: DeserializeOwned>(v: &Value) -> bool {
    T::deserialize(v).is_ok()
}

/// Where `v`, meant to be a `T` at `path`, does not fit (`None` when it
/// does): `path` itself when it is no object; else `path.name` for the
/// first of `fields` present that does not fit its type; else what `more`
/// finds in the object; else `path`.
fn locate_object<T: DeserializeOwned>(
    v: &Value,
    path: &str,
    fields: &[Field],
    more: impl FnOnce(&Map<String, Value>) -> Option<String>,
) -> Option<String> {
    if fits::<T>(v) {
        return None;
    }
    let Some(o) = v.as_object() else {
        return Some(path.to_string());
    };
    let bad = |(name, fits): &Field| {
        let v = o.get(*name)?;
        (!fits(v)).then(|| format!("{path}.{name}"))
    };
    fields
        .iter()
        .find_map(bad)
        .or_else(|| more(o))
        .or(Some(path.to_string()))
}

/// A `{row, col}` object's fields.
const ROW_COL: [Field; 2] = [("row", fits::<String>), ("col", fits::<String>)];

fn locate_txn(item: &Value, path: &str) -> Option<String> {
    let path = match item.get("id").and_then(Value::as_u64) {
        Some(id) => format!("{path} (transaction id {id})"),
        None => path.to_string(),
    };
    const FIELDS: [Field; 8] = [
        ("id", fits::<u64>),
        ("client", fits::<u64>),
        ("start_ts", fits::<u64>),
        ("commit_ts", fits::<Option<u64>>),
        ("invoke_ns", fits::<u64>),
        ("complete_ns", fits::<Option<u64>>),
        ("outcome", fits::<Outcome>),
        ("abort_reason", fits::<Option<String>>),
    ];
    locate_object::<Transaction>(item, &path, &FIELDS, |t| {
        t.get("ops")
            .and_then(|ops| locate_array(ops, &format!("{path}.ops"), locate_op))
            .or_else(|| locate_run(t.get("observer")?, &format!("{path}.observer")))
    })
}

fn locate_run(run: &Value, rp: &str) -> Option<String> {
    let fields: [Field; 3] = [("name", fits::<String>), ROW_COL[0], ROW_COL[1]];
    locate_object::<Option<ObserverRun>>(run, rp, &fields, |_| None)
}

fn locate_event(e: &Value, path: &str) -> Option<String> {
    let fields: [Field; 2] = [("t_ns", fits::<u64>), ("kind", fits::<String>)];
    locate_object::<Event>(e, path, &fields, |_| None)
}

fn locate_decl(d: &Value, path: &str) -> Option<String> {
    let fields: [Field; 3] = [("name", fits::<String>), ROW_COL[1], ("weak", fits::<bool>)];
    locate_object::<ObserverDecl>(d, path, &fields, |_| None)
}

/// The path of the problem in a `final_state` (which is known to be one,
/// since serde failed on the whole history).
fn locate_final_state(v: &Value) -> String {
    if FinalState::deserialize(v).is_ok() {
        return "$".to_string();
    }
    let Some(fs) = v.as_object() else {
        return "$.final_state".to_string();
    };
    let at = |key: &str, element: fn(&Value, &str) -> Option<String>| {
        locate_array(fs.get(key)?, &format!("$.final_state.{key}"), element)
    };
    at("cells", locate_cell)
        .or_else(|| at("locks", locate_lock))
        .or_else(|| at("notify", locate_cell_ref))
        .unwrap_or_else(|| "$.final_state".to_string())
}

fn locate_cell(c: &Value, path: &str) -> Option<String> {
    locate_object::<CellState>(c, path, &ROW_COL, |o| {
        let versions = o.get("versions")?;
        locate_array(versions, &format!("{path}.versions"), locate_version)
    })
}

fn locate_version(ver: &Value, p: &str) -> Option<String> {
    let fields: [Field; 4] = [
        ("start_ts", fits::<u64>),
        ("commit_ts", fits::<u64>),
        ("kind", fits::<VersionKind>),
        ("value", fits::<Option<String>>),
    ];
    locate_object::<Version>(ver, p, &fields, |_| None)
}

fn locate_lock(l: &Value, path: &str) -> Option<String> {
    let fields: [Field; 3] = [ROW_COL[0], ROW_COL[1], ("start_ts", fits::<u64>)];
    locate_object::<LockState>(l, path, &fields, |o| {
        locate_cell_ref(o.get("primary")?, &format!("{path}.primary"))
    })
}

/// A `{row, col}` reference (a lock's primary, a notify entry).
fn locate_cell_ref(c: &Value, path: &str) -> Option<String> {
    locate_object::<CellRef>(c, path, &ROW_COL, |_| None)
}

/// `Some(path.name)` when the field is present and does not fit `T`.
fn bad_field<T: DeserializeOwned>(
    obj: &Map<String, Value>,
    path: &str,
    name: &str,
) -> Option<String> {
    let v = obj.get(name)?;
    T::deserialize(v).is_err().then(|| format!("{path}.{name}"))
}

/// The path of the first bad element, or of the array itself if it is not one.
fn locate_array(
    v: &Value,
    path: &str,
    mut element: impl FnMut(&Value, &str) -> Option<String>,
) -> Option<String> {
    let Some(items) = v.as_array() else {
        return Some(path.to_string());
    };
    items
        .iter()
        .enumerate()
        .find_map(|(i, item)| element(item, &format!("{path}[{i}]")))
}

fn locate_op(op: &Value, path: &str) -> Option<String> {
    let value: Field = match op.get("f").and_then(Value::as_str) {
        Some("read") => ("value", fits::<Option<String>>),
        Some("write") => ("value", fits::<String>),
        Some("delete") => ("value", |_| true),
        _ if op.is_object() => return Some(format!("{path}.f")),
        _ => return Some(path.to_string()),
    };
    let fields = [ROW_COL[0], ROW_COL[1], value];
    locate_object::<Op>(op, path, &fields, |_| None)
}

/// An observer run must name a declared observer, and that observer's column.
fn check_run(
    h: &Compact,
    observers: &FxMap<&str, usize>,
    run: &Mark,
    path: &dyn Fn() -> String,
) -> Result<(), HistoryError> {
    let name = h.strs.get(run.name);
    let (row, col) = h.cell_name(run.cell);
    let Some(&k) = observers.get(name) else {
        let declared = if h.observers.is_empty() {
            "the history declares no observers".to_string()
        } else {
            const SHOWN: usize = 8;
            let mut names: Vec<String> = h
                .observers
                .iter()
                .take(SHOWN)
                .map(|d| format!("{:?}", d.name))
                .collect();
            if h.observers.len() > SHOWN {
                names.push(format!("... and {} more", h.observers.len() - SHOWN));
            }
            format!("declared: {}", names.join(", "))
        };
        return Err(HistoryError::at(
            format!("{}.observer.name", path()),
            format!(
                "the transaction ran observer {name:?}, which is not declared in $.observers ({declared})"
            ),
        ));
    };
    let decl = &h.observers[k];
    if decl.col != col {
        return Err(HistoryError::at(
            format!("{}.observer.col", path()),
            format!(
                "the transaction ran observer {name:?} for {row}.{col}, but that observer observes column {:?} \
                 ($.observers[{k}].col)",
                decl.col
            ),
        ));
    }
    Ok(())
}

/// The first transaction (in file order) whose id an earlier one has, as
/// (its index, the earlier one's index). Found by sorting (id, index) pairs,
/// which takes less time and memory than a hash map for millions of ids.
fn first_duplicate_id(h: &Compact) -> Option<(usize, usize)> {
    let mut ids: Vec<(u64, u32)> = h
        .txns
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id, i as u32))
        .collect();
    ids.sort_unstable();
    // Within a run of equal ids the indices ascend, so the run's first pair
    // is that id's first repeat and its earliest sighting; the smallest such
    // repeat over all runs is the one a scan in file order meets first.
    ids.windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| (w[1].1 as usize, w[0].1 as usize))
        .min()
}

/// The references serde cannot check.
pub(crate) fn validate(h: &Compact) -> Result<(), HistoryError> {
    validate_size(h, &LIMITS)?;
    if h.format != FORMAT {
        return Err(HistoryError::at(
            "$.format".to_string(),
            format!(
                "the format tag is {:?}; this checker reads {FORMAT:?}",
                h.format
            ),
        ));
    }
    let observers = validate_observers(h)?;
    validate_txns(h, &observers)?;
    validate_cells(h)
}

/// The largest history the checker judges: its indices are 32 bits wide (a
/// dependency-graph node takes 29 bits of one, for a transaction and its
/// completion point; a graph's edges, and the strings and cells the ops,
/// versions and store cells name, stay under 2^32). At these sizes it would
/// need far more memory than it could be given.
#[derive(Clone, Copy)]
struct Limits {
    txns: usize,
    ops: usize,
    versions: usize,
    cells: usize,
}

/// The checker's limits.
const LIMITS: Limits = Limits {
    txns: (1 << 27) - 1,
    ops: (1 << 29) - 1,
    versions: (1 << 29) - 1,
    cells: (1 << 29) - 1,
};

/// The history is within `limits`.
fn validate_size(h: &Compact, limits: &Limits) -> Result<(), HistoryError> {
    let over = |path: &str, what: &str, n: usize, most: usize| {
        Err(HistoryError::at(
            path.to_string(),
            format!("the history has {n} {what}; this checker judges at most {most}"),
        ))
    };
    if h.txns.len() > limits.txns {
        return over("$.transactions", "transactions", h.txns.len(), limits.txns);
    }
    if h.ops.len() > limits.ops {
        return over("$.transactions", "operations", h.ops.len(), limits.ops);
    }
    if h.versions.len() > limits.versions {
        let n = h.versions.len();
        return over("$.final_state", "store versions", n, limits.versions);
    }
    if h.state.len() > limits.cells {
        let n = h.state.len();
        return over("$.final_state", "store cells", n, limits.cells);
    }
    Ok(())
}

/// Observer names are unique; returns each one's index.
fn validate_observers(h: &Compact) -> Result<FxMap<&str, usize>, HistoryError> {
    let mut observers: FxMap<&str, usize> = FxMap::default();
    for (i, d) in h.observers.iter().enumerate() {
        if let Some(first) = observers.get(d.name.as_str()) {
            return Err(HistoryError::at(
                format!("$.observers[{i}].name"),
                format!(
                    "observer {:?} is declared twice: $.observers[{first}] has that name too; \
                     observer runs name their observer, so names must be unique",
                    d.name
                ),
            ));
        }
        observers.insert(d.name.as_str(), i);
    }
    Ok(observers)
}

/// Transaction ids are unique, observer runs name a declared observer,
/// outcomes agree with commit_ts, and nothing completes before it begins.
fn validate_txns(h: &Compact, observers: &FxMap<&str, usize>) -> Result<(), HistoryError> {
    let dup = first_duplicate_id(h);
    for (i, t) in h.txns.iter().enumerate() {
        let path = || format!("$.transactions[{i}] (transaction id {})", t.id);
        if let Some(run) = h.runs.get(t.observer as usize) {
            check_run(h, observers, run, &path)?;
        }
        if let Some((_, first)) = dup.filter(|&(at, _)| at == i) {
            return Err(HistoryError::at(
                path(),
                format!(
                    "duplicate transaction id {}: $.transactions[{first}] has it too",
                    t.id
                ),
            ));
        }
        validate_outcome(h, i, &path)?;
        if let Some(done) = t.complete_ns()
            && done < t.invoke_ns
        {
            return Err(HistoryError::at(
                format!("{}.complete_ns", path()),
                format!(
                    "complete_ns {done} is before invoke_ns {}: a transaction cannot complete before it begins",
                    t.invoke_ns
                ),
            ));
        }
    }
    Ok(())
}

/// A transaction's commit_ts agrees with its outcome.
fn validate_outcome(h: &Compact, i: usize, path: &dyn Fn() -> String) -> Result<(), HistoryError> {
    let t = &h.txns[i];
    match (t.outcome, t.commit_ts()) {
        // A read-only transaction commits without a commit timestamp
        // (Percolator's Commit() with no writes asks the oracle for none).
        (Outcome::Committed, None) => {
            let ops = h.ops(i);
            if let Some(k) = ops.iter().position(|o| o.kind != OpKind::Read) {
                let op = &ops[k];
                let (row, col) = h.cell_name(op.cell);
                let kind = if op.kind == OpKind::Delete {
                    "delete"
                } else {
                    "write"
                };
                return Err(HistoryError::at(
                    format!("{}.commit_ts", path()),
                    format!(
                        "the outcome is \"committed\" but commit_ts is missing or null, and the \
                         transaction is not read-only (ops[{k}] is a {kind} of {row}.{col}); a committed \
                         transaction that writes must give its commit timestamp (only a read-only one \
                         may leave it null)"
                    ),
                ));
            }
        }
        (Outcome::Aborted, Some(c)) => {
            return Err(HistoryError::at(
                format!("{}.commit_ts", path()),
                format!(
                    "the outcome is \"aborted\" but commit_ts is {c}; \
                     an aborted transaction has no commit timestamp"
                ),
            ));
        }
        _ => {}
    }
    Ok(())
}

/// Each cell is listed once, and each version's fields fit its kind.
fn validate_cells(h: &Compact) -> Result<(), HistoryError> {
    let mut cells: FxMap<u32, usize> = FxMap::default();
    for (i, c) in h.state.iter().enumerate() {
        let path = format!("$.final_state.cells[{i}]");
        if let Some(first) = cells.get(&c.cell) {
            let (row, col) = h.cell_name(c.cell);
            return Err(HistoryError::at(
                path,
                format!(
                    "cell (row {row:?}, col {col:?}) is listed twice: $.final_state.cells[{first}] has it too; \
                     list each cell once with all its versions",
                ),
            ));
        }
        cells.insert(c.cell, i);
        for (j, v) in h.versions[c.lo..c.hi].iter().enumerate() {
            validate_version(v, &|| format!("{path}.versions[{j}]"))?;
        }
    }
    Ok(())
}

/// A version's value and data_missing fit its kind.
fn validate_version(v: &CVersion, vpath: &dyn Fn() -> String) -> Result<(), HistoryError> {
    let has_value = v.value != NIL;
    if v.data_missing && v.kind != VersionKind::Put {
        return Err(HistoryError::at(
            format!("{}.data_missing", vpath()),
            "only a put version can have data_missing (a delete or rollback record has no data)",
        ));
    }
    match v.kind {
        VersionKind::Rollback => {
            if v.commit_ts != v.start_ts {
                return Err(HistoryError::at(
                    format!("{}.commit_ts", vpath()),
                    format!(
                        "a rollback record must have commit_ts equal to start_ts, found start_ts {} and commit_ts {}",
                        v.start_ts, v.commit_ts
                    ),
                ));
            }
            if has_value {
                return Err(HistoryError::at(
                    format!("{}.value", vpath()),
                    "a rollback record has no value (null or absent)",
                ));
            }
        }
        VersionKind::Put => {
            if v.data_missing && has_value {
                return Err(HistoryError::at(
                    format!("{}.value", vpath()),
                    "a put version with data_missing has no value (null or absent)",
                ));
            }
            if !v.data_missing && !has_value {
                return Err(HistoryError::at(
                    format!("{}.value", vpath()),
                    "a put version must have a value (or \"data_missing\": true when the store \
                     holds the write record but not its data)",
                ));
            }
        }
        VersionKind::Delete => {
            if has_value {
                return Err(HistoryError::at(
                    format!("{}.value", vpath()),
                    "a delete version has no value (null or absent)",
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::Txn;

    fn with_ids(ids: &[u64]) -> Compact {
        let mut c = Compact::new();
        for &id in ids {
            let mut t = Txn::default();
            (t.id, t.start_ts) = (id, 1);
            c.push_txn(t);
        }
        c
    }

    /// Each limit holds exactly up to its value, and one more is refused
    /// with the count and the limit named.
    #[test]
    fn a_history_beyond_the_limits_is_refused_by_name() {
        use crate::compact::{COp, CState, CVersion};
        use crate::history::VersionKind;
        let mut c = with_ids(&[1, 2, 3]);
        let op = COp {
            kind: OpKind::Read,
            cell: 0,
            value: NIL,
        };
        c.ops = vec![op; 4];
        let version = CVersion {
            start_ts: 1,
            commit_ts: 2,
            kind: VersionKind::Put,
            value: NIL,
            data_missing: false,
        };
        c.versions = vec![version; 5];
        c.state = vec![
            CState {
                cell: 0,
                lo: 0,
                hi: 0
            };
            6
        ];
        let exact = Limits {
            txns: 3,
            ops: 4,
            versions: 5,
            cells: 6,
        };
        assert!(validate_size(&c, &exact).is_ok());
        let refused = |limits: Limits, what: &str| {
            let e = validate_size(&c, &limits).unwrap_err().to_string();
            assert!(e.contains(what), "{e}");
        };
        refused(
            Limits { txns: 2, ..exact },
            "3 transactions; this checker judges at most 2",
        );
        refused(
            Limits { ops: 3, ..exact },
            "4 operations; this checker judges at most 3",
        );
        refused(
            Limits {
                versions: 4,
                ..exact
            },
            "5 store versions; this checker judges at most 4",
        );
        refused(
            Limits { cells: 5, ..exact },
            "6 store cells; this checker judges at most 5",
        );
    }

    #[test]
    fn first_duplicate_is_the_earliest_repeat_in_file_order() {
        assert_eq!(first_duplicate_id(&with_ids(&[5, 1, 9])), None);
        // 7 repeats at 3 and 5; 2 repeats at 4: the scan meets index 3 first,
        // whose id was first seen at 1.
        let c = with_ids(&[2, 7, 1, 7, 2, 7]);
        assert_eq!(first_duplicate_id(&c), Some((3, 1)));
        let c = with_ids(&[9, 9, 9]);
        assert_eq!(first_duplicate_id(&c), Some((1, 0)));
    }
}
