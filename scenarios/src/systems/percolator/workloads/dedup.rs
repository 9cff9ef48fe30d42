//! `dedup`: the paper's `UpdateDocument` (Figure 2). Documents by URL, and
//! a dups table from content hash to the canonical URL. A document update
//! moves the URL between hash rows in the same transaction, keeping each
//! row's member list and canonical URL (the smallest member).
//!
//! Invariant after quiescence: every hash of a document's contents has
//! exactly one canonical URL, which is among the documents with that
//! content; the member lists are exactly those documents; no other hash
//! row is left.

use super::util::{fnv1a, in_range, join, judge_whole_store, split};
use percsim_protocol::percolator::CellKey;
use percsim_protocol::percolator::client::{Transaction, TxnError};
use percsim_sim::{BoxFuture, Client, Worker, Workload};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

const CONTENTS: &str = "contents";
const CANONICAL: &str = "canonical";
const MEMBERS: &str = "members";

/// Parameters of the dedup workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Dedup {
    /// Number of document URLs.
    pub documents: usize,
    /// Number of distinct contents (fewer than documents: duplicates).
    pub contents: usize,
}

impl Default for Dedup {
    fn default() -> Self {
        Dedup {
            documents: 8,
            contents: 3,
        }
    }
}

/// The dups-table row of a content.
pub fn hash_row(contents: &str) -> String {
    format!("dups/{:016x}", fnv1a(contents))
}

fn url(i: usize) -> String {
    format!("doc/url{i:03}")
}

impl Dedup {
    /// Check the parameters.
    pub fn validate(&self) -> Result<(), String> {
        in_range("documents", self.documents, 1, 10_000)?;
        in_range("contents", self.contents, 1, 10_000)
    }

    fn content(k: usize) -> String {
        format!("page-{k}")
    }
}

/// `UpdateDocument`: set `url`'s contents and keep the dups table in step.
async fn update_document(
    txn: &mut Transaction<'_, Client>,
    url: &str,
    contents: &str,
) -> Result<(), TxnError> {
    let old = txn.get(url, CONTENTS).await?;
    if old.as_deref() == Some(contents) {
        return Ok(());
    }
    if let Some(old) = old {
        let h = hash_row(&old);
        let mut members = split(&txn.get(&h, MEMBERS).await?.unwrap_or_default());
        members.remove(url);
        match members.iter().next() {
            None => {
                txn.delete(&h, MEMBERS);
                txn.delete(&h, CANONICAL);
            }
            Some(first) => {
                txn.set(&h, CANONICAL, first.clone());
                txn.set(&h, MEMBERS, join(&members));
            }
        }
    }
    let h = hash_row(contents);
    let mut members = split(&txn.get(&h, MEMBERS).await?.unwrap_or_default());
    let canonical = txn.get(&h, CANONICAL).await?;
    members.insert(url.to_string());
    let smallest = members.iter().next().cloned().unwrap_or_default();
    if canonical.as_deref() != Some(smallest.as_str()) {
        txn.set(&h, CANONICAL, smallest);
    }
    txn.set(&h, MEMBERS, join(&members));
    txn.set(url, CONTENTS, contents);
    Ok(())
}

/// Judge the documents and dups rows read in one snapshot.
pub fn check_dedup(cells: &[(CellKey, String)]) -> Vec<String> {
    let mut docs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut canonical: BTreeMap<String, String> = BTreeMap::new();
    let mut members: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (cell, v) in cells {
        match cell.col.as_str() {
            CONTENTS => {
                docs.entry(hash_row(v))
                    .or_default()
                    .insert(cell.row.clone());
            }
            CANONICAL => {
                canonical.insert(cell.row.clone(), v.clone());
            }
            MEMBERS => {
                members.insert(cell.row.clone(), split(v));
            }
            _ => {}
        }
    }
    let mut problems = Vec::new();
    for (h, urls) in &docs {
        match canonical.get(h) {
            None => problems.push(format!(
                "{h}: documents {urls:?} have this content but no canonical URL"
            )),
            Some(c) if !urls.contains(c) => problems.push(format!(
                "{h}: canonical URL {c} is not among the documents with this content {urls:?}"
            )),
            _ => {}
        }
        if members.get(h) != Some(urls) {
            problems.push(format!(
                "{h}: members {:?} differ from the documents {urls:?}",
                members.get(h)
            ));
        }
    }
    for h in canonical.keys().chain(members.keys()) {
        if !docs.contains_key(h) {
            problems.push(format!("{h}: a dups row for a content no document has"));
        }
    }
    problems.dedup();
    problems
}

impl Workload for Dedup {
    fn initial_data(&self) -> Vec<(CellKey, String)> {
        Vec::new()
    }

    fn split_points(&self, tablets: usize) -> Vec<String> {
        let mut keys: Vec<String> = (0..self.documents).map(url).collect();
        keys.extend((0..self.contents).map(|k| hash_row(&Dedup::content(k))));
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
                let c = Dedup::content(w.rng.random_range(0..p.contents));
                match update_document(&mut txn, &u, &c).await {
                    Ok(()) => {
                        txn.commit().await;
                    }
                    Err(e) => {
                        txn.abort((&e).into());
                    }
                }
            }
        })
    }

    fn final_check(&self, client: Arc<Client>) -> BoxFuture<Vec<String>> {
        Box::pin(async move { judge_whole_store(client.as_ref(), check_dedup).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(row: &str, col: &str, v: &str) -> (CellKey, String) {
        (CellKey::new(row, col), v.to_string())
    }

    #[test]
    fn consistent_tables_pass() {
        let h = hash_row("x");
        let cells = vec![
            cell("doc/a", CONTENTS, "x"),
            cell("doc/b", CONTENTS, "x"),
            cell(&h, CANONICAL, "doc/a"),
            cell(&h, MEMBERS, "doc/a,doc/b"),
        ];
        assert!(check_dedup(&cells).is_empty());
    }

    #[test]
    fn broken_tables_fail() {
        let h = hash_row("x");
        let stale = hash_row("y");
        let cells = vec![
            cell("doc/a", CONTENTS, "x"),
            cell(&h, CANONICAL, "doc/b"),
            cell(&h, MEMBERS, "doc/a"),
            cell(&stale, CANONICAL, "doc/a"),
        ];
        let p = check_dedup(&cells);
        assert!(p.iter().any(|m| m.contains("is not among")), "{p:?}");
        assert!(p.iter().any(|m| m.contains("no document has")), "{p:?}");
    }
}
