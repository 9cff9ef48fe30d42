//! `register`: random reads and writes of unique values over a small key
//! space. Unique values let the checker rebuild the dependency graph.

use super::util::{in_range, probability};
use percsim_protocol::percolator::CellKey;
use percsim_protocol::percolator::client::Transaction;
use percsim_sim::{BoxFuture, Client, Worker, Workload, even_splits};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

const COL: &str = "v";

/// Parameters of the register workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Register {
    /// Number of registers.
    pub keys: usize,
    /// Most operations per transaction.
    pub max_ops: usize,
    /// Fraction of operations that are writes.
    pub write_ratio: f64,
}

impl Default for Register {
    fn default() -> Self {
        Register {
            keys: 6,
            max_ops: 4,
            write_ratio: 0.5,
        }
    }
}

impl Register {
    fn row(i: usize) -> String {
        format!("reg/{i:03}")
    }

    /// Check the parameters.
    pub fn validate(&self) -> Result<(), String> {
        in_range("keys", self.keys, 1, 100_000)?;
        in_range("max_ops", self.max_ops, 1, 1_000)?;
        probability("write_ratio", self.write_ratio)
    }
}

impl Workload for Register {
    fn initial_data(&self) -> Vec<(CellKey, String)> {
        (0..self.keys)
            .map(|i| (CellKey::new(Register::row(i), COL), "init".to_string()))
            .collect()
    }

    fn split_points(&self, tablets: usize) -> Vec<String> {
        even_splits(
            &(0..self.keys).map(Register::row).collect::<Vec<_>>(),
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
                let mut failed = None;
                for _ in 0..ops {
                    let row = Register::row(w.rng.random_range(0..p.keys));
                    if w.rng.random_bool(p.write_ratio) {
                        n += 1;
                        txn.set(&row, COL, format!("{tag}.{n}"));
                    } else if let Err(e) = txn.get(&row, COL).await {
                        failed = Some(e);
                        break;
                    }
                }
                match failed {
                    Some(e) => {
                        txn.abort((&e).into());
                    }
                    None => {
                        txn.commit().await;
                    }
                }
            }
        })
    }

    fn final_check(&self, _client: Arc<Client>) -> BoxFuture<Vec<String>> {
        // The history checker judges registers (reads, versions, cycles).
        Box::pin(async { Vec::new() })
    }
}
