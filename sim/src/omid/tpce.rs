//! Omid's TPC-E-lite (`omid-tpce`): the job of Percolator's `tpce`
//! workload on Omid's clients. Rows are customer-major
//! (`c0000042/acct`, `c0000042/hold/00007`, `c0000042/trade/<id>`);
//! securities are `s/00007` and the index by security
//! `s/00007/t/c0000042/<id>`. An absent account or holding is the initial
//! one, so data grows with the trades and not with the customers.
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
use percsim_protocol::omid::DataVersion;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Column names.
const BALANCE: &str = "balance";
const QTY: &str = "qty";
const ORDER: &str = "order";
const STATUS: &str = "status";
const PRICE: &str = "price";
const REF: &str = "ref";

fn account_row(c: usize) -> String {
    format!("c{c:07}/acct")
}
fn holding_row(c: usize, s: usize) -> String {
    format!("c{c:07}/hold/{s:05}")
}
fn trade_row(c: usize, id: &str) -> String {
    format!("c{c:07}/trade/{id}")
}
fn security_row(s: usize) -> String {
    format!("s/{s:05}")
}
fn index_row(s: usize, c: usize, id: &str) -> String {
    format!("s/{s:05}/t/c{c:07}/{id}")
}
fn price_of(s: usize) -> i64 {
    10 + (s as i64 * 37) % 90
}

/// One order: buy (`+`) or sell (`-`) `qty` shares of security `sec` at `price`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Order {
    sec: usize,
    qty: i64,
    price: i64,
}

impl Order {
    fn encode(&self) -> String {
        format!("{},{},{}", self.sec, self.qty, self.price)
    }
    fn decode(s: &str) -> Option<Order> {
        let mut it = s.split(',');
        let sec = it.next()?.parse().ok()?;
        let qty = it.next()?.parse().ok()?;
        let price = it.next()?.parse().ok()?;
        Some(Order { sec, qty, price })
    }
}

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
    let store: BTreeMap<(&str, &str), &str> = committed
        .iter()
        .filter_map(|((row, col), vs)| {
            let v = vs.last()?.value.as_deref()?;
            Some(((row.as_str(), col.as_str()), v))
        })
        .collect();
    judge(t, &store)
}

/// What the settled trades say each account and holding must hold.
#[derive(Default)]
struct Expected {
    balance: BTreeMap<usize, i64>,
    holding: BTreeMap<(usize, usize), i64>,
}

/// Judge one snapshot of the store (newest values by row and column).
fn judge(t: &Tpce, store: &BTreeMap<(&str, &str), &str>) -> Vec<String> {
    let mut bad = Vec::new();
    let want = replay_trades(t, store, &mut bad);
    judge_accounts(t, store, &want, &mut bad);
    bad
}

/// Sum the settled trades; check each order's status and index entry,
/// and each index entry's order.
fn replay_trades(
    t: &Tpce,
    store: &BTreeMap<(&str, &str), &str>,
    bad: &mut Vec<String>,
) -> Expected {
    let mut want = Expected::default();
    for (&(row, col), &value) in store {
        if row.starts_with("s/") && row.contains("/t/") {
            if col == REF && !store.contains_key(&(value, ORDER)) {
                bad.push(format!("index entry {row} names a missing order {value}"));
            }
            continue;
        }
        let Some((cust, id)) = row.split_once("/trade/") else {
            continue;
        };
        if col != ORDER {
            continue;
        }
        let c: usize = cust[1..].parse().unwrap_or(usize::MAX);
        let Some(order) = Order::decode(value) else {
            bad.push(format!("order {row} is unreadable: {value:?}"));
            continue;
        };
        if !store.contains_key(&(index_row(order.sec, c, id).as_str(), REF)) {
            bad.push(format!("order {row} has no index entry by security"));
        }
        match store.get(&(row, STATUS)).copied() {
            Some("done") => {
                *want.balance.entry(c).or_insert(t.initial_balance) -= order.qty * order.price;
                *want.holding.entry((c, order.sec)).or_default() += order.qty;
            }
            Some("pending") | Some("rejected") => {}
            other => bad.push(format!("order {row} has status {other:?}")),
        }
    }
    want
}

/// Every stored balance and holding equals what its trades say, and
/// every one the trades changed is stored.
fn judge_accounts(
    t: &Tpce,
    store: &BTreeMap<(&str, &str), &str>,
    want: &Expected,
    bad: &mut Vec<String>,
) {
    for (&(row, col), &value) in store {
        let Some((c, kind)) = row.strip_prefix('c').and_then(|r| r.split_once('/')) else {
            continue;
        };
        let c: usize = c.parse().unwrap_or(usize::MAX);
        let v: i64 = value.parse().unwrap_or(i64::MIN);
        let w = if kind == "acct" && col == BALANCE {
            want.balance.get(&c).copied().unwrap_or(t.initial_balance)
        } else if let Some(s) = kind.strip_prefix("hold/") {
            let s: usize = s.parse().unwrap_or(usize::MAX);
            want.holding.get(&(c, s)).copied().unwrap_or(0)
        } else {
            continue;
        };
        if v != w || v < 0 {
            bad.push(format!("{row}: {col} {v}, but its settled trades give {w}"));
        }
    }
    for (&c, &w) in &want.balance {
        if !store.contains_key(&(account_row(c).as_str(), BALANCE)) && w != t.initial_balance {
            bad.push(format!(
                "{}: no balance stored, but its settled trades give {w}",
                account_row(c)
            ));
        }
    }
    for (&(c, s), &w) in &want.holding {
        if !store.contains_key(&(holding_row(c, s).as_str(), QTY)) && w != 0 {
            bad.push(format!(
                "{}: no holding stored, but its settled trades give {w}",
                holding_row(c, s)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A consistent store: customer 3 bought 10 of security 2 at 84, and
    /// an order to sell 50 was rejected.
    fn consistent() -> Vec<((&'static str, &'static str), &'static str)> {
        vec![
            (("c0000003/acct", BALANCE), "999160"),
            (("c0000003/hold/00002", QTY), "10"),
            (("c0000003/trade/x-1", ORDER), "2,10,84"),
            (("c0000003/trade/x-1", STATUS), "done"),
            (("c0000003/trade/x-2", ORDER), "2,-50,84"),
            (("c0000003/trade/x-2", STATUS), "rejected"),
            (("s/00002", PRICE), "84"),
            (("s/00002/t/c0000003/x-1", REF), "c0000003/trade/x-1"),
            (("s/00002/t/c0000003/x-2", REF), "c0000003/trade/x-2"),
        ]
    }

    fn judged(cells: Vec<((&str, &str), &str)>) -> Vec<String> {
        let store = cells.into_iter().collect();
        judge(&Tpce::default(), &store)
    }

    #[test]
    fn a_consistent_store_passes_and_each_broken_invariant_is_named() {
        assert_eq!(price_of(2), 84);
        assert_eq!(judged(consistent()), Vec::<String>::new());
        let mut cells = consistent();
        cells[0].1 = "999161";
        assert_eq!(
            judged(cells),
            ["c0000003/acct: balance 999161, but its settled trades give 999160"]
        );
        let mut cells = consistent();
        cells.remove(1);
        assert_eq!(
            judged(cells),
            ["c0000003/hold/00002: no holding stored, but its settled trades give 10"]
        );
        let mut cells = consistent();
        cells.remove(7);
        assert_eq!(
            judged(cells),
            ["order c0000003/trade/x-1 has no index entry by security"]
        );
        let mut cells = consistent();
        cells.remove(2);
        let bad = judged(cells);
        assert!(
            bad.iter()
                .any(|b| b.contains("names a missing order c0000003/trade/x-1")),
            "{bad:?}"
        );
    }
}
