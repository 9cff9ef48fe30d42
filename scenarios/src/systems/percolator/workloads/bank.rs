//! `bank`: accounts, random transfers and full snapshot reads. Every
//! snapshot read and the final store must sum to the initial total.

use percsim_protocol::percolator::CellKey;
use percsim_protocol::percolator::client::{AbortReason, Transaction};
use percsim_sim::{BoxFuture, Client, Worker, Workload, even_splits};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

const COL: &str = "balance";

/// Parameters of the bank workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Bank {
    /// Number of accounts.
    pub accounts: usize,
    /// Initial balance of each account.
    pub initial_balance: u64,
    /// Largest single transfer.
    pub max_transfer: u64,
    /// Fraction of transactions that read every account.
    pub read_all_ratio: f64,
}

impl Default for Bank {
    fn default() -> Self {
        Bank {
            accounts: 8,
            initial_balance: 100,
            max_transfer: 10,
            read_all_ratio: 0.2,
        }
    }
}

impl Bank {
    fn row(i: usize) -> String {
        format!("acct/{i:04}")
    }

    fn total(&self) -> u64 {
        self.accounts as u64 * self.initial_balance
    }
}

/// Read every account in one snapshot: `Ok(None)` when the transaction
/// aborted, else the balances.
async fn read_all(client: &Client) -> Result<Option<Vec<u64>>, String> {
    let Ok(mut txn) = Transaction::begin(client).await else {
        return Ok(None);
    };
    match txn.scan("acct/", "acct0", &[COL.to_string()]).await {
        Ok(cells) => {
            let _ = txn.commit().await;
            cells
                .iter()
                .map(|(cell, v)| {
                    v.parse::<u64>()
                        .map_err(|_| format!("{cell} holds {v:?}, not a balance"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
        }
        Err(e) => {
            txn.abort((&e).into());
            Ok(None)
        }
    }
}

async fn transfer(client: &Client, from: usize, to: usize, amount: u64) {
    let Ok(mut txn) = Transaction::begin(client).await else {
        return;
    };
    let (a, b) = (Bank::row(from), Bank::row(to));
    let balances = async {
        let x = txn.get(&a, COL).await?;
        let y = txn.get(&b, COL).await?;
        Ok::<_, percsim_protocol::percolator::client::TxnError>((x, y))
    }
    .await;
    match balances {
        Ok((Some(x), Some(y))) => {
            let (Ok(x), Ok(y)) = (x.parse::<u64>(), y.parse::<u64>()) else {
                client.violation(format!("non-numeric balance in {a} or {b}"));
                txn.abort(AbortReason::User);
                return;
            };
            if x < amount {
                txn.abort(AbortReason::User);
                return;
            }
            txn.set(&a, COL, (x - amount).to_string());
            txn.set(&b, COL, (y + amount).to_string());
            txn.commit().await;
        }
        Ok(_) => {
            client.violation(format!("account {a} or {b} is missing"));
            txn.abort(AbortReason::User);
        }
        Err(e) => {
            txn.abort((&e).into());
        }
    }
}

impl Workload for Bank {
    fn initial_data(&self) -> Vec<(CellKey, String)> {
        (0..self.accounts)
            .map(|i| {
                (
                    CellKey::new(Bank::row(i), COL),
                    self.initial_balance.to_string(),
                )
            })
            .collect()
    }

    fn split_points(&self, tablets: usize) -> Vec<String> {
        let keys: Vec<String> = (0..self.accounts).map(Bank::row).collect();
        even_splits(&keys, tablets)
    }

    fn worker(&self, mut w: Worker) -> BoxFuture<()> {
        let p = self.clone();
        Box::pin(async move {
            while !w.client.stopping() {
                if w.rng.random_bool(p.read_all_ratio) {
                    match read_all(&w.client).await {
                        Ok(Some(balances)) => {
                            let sum: u64 = balances.iter().sum();
                            if balances.len() != p.accounts || sum != p.total() {
                                w.client.violation(format!(
                                    "snapshot read saw {} accounts summing to {sum}, expected {} summing to {}",
                                    balances.len(),
                                    p.accounts,
                                    p.total()
                                ));
                            }
                        }
                        Ok(None) => {}
                        Err(what) => w.client.violation(what),
                    }
                } else {
                    let from = w.rng.random_range(0..p.accounts);
                    let mut to = w.rng.random_range(0..p.accounts - 1);
                    if to >= from {
                        to += 1;
                    }
                    let amount = w.rng.random_range(1..=p.max_transfer);
                    transfer(&w.client, from, to, amount).await;
                }
            }
        })
    }

    fn final_check(&self, client: Arc<Client>) -> BoxFuture<Vec<String>> {
        let p = self.clone();
        Box::pin(async move {
            for _ in 0..20 {
                match read_all(&client).await {
                    Ok(Some(balances)) => {
                        let sum: u64 = balances.iter().sum();
                        if balances.len() != p.accounts || sum != p.total() {
                            return vec![format!(
                                "final store has {} accounts summing to {sum}, expected {} summing to {}",
                                balances.len(),
                                p.accounts,
                                p.total()
                            )];
                        }
                        return Vec::new();
                    }
                    Ok(None) => continue,
                    Err(what) => return vec![what],
                }
            }
            vec!["final read of all accounts aborted 20 times".to_string()]
        })
    }
}
