//! Writes a percsim history in the formats other checkers read: Jepsen/Elle
//! EDN (list-append and rw-register) and dbcop's JSON history. The formats
//! and how to run those tools on the output are in `docs/interop.md`.

use percsim_checker::{History, Op, Outcome, Transaction, VersionKind};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// The formats `percsim export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Elle list-append: `[:append k v]` and `[:r k [v ...]]` micro-ops.
    ElleAppend,
    /// Elle rw-register: `[:w k v]` and `[:r k v]` micro-ops.
    ElleRw,
    /// dbcop's JSON history: sessions of transactions of read and write events.
    Dbcop,
}

impl ExportFormat {
    /// Every format, in a fixed order.
    pub const ALL: [ExportFormat; 3] = [
        ExportFormat::ElleAppend,
        ExportFormat::ElleRw,
        ExportFormat::Dbcop,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ExportFormat::ElleAppend => "elle-append",
            ExportFormat::ElleRw => "elle-rw",
            ExportFormat::Dbcop => "dbcop",
        }
    }

    /// What the format is, in a few words.
    pub fn description(self) -> &'static str {
        match self {
            ExportFormat::ElleAppend => {
                "Jepsen/Elle EDN list-append history (list-append workload only)"
            }
            ExportFormat::ElleRw => "Jepsen/Elle EDN rw-register history (any workload)",
            ExportFormat::Dbcop => "dbcop JSON history (sessions of read/write events)",
        }
    }

    /// The format with this name.
    pub fn from_name(name: &str) -> Option<ExportFormat> {
        ExportFormat::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// Renders `history` in `format`. Fails with a sentence when the history
/// cannot be expressed in it (e.g. `elle-append` of a bank history).
pub fn export(history: &History, format: ExportFormat) -> Result<String, String> {
    match format {
        ExportFormat::ElleAppend => elle_append(history),
        ExportFormat::ElleRw => Ok(elle_rw(history)),
        ExportFormat::Dbcop => Ok(dbcop(history)),
    }
}

/// The column every list-append cell uses.
const LIST_COL: &str = "list";

/// One Jepsen operation (an invocation or a completion) before rendering.
struct EdnOp {
    time_ns: u64,
    /// Completions sort before invocations at the same instant.
    is_invoke: bool,
    seq: usize,
    kind: &'static str,
    process: u64,
    micro: Vec<String>,
}

fn kind_of(o: Outcome) -> &'static str {
    match o {
        Outcome::Committed => ":ok",
        Outcome::Aborted => ":fail",
        Outcome::Unknown => ":info",
    }
}

/// Completion times: a transaction whose client never learnt the outcome
/// gets its `:info` at the end of the history (its process never runs
/// again, as in Jepsen).
fn completion_times(h: &History) -> Vec<u64> {
    let end = h
        .transactions
        .iter()
        .map(|t| t.complete_ns.unwrap_or(t.invoke_ns))
        .max()
        .unwrap_or(0)
        + 1;
    h.transactions
        .iter()
        .map(|t| t.complete_ns.unwrap_or(end))
        .collect()
}

/// Jepsen process numbers: one per lane (client worker), numbered in order
/// of first use.
fn processes(h: &History) -> Vec<u64> {
    let lanes = crate::histfile::lanes(h);
    let mut ids: HashMap<crate::histfile::Lane, u64> = HashMap::new();
    let mut order: Vec<usize> = (0..lanes.len()).collect();
    order.sort_by_key(|&i| (h.transactions[i].invoke_ns, i));
    let mut out = vec![0; lanes.len()];
    for i in order {
        let next = ids.len() as u64;
        out[i] = *ids.entry(lanes[i]).or_insert(next);
    }
    out
}

/// Orders the operations in time and writes one EDN map per line.
fn render_edn(mut ops: Vec<EdnOp>, header: &str) -> String {
    ops.sort_by_key(|o| (o.time_ns, o.is_invoke, o.seq));
    let mut out = String::with_capacity(ops.len() * 96);
    out.push_str(header);
    for (index, o) in ops.iter().enumerate() {
        let _ = writeln!(
            out,
            "{{:index {index}, :time {}, :type {}, :process {}, :f :txn, :value [{}]}}",
            o.time_ns,
            o.kind,
            o.process,
            o.micro.join(" ")
        );
    }
    out
}

/// Adds the invocation and the completion of one transaction.
fn push_txn(
    ops: &mut Vec<EdnOp>,
    t: &Transaction,
    process: u64,
    complete_ns: u64,
    invoke: Vec<String>,
    done: Vec<String>,
) {
    let seq = ops.len();
    // A transaction that took no time keeps its invocation first.
    let instant = complete_ns <= t.invoke_ns;
    ops.push(EdnOp {
        time_ns: t.invoke_ns,
        is_invoke: !instant,
        seq,
        kind: ":invoke",
        process,
        micro: invoke,
    });
    ops.push(EdnOp {
        time_ns: complete_ns.max(t.invoke_ns),
        is_invoke: false,
        seq: seq + 1,
        kind: kind_of(t.outcome),
        process,
        micro: done,
    });
}

/// Dense integer ids for strings, in order of first appearance.
#[derive(Default)]
struct Ids(HashMap<String, u64>);

impl Ids {
    fn of(&mut self, s: &str) -> u64 {
        let next = self.0.len() as u64 + 1;
        *self.0.entry(s.to_string()).or_insert(next)
    }
}

fn elements(list: &str) -> Vec<&str> {
    list.split(',').filter(|e| !e.is_empty()).collect()
}

/// The newest committed value of every cell in the final state.
fn final_values(h: &History) -> BTreeMap<(&str, &str), Option<&str>> {
    let mut out = BTreeMap::new();
    for c in &h.final_state.cells {
        let newest = c
            .versions
            .iter()
            .filter(|v| v.kind != VersionKind::Rollback)
            .max_by_key(|v| v.commit_ts);
        if let Some(v) = newest {
            out.insert((c.row.as_str(), c.col.as_str()), v.value.as_deref());
        }
    }
    out
}

fn elle_append(h: &History) -> Result<String, String> {
    let mut rows: BTreeMap<&str, u64> = BTreeMap::new();
    for t in &h.transactions {
        for op in &t.ops {
            let (row, col) = op_cell(op);
            if col != LIST_COL {
                return Err(format!(
                    "elle-append needs a list-append history (every op on column {LIST_COL:?}); \
                     transaction {} touches {row}.{col}: use --format elle-rw",
                    t.id
                ));
            }
            rows.insert(row, 0);
        }
    }
    let finals = final_values(h);
    for (row, col) in finals.keys() {
        if *col == LIST_COL {
            rows.insert(row, 0);
        }
    }
    for (k, v) in rows.values_mut().enumerate() {
        *v = k as u64;
    }
    let mut elems = Ids::default();
    let completes = completion_times(h);
    let procs = processes(h);
    let mut ops = Vec::with_capacity(2 * h.transactions.len() + 2);
    for (i, t) in h.transactions.iter().enumerate() {
        if t.ops.is_empty() {
            continue;
        }
        let (invoke, done) = append_micro_ops(t, &rows, &mut elems)?;
        push_txn(&mut ops, t, procs[i], completes[i], invoke, done);
    }
    // The sweeper's final read of every list, after quiescence.
    let end = ops.iter().map(|o| o.time_ns).max().unwrap_or(0) + 1;
    let process = procs.iter().max().map_or(0, |p| p + 1);
    let mut reads = Vec::new();
    let mut nils = Vec::new();
    for (&(row, col), value) in &finals {
        if col != LIST_COL {
            continue;
        }
        let list: Vec<String> = elements(value.unwrap_or(""))
            .into_iter()
            .map(|e| elems.of(e).to_string())
            .collect();
        reads.push(format!("[:r {} [{}]]", rows[row], list.join(" ")));
        nils.push(format!("[:r {} nil]", rows[row]));
    }
    if !reads.is_empty() {
        for (time_ns, is_invoke, kind, micro) in
            [(end, true, ":invoke", nils), (end + 1, false, ":ok", reads)]
        {
            let seq = ops.len();
            ops.push(EdnOp {
                time_ns,
                is_invoke,
                seq,
                kind,
                process,
                micro,
            });
        }
    }
    let header = format!(
        ";; percsim list-append history (seed {}) as an Elle list-append history.\n\
         ;; Keys are list rows in sorted order; elements are numbered in order of first \
         appearance; the last op reads every list after quiescence.\n",
        h.seed
    );
    Ok(render_edn(ops, &header))
}

/// The micro-ops of one list-append transaction: its invocation (reads
/// unknown) and its completion (reads as observed; none for an abort).
fn append_micro_ops(
    t: &Transaction,
    rows: &BTreeMap<&str, u64>,
    elems: &mut Ids,
) -> Result<(Vec<String>, Vec<String>), String> {
    let mut known: HashMap<&str, Vec<&str>> = HashMap::new();
    let (mut invoke, mut done) = (Vec::new(), Vec::new());
    for op in &t.ops {
        match op {
            Op::Read { row, value, .. } => {
                let list = elements(value.as_deref().unwrap_or(""));
                let ids: Vec<String> = list.iter().map(|e| elems.of(e).to_string()).collect();
                invoke.push(format!("[:r {} nil]", rows[row.as_str()]));
                done.push(if t.outcome == Outcome::Aborted {
                    format!("[:r {} nil]", rows[row.as_str()])
                } else {
                    format!("[:r {} [{}]]", rows[row.as_str()], ids.join(" "))
                });
                known.entry(row).or_insert(list);
            }
            Op::Write { row, value, .. } => {
                let list = elements(value);
                let base = known.get(row.as_str()).cloned().unwrap_or_default();
                if list.len() < base.len() || list[..base.len()] != base[..] {
                    return Err(format!(
                        "transaction {} writes {row} = {value:?}, which does not extend \
                         the list it saw ({:?}): not a list-append history",
                        t.id,
                        base.join(",")
                    ));
                }
                for e in &list[base.len()..] {
                    let m = format!("[:append {} {}]", rows[row.as_str()], elems.of(e));
                    invoke.push(m.clone());
                    done.push(m);
                }
                known.insert(row, list);
            }
            Op::Delete { row, .. } => {
                return Err(format!(
                    "transaction {} deletes {row}: lists are only appended to",
                    t.id
                ));
            }
        }
    }
    Ok((invoke, done))
}

fn op_cell(op: &Op) -> (&str, &str) {
    match op {
        Op::Read { row, col, .. } | Op::Write { row, col, .. } | Op::Delete { row, col } => {
            (row, col)
        }
    }
}

/// Every write of the history with a unique version number, and each read
/// resolved to the version it returned.
struct Versions<'a> {
    /// Cells in sorted order, numbered from 0.
    keys: BTreeMap<(&'a str, &'a str), u64>,
    /// Per transaction, per op: the version number of a write or delete, or
    /// the version a read returned (`None`: the initial, empty version).
    op_version: Vec<Vec<Option<u64>>>,
    /// Writes of the initial data (transactions without ops whose versions
    /// are in the store): per transaction, (key, version).
    loads: Vec<Vec<(u64, u64)>>,
}

/// Numbers the versions. A read is matched to the version the store says
/// it saw (the newest committed version below its `start_ts`) when the
/// values agree, else to the transaction's own earlier write, else to any
/// write of that value, else to a fresh version nobody wrote.
fn versions(h: &History) -> Versions<'_> {
    let mut keys: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for t in &h.transactions {
        for op in &t.ops {
            keys.insert(op_cell(op), 0);
        }
    }
    for c in &h.final_state.cells {
        keys.insert((c.row.as_str(), c.col.as_str()), 0);
    }
    for (k, v) in keys.values_mut().enumerate() {
        *v = k as u64;
    }
    let mut n = Numbering {
        next: 0,
        by_value: HashMap::new(),
    };
    // Version numbers of writes, and of each transaction's last write per cell.
    let mut op_version: Vec<Vec<Option<u64>>> = Vec::with_capacity(h.transactions.len());
    let mut last_write: HashMap<(usize, u64), u64> = HashMap::new();
    for (i, t) in h.transactions.iter().enumerate() {
        let mut row = vec![None; t.ops.len()];
        for (j, op) in t.ops.iter().enumerate() {
            let value = match op {
                Op::Write { value, .. } => Some(value.as_str()),
                Op::Delete { .. } => None,
                Op::Read { .. } => continue,
            };
            let k = keys[&op_cell(op)];
            let v = n.fresh();
            row[j] = Some(v);
            last_write.insert((i, k), v);
            n.by_value.entry((k, value)).or_insert(v);
        }
        op_version.push(row);
    }
    let (committed, loads) = committed_versions(h, &keys, &mut last_write, &mut n);
    for (i, t) in h.transactions.iter().enumerate() {
        resolve_reads(t, &keys, &committed, &mut n, &mut op_version[i]);
    }
    Versions {
        keys,
        op_version,
        loads,
    }
}

/// Hands out version numbers and remembers the first version of each value.
struct Numbering<'a> {
    next: u64,
    by_value: HashMap<(u64, Option<&'a str>), u64>,
}

impl Numbering<'_> {
    fn fresh(&mut self) -> u64 {
        self.next += 1;
        self.next
    }
}

/// Per key, the committed versions (commit_ts, version, value) in commit
/// order; and the writes of the initial data by loader transactions.
type Committed<'a> = Vec<Vec<(u64, u64, Option<&'a str>)>>;

fn committed_versions<'a>(
    h: &'a History,
    keys: &BTreeMap<(&str, &str), u64>,
    last_write: &mut HashMap<(usize, u64), u64>,
    n: &mut Numbering<'a>,
) -> (Committed<'a>, Vec<Vec<(u64, u64)>>) {
    let by_start: HashMap<u64, usize> = h
        .transactions
        .iter()
        .enumerate()
        .map(|(i, t)| (t.start_ts, i))
        .collect();
    let mut loads = vec![Vec::new(); h.transactions.len()];
    let mut committed: Committed<'a> = vec![Vec::new(); keys.len()];
    for c in &h.final_state.cells {
        let k = keys[&(c.row.as_str(), c.col.as_str())];
        for v in c
            .versions
            .iter()
            .filter(|v| v.kind != VersionKind::Rollback)
        {
            let Some(&w) = by_start.get(&v.start_ts) else {
                continue;
            };
            let id = match last_write.get(&(w, k)) {
                Some(&id) => id,
                None if h.transactions[w].ops.is_empty() => {
                    let id = n.fresh();
                    loads[w].push((k, id));
                    last_write.insert((w, k), id);
                    n.by_value.entry((k, v.value.as_deref())).or_insert(id);
                    id
                }
                None => continue,
            };
            committed[k as usize].push((v.commit_ts, id, v.value.as_deref()));
        }
    }
    for list in &mut committed {
        list.sort_unstable();
    }
    (committed, loads)
}

/// Numbers the versions `t`'s reads returned (see [`versions`]).
fn resolve_reads<'a>(
    t: &'a Transaction,
    keys: &BTreeMap<(&str, &str), u64>,
    committed: &Committed<'a>,
    n: &mut Numbering<'a>,
    op_version: &mut [Option<u64>],
) {
    let mut own: HashMap<u64, (Option<&str>, u64)> = HashMap::new();
    for (j, op) in t.ops.iter().enumerate() {
        let k = keys[&op_cell(op)];
        let Op::Read { value, .. } = op else {
            let written = match op {
                Op::Write { value, .. } => Some(value.as_str()),
                _ => None,
            };
            own.insert(k, (written, op_version[j].unwrap_or(0)));
            continue;
        };
        let value = value.as_deref();
        let list = &committed[k as usize];
        let p = list.partition_point(|x| x.0 < t.start_ts);
        let snapshot = p.checked_sub(1).map(|q| list[q]);
        op_version[j] = match (snapshot, own.get(&k)) {
            (Some((_, id, v)), _) if v == value => Some(id),
            (None, _) if value.is_none() => None,
            (_, Some(&(v, id))) if v == value => Some(id),
            _ => match n.by_value.get(&(k, value)) {
                Some(&id) => Some(id),
                None if value.is_none() => None,
                None => Some(n.fresh()),
            },
        };
    }
}

fn elle_rw(h: &History) -> String {
    let vs = versions(h);
    let completes = completion_times(h);
    let procs = processes(h);
    let mut ops = Vec::with_capacity(2 * h.transactions.len());
    for (i, t) in h.transactions.iter().enumerate() {
        let mut invoke = Vec::new();
        let mut done = Vec::new();
        for &(k, v) in &vs.loads[i] {
            invoke.push(format!("[:w {k} {v}]"));
            done.push(format!("[:w {k} {v}]"));
        }
        for (j, op) in t.ops.iter().enumerate() {
            let k = vs.keys[&op_cell(op)];
            let v = vs.op_version[i][j].map_or("nil".to_string(), |v| v.to_string());
            if let Op::Read { .. } = op {
                invoke.push(format!("[:r {k} nil]"));
                let seen = if t.outcome == Outcome::Aborted {
                    "nil".to_string()
                } else {
                    v
                };
                done.push(format!("[:r {k} {seen}]"));
            } else {
                invoke.push(format!("[:w {k} {v}]"));
                done.push(format!("[:w {k} {v}]"));
            }
        }
        if invoke.is_empty() {
            continue;
        }
        push_txn(&mut ops, t, procs[i], completes[i], invoke, done);
    }
    let mut header = format!(
        ";; percsim history (seed {}) as an Elle rw-register history.\n\
         ;; Every write (and delete, written as a fresh version) has a unique value; \
         reads name the version they returned. Keys (cells):\n",
        h.seed
    );
    for ((row, col), k) in &vs.keys {
        let _ = writeln!(header, ";;   {k} = {row}.{col}");
    }
    render_edn(ops, &header)
}

/// dbcop's transaction: events and whether it committed.
#[derive(serde::Serialize)]
struct DbcopTxn {
    events: Vec<serde_json::Value>,
    committed: bool,
}

/// Transaction `i`'s events in dbcop's model: its writes (the loader's
/// first), and of its reads only the first of each key that comes before
/// the transaction's own write of that key (dbcop reads each variable at
/// most once, from the snapshot: a repeated read adds nothing, a read of an
/// own write is not a read of the database).
fn dbcop_events(vs: &Versions<'_>, i: usize, t: &Transaction) -> Vec<serde_json::Value> {
    let mut events = Vec::new();
    let mut touched = std::collections::BTreeSet::new();
    for &(k, v) in &vs.loads[i] {
        touched.insert(k);
        events.push(serde_json::json!({"Write": {"variable": k, "version": v}}));
    }
    for (j, op) in t.ops.iter().enumerate() {
        let k = vs.keys[&op_cell(op)];
        let v = vs.op_version[i][j];
        let first = touched.insert(k);
        match op {
            Op::Read { .. } if first => {
                events.push(serde_json::json!({"Read": {"variable": k, "version": v}}))
            }
            Op::Read { .. } => {}
            _ => events.push(serde_json::json!({"Write": {"variable": k, "version": v}})),
        }
    }
    events
}

fn dbcop(h: &History) -> String {
    let vs = versions(h);
    let in_store: std::collections::HashSet<u64> = h
        .final_state
        .cells
        .iter()
        .flat_map(|c| &c.versions)
        .filter(|v| v.kind != VersionKind::Rollback)
        .map(|v| v.start_ts)
        .collect();
    let procs = processes(h);
    let mut sessions: BTreeMap<u64, Vec<DbcopTxn>> = BTreeMap::new();
    let mut order: Vec<usize> = (0..h.transactions.len()).collect();
    order.sort_by_key(|&i| (h.transactions[i].invoke_ns, i));
    for i in order {
        let t = &h.transactions[i];
        let committed = match t.outcome {
            Outcome::Committed => true,
            Outcome::Aborted => false,
            Outcome::Unknown => in_store.contains(&t.start_ts),
        };
        let events = dbcop_events(&vs, i, t);
        // dbcop's model: only committed transactions are in a session.
        if events.is_empty() || !committed {
            continue;
        }
        sessions
            .entry(procs[i])
            .or_default()
            .push(DbcopTxn { events, committed });
    }
    let n_txn = sessions.values().map(Vec::len).max().unwrap_or(0);
    let n_evt = sessions
        .values()
        .flatten()
        .map(|t| t.events.len())
        .max()
        .unwrap_or(0);
    let doc = serde_json::json!({
        "params": {
            "id": h.seed,
            "n_node": sessions.len(),
            "n_variable": vs.keys.len(),
            "n_transaction": n_txn,
            "n_event": n_evt,
        },
        "info": format!("percsim history, seed {}", h.seed),
        "start": "1970-01-01T00:00:00Z",
        "end": "1970-01-01T00:00:00Z",
        "data": sessions.into_values().collect::<Vec<_>>(),
    });
    let mut s = serde_json::to_string(&doc).unwrap_or_default();
    s.push('\n');
    s
}
