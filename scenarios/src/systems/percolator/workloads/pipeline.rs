//! `pipeline`: the paper's incremental indexing pipeline, scaled down.
//!
//! A loader writes crawled documents (`doc/...` rows, column `raw`). Three
//! observers, each in its own transaction:
//! - `parse` observes `raw`: derives the content hash and out-links, and
//!   keeps the parsed body beside the hash (one snapshot, so they agree);
//! - `cluster` observes `hash`: files the document in the dups table
//!   (`dups/<hash>` rows: members, the canonical URL = smallest member, and
//!   the content), and marks the dups rows it changed (column `changed`);
//! - `export` observes `changed`: writes the canonical document of a hash
//!   to the `index/<hash>` row, or removes it when the hash has no members.
//!   It reads only the dups row: everything it exports reached it through
//!   observed columns, so a later change always re-triggers it.
//!
//! After quiescence the check recomputes the index from the final documents
//! as a batch job would, independently of the observers, and compares.

use super::util::{fnv1a, in_range, join, judge_whole_store, split};
use percsim_protocol::percolator::CellKey;
use percsim_protocol::percolator::client::{
    BodyFuture, ObserverBody, ObserverSpec, Transaction, TxnError,
};
use percsim_sim::{BoxFuture, Client, Worker, Workload};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

const RAW: &str = "raw";
const HASH: &str = "hash";
const LINKS: &str = "links";
const FILED: &str = "filed_under";
const MEMBERS: &str = "members";
const CANONICAL: &str = "canonical";
const CHANGED: &str = "changed";
const BODY: &str = "body";
const CONTENT: &str = "content";
const INDEXED: &str = "doc";

/// Parameters of the pipeline workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Pipeline {
    /// Number of document URLs the loader writes.
    pub documents: usize,
    /// Number of distinct page contents (fewer than documents: duplicates).
    pub contents: usize,
    /// Simulated ms a loader thread waits between loads.
    pub load_interval_ms: u64,
    /// Add a second observer of `raw`, `audit`, which keeps the content
    /// hash of each document in column `audited`: two observers on one
    /// column, each of which must process every change.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub audit: bool,
}

impl Default for Pipeline {
    fn default() -> Self {
        Pipeline {
            documents: 8,
            contents: 3,
            load_interval_ms: 20,
            audit: false,
        }
    }
}

fn url(i: usize) -> String {
    format!("doc/u{i:03}")
}

fn content(k: usize) -> String {
    format!("page {k} links: doc/u{:03} doc/u{:03}", k % 7, (k * 3) % 11)
}

/// The content hash of a raw document.
pub fn hash_of(raw: &str) -> String {
    format!("{:016x}", fnv1a(raw))
}

/// The out-links of a raw document.
fn links_of(raw: &str) -> String {
    raw.split_once("links:")
        .map(|(_, l)| l.trim().to_string())
        .unwrap_or_default()
}

impl Pipeline {
    /// Check the parameters.
    pub fn validate(&self) -> Result<(), String> {
        in_range("documents", self.documents, 1, 10_000)?;
        in_range("contents", self.contents, 1, 10_000)
    }
}

struct Parse;
struct Cluster;
struct Export;
struct Audit;

/// The column where the `audit` observer keeps a document's content hash.
const AUDITED: &str = "audited";

impl ObserverBody<Client> for Audit {
    fn run<'a>(&'a self, txn: &'a mut Transaction<'_, Client>, row: &'a str) -> BodyFuture<'a> {
        Box::pin(async move {
            match txn.get(row, RAW).await? {
                Some(raw) => txn.set(row, AUDITED, hash_of(&raw)),
                None => txn.delete(row, AUDITED),
            }
            Ok(())
        })
    }
}

/// With the `audit` observer on: every document's `audited` hash matches
/// its final contents.
fn check_audit(cells: &[(CellKey, String)]) -> Vec<String> {
    let mut problems = check_pipeline(cells);
    let audited: BTreeMap<&str, &str> = cells
        .iter()
        .filter(|(c, _)| c.col == AUDITED)
        .map(|(c, v)| (c.row.as_str(), v.as_str()))
        .collect();
    for (c, raw) in cells.iter().filter(|(c, _)| c.col == RAW) {
        let h = hash_of(raw);
        if audited.get(c.row.as_str()) != Some(&h.as_str()) {
            problems.push(format!(
                "{}: audited {:?}, expected {h}",
                c.row,
                audited.get(c.row.as_str())
            ));
        }
    }
    problems
}

impl ObserverBody<Client> for Parse {
    fn run<'a>(&'a self, txn: &'a mut Transaction<'_, Client>, row: &'a str) -> BodyFuture<'a> {
        Box::pin(async move {
            let raw = txn.get(row, RAW).await?;
            let (hash, links) = match &raw {
                Some(raw) => (Some(hash_of(raw)), links_of(raw)),
                None => (None, String::new()),
            };
            let old = txn.get(row, HASH).await?;
            if old != hash {
                match &hash {
                    Some(h) => txn.set(row, HASH, h.clone()),
                    None => txn.delete(row, HASH),
                }
            }
            match &raw {
                Some(raw) => txn.set(row, BODY, raw.clone()),
                None => txn.delete(row, BODY),
            }
            txn.set(row, LINKS, links);
            Ok(())
        })
    }
}

/// Move `url` out of the dups row of `from` and into that of `to`.
async fn refile(
    txn: &mut Transaction<'_, Client>,
    url: &str,
    from: Option<&str>,
    to: Option<(&str, &str)>,
) -> Result<(), TxnError> {
    let stamp = txn.start_ts().0.to_string();
    if let Some(h) = from {
        let d = format!("dups/{h}");
        let mut members = split(&txn.get(&d, MEMBERS).await?.unwrap_or_default());
        members.remove(url);
        match members.iter().next() {
            None => {
                txn.delete(&d, MEMBERS);
                txn.delete(&d, CANONICAL);
                txn.delete(&d, CONTENT);
            }
            Some(first) => {
                txn.set(&d, CANONICAL, first.clone());
                txn.set(&d, MEMBERS, join(&members));
            }
        }
        txn.set(&d, CHANGED, stamp.clone());
    }
    if let Some((h, body)) = to {
        let d = format!("dups/{h}");
        // Every document with this hash has this very body.
        txn.set(&d, CONTENT, body.to_string());
        let mut members = split(&txn.get(&d, MEMBERS).await?.unwrap_or_default());
        members.insert(url.to_string());
        let smallest = members.iter().next().cloned().unwrap_or_default();
        txn.set(&d, CANONICAL, smallest);
        txn.set(&d, MEMBERS, join(&members));
        txn.set(&d, CHANGED, stamp);
    }
    Ok(())
}

impl ObserverBody<Client> for Cluster {
    fn run<'a>(&'a self, txn: &'a mut Transaction<'_, Client>, row: &'a str) -> BodyFuture<'a> {
        Box::pin(async move {
            let hash = txn.get(row, HASH).await?;
            let body = txn.get(row, BODY).await?.unwrap_or_default();
            let filed = txn.get(row, FILED).await?;
            if hash == filed {
                return Ok(());
            }
            refile(
                txn,
                row,
                filed.as_deref(),
                hash.as_deref().map(|h| (h, body.as_str())),
            )
            .await?;
            match hash {
                Some(h) => txn.set(row, FILED, h),
                None => txn.delete(row, FILED),
            }
            Ok(())
        })
    }
}

impl ObserverBody<Client> for Export {
    fn run<'a>(&'a self, txn: &'a mut Transaction<'_, Client>, row: &'a str) -> BodyFuture<'a> {
        Box::pin(async move {
            let Some(h) = row.strip_prefix("dups/") else {
                return Ok(());
            };
            let index = format!("index/{h}");
            match txn.get(row, CANONICAL).await? {
                Some(canonical) => {
                    let content = txn.get(row, CONTENT).await?.unwrap_or_default();
                    txn.set(&index, INDEXED, format!("{canonical}|{content}"));
                }
                None => txn.delete(&index, INDEXED),
            }
            Ok(())
        })
    }
}

/// Recompute the index from the final documents, as a batch job would, and
/// compare it (and the intermediate tables) with the store.
pub fn check_pipeline(cells: &[(CellKey, String)]) -> Vec<String> {
    let mut table: BTreeMap<(&str, &str), &str> = BTreeMap::new();
    for (c, v) in cells {
        table.insert((c.row.as_str(), c.col.as_str()), v.as_str());
    }
    let get = |row: &str, col: &str| table.get(&(row, col)).copied();
    let mut problems = Vec::new();
    // Documents by hash of their final contents.
    let mut by_hash: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for ((row, col), raw) in &table {
        if !row.starts_with("doc/") || *col != RAW {
            continue;
        }
        let h = hash_of(raw);
        if get(row, HASH) != Some(h.as_str()) {
            problems.push(format!(
                "{row}: hash {:?} does not match its contents (expected {h})",
                get(row, HASH)
            ));
        }
        if get(row, LINKS) != Some(links_of(raw).as_str()) {
            problems.push(format!(
                "{row}: links {:?} do not match its contents",
                get(row, LINKS)
            ));
        }
        if get(row, FILED) != Some(h.as_str()) {
            problems.push(format!(
                "{row}: filed under {:?}, expected {h}",
                get(row, FILED)
            ));
        }
        by_hash.entry(h).or_default().insert(row);
    }
    for (h, urls) in &by_hash {
        let d = format!("dups/{h}");
        let canonical = urls.iter().next().copied().unwrap_or_default();
        if get(&d, CANONICAL) != Some(canonical) {
            problems.push(format!(
                "{d}: canonical {:?}, expected {canonical}",
                get(&d, CANONICAL)
            ));
        }
        let members: BTreeSet<&str> = get(&d, MEMBERS)
            .unwrap_or("")
            .split(',')
            .filter(|s| !s.is_empty())
            .collect();
        if &members != urls {
            problems.push(format!("{d}: members {members:?}, expected {urls:?}"));
        }
        let expected = format!("{canonical}|{}", get(canonical, RAW).unwrap_or_default());
        let i = format!("index/{h}");
        if get(&i, INDEXED) != Some(expected.as_str()) {
            problems.push(format!(
                "{i}: exported {:?}, a batch recomputation gives {expected:?}",
                get(&i, INDEXED)
            ));
        }
    }
    for ((row, col), v) in &table {
        let stray = match (*col, row.strip_prefix("dups/"), row.strip_prefix("index/")) {
            (MEMBERS | CANONICAL, Some(h), _) => !by_hash.contains_key(h),
            (INDEXED, _, Some(h)) => !by_hash.contains_key(h),
            _ => false,
        };
        if stray {
            problems.push(format!(
                "{row}/{col} = {v:?} belongs to a content no document has"
            ));
        }
    }
    problems
}

impl Workload for Pipeline {
    fn initial_data(&self) -> Vec<(CellKey, String)> {
        Vec::new()
    }

    fn split_points(&self, tablets: usize) -> Vec<String> {
        let mut keys: Vec<String> = (0..self.documents).map(url).collect();
        for k in 0..self.contents {
            let h = hash_of(&content(k));
            keys.push(format!("dups/{h}"));
            keys.push(format!("index/{h}"));
        }
        percsim_sim::even_splits(&keys, tablets)
    }

    fn worker(&self, mut w: Worker) -> BoxFuture<()> {
        let p = self.clone();
        Box::pin(async move {
            while !w.client.stopping() {
                let Ok(mut txn) = Transaction::begin(w.client.as_ref()).await else {
                    continue;
                };
                let u = url(w.rng.random_range(0..p.documents));
                txn.set(&u, RAW, content(w.rng.random_range(0..p.contents)));
                txn.commit().await;
                madsim::time::sleep(std::time::Duration::from_millis(p.load_interval_ms)).await;
            }
        })
    }

    fn observers(&self) -> Vec<(ObserverSpec, Arc<dyn ObserverBody<Client>>)> {
        let spec = |name: &str, col: &str| ObserverSpec {
            name: name.to_string(),
            col: col.to_string(),
            weak: false,
        };
        let mut observers: Vec<(ObserverSpec, Arc<dyn ObserverBody<Client>>)> = vec![
            (spec("parse", RAW), Arc::new(Parse)),
            (spec("cluster", HASH), Arc::new(Cluster)),
            (spec("export", CHANGED), Arc::new(Export)),
        ];
        if self.audit {
            observers.push((spec("audit", RAW), Arc::new(Audit)));
        }
        observers
    }

    fn final_check(&self, client: Arc<Client>) -> BoxFuture<Vec<String>> {
        let judge = if self.audit {
            check_audit
        } else {
            check_pipeline
        };
        Box::pin(async move { judge_whole_store(client.as_ref(), judge).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(row: &str, col: &str, v: &str) -> (CellKey, String) {
        (CellKey::new(row, col), v.to_string())
    }

    fn consistent() -> Vec<(CellKey, String)> {
        let raw = content(1);
        let h = hash_of(&raw);
        let mut cells = Vec::new();
        for u in ["doc/u001", "doc/u002"] {
            cells.push(cell(u, RAW, &raw));
            cells.push(cell(u, HASH, &h));
            cells.push(cell(u, LINKS, &links_of(&raw)));
            cells.push(cell(u, FILED, &h));
        }
        cells.push(cell(&format!("dups/{h}"), CANONICAL, "doc/u001"));
        cells.push(cell(&format!("dups/{h}"), MEMBERS, "doc/u001,doc/u002"));
        cells.push(cell(
            &format!("index/{h}"),
            INDEXED,
            &format!("doc/u001|{raw}"),
        ));
        cells
    }

    #[test]
    fn a_consistent_pipeline_passes() {
        assert_eq!(check_pipeline(&consistent()), Vec::<String>::new());
    }

    #[test]
    fn a_stale_export_fails() {
        let mut cells = consistent();
        let last = cells.len() - 1;
        cells[last].1 = "doc/u002|old".to_string();
        let p = check_pipeline(&cells);
        assert!(p.iter().any(|m| m.contains("batch recomputation")), "{p:?}");
    }

    #[test]
    fn an_unprocessed_document_fails() {
        let mut cells = consistent();
        cells[0].1 = content(2);
        let p = check_pipeline(&cells);
        assert!(
            p.iter().any(|m| m.contains("does not match its contents")),
            "{p:?}"
        );
    }
}
