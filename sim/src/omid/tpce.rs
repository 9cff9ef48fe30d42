//! Omid's TPC-E-lite (`omid-tpce`): the job of Percolator's `tpce`
//! workload on Omid's clients, on the shared schema and invariants of
//! `percsim_protocol::jobs::tpce` (rows, orders, prices, the final check).
//!
//! Final invariants, judged on the committed store after convergence:
//! every balance and every holding agrees with the settled trades of its
//! customer, no holding is negative, every order has its index entry and
//! every index entry its order, and every order's status is known.

use super::config::Tpce;
use super::types::{Client, OmidOutcome, Shared};
use crate::world::lock;
use madsim::time::{Duration, sleep};
use percsim_checker as history;
use percsim_protocol::jobs::tpce::{
    self as schema, BALANCE, ORDER, Order, PRICE, QTY, REF, Rules, STATUS, account_row,
    holding_row, index_row, price_of, security_row, trade_row,
};
use percsim_protocol::omid::DataVersion;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A random number below `n` (at least 1), from the seeded generator.
fn below(n: u64) -> u64 {
    madsim::rand::random::<u64>() % n.max(1)
}

/// The initial load: every security's price, committed at timestamps 1
/// and 2 with its shadow cell (the caller raises the TSO's ceiling).
pub(super) fn load(
    t: &Tpce,
    cells: &mut BTreeMap<(String, String), Vec<DataVersion>>,
) -> Vec<history::Op> {
    let mut ops = Vec::new();
    for s in 0..t.securities {
        let value = price_of(s).to_string();
        cells.insert(
            (security_row(s), PRICE.into()),
            vec![DataVersion {
                start_ts: 1,
                value: Some(value.clone()),
                shadow_ts: Some(2),
            }],
        );
        ops.push(history::Op::Write {
            row: security_row(s),
            col: PRICE.into(),
            value,
        });
    }
    ops
}

impl Client {
    /// Run `t.workers` trading loops until the workload phase ends.
    pub(super) async fn tpce(self: &Arc<Self>, t: &Tpce) {
        let workers = (0..t.workers).map(|_| self.trade_loop(t));
        futures::future::join_all(workers).await;
    }

    /// One worker: trades for random customers arriving as a Poisson
    /// process (open loop: a slow trade delays the next one only when the
    /// worker is already behind its schedule).
    async fn trade_loop(self: &Arc<Self>, t: &Tpce) {
        let workers = (t.workers * self.shared.cfg.clients) as f64;
        let gap_ms = t.trade_interval_ms as f64 * workers / t.customers as f64;
        let world = self.shared.world.clone();
        let mut next_ms = world.now_ns() as f64 / 1e6;
        while !world.stopping() {
            let u = (madsim::rand::random::<f64>()).max(f64::EPSILON);
            next_ms += -u.ln() * gap_ms;
            let now_ms = world.now_ns() as f64 / 1e6;
            if next_ms > now_ms {
                sleep(Duration::from_micros(((next_ms - now_ms) * 1e3) as u64)).await;
            }
            if world.stopping() {
                return;
            }
            self.trade(t).await;
        }
    }

    /// One trade: its order, then (after the market's delay) its result,
    /// retried until settled or the workload phase ends.
    async fn trade(self: &Arc<Self>, t: &Tpce) {
        let id = {
            let mut disk = self.disk_mut();
            disk.trades += 1;
            format!("{}-{}", self.index, disk.trades)
        };
        let c = below(t.customers as u64) as usize;
        let sec = below(t.securities as u64) as usize;
        let sign = if madsim::rand::random::<f64>() < 0.3 {
            -1
        } else {
            1
        };
        let order = Order {
            sec,
            qty: (1 + below(100) as i64) * sign,
            price: price_of(sec),
        };
        if !self.trade_order(c, &id, order).await {
            return;
        }
        sleep(Duration::from_millis(t.market_delay_ms)).await;
        while !self.trade_result(t, c, &id).await && !self.shared.world.stopping() {
            sleep(Duration::from_millis(10 + below(90))).await;
        }
    }

    /// Trade-Order: record a new order and its index entry.
    async fn trade_order(self: &Arc<Self>, c: usize, id: &str, order: Order) -> bool {
        let mut txn = self.begin().await;
        self.read(&txn, &account_row(c), BALANCE).await;
        self.read(&txn, &security_row(order.sec), PRICE).await;
        let row = trade_row(c, id);
        self.write(&mut txn, &row, ORDER, Some(order.encode()))
            .await;
        self.write(&mut txn, &row, STATUS, Some("pending".into()))
            .await;
        let index = index_row(order.sec, c, id);
        self.write(&mut txn, &index, REF, Some(row)).await;
        matches!(self.commit(txn).await, OmidOutcome::Committed { .. })
    }

    /// Trade-Result: settle a pending order; whether it is settled (or
    /// was already, or there is nothing to settle).
    async fn trade_result(self: &Arc<Self>, t: &Tpce, c: usize, id: &str) -> bool {
        let mut txn = self.begin().await;
        let row = trade_row(c, id);
        let status = self.read(&txn, &row, STATUS).await;
        let order = self.read(&txn, &row, ORDER).await;
        let order = order.as_deref().and_then(Order::decode);
        let (Some("pending"), Some(order)) = (status.as_deref(), order) else {
            self.commit(txn).await;
            return true;
        };
        let int = |v: Option<String>, d: i64| v.and_then(|v| v.parse().ok()).unwrap_or(d);
        let balance = int(
            self.read(&txn, &account_row(c), BALANCE).await,
            t.initial_balance,
        );
        let held = int(self.read(&txn, &holding_row(c, order.sec), QTY).await, 0);
        if held + order.qty < 0 {
            self.write(&mut txn, &row, STATUS, Some("rejected".into()))
                .await;
        } else {
            let paid = (balance - order.qty * order.price).to_string();
            self.write(&mut txn, &account_row(c), BALANCE, Some(paid))
                .await;
            let now_held = (held + order.qty).to_string();
            self.write(&mut txn, &holding_row(c, order.sec), QTY, Some(now_held))
                .await;
            self.write(&mut txn, &row, STATUS, Some("done".into()))
                .await;
        }
        matches!(self.commit(txn).await, OmidOutcome::Committed { .. })
    }
}

/// The workload's invariants after convergence, on the newest committed
/// value of every cell (see the module's docs).
pub(super) fn final_check(shared: &Shared, t: &Tpce) -> Vec<String> {
    let committed = lock(&shared.store).committed();
    let store: schema::Snapshot<'_> = committed
        .iter()
        .filter_map(|((row, col), vs)| {
            let v = vs.last()?.value.as_deref()?;
            Some(((row.as_str(), col.as_str()), v))
        })
        .collect();
    let rules = Rules {
        initial_balance: t.initial_balance,
        brokers: None,
    };
    schema::judge(&rules, &store)
}
