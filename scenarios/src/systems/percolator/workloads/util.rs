//! Helpers the workloads share.

use percsim_protocol::percolator::CellKey;
use percsim_protocol::percolator::client::Transaction;
use percsim_sim::Client;
use std::collections::BTreeSet;

pub(crate) use crate::common::fnv1a;

/// A comma-separated member list as a set.
pub(crate) fn split(list: &str) -> BTreeSet<String> {
    list.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A set as a comma-separated member list.
pub(crate) fn join(set: &BTreeSet<String>) -> String {
    set.iter().cloned().collect::<Vec<_>>().join(",")
}

/// Read columns `cols` (empty: all) of the rows in `[start, end)` in one
/// snapshot, for a final check; retried, since a read may abort on a lock.
/// `None` when every attempt failed.
pub(crate) async fn read_snapshot(
    client: &Client,
    start: &str,
    end: &str,
    cols: &[String],
) -> Option<Vec<(CellKey, String)>> {
    for _ in 0..20 {
        let Ok(mut txn) = Transaction::begin(client).await else {
            continue;
        };
        match txn.scan(start, end, cols).await {
            Ok(cells) => {
                txn.commit().await;
                return Some(cells);
            }
            Err(e) => {
                txn.abort((&e).into());
            }
        }
    }
    None
}

/// `workload.<field>` must lie in `lo..=hi`.
pub(crate) fn in_range(field: &str, value: usize, lo: usize, hi: usize) -> Result<(), String> {
    if value < lo || value > hi {
        return Err(format!("workload.{field}: {value} is outside {lo}..={hi}"));
    }
    Ok(())
}

/// `workload.<field>` must be a probability.
pub(crate) fn probability(field: &str, value: f64) -> Result<(), String> {
    if !(0.0..=1.0).contains(&value) {
        return Err(format!("workload.{field}: {value} is not a probability"));
    }
    Ok(())
}

/// The final check of a workload whose invariants span the whole store:
/// read every cell in one snapshot and judge it with `judge`.
pub(crate) async fn judge_whole_store(
    client: &Client,
    judge: fn(&[(CellKey, String)]) -> Vec<String>,
) -> Vec<String> {
    match read_snapshot(client, "", "\u{10ffff}", &[]).await {
        Some(cells) => judge(&cells),
        None => vec!["final read of the tables failed 20 times".to_string()],
    }
}
