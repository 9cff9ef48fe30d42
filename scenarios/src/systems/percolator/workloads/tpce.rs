//! `tpce`: TPC-E-lite, the paper's synthetic benchmark (section 5.3 of
//! `percolator-paper.en-zh.txt`): a brokerage whose customers trade, on
//! average once every `trade_interval_ms` each, so load grows by adding
//! customers. A trade is two transactions: Trade-Order (read the account
//! and the security's price, write the order and the hand-made index
//! entry by security) and, after a market delay, Trade-Result (settle the
//! order: holdings, balance and, if `broker_commission` is on, the
//! broker's commission and trade count, the write the paper omitted
//! because every broker serves a hundred customers and conflicts).
//!
//! Rows are customer-major (`c0000042/acct`, `c0000042/hold/00007`,
//! `c0000042/trade/<id>`), so the customer's own rows share a tablet; an
//! absent account or holding is the initial one, so data grows with the
//! trades and not with the customer count. Securities (`s/00007`) and the
//! index by security (`s/00007/t/c0000042/<id>`) take a quarter of the tablets.
//!
//! The schema (rows, orders, prices) and the final invariants are
//! `percsim_protocol::jobs::tpce`'s, shared with every system that runs
//! the job. Final invariants, judged on one snapshot of the whole store: every
//! balance and every holding agrees with the settled trades of its
//! customer, no holding is negative, every order has its index entry and
//! every index entry its order, and (with commissions) every broker's
//! commission and count agree with its customers' settled trades.

use super::util::{in_range, read_snapshot};
use percsim_protocol::jobs::tpce::{
    self as schema, BALANCE, Brokers, COMMISSION, COUNT, ORDER, Order, PRICE, QTY, REF, Rules,
    STATUS, account_row, broker_row, customer_prefix, holding_row, index_row, price_of,
    security_row, trade_row,
};
use percsim_protocol::percolator::CellKey;
use percsim_protocol::percolator::client::{CommitOutcome, Transaction, Transport};
use percsim_sim::{BoxFuture, Client, Worker, Workload};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Parameters of the TPC-E-lite workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Tpce {
    /// Number of customers (the load: each trades once per interval).
    pub customers: usize,
    /// Number of securities.
    pub securities: usize,
    /// Customers served by one broker (TPC-E: 100).
    pub customers_per_broker: usize,
    /// Mean simulated time between two trades of one customer (TPC-E: 500 s).
    pub trade_interval_ms: u64,
    /// Simulated delay between a trade's order and its result (the market).
    pub market_delay_ms: u64,
    /// Update the broker's commission and trade count in Trade-Result.
    pub broker_commission: bool,
    /// Every account's balance before its first trade.
    pub initial_balance: i64,
}

impl Default for Tpce {
    fn default() -> Self {
        Tpce {
            customers: 2_000,
            securities: 100,
            customers_per_broker: 100,
            trade_interval_ms: 500_000,
            market_delay_ms: 100,
            broker_commission: false,
            initial_balance: 1_000_000,
        }
    }
}

impl Tpce {
    /// Check the parameters.
    pub fn validate(&self) -> Result<(), String> {
        in_range("customers", self.customers, 1, 100_000_000)?;
        in_range("securities", self.securities, 1, 100_000)?;
        in_range(
            "customers_per_broker",
            self.customers_per_broker,
            1,
            1_000_000,
        )?;
        if self.trade_interval_ms == 0 {
            return Err("workload.trade_interval_ms: must be at least 1".into());
        }
        if self.initial_balance <= 0 {
            return Err("workload.initial_balance: must be positive".into());
        }
        Ok(())
    }

    /// Mean simulated ms between trades of one worker, when `workers`
    /// workers share the customers.
    fn worker_gap_ms(&self, workers: usize) -> f64 {
        self.trade_interval_ms as f64 * workers as f64 / self.customers as f64
    }

    /// Trade-Order: record a new order and its index entry.
    async fn trade_order(&self, client: &Client, c: usize, id: &str, order: Order) -> bool {
        let Ok(mut txn) = Transaction::begin(client).await else {
            return false;
        };
        let checks = async {
            txn.get(&account_row(c), BALANCE).await?;
            txn.get(&security_row(order.sec), PRICE).await
        };
        if let Err(e) = checks.await {
            txn.abort((&e).into());
            return false;
        }
        let row = trade_row(c, id);
        txn.set(&row, ORDER, order.encode());
        txn.set(&row, STATUS, "pending");
        txn.set(&index_row(order.sec, c, id), REF, row);
        matches!(txn.commit().await, CommitOutcome::Committed { .. })
    }

    /// Trade-Result: settle a pending order; returns whether it is settled
    /// (or was already).
    async fn trade_result(&self, client: &Client, c: usize, id: &str) -> bool {
        let Ok(mut txn) = Transaction::begin(client).await else {
            return false;
        };
        match self.settle(&mut txn, c, id).await {
            Ok(true) => matches!(txn.commit().await, CommitOutcome::Committed { .. }),
            Ok(false) => {
                txn.commit().await;
                true
            }
            Err(e) => {
                txn.abort((&e).into());
                false
            }
        }
    }

    /// The reads and writes of Trade-Result; `Ok(false)`: nothing to do.
    async fn settle(
        &self,
        txn: &mut Transaction<'_, Client>,
        c: usize,
        id: &str,
    ) -> Result<bool, percsim_protocol::percolator::client::TxnError> {
        let row = trade_row(c, id);
        let status = txn.get(&row, STATUS).await?;
        let order = txn.get(&row, ORDER).await?.and_then(|o| Order::decode(&o));
        let (Some("pending"), Some(order)) = (status.as_deref(), order) else {
            return Ok(false);
        };
        let balance = read_int(txn, &account_row(c), BALANCE, self.initial_balance).await?;
        let held = read_int(txn, &holding_row(c, order.sec), QTY, 0).await?;
        if held + order.qty < 0 {
            txn.set(&row, STATUS, "rejected");
            return Ok(true);
        }
        txn.set(
            &account_row(c),
            BALANCE,
            (balance - order.qty * order.price).to_string(),
        );
        txn.set(
            &holding_row(c, order.sec),
            QTY,
            (held + order.qty).to_string(),
        );
        txn.set(&row, STATUS, "done");
        if self.broker_commission {
            let broker = broker_row(c / self.customers_per_broker);
            let paid = read_int(txn, &broker, COMMISSION, 0).await?;
            let count = read_int(txn, &broker, COUNT, 0).await?;
            txn.set(&broker, COMMISSION, (paid + order.commission()).to_string());
            txn.set(&broker, COUNT, (count + 1).to_string());
        }
        Ok(true)
    }

    /// One worker: trades for random customers, arriving as a Poisson
    /// process (open loop: a slow trade delays the next one only when the
    /// worker is already behind its schedule).
    async fn run_worker(self, mut w: Worker) {
        let tag = w.tag();
        let gap_ms = self.worker_gap_ms(w.client.workers_total());
        let mut n = 0u64;
        let mut next_ms = w.client.wall_ms() as f64;
        loop {
            let u: f64 = w.rng.random_range(f64::EPSILON..1.0);
            next_ms += -u.ln() * gap_ms;
            let now = w.client.wall_ms() as f64;
            if next_ms > now {
                w.client.sleep_ms((next_ms - now) as u64).await;
            }
            if w.client.stopping() {
                return;
            }
            n += 1;
            let id = format!("{tag}-{n}");
            let c = w.rng.random_range(0..self.customers);
            let sec = w.rng.random_range(0..self.securities);
            let qty = w.rng.random_range(1..=100i64) * if w.rng.random_bool(0.3) { -1 } else { 1 };
            let order = Order {
                sec,
                qty,
                price: price_of(sec),
            };
            if !self.trade_order(w.client.as_ref(), c, &id, order).await {
                continue;
            }
            w.client.sleep_ms(self.market_delay_ms).await;
            // The market settles the order, retrying until it is settled.
            while !self.trade_result(w.client.as_ref(), c, &id).await && !w.client.stopping() {
                w.client.sleep_ms(w.rng.random_range(10..100)).await;
            }
        }
    }
}

/// Read an integer cell, `default` when absent.
async fn read_int(
    txn: &mut Transaction<'_, Client>,
    row: &str,
    col: &str,
    default: i64,
) -> Result<i64, percsim_protocol::percolator::client::TxnError> {
    Ok(txn
        .get(row, col)
        .await?
        .and_then(|v| v.parse().ok())
        .unwrap_or(default))
}

impl Workload for Tpce {
    fn initial_data(&self) -> Vec<(CellKey, String)> {
        (0..self.securities)
            .map(|s| {
                (
                    CellKey::new(security_row(s), PRICE),
                    price_of(s).to_string(),
                )
            })
            .collect()
    }

    fn split_points(&self, tablets: usize) -> Vec<String> {
        // A quarter of the tablets (at least one) hold the securities and
        // the index by security, which every trade writes; the rest hold
        // the customers, evenly.
        if tablets <= 1 {
            return Vec::new();
        }
        let index_tablets = (tablets / 4).max(1);
        let customer_tablets = tablets - index_tablets;
        let mut splits: Vec<String> = (1..customer_tablets)
            .map(|i| customer_prefix(i * self.customers / customer_tablets))
            .collect();
        splits
            .extend((0..index_tablets).map(|i| security_row(i * self.securities / index_tablets)));
        splits.dedup();
        splits
    }

    fn worker(&self, w: Worker) -> BoxFuture<()> {
        Box::pin(self.clone().run_worker(w))
    }

    fn final_check(&self, client: Arc<Client>) -> BoxFuture<Vec<String>> {
        let p = self.clone();
        Box::pin(async move {
            match read_snapshot(&client, "", "\u{10ffff}", &[]).await {
                Some(cells) => p.judge(&cells),
                None => vec!["final read of the tables failed 20 times".to_string()],
            }
        })
    }
}

impl Tpce {
    /// The final invariants' parameters.
    fn rules(&self) -> Rules {
        Rules {
            initial_balance: self.initial_balance,
            brokers: self.broker_commission.then_some(Brokers {
                customers: self.customers,
                customers_per_broker: self.customers_per_broker,
            }),
        }
    }

    /// Judge one snapshot of the whole store against the trade history.
    fn judge(&self, cells: &[(CellKey, String)]) -> Vec<String> {
        let store: schema::Snapshot<'_> = cells
            .iter()
            .map(|(k, v)| ((k.row.as_str(), k.col.as_str()), v.as_str()))
            .collect();
        schema::judge(&self.rules(), &store)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(row: &str, col: &str, v: &str) -> (CellKey, String) {
        (
            CellKey::new(row.to_string(), col.to_string()),
            v.to_string(),
        )
    }

    /// A consistent store: customer 3 bought 10 of security 2 at 84 (the
    /// shared schema's own tests break each invariant; these check that
    /// the workload judges with its own parameters).
    fn consistent() -> Vec<(CellKey, String)> {
        vec![
            cell("b00000", COMMISSION, "8"),
            cell("b00000", COUNT, "1"),
            cell("c0000003/acct", BALANCE, "999160"),
            cell("c0000003/hold/00002", QTY, "10"),
            cell("c0000003/trade/x-1", ORDER, "2,10,84"),
            cell("c0000003/trade/x-1", STATUS, "done"),
            cell("c0000003/trade/x-2", ORDER, "2,-50,84"),
            cell("c0000003/trade/x-2", STATUS, "rejected"),
            cell("s/00002", PRICE, "84"),
            cell("s/00002/t/c0000003/x-1", REF, "c0000003/trade/x-1"),
            cell("s/00002/t/c0000003/x-2", REF, "c0000003/trade/x-2"),
        ]
    }

    fn with_commission() -> Tpce {
        Tpce {
            broker_commission: true,
            ..Tpce::default()
        }
    }

    #[test]
    fn a_consistent_store_passes() {
        assert_eq!(with_commission().judge(&consistent()), Vec::<String>::new());
        assert_eq!(price_of(2), 84);
    }

    #[test]
    fn a_broker_commission_off_by_one_fails_only_when_commissions_are_on() {
        let mut cells = consistent();
        cells[1].1 = "2".into();
        assert_eq!(
            with_commission().judge(&cells),
            vec![
                "b00000: commission and count (8, 2), but its customers' settled trades give (8, 1)"
            ]
        );
        assert!(Tpce::default().judge(&cells).is_empty());
    }

    #[test]
    fn splits_give_a_quarter_of_the_tablets_to_securities_and_their_index() {
        let t = Tpce {
            customers: 300,
            ..Tpce::default()
        };
        assert_eq!(t.split_points(4), vec!["c0000100", "c0000200", "s/00000"]);
        assert_eq!(
            t.split_points(8),
            vec![
                "c0000050", "c0000100", "c0000150", "c0000200", "c0000250", "s/00000", "s/00050"
            ]
        );
        assert_eq!(t.split_points(2), vec!["s/00000"]);
        assert_eq!(t.split_points(1), Vec::<String>::new());
    }
}
