//! Black-box checking of Jepsen/Elle list-append histories (EDN), which
//! carry no timestamps: each key's version order is inferred from the lists
//! clients read, as Elle does. The longest list read of a key is its order;
//! every other read must be a prefix of it (else `incompatible-order`). From
//! that order come ww, wr and rw dependencies between committed
//! transactions, plus real-time order from `:time`, and the cycles are named
//! as in the white-box rule `no_dependency_cycles`, with Elle's names
//! (G0, G1c, G-single-item, G-nonadjacent-item; G2-item, write skew, is
//! allowed under snapshot
//! isolation), with G1a (a committed read of an aborted append), G1b (a read
//! of an intermediate list) and lost updates.

use crate::cycles::{self, RW, Step, WR, WW};
use crate::edn::{self, EdnError, Node, Val};
use crate::history::Outcome;
use crate::report::{CycleStep, Draft, REPORT_FORMAT, Report, Sink, Stats};
use crate::{FindingClass, Rule};
use std::collections::HashMap;

/// Id of the rule about the lists themselves.
const LISTS_ID: Rule = Rule::ConsistentLists;
const LISTS_NAME: &str = "every read of a list is a prefix of the longest read of that list, no element appears twice in a list, and each element is appended once";
const CYCLES_NAME: &str = "the dependency graph of committed transactions, with each key's version order inferred from the lists read, has no cycle, aborted or intermediate read or lost update that the model judged against forbids";

/// Micro-ops shown when a transaction is described.
const MOPS_SHOWN: usize = 12;
/// Elements shown at the end of a long list.
const LIST_TAIL: usize = 6;

/// One micro-operation of a list-append transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mop {
    Append { key: u32, elem: u32 },
    Read { key: u32, list: Option<Vec<u32>> },
}

/// One transaction: an invocation and its completion.
#[derive(Debug, Clone)]
struct Txn {
    id: u64,
    process: String,
    outcome: Outcome,
    invoke_ns: Option<u64>,
    /// When the client learnt a definite outcome (`:ok` or `:fail`).
    complete_ns: Option<u64>,
    mops: Vec<Mop>,
    line: usize,
}

/// A Jepsen list-append history read from EDN.
#[derive(Debug, Clone)]
pub struct ElleHistory {
    txns: Vec<Txn>,
    keys: Vec<String>,
    elems: Vec<String>,
}

impl ElleHistory {
    /// Number of transactions (invocations of `:txn`).
    pub fn len(&self) -> usize {
        self.txns.len()
    }

    /// True when the history has no transaction.
    pub fn is_empty(&self) -> bool {
        self.txns.is_empty()
    }
}

/// True when `text` looks like EDN rather than JSON: its first form (after
/// whitespace and `;` comments) is a vector, a list, or a map whose first
/// key is a keyword.
pub fn is_edn(text: &str) -> bool {
    let mut rest = text.trim_start();
    while let Some(r) = rest.strip_prefix(';') {
        rest = r.split_once('\n').map_or("", |x| x.1).trim_start();
    }
    match rest.as_bytes().first() {
        Some(b'[') | Some(b'(') | Some(b'#') => true,
        Some(b'{') => rest[1..]
            .trim_start_matches([' ', '\t', '\n', '\r', ','])
            .starts_with(':'),
        _ => false,
    }
}

#[derive(Default)]
struct Interner {
    ids: HashMap<String, u32>,
    names: Vec<String>,
}

impl Interner {
    fn id(&mut self, name: String) -> u32 {
        if let Some(&i) = self.ids.get(&name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.ids.insert(name.clone(), i);
        self.names.push(name);
        i
    }
}

fn keyword(n: &Node) -> Option<&str> {
    match &n.val {
        Val::Keyword(k) => Some(k),
        _ => None,
    }
}

fn non_negative(n: Option<&Node>, what: &str) -> Result<Option<u64>, EdnError> {
    match n.map(|n| (&n.val, n.pos)) {
        None | Some((Val::Nil, _)) => Ok(None),
        Some((Val::Int(i), _)) if *i >= 0 => Ok(Some(*i as u64)),
        Some((_, pos)) => Err(EdnError::at(
            pos,
            format!("{what} must be a non-negative integer"),
        )),
    }
}

/// The most operations an Elle history may have: its transactions must fit
/// the dependency graph's 29-bit node ids, as `parse`'s limits say for JSON.
const MAX_OPS: usize = (1 << 27) - 1;

/// Reads an Elle list-append history: EDN operation maps (`:type`,
/// `:process`, `:f :txn`, `:value`, optional `:time` and `:index`), one per
/// top-level form or all in one vector. Operations whose `:f` is not `:txn`
/// (a nemesis's, say) are skipped. Errors name the line and column.
pub fn parse_elle(text: &str) -> Result<ElleHistory, EdnError> {
    let forms = edn::parse_all(text)?;
    let ops: &[Node] = match forms.as_slice() {
        [
            Node {
                val: Val::Vector(xs) | Val::List(xs),
                ..
            },
        ] => xs,
        xs => xs,
    };
    if ops.is_empty() {
        let pos = forms
            .first()
            .map_or(edn::Pos { line: 1, column: 1 }, |f| f.pos);
        return Err(EdnError::at(
            pos,
            "the history holds no operation: expected a vector of operation maps such as \
             {:type :ok, :f :txn, :value [[:append :x 1]]}"
                .to_string(),
        ));
    }
    if let Some(op) = ops.get(MAX_OPS) {
        return Err(EdnError::at(
            op.pos,
            format!(
                "the history has {} operations; this checker judges at most {MAX_OPS}",
                ops.len()
            ),
        ));
    }
    let mut b = Builder::default();
    for (i, op) in ops.iter().enumerate() {
        b.op(i, op)?;
    }
    Ok(ElleHistory {
        txns: b.txns,
        keys: b.keys.names,
        elems: b.elems.names,
    })
}

/// Pairs invocations with completions, process by process.
#[derive(Default)]
struct Builder {
    keys: Interner,
    elems: Interner,
    txns: Vec<Txn>,
    /// Process -> its transaction in flight.
    pending: HashMap<String, usize>,
}

impl Builder {
    /// Takes the `i`-th operation of the file.
    fn op(&mut self, i: usize, op: &Node) -> Result<(), EdnError> {
        if !matches!(op.val, Val::Map(_)) {
            return Err(EdnError::at(
                op.pos,
                "expected an operation map such as {:type :invoke, :process 0, :f :txn, :value [...]}".into(),
            ));
        }
        let field = |k: &str| {
            op.get(k)
                .ok_or_else(|| EdnError::at(op.pos, format!("the operation has no :{k}")))
        };
        if op.get("f").is_some_and(|f| keyword(f) != Some("txn")) {
            return Ok(());
        }
        let ty = field("type")?;
        let process = field("process")?.to_string();
        let time = non_negative(op.get("time"), ":time")?;
        let value = field("value")?;
        match keyword(ty) {
            Some("invoke") => {
                if let Some(&t) = self.pending.get(&process) {
                    return Err(EdnError::at(
                        op.pos,
                        format!(
                            "process {process} invokes again before its operation from line {} completed",
                            self.txns[t].line
                        ),
                    ));
                }
                let mops = micro_ops(value, &mut self.keys, &mut self.elems)?;
                self.pending.insert(process.clone(), self.txns.len());
                self.txns.push(Txn {
                    id: non_negative(op.get("index"), ":index")?.unwrap_or(i as u64),
                    process,
                    outcome: Outcome::Unknown,
                    invoke_ns: time,
                    complete_ns: None,
                    mops,
                    line: op.pos.line,
                });
                Ok(())
            }
            Some(kind @ ("ok" | "fail" | "info")) => {
                let Some(t) = self.pending.remove(&process) else {
                    return Err(EdnError::at(
                        op.pos,
                        format!(
                            "a :{kind} completion for process {process}, which has no operation in progress"
                        ),
                    ));
                };
                let txn = &mut self.txns[t];
                txn.outcome = match kind {
                    "ok" => Outcome::Committed,
                    "fail" => Outcome::Aborted,
                    _ => Outcome::Unknown,
                };
                if kind != "info" {
                    txn.complete_ns = time;
                }
                if !matches!(value.val, Val::Nil) {
                    txn.mops = micro_ops(value, &mut self.keys, &mut self.elems)?;
                }
                Ok(())
            }
            _ => Err(EdnError::at(
                ty.pos,
                format!("unknown :type {ty}; expected :invoke, :ok, :fail or :info"),
            )),
        }
    }
}

fn micro_ops(
    value: &Node,
    keys: &mut Interner,
    elems: &mut Interner,
) -> Result<Vec<Mop>, EdnError> {
    let (Val::Vector(xs) | Val::List(xs)) = &value.val else {
        return Err(EdnError::at(
            value.pos,
            "a transaction's :value must be a vector of micro-ops".into(),
        ));
    };
    let mut out = Vec::with_capacity(xs.len());
    for m in xs {
        let parts = match &m.val {
            Val::Vector(p) | Val::List(p) if p.len() == 3 => p,
            _ => {
                return Err(EdnError::at(
                    m.pos,
                    format!("a micro-op is [f key value], not {m}"),
                ));
            }
        };
        let key = keys.id(parts[1].to_string());
        out.push(match keyword(&parts[0]) {
            Some("append") => {
                if matches!(
                    parts[2].val,
                    Val::Vector(_) | Val::List(_) | Val::Map(_) | Val::Set(_) | Val::Nil
                ) {
                    return Err(EdnError::at(
                        parts[2].pos,
                        "an appended element must be a single value".into(),
                    ));
                }
                Mop::Append {
                    key,
                    elem: elems.id(parts[2].to_string()),
                }
            }
            Some("r") => Mop::Read {
                key,
                list: match &parts[2].val {
                    Val::Nil => None,
                    Val::Vector(l) | Val::List(l) => {
                        Some(l.iter().map(|e| elems.id(e.to_string())).collect())
                    }
                    _ => {
                        return Err(EdnError::at(
                            parts[2].pos,
                            "a read's value must be nil or a list of elements".into(),
                        ));
                    }
                },
            },
            _ => {
                return Err(EdnError::at(
                    parts[0].pos,
                    format!(
                        "unsupported micro-op {}: list-append histories use :append and :r",
                        parts[0]
                    ),
                ));
            }
        });
    }
    Ok(out)
}

/// What the checker derives from a history before judging it.
struct Facts<'h> {
    h: &'h ElleHistory,
    committed: Vec<bool>,
    /// (key, element) -> the transaction that appended it.
    writer: HashMap<(u32, u32), u32>,
    /// (txn, key) -> its last append to the key.
    last_append: HashMap<(u32, u32), u32>,
    /// Per key, the longest list read by a committed transaction.
    longest: Vec<&'h [u32]>,
    /// Per key, committed writers in version order, and each one's position.
    order: Vec<Vec<u32>>,
    position: HashMap<(u32, u32), u32>,
    /// Per key, the committed transactions that appended to it an element
    /// no read shows: each comes after the key's longest read (Elle's
    /// list-append analysis places them there), in no known order among
    /// themselves.
    unobserved: Vec<Vec<u32>>,
}

fn committed_reads<'h, 'c>(
    h: &'h ElleHistory,
    committed: &'c [bool],
) -> impl Iterator<Item = (u32, u32, &'h [u32])> + use<'h, 'c> {
    h.txns
        .iter()
        .enumerate()
        .filter(|(t, _)| committed[*t])
        .flat_map(|(t, x)| {
            x.mops.iter().filter_map(move |m| match m {
                Mop::Read { key, list: Some(l) } => Some((t as u32, *key, l.as_slice())),
                _ => None,
            })
        })
}

/// Per key, the committed transactions with an append to it that is in no
/// version order (no read shows it), each once, in history order.
fn unobserved_appenders(
    h: &ElleHistory,
    committed: &[bool],
    order: &[Vec<u32>],
    position: &HashMap<(u32, u32), u32>,
) -> Vec<Vec<u32>> {
    let mut unobserved = vec![Vec::new(); order.len()];
    for (t, x) in h.txns.iter().enumerate().filter(|(t, _)| committed[*t]) {
        for m in &x.mops {
            if let Mop::Append { key, .. } = *m
                && !position.contains_key(&(key, t as u32))
            {
                let u: &mut Vec<u32> = &mut unobserved[key as usize];
                if u.last() != Some(&(t as u32)) {
                    u.push(t as u32);
                }
            }
        }
    }
    unobserved
}

fn is_prefix(a: &[u32], b: &[u32]) -> bool {
    a.len() <= b.len() && a == &b[..a.len()]
}

impl<'h> Facts<'h> {
    fn build(h: &'h ElleHistory, lists: &mut Sink) -> Facts<'h> {
        let mut writer = HashMap::new();
        let mut last_append = HashMap::new();
        for (t, x) in h.txns.iter().enumerate() {
            for m in &x.mops {
                if let Mop::Append { key, elem } = *m {
                    if let Some(&first) = writer.get(&(key, elem)) {
                        lists.add(FindingClass::DuplicateAppends, || {
                            duplicate_append(h, key, elem, first, t as u32)
                        });
                    } else {
                        writer.insert((key, elem), t as u32);
                    }
                    last_append.insert((t as u32, key), elem);
                }
            }
        }
        // An indeterminate transaction committed if a read saw its appends.
        let definite: Vec<bool> = h
            .txns
            .iter()
            .map(|x| x.outcome == Outcome::Committed)
            .collect();
        let mut committed = definite.clone();
        let mut observed = vec![false; h.txns.len()];
        for (t, x) in h.txns.iter().enumerate() {
            if x.outcome == Outcome::Aborted {
                continue;
            }
            for m in &x.mops {
                if let Mop::Read { key, list: Some(l) } = m {
                    for e in l {
                        if let Some(&w) = writer.get(&(*key, *e))
                            && w as usize != t
                        {
                            observed[w as usize] = true;
                        }
                    }
                }
            }
        }
        for (t, x) in h.txns.iter().enumerate() {
            committed[t] |= x.outcome == Outcome::Unknown && observed[t];
        }
        let mut longest: Vec<&[u32]> = vec![&[]; h.keys.len()];
        for (_, key, l) in committed_reads(h, &committed) {
            if l.len() > longest[key as usize].len() {
                longest[key as usize] = l;
            }
        }
        let mut order = vec![Vec::new(); h.keys.len()];
        let mut position = HashMap::new();
        for (k, l) in longest.iter().enumerate() {
            let ord: &mut Vec<u32> = &mut order[k];
            for e in *l {
                if let Some(&w) = writer.get(&(k as u32, *e))
                    && committed[w as usize]
                    && ord.last() != Some(&w)
                    && !position.contains_key(&(k as u32, w))
                {
                    position.insert((k as u32, w), ord.len() as u32);
                    ord.push(w);
                }
            }
        }
        let unobserved = unobserved_appenders(h, &committed, &order, &position);
        Facts {
            h,
            committed,
            writer,
            last_append,
            longest,
            order,
            position,
            unobserved,
        }
    }

    /// Reads that contradict the inferred order or repeat an element.
    fn check_lists(&self, sink: &mut Sink) {
        let mut bad_key = vec![false; self.h.keys.len()];
        for (t, key, l) in committed_reads(self.h, &self.committed) {
            let mut sorted = l.to_vec();
            sorted.sort_unstable();
            if sorted.windows(2).any(|w| w[0] == w[1]) {
                sink.add(FindingClass::DuplicateElements, || {
                    Draft::new(
                        format!(
                            "T{} read key {} = {}, which holds an element twice",
                            self.id(t),
                            self.key(key),
                            self.list(l)
                        ),
                        vec![self.id(t)],
                        vec![self.describe(t)],
                    )
                });
            }
            if !bad_key[key as usize] && !is_prefix(l, self.longest[key as usize]) {
                bad_key[key as usize] = true;
                let other = committed_reads(self.h, &self.committed)
                    .find(|&(_, k, m)| k == key && m == self.longest[key as usize])
                    .map_or(t, |x| x.0);
                sink.add(FindingClass::IncompatibleOrder, || Draft::new(
                    format!(
                        "key {}: T{} read {}, which is not a prefix of {} read by T{}: no single version order explains both",
                        self.key(key), self.id(t), self.list(l), self.list(self.longest[key as usize]), self.id(other)
                    ),
                    vec![self.id(t), self.id(other)],
                    vec![self.describe(t), self.describe(other)],
                ));
            }
        }
    }

    fn id(&self, t: u32) -> u64 {
        self.h.txns[t as usize].id
    }

    fn key(&self, k: u32) -> &str {
        &self.h.keys[k as usize]
    }

    fn list(&self, l: &[u32]) -> String {
        let shown = &l[l.len().saturating_sub(LIST_TAIL)..];
        let names: Vec<&str> = shown
            .iter()
            .map(|e| self.h.elems[*e as usize].as_str())
            .collect();
        if shown.len() < l.len() {
            format!("[... {}] ({} elements)", names.join(" "), l.len())
        } else {
            format!("[{}]", names.join(" "))
        }
    }

    fn describe(&self, t: u32) -> String {
        describe_txn(self.h, t, self.committed[t as usize])
    }
}

fn describe_txn(h: &ElleHistory, t: u32, committed: bool) -> String {
    let x = &h.txns[t as usize];
    let outcome = match (x.outcome, committed) {
        (Outcome::Committed, _) => "ok",
        (Outcome::Aborted, _) => "fail",
        (Outcome::Unknown, true) => "info, its appends were read",
        (Outcome::Unknown, false) => "info",
    };
    let time = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let mut mops: Vec<String> = x
        .mops
        .iter()
        .take(MOPS_SHOWN)
        .map(|m| match m {
            Mop::Append { key, elem } => format!(
                "[:append {} {}]",
                h.keys[*key as usize], h.elems[*elem as usize]
            ),
            Mop::Read { key, list: None } => format!("[:r {} nil]", h.keys[*key as usize]),
            Mop::Read { key, list: Some(l) } => {
                let shown = &l[l.len().saturating_sub(LIST_TAIL)..];
                let names: Vec<&str> = shown
                    .iter()
                    .map(|e| h.elems[*e as usize].as_str())
                    .collect();
                let more = if shown.len() < l.len() { "... " } else { "" };
                format!("[:r {} [{more}{}]]", h.keys[*key as usize], names.join(" "))
            }
        })
        .collect();
    if x.mops.len() > MOPS_SHOWN {
        mops.push(format!("... {} more", x.mops.len() - MOPS_SHOWN));
    }
    format!(
        "T{} (process {}, {outcome}, line {}, invoked {}, completed {}): {}",
        x.id,
        x.process,
        x.line,
        time(x.invoke_ns),
        time(x.complete_ns),
        mops.join(" ")
    )
}

fn duplicate_append(h: &ElleHistory, key: u32, elem: u32, first: u32, again: u32) -> Draft {
    Draft::new(
        format!(
            "element {} is appended to key {} by T{} and again by T{}: a read of it cannot name its writer",
            h.elems[elem as usize],
            h.keys[key as usize],
            h.txns[first as usize].id,
            h.txns[again as usize].id
        ),
        vec![h.txns[first as usize].id, h.txns[again as usize].id],
        vec![describe_txn(h, first, false), describe_txn(h, again, false)],
    )
}

/// Judges an Elle list-append history: rule `consistent_lists` and rule
/// `no_dependency_cycles` (same anomaly classes as for percsim histories).
/// Snapshot isolation holds when the report passes; serializability when,
/// in addition, no G2-item was found ([`Report::serializable`]).
pub fn check_elle(h: &ElleHistory) -> Report {
    let mut lists = Sink::new(LISTS_ID);
    let f = Facts::build(h, &mut lists);
    f.check_lists(&mut lists);
    let mut sink = Sink::new(cycles::ID);
    let mut allowed = Sink::new(cycles::ID);
    let edges = dependency_edges(&f, &mut sink);
    let edge_count = edges.len() as u64;
    let n = h.txns.len();
    let completions = (0..n as u32)
        .filter(|&t| f.committed[t as usize])
        .filter_map(|t| h.txns[t as usize].complete_ns.map(|d| (d, t)))
        .collect();
    let invocations = (0..n as u32)
        .filter(|&t| f.committed[t as usize])
        .filter_map(|t| h.txns[t as usize].invoke_ns.map(|i| (t, i)));
    let g = cycles::build_graph(n, edges, completions, invocations);
    cycles::each_cycle(&g, |class, steps| {
        let target = if class.is_allowed() {
            &mut allowed
        } else {
            &mut sink
        };
        target.add(class, || explain_cycle(&f, class, steps));
    });
    let mut rules = vec![lists.into_rule(LISTS_NAME), sink.into_rule(CYCLES_NAME)];
    rules.iter_mut().for_each(elle_names);
    let count = |o: Outcome| h.txns.iter().filter(|x| x.outcome == o).count() as u64;
    let mops = h.txns.iter().flat_map(|x| &x.mops);
    let reads = mops
        .clone()
        .filter(|m| matches!(m, Mop::Read { .. }))
        .count() as u64;
    let appends = mops.count() as u64 - reads;
    let stats = Stats {
        transactions: n as u64,
        committed: count(Outcome::Committed),
        aborted: count(Outcome::Aborted),
        unknown: count(Outcome::Unknown),
        committed_in_store_only: (0..n)
            .filter(|&t| f.committed[t] && h.txns[t].outcome == Outcome::Unknown)
            .count() as u64,
        reads,
        writes: appends,
        cells: h.keys.len() as u64,
        unique_value_cells: h.keys.len() as u64,
        graph_edges: edge_count,
        ..Stats::default()
    };
    Report {
        format: REPORT_FORMAT.to_string(),
        passed: rules.iter().all(|r| r.passed),
        seed: 0,
        stats,
        model: String::new(),
        model_source: String::new(),
        satisfies: Vec::new(),
        rules,
        allowed: allowed.into_allowed(),
    }
    // EDN has no header to name a model in.
    .judged_by(crate::Model::DEFAULT, crate::ModelSource::Default)
}

/// ww, wr and rw edges between committed transactions (real time is added
/// by the graph builder); G1a, G1b and lost updates go to `sink`.
fn dependency_edges(f: &Facts<'_>, sink: &mut Sink) -> Vec<(u32, u32, u32, u8)> {
    let mut edges = Vec::new();
    for (k, ord) in f.order.iter().enumerate() {
        for w in ord.windows(2) {
            edges.push((w[0], w[1], k as u32, WW));
        }
        // An unobserved append comes after every observed one.
        if let Some(&last) = ord.last() {
            for &u in f.unobserved[k].iter().filter(|&&u| u != last) {
                edges.push((last, u, k as u32, WW));
            }
        }
    }
    let mut lost: Vec<(u32, u32, u32)> = Vec::new();
    for (t, x) in f.h.txns.iter().enumerate() {
        let r = t as u32;
        if !f.committed[t] {
            continue;
        }
        for m in &x.mops {
            let Mop::Read { key, list } = m else { continue };
            let k = *key;
            let l: &[u32] = list.as_deref().unwrap_or(&[]);
            if list.is_some() && !is_prefix(l, f.longest[k as usize]) {
                continue;
            }
            let aborted = l.iter().find_map(|e| {
                f.writer
                    .get(&(k, *e))
                    .filter(|&&w| w != r && !f.committed[w as usize])
                    .map(|&w| (w, *e))
            });
            if let Some((w, e)) = aborted {
                sink.add(FindingClass::G1a, || aborted_read(f, r, w, k, e, l));
                continue;
            }
            let ord = &f.order[k as usize];
            let next = match l.last() {
                None => 0,
                Some(e) => {
                    let Some(&w) = f.writer.get(&(k, *e)) else {
                        continue;
                    };
                    if w == r {
                        continue;
                    }
                    if f.last_append.get(&(w, k)) != Some(e) {
                        sink.add(FindingClass::G1b, || intermediate_read(f, r, w, k, l));
                        // As Elle: the read depends on the writer (wr), and
                        // the writer's later append to the key came after
                        // the version read (rw): a G-single-item besides.
                        edges.push((w, r, k, WR));
                        edges.push((r, w, k, RW));
                        continue;
                    }
                    edges.push((w, r, k, WR));
                    f.position.get(&(k, w)).map_or(u32::MAX, |p| p + 1)
                }
            };
            if let Some(&x) = ord.get(next as usize)
                && x != r
            {
                edges.push((r, x, k, RW));
            }
            if next as usize == ord.len() {
                // It read the last observed version: every unobserved
                // append to the key came after what it read.
                for &u in f.unobserved[k as usize].iter().filter(|&&u| u != r) {
                    edges.push((r, u, k, RW));
                }
            }
            if next != u32::MAX && f.last_append.contains_key(&(r, k)) {
                lost.push((k, next, r));
            }
        }
    }
    lost.sort_unstable();
    lost.dedup();
    for group in lost.chunk_by(|a, b| a.0 == b.0 && a.1 == b.1) {
        if group.len() >= 2 {
            sink.add(FindingClass::LostUpdate, || lost_update(f, group));
        }
    }
    edges
}

fn aborted_read(f: &Facts<'_>, r: u32, w: u32, k: u32, e: u32, l: &[u32]) -> Draft {
    let why = if f.h.txns[w as usize].outcome == Outcome::Aborted {
        "it failed"
    } else {
        "its outcome is unknown and nothing else shows it committed"
    };
    Draft::new(
        format!(
            "T{} committed after reading key {} = {}, which holds element {} appended by T{}, but T{} never committed ({why})",
            f.id(r),
            f.key(k),
            f.list(l),
            f.h.elems[e as usize],
            f.id(w),
            f.id(w)
        ),
        vec![f.id(r), f.id(w)],
        vec![f.describe(r), f.describe(w)],
    )
}

fn intermediate_read(f: &Facts<'_>, r: u32, w: u32, k: u32, l: &[u32]) -> Draft {
    let last = f.last_append[&(w, k)];
    Draft::new(
        format!(
            "T{} read key {} = {}, an intermediate state: T{} appended {} to it later in the same transaction",
            f.id(r),
            f.key(k),
            f.list(l),
            f.id(w),
            f.h.elems[last as usize]
        ),
        vec![f.id(r), f.id(w)],
        vec![f.describe(r), f.describe(w)],
    )
}

fn lost_update(f: &Facts<'_>, group: &[(u32, u32, u32)]) -> Draft {
    let (k, pos) = (group[0].0, group[0].1);
    let version = match pos
        .checked_sub(1)
        .and_then(|p| f.order[k as usize].get(p as usize))
    {
        Some(&w) => format!("the version ending in T{}'s append", f.id(w)),
        None => "the empty list".to_string(),
    };
    let names: Vec<String> = group
        .iter()
        .take(cycles::MAX_DESCRIBED)
        .map(|g| format!("T{}", f.id(g.2)))
        .collect();
    Draft::new(
        format!(
            "{} all read key {} at {version}, all appended to it and all committed: all but one of these updates are lost",
            names.join(", "),
            f.key(k)
        ),
        group.iter().map(|g| f.id(g.2)).collect(),
        group.iter().take(8).map(|g| f.describe(g.2)).collect(),
    )
}

fn explain_cycle(f: &Facts<'_>, class: FindingClass, steps: &[Step]) -> Draft {
    let (chain, txns, rt) = cycles::cycle_summary(steps, |t| f.id(t));
    let mut d = Draft::new(
        format!(
            "{class} ({}) among {} committed transactions{rt}: {chain}",
            cycles::plain(class),
            txns.len()
        ),
        txns.iter().map(|&t| f.id(t)).collect(),
        txns.iter()
            .take(cycles::MAX_DESCRIBED)
            .map(|&t| f.describe(t))
            .collect(),
    );
    d.cycle = steps
        .iter()
        .take(cycles::MAX_STEPS)
        .map(|s| CycleStep {
            from: f.id(s.from),
            to: f.id(s.to),
            edge: cycles::edge_name(s.kind).to_string(),
            explanation: explain_step(f, s),
        })
        .collect();
    d
}

fn read_of(f: &Facts<'_>, t: u32, k: u32) -> String {
    f.h.txns[t as usize]
        .mops
        .iter()
        .find_map(|m| match m {
            Mop::Read { key, list } if *key == k => Some(f.list(list.as_deref().unwrap_or(&[]))),
            _ => None,
        })
        .unwrap_or_else(|| "?".to_string())
}

fn explain_step(f: &Facts<'_>, s: &Step) -> String {
    let (a, b, k) = (f.id(s.from), f.id(s.to), s.cell);
    let elem = |t: u32| {
        f.last_append
            .get(&(t, k))
            .map_or("?", |e| f.h.elems[*e as usize].as_str())
    };
    let unseen = f
        .unobserved
        .get(k as usize)
        .is_some_and(|u| u.contains(&s.to));
    match s.kind {
        WW if unseen => format!(
            "T{b}'s append of {} to key {} is in no read, so it comes after every element read, \
             the last being T{a}'s append of {} in the longest read {}",
            elem(s.to),
            f.key(k),
            elem(s.from),
            f.list(f.longest[k as usize])
        ),
        RW if unseen => format!(
            "T{a} read key {} = {}, the last version any read shows, and T{b}'s append of {} is in no read, \
             so it came after that version",
            f.key(k),
            read_of(f, s.from, k),
            elem(s.to)
        ),
        WW => format!(
            "T{b}'s append of {} to key {} comes right after T{a}'s append of {} in the longest read {}",
            elem(s.to),
            f.key(k),
            elem(s.from),
            f.list(f.longest[k as usize])
        ),
        WR => format!(
            "T{b} read key {} = {}, ending in T{a}'s append of {}",
            f.key(k),
            read_of(f, s.to, k),
            elem(s.from)
        ),
        RW => format!(
            "T{a} read key {} = {}, and T{b}'s append of {} is the next version of it",
            f.key(k),
            read_of(f, s.from, k),
            elem(s.to)
        ),
        _ => {
            let done = f.h.txns[s.from as usize].complete_ns.unwrap_or(0);
            let inv = f.h.txns[s.to as usize].invoke_ns.unwrap_or(0);
            format!("T{a} completed (time {done}) before T{b} was invoked (time {inv})")
        }
    }
}

/// Renames a rule's classes to Elle's own names ([`FindingClass::elle_name`]).
fn elle_names(rule: &mut crate::RuleReport) {
    let rename = |name: &str| {
        FindingClass::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .map_or(name.to_string(), |c| c.elle_name().to_string())
    };
    rule.counts = std::mem::take(&mut rule.counts)
        .into_iter()
        .map(|(k, n)| (rename(&k), n))
        .collect();
    for f in &mut rule.violations {
        f.class = rename(&f.class);
    }
}
