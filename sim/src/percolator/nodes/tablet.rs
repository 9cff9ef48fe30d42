//! A tablet server: runs row steps atomically on the rows of the tablets it
//! owns. Rows live in the durable store, so a crash loses no acknowledged
//! row transaction; a request in flight at a crash may or may not have been
//! applied, and its reply is lost.

use crate::percolator::config::CostModel;
use crate::percolator::ids::{PercolatorCounter, PercolatorEvent, kinds};
use crate::percolator::rpc::{NotServing, Ping, RawCall, RawReply, RowCall, ScanCall, ScanNotify};
use crate::percolator::{Cluster, CpuKind, Durable, tablet_server_addr};
use crate::world::ClockSkew;
use crate::world::port::Port;
use crate::world::serve::{AfterHandler, serve, serve_costed, serve_costed_at_points};
use percsim_protocol::percolator::actions::{
    CleanupAction, GetResult, PrewriteError, ResolveAction, RowReply, RowRequest, execute, get::get,
};
use percsim_protocol::percolator::client::Point;
use percsim_protocol::percolator::row::Row;
use percsim_protocol::percolator::{CellKey, Ts};
use std::sync::Arc;

/// A request handler's result and the CPU time it cost (µs).
type Costed<T> = (Result<T, NotServing>, u64);

pub(crate) async fn main(cluster: Arc<Cluster>, me: usize) {
    let ep = Port::bind(&cluster.world, tablet_server_addr(me));
    let at = CpuKind::Tablet.server(&ep, &cluster);
    serve(&ep, |_: Ping| async {});
    serve_costed_at_points(&at, move |w: &Cluster, call: RowCall| row_step(w, me, call));
    serve_costed(&at, move |w: &Cluster, call: ScanCall| scan(w, me, call));
    serve_costed(&at, move |w: &Cluster, call: ScanNotify| {
        scan_notify(w, me, call)
    });
    serve_costed(&at, move |w: &Cluster, call: RawCall| raw(w, me, call));
    std::future::pending::<()>().await
}

/// Cells a row step examines besides reading the row: the metadata columns
/// (lock, write) and the data column, as each step's rule reads them.
fn cells_read(req: &RowRequest) -> u64 {
    match req {
        RowRequest::Get { .. } | RowRequest::GetVersion { .. } => 3,
        RowRequest::Prewrite(_)
        | RowRequest::Cleanup { .. }
        | RowRequest::Resolve { .. }
        | RowRequest::ClearNotify { .. } => 2,
        RowRequest::Commit { .. } | RowRequest::Touch { .. } => 1,
        RowRequest::WeakNotify { .. } => 0,
    }
}

/// The CPU cost of a row step that examined `read` cells (0: a blind write
/// that reads no row) and wrote or erased `written` cells.
fn row_cost(c: &CostModel, read: u64, written: u64) -> u64 {
    let row = if read > 0 { c.row_read_us } else { 0 };
    c.request_us + row + read * c.cell_read_us + written * c.cell_write_us
}

/// Whether server `me` owns `tablet` now and `row` belongs to it.
fn serves(cluster: &Cluster, d: &Durable, me: usize, tablet: usize, row: &str) -> bool {
    d.tablet_owner.get(tablet).copied().flatten() == Some(me) && cluster.tablets.of(row) == tablet
}

/// One single-row transaction: read, decide, apply, with nothing in between.
fn row_step(
    cluster: &Cluster,
    me: usize,
    call: RowCall,
) -> (Result<RowReply, NotServing>, u64, AfterHandler) {
    let costs = &cluster.cfg.costs;
    let mut d = cluster.durable();
    if !serves(cluster, &d, me, call.tablet, &call.row) {
        return (Err(NotServing), costs.request_us, AfterHandler::Reply);
    }
    let (reply, mutation) = match d.rows.get(&call.row) {
        Some(row) => execute(row, &call.row, &call.req, cluster.cfg.ablations),
        None => execute(&Row::default(), &call.row, &call.req, cluster.cfg.ablations),
    };
    note_rollbacks(cluster, &call, &reply);
    note_refresh(cluster, me, &call, &reply, !mutation.is_empty());
    if matches!(reply, RowReply::Prewrite(Err(PrewriteError::RolledBack))) {
        // A late or duplicated prewrite met its transaction's rollback record.
        cluster.bump(PercolatorCounter::StoreLatePrewriteRejected);
        if let RowRequest::Prewrite(p) = &call.req {
            cluster.event(
                PercolatorEvent::LatePrewriteRejected,
                serde_json::json!({"row": call.row, "col": p.col, "start_ts": p.start_ts.0}),
            );
        }
    }
    let cost = row_cost(costs, cells_read(&call.req), mutation.ops.len() as u64);
    if mutation.is_empty() {
        return (Ok(reply), cost, AfterHandler::Reply);
    }
    let row = d.rows.entry(call.row.clone()).or_default();
    row.apply(&mutation);
    if row.cols.is_empty() && row.notify.is_empty() {
        d.rows.remove(&call.row);
    }
    drop(d);
    let after = cluster.server_point(Point::TabletAfterApply, me);
    (Ok(reply), cost, after)
}

/// Record the store writing a primary lock's wall time (`wrote`): a
/// prewrite of a primary that locked its cell, or a refresh that raised its
/// wall time (the liveness rules read when a primary was last refreshed).
fn note_refresh(cluster: &Cluster, me: usize, call: &RowCall, reply: &RowReply, wrote: bool) {
    if !wrote {
        return;
    }
    let (col, start_ts, session, wall_ms) = match (&call.req, reply) {
        (RowRequest::Prewrite(p), RowReply::Prewrite(Ok(())))
            if p.lock.primary.row == call.row && p.lock.primary.col == p.col =>
        {
            (&p.col, p.start_ts, Some(p.lock.owner.0), p.lock.wall_ms)
        }
        (
            RowRequest::Touch {
                col,
                start_ts,
                wall_ms,
            },
            RowReply::Touch(true),
        ) => (col, *start_ts, None, *wall_ms),
        _ => return,
    };
    // A reader judges the lock by the wall time written in it, which its
    // owner stamped when it built the request (a delayed or retried request
    // lands with an old stamp): on the simulated time axis for the rules.
    let stamped_ms = ClockSkew::unskewed_true_ms(wall_ms);
    let mut fields = serde_json::json!({
        "row": call.row, "col": col, "start_ts": start_ts.0, "server": kinds::TABLET.nth(me).to_string(),
        "stamped_ms": stamped_ms,
    });
    if let Some(session) = session {
        fields["session"] = session.into();
    }
    cluster.event(PercolatorEvent::PrimaryRefreshed, fields);
}

/// Keep the simulator's own record of rollbacks (whatever the protocol
/// leaves in the row), and count a prewrite delivered to a cell where its
/// transaction had already been rolled back: a late or retried copy that
/// only the rollback record stops from locking the cell again. Count too
/// when such a prewrite locks the cell again, and when a commit then
/// succeeds there (both only without the rollback record).
fn note_rollbacks(cluster: &Cluster, call: &RowCall, reply: &RowReply) {
    let was_rolled_back = |col: &str, ts: Ts| {
        (cluster.lock(&cluster.rolled_back))
            .get(&ts)
            .is_some_and(|cells| cells.iter().any(|(r, c)| *r == call.row && c == col))
    };
    let rolled_back = match (&call.req, reply) {
        (RowRequest::Prewrite(p), reply) => {
            if was_rolled_back(&p.col, p.start_ts) {
                cluster.bump(PercolatorCounter::StoreLatePrewriteAfterRollback);
                if matches!(reply, RowReply::Prewrite(Ok(()))) {
                    cluster.bump(PercolatorCounter::StoreLatePrewriteRelocked);
                }
            }
            return;
        }
        (RowRequest::Commit { col, ts }, RowReply::Commit(Ok(_))) => {
            if was_rolled_back(col, ts.start_ts) {
                cluster.bump(PercolatorCounter::StoreCommitAfterRollback);
            }
            return;
        }
        (
            RowRequest::Cleanup { col, start_ts, .. },
            RowReply::Cleanup(
                _,
                CleanupAction::RolledBack | CleanupAction::RolledBackBeforePrewrite,
            ),
        ) => (col, start_ts),
        (
            RowRequest::Resolve { col, start_ts, .. },
            RowReply::Resolve(Ok(ResolveAction::RolledBack)),
        ) => (col, start_ts),
        _ => return,
    };
    let (col, start_ts) = rolled_back;
    let mut all = cluster.lock(&cluster.rolled_back);
    let cells = all.entry(*start_ts).or_default();
    if !cells.iter().any(|(r, c)| *r == call.row && c == col) {
        cells.push((call.row.clone(), col.clone()));
    }
}

/// A raw Bigtable operation (no transaction): the baseline of the paper's
/// Figure 8. A write puts one cell without reading the row; a read reads
/// the newest version of one cell.
fn raw(cluster: &Cluster, me: usize, call: RawCall) -> Costed<RawReply> {
    let costs = &cluster.cfg.costs;
    let mut d = cluster.durable();
    if !serves(cluster, &d, me, call.tablet, &call.row) {
        return (Err(NotServing), costs.request_us);
    }
    match call.write {
        Some(value) => {
            d.raw.insert((call.row, call.col), value);
            (Ok(RawReply(None)), row_cost(costs, 0, 1))
        }
        None => {
            let v = d.raw.get(&(call.row, call.col)).cloned();
            (Ok(RawReply(v)), row_cost(costs, 1, 0))
        }
    }
}

/// Snapshot reads of every row of `[start_row, end_row)` in one tablet.
/// Empty `cols` means every column.
fn scan(cluster: &Cluster, me: usize, call: ScanCall) -> Costed<Vec<(CellKey, GetResult)>> {
    let costs = &cluster.cfg.costs;
    let d = cluster.durable();
    if d.tablet_owner.get(call.tablet).copied().flatten() != Some(me) {
        return (Err(NotServing), costs.request_us);
    }
    let (lo, hi) = cluster
        .tablets
        .clip(call.tablet, &call.start_row, &call.end_row);
    let mut out = Vec::new();
    if lo >= hi {
        return (Ok(out), costs.request_us);
    }
    let mut cost = costs.request_us;
    for (key, row) in d.rows.range(lo..hi) {
        cost += costs.row_read_us;
        let cols: Vec<&String> = if call.cols.is_empty() {
            row.cols.keys().collect()
        } else {
            call.cols.iter().collect()
        };
        for col in cols {
            cost += 3 * costs.cell_read_us;
            match get(row, key, col, call.start_ts, cluster.cfg.ablations) {
                GetResult::Value(None) => {}
                found => out.push((CellKey::new(key.clone(), col.clone()), found)),
            }
        }
    }
    (Ok(out), cost)
}

/// The dirty cells of one tablet, from a random row on (the scanners'
/// random starting point), at most `limit` of them.
fn scan_notify(
    cluster: &Cluster,
    me: usize,
    call: ScanNotify,
) -> Costed<Vec<(String, String, u64)>> {
    let costs = &cluster.cfg.costs;
    let d = cluster.durable();
    if d.tablet_owner.get(call.tablet).copied().flatten() != Some(me) {
        return (Err(NotServing), costs.request_us);
    }
    let (lo, hi) = cluster.tablets.clip(call.tablet, "", "\u{10ffff}");
    if lo >= hi {
        return (Ok(Vec::new()), costs.request_us);
    }
    let rows = d.rows.range(lo..hi);
    let count = rows.clone().count();
    if count == 0 {
        return (Ok(Vec::new()), costs.request_us);
    }
    let start = (call.pick % count as u64) as usize;
    // The notify column is its own locality group: scanning it reads only
    // the dirty cells.
    let found: Vec<(String, String, u64)> = rows
        .skip(start)
        .flat_map(|(key, row)| {
            row.notify
                .iter()
                .map(move |(col, v)| (key.clone(), col.clone(), *v))
        })
        .take(call.limit)
        .collect();
    let cost = costs.request_us + found.len() as u64 * costs.cell_read_us;
    (Ok(found), cost)
}
