//! `list-append`: each write appends a unique element to a cell's list (a
//! read-modify-write of a comma-separated value), so the version order is
//! visible from the values, as in Jepsen's Elle. After quiescence every
//! list holds each element at most once, and every element whose append
//! was reported committed.

use super::util::read_snapshot;
use super::util::{in_range, probability};
use percsim_protocol::percolator::CellKey;
use percsim_protocol::percolator::client::{CommitOutcome, Transaction, TxnError};
use percsim_sim::{BoxFuture, Client, Worker, Workload, even_splits};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

const COL: &str = "list";

/// Parameters of the list-append workload.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ListAppend {
    /// Number of lists.
    pub keys: usize,
    /// Most operations per transaction.
    pub max_ops: usize,
    /// Fraction of operations that append.
    pub append_ratio: f64,
    /// Elements whose append was reported committed, per list (run state).
    #[serde(skip)]
    acked: Arc<Mutex<BTreeMap<String, BTreeSet<String>>>>,
}

impl Default for ListAppend {
    fn default() -> Self {
        ListAppend {
            keys: 4,
            max_ops: 4,
            append_ratio: 0.6,
            acked: Arc::default(),
        }
    }
}

impl ListAppend {
    /// Defaults with `keys` lists.
    pub fn with_keys(keys: usize) -> Self {
        ListAppend {
            keys,
            ..ListAppend::default()
        }
    }

    fn row(i: usize) -> String {
        format!("list/{i:03}")
    }

    /// A copy with fresh run state, for one run.
    pub fn fresh(&self) -> ListAppend {
        ListAppend {
            acked: Arc::default(),
            ..self.clone()
        }
    }

    /// Check the parameters.
    pub fn validate(&self) -> Result<(), String> {
        in_range("keys", self.keys, 1, 100_000)?;
        in_range("max_ops", self.max_ops, 1, 1_000)?;
        probability("append_ratio", self.append_ratio)
    }
}

fn elements(list: &str) -> Vec<&str> {
    list.split(',').filter(|e| !e.is_empty()).collect()
}

impl Workload for ListAppend {
    fn initial_data(&self) -> Vec<(CellKey, String)> {
        Vec::new()
    }

    fn split_points(&self, tablets: usize) -> Vec<String> {
        even_splits(
            &(0..self.keys).map(ListAppend::row).collect::<Vec<_>>(),
            tablets,
        )
    }

    fn worker(&self, mut w: Worker) -> BoxFuture<()> {
        let p = self.clone();
        Box::pin(async move {
            let tag = w.tag();
            let mut n = 0u64;
            while !w.client.stopping() {
                let Ok(mut txn) = Transaction::begin(w.client.as_ref()).await else {
                    continue;
                };
                let ops = w.rng.random_range(1..=p.max_ops);
                let mut appended: BTreeMap<String, Vec<String>> = BTreeMap::new();
                let mut seen: BTreeMap<String, String> = BTreeMap::new();
                let result: Result<(), TxnError> = async {
                    for _ in 0..ops {
                        let row = ListAppend::row(w.rng.random_range(0..p.keys));
                        // Reads see the snapshot, not our own buffered appends.
                        let current = match seen.get(&row) {
                            Some(v) => v.clone(),
                            None => {
                                let v = txn.get(&row, COL).await?.unwrap_or_default();
                                seen.insert(row.clone(), v.clone());
                                v
                            }
                        };
                        if w.rng.random_bool(p.append_ratio) {
                            n += 1;
                            let mine = appended.entry(row.clone()).or_default();
                            mine.push(format!("{tag}.{n}"));
                            let mut list = current;
                            for e in mine.iter() {
                                if !list.is_empty() {
                                    list.push(',');
                                }
                                list.push_str(e);
                            }
                            txn.set(&row, COL, list);
                        }
                    }
                    Ok(())
                }
                .await;
                match result {
                    Err(e) => {
                        txn.abort((&e).into());
                    }
                    Ok(()) => {
                        if let CommitOutcome::Committed { .. } = txn.commit().await {
                            let mut acked = p.acked.lock().unwrap_or_else(|e| e.into_inner());
                            for (row, es) in appended {
                                acked.entry(row).or_default().extend(es);
                            }
                        }
                    }
                }
            }
        })
    }

    fn final_check(&self, client: Arc<Client>) -> BoxFuture<Vec<String>> {
        let p = self.clone();
        Box::pin(async move {
            let Some(cells) =
                read_snapshot(client.as_ref(), "list/", "list0", &[COL.to_string()]).await
            else {
                return vec!["final read of all lists failed 20 times".to_string()];
            };
            {
                let lists: BTreeMap<String, String> =
                    cells.into_iter().map(|(c, v)| (c.row, v)).collect();
                let mut problems = Vec::new();
                let acked = p.acked.lock().unwrap_or_else(|e| e.into_inner());
                for row in (0..p.keys).map(ListAppend::row) {
                    let list = lists.get(&row).map(String::as_str).unwrap_or("");
                    let es = elements(list);
                    let unique: BTreeSet<&str> = es.iter().copied().collect();
                    if unique.len() != es.len() {
                        problems.push(format!("{row} holds a duplicated element: {list}"));
                    }
                    for e in acked.get(&row).into_iter().flatten() {
                        if !unique.contains(e.as_str()) {
                            problems.push(format!("{row} lost the committed append {e}"));
                        }
                    }
                }
                problems
            }
        })
    }
}
