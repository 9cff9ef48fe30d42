//! A tablet server: runs row steps atomically on the rows of the tablets it
//! owns. Rows live in the durable store, so a crash loses no acknowledged
//! row transaction; a request in flight at a crash may or may not have been
//! applied, and its reply is lost.

use crate::rpc::{NotServing, Ping, RowCall, ScanCall, ScanNotify};
use crate::world::{World, tablet_server_addr};
use madsim::net::Endpoint;
use percsim_protocol::CellKey;
use percsim_protocol::actions::{GetResult, PrewriteError, RowReply, execute, get::get};
use percsim_protocol::row::Row;
use std::sync::Arc;

pub(crate) async fn main(world: Arc<World>, me: usize) {
    let ep = Endpoint::bind(tablet_server_addr(me))
        .await
        .expect("tablet server: bind");
    ep.add_rpc_handler(|_: Ping| async {});
    {
        let world = world.clone();
        ep.add_rpc_handler(move |call: RowCall| {
            let world = world.clone();
            async move { row_step(&world, me, call) }
        });
    }
    {
        let world = world.clone();
        ep.add_rpc_handler(move |call: ScanCall| {
            let world = world.clone();
            async move { scan(&world, me, call) }
        });
    }
    ep.add_rpc_handler(move |call: ScanNotify| {
        let world = world.clone();
        async move { scan_notify(&world, me, call) }
    });
    std::future::pending::<()>().await
}

/// One single-row transaction: read, decide, apply, with nothing in between.
fn row_step(world: &World, me: usize, call: RowCall) -> Result<RowReply, NotServing> {
    let mut d = world.durable();
    if d.tablet_owner.get(call.tablet).copied().flatten() != Some(me)
        || world.tablets.of(&call.row) != call.tablet
    {
        return Err(NotServing);
    }
    let (reply, mutation) = match d.rows.get(&call.row) {
        Some(row) => execute(row, &call.row, &call.req, world.cfg.ablations),
        None => execute(&Row::default(), &call.row, &call.req, world.cfg.ablations),
    };
    if matches!(reply, RowReply::Prewrite(Err(PrewriteError::RolledBack))) {
        // A late or duplicated prewrite met its transaction's rollback record.
        world.recorder().bump("store.late_prewrite_rejected");
    }
    if !mutation.is_empty() {
        let row = d.rows.entry(call.row.clone()).or_default();
        row.apply(&mutation);
        if row.cols.is_empty() && row.notify.is_empty() {
            d.rows.remove(&call.row);
        }
    }
    Ok(reply)
}

/// Snapshot reads of every row of `[start_row, end_row)` in one tablet.
/// Empty `cols` means every column.
fn scan(world: &World, me: usize, call: ScanCall) -> Result<Vec<(CellKey, GetResult)>, NotServing> {
    let d = world.durable();
    if d.tablet_owner.get(call.tablet).copied().flatten() != Some(me) {
        return Err(NotServing);
    }
    let (lo, hi) = world
        .tablets
        .clip(call.tablet, &call.start_row, &call.end_row);
    let mut out = Vec::new();
    if lo >= hi {
        return Ok(out);
    }
    for (key, row) in d.rows.range(lo..hi) {
        let cols: Vec<&String> = if call.cols.is_empty() {
            row.cols.keys().collect()
        } else {
            call.cols.iter().collect()
        };
        for col in cols {
            match get(row, key, col, call.start_ts, world.cfg.ablations) {
                GetResult::Value(None) => {}
                found => out.push((CellKey::new(key.clone(), col.clone()), found)),
            }
        }
    }
    Ok(out)
}

/// The dirty cells of one tablet, from a random row on (the scanners'
/// random starting point), at most `limit` of them.
fn scan_notify(
    world: &World,
    me: usize,
    call: ScanNotify,
) -> Result<Vec<(String, String, u64)>, NotServing> {
    let d = world.durable();
    if d.tablet_owner.get(call.tablet).copied().flatten() != Some(me) {
        return Err(NotServing);
    }
    let (lo, hi) = world.tablets.clip(call.tablet, "", "\u{10ffff}");
    if lo >= hi {
        return Ok(Vec::new());
    }
    let rows = d.rows.range(lo..hi);
    let count = rows.clone().count();
    if count == 0 {
        return Ok(Vec::new());
    }
    let start = (call.pick % count as u64) as usize;
    Ok(rows
        .skip(start)
        .flat_map(|(key, row)| {
            row.notify
                .iter()
                .map(move |(col, v)| (key.clone(), col.clone(), *v))
        })
        .take(call.limit)
        .collect())
}
