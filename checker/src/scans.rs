//! Rule `predicate_reads`: a scan is a predicate read (Adya's term): it must
//! return exactly the cells of its predicate (its row range and columns) that
//! hold a value at its snapshot, each with that value.
//!
//! The expected answer comes from the committed versions (the store's write
//! records and what clients were told), never from the protocol. Three ways
//! to break it:
//! * `missing_row`: a cell of the range had a visible value, but the scan did
//!   not return it (the bug that per-row read rules cannot see: a dropped row
//!   leaves no read behind to judge);
//! * `phantom`: the scan returned a cell that had no visible value at its
//!   snapshot (never written, deleted, committed only later, or never
//!   committed), that lies outside its range or columns, or returned a cell
//!   twice;
//! * `wrong_version`: the cell is in the answer, with another value than the
//!   one visible at the snapshot.
//!
//! A scan reads the snapshot only: the scanning transaction's own buffered
//! writes are not part of the answer. The snapshot is its transaction's
//! (the transaction's `start_ts`), whatever `start_ts` the scan itself
//! records: a scan that read at another timestamp than its transaction's
//! shows as the rows that differ between the two.

use crate::ctx::{Ctx, Cv, NONE, fmt_value};
use crate::history::{Scan, ScanCell};
use crate::report::{Draft, Sink};
use crate::{FindingClass, Rule};
use std::cmp::Ordering;

pub(crate) const ID: Rule = Rule::PredicateReads;
pub(crate) const NAME: &str = "every scan returns exactly the cells of its row range and columns with a value visible at its start_ts, with that value (no missing row, no phantom, no wrong version)";

/// Every cell of the history as (row, col, cell id), sorted by row then column.
type CellIndex<'a> = Vec<(&'a str, &'a str, u32)>;

pub(crate) fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    if ctx.h.scans.is_empty() {
        sink.note("no scans recorded: nothing to check".to_string());
        return;
    }
    let mut index: CellIndex<'_> = (0..ctx.n_cells() as u32)
        .map(|c| {
            let (row, col) = ctx.cell(c);
            (row, col, c)
        })
        .collect();
    index.sort_unstable();
    for (t, scan) in &ctx.h.scans {
        judge(ctx, &index, *t, scan, sink);
    }
}

/// The cells a scan should have returned, with the versions it should have
/// seen, in row then column order.
fn expected<'a>(ctx: &Ctx<'a>, index: &CellIndex<'a>, t: u32, scan: &Scan) -> Vec<(u32, Cv)> {
    let lo = index.partition_point(|e| e.0 < scan.start_row.as_str());
    let hi = index
        .partition_point(|e| e.0 < scan.end_row.as_str())
        .max(lo);
    index[lo..hi]
        .iter()
        .filter(|e| scan.cols.is_empty() || scan.cols.iter().any(|c| c == e.1))
        .filter_map(|e| visible(ctx, e.2, snapshot(ctx, t)).map(|v| (e.2, v)))
        .filter(|(_, v)| v.value.is_some())
        .collect()
}

/// The snapshot the scans of transaction `t` must read: its `start_ts`.
fn snapshot(ctx: &Ctx<'_>, t: u32) -> u64 {
    ctx.txn(t).start_ts
}

/// The newest committed version of `cell` below `ts`.
fn visible<'a>(ctx: &Ctx<'a>, cell: u32, ts: u64) -> Option<Cv> {
    let versions = ctx.versions(cell);
    let p = versions.partition_point(|v| v.commit_ts < ts);
    p.checked_sub(1).map(|k| versions[k])
}

fn in_predicate(scan: &Scan, row: &str, col: &str) -> bool {
    scan.start_row.as_str() <= row
        && row < scan.end_row.as_str()
        && (scan.cols.is_empty() || scan.cols.iter().any(|c| c == col))
}

fn judge(ctx: &Ctx<'_>, index: &CellIndex<'_>, t: u32, scan: &Scan, sink: &mut Sink) {
    let want = expected(ctx, index, t, scan);
    let mut got: Vec<&ScanCell> = scan.returned.iter().collect();
    got.sort_by(|a, b| (&a.row, &a.col).cmp(&(&b.row, &b.col)));
    let cell_of = |row: &str, col: &str| {
        let k = index.partition_point(|e| (e.0, e.1) < (row, col));
        index
            .get(k)
            .filter(|e| (e.0, e.1) == (row, col))
            .map(|e| e.2)
    };
    let (mut i, mut j) = (0, 0);
    while i < want.len() || j < got.len() {
        let order = match (want.get(i), got.get(j)) {
            (Some(&(c, _)), Some(g)) => ctx.cell(c).cmp(&(g.row.as_str(), g.col.as_str())),
            (Some(_), None) => Ordering::Less,
            _ => Ordering::Greater,
        };
        match order {
            Ordering::Less => {
                missing(ctx, t, scan, want[i], sink);
                i += 1;
            }
            Ordering::Greater => {
                let g = got[j];
                let twice = j > 0 && (&got[j - 1].row, &got[j - 1].col) == (&g.row, &g.col);
                phantom(ctx, t, scan, g, cell_of(&g.row, &g.col), twice, sink);
                j += 1;
            }
            Ordering::Equal => {
                let (c, v) = want[i];
                if ctx.text(v.value) != Some(got[j].value.as_str()) {
                    wrong(ctx, t, scan, (c, v), got[j], sink);
                }
                i += 1;
                j += 1;
            }
        }
    }
}

/// "T5's scan of balance in rows ["a", "b") at start_ts 40".
fn scan_name(ctx: &Ctx<'_>, t: u32, scan: &Scan) -> String {
    let cols = match scan.cols.len() {
        0 => "every column".to_string(),
        _ => scan.cols.join(", "),
    };
    let at = snapshot(ctx, t);
    let own = if scan.start_ts == at {
        String::new()
    } else {
        format!(" (the scan records start_ts {})", scan.start_ts)
    };
    format!(
        "T{}'s scan of {cols} in rows [{:?}, {:?}) at start_ts {at}{own}",
        ctx.id(t),
        scan.start_row,
        scan.end_row,
    )
}

/// The scanning transaction and, when known, the writer of a version.
fn involved(ctx: &Ctx<'_>, t: u32, writer: u32) -> (Vec<u64>, Vec<String>) {
    let mut txns = vec![ctx.id(t)];
    let mut details = vec![ctx.describe_txn(t)];
    if writer != NONE && writer != t {
        txns.push(ctx.id(writer));
        details.push(ctx.describe_txn(writer));
    }
    (txns, details)
}

fn missing(ctx: &Ctx<'_>, t: u32, scan: &Scan, (c, v): (u32, Cv), sink: &mut Sink) {
    sink.add(FindingClass::MissingRow, || {
        let (txns, details) = involved(ctx, t, v.writer);
        Draft::new(
            format!(
                "{} did not return {} = {}, the newest version committed before {} \
                 (written by {}, committed at {}): the row is missing from the predicate's answer",
                scan_name(ctx, t, scan),
                ctx.cell_name(c),
                ctx.fmt(v.value),
                snapshot(ctx, t),
                ctx.tname(v.writer),
                v.commit_ts
            ),
            txns,
            details,
        )
    });
}

fn phantom(
    ctx: &Ctx<'_>,
    t: u32,
    scan: &Scan,
    g: &ScanCell,
    cell: Option<u32>,
    twice: bool,
    sink: &mut Sink,
) {
    sink.add(FindingClass::Phantom, || {
        let name = format!("{}.{}", g.row, g.col);
        let seen = fmt_value(Some(&g.value));
        let mut writer = NONE;
        let why = if twice {
            format!("it returned {name} twice")
        } else if !in_predicate(scan, &g.row, &g.col) {
            format!("{name} is outside its rows and columns")
        } else {
            let later = cell.and_then(|c| {
                ctx.versions(c)
                    .iter()
                    .find(|v| ctx.text(v.value) == Some(g.value.as_str()))
                    .copied()
            });
            let before = cell.and_then(|c| visible(ctx, c, snapshot(ctx, t)));
            match (before, later) {
                (Some(b), _) if b.value.is_none() => {
                    writer = b.writer;
                    format!(
                        "{name} was deleted before it (by {}, committed at {})",
                        ctx.tname(b.writer),
                        b.commit_ts
                    )
                }
                (_, Some(l)) => {
                    writer = l.writer;
                    format!(
                        "{seen} was committed only at {} (by {}), after the snapshot",
                        l.commit_ts,
                        ctx.tname(l.writer)
                    )
                }
                _ => format!("no version of {name} holding {seen} was committed before it"),
            }
        };
        let (txns, details) = involved(ctx, t, writer);
        Draft::new(
            format!(
                "{} returned {name} = {seen}, a phantom: {why}",
                scan_name(ctx, t, scan)
            ),
            txns,
            details,
        )
    });
}

fn wrong(ctx: &Ctx<'_>, t: u32, scan: &Scan, (c, v): (u32, Cv), g: &ScanCell, sink: &mut Sink) {
    sink.add(FindingClass::WrongVersion, || {
        let (txns, details) = involved(ctx, t, v.writer);
        Draft::new(
            format!(
                "{} returned {} = {}, but the newest version committed before {} is {} \
                 (written by {}, committed at {})",
                scan_name(ctx, t, scan),
                ctx.cell_name(c),
                fmt_value(Some(&g.value)),
                snapshot(ctx, t),
                ctx.fmt(v.value),
                ctx.tname(v.writer),
                v.commit_ts
            ),
            txns,
            details,
        )
    });
}
