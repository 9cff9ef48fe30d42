//! TPC-E-lite's schema and final invariants, shared by every system that
//! runs it: a brokerage whose customers trade; a trade is an order
//! (Trade-Order) and, after a market delay, its settlement (Trade-Result).
//!
//! Rows are customer-major (`c0000042/acct`, `c0000042/hold/00007`,
//! `c0000042/trade/<id>`), so a customer's own rows sort together;
//! securities are `s/00007` and the index by security
//! `s/00007/t/c0000042/<id>`; brokers (when commissions are kept) are
//! `b00003`. An absent account or holding is the initial one, so data
//! grows with the trades and not with the customers.
//!
//! Final invariants ([`judge`]), on the newest committed value of every
//! cell: every balance and every holding agrees with the settled trades
//! of its customer, no holding is negative, every order has its index
//! entry and every index entry its order, every order's status is known,
//! and (with commissions) every broker's commission and trade count agree
//! with its customers' settled trades.

use std::collections::BTreeMap;

/// An account's balance column.
pub const BALANCE: &str = "balance";
/// A holding's quantity column.
pub const QTY: &str = "qty";
/// A trade's order column (an [`Order`], encoded).
pub const ORDER: &str = "order";
/// A trade's status column: `pending`, `done` or `rejected`.
pub const STATUS: &str = "status";
/// A security's price column.
pub const PRICE: &str = "price";
/// An index entry's column: the trade row it names.
pub const REF: &str = "ref";
/// A broker's commission column.
pub const COMMISSION: &str = "commission";
/// A broker's trade count column.
pub const COUNT: &str = "count";

/// The prefix of every row of customer `c`.
pub fn customer_prefix(c: usize) -> String {
    format!("c{c:07}")
}

/// Customer `c`'s account row.
pub fn account_row(c: usize) -> String {
    format!("c{c:07}/acct")
}

/// Customer `c`'s holding of security `s`.
pub fn holding_row(c: usize, s: usize) -> String {
    format!("c{c:07}/hold/{s:05}")
}

/// Customer `c`'s trade `id`.
pub fn trade_row(c: usize, id: &str) -> String {
    format!("c{c:07}/trade/{id}")
}

/// Security `s`'s row.
pub fn security_row(s: usize) -> String {
    format!("s/{s:05}")
}

/// The index entry by security `s` of customer `c`'s trade `id`.
pub fn index_row(s: usize, c: usize, id: &str) -> String {
    format!("s/{s:05}/t/c{c:07}/{id}")
}

/// Broker `b`'s row.
pub fn broker_row(b: usize) -> String {
    format!("b{b:05}")
}

/// Security `s`'s price (fixed: the initial load writes it).
pub fn price_of(s: usize) -> i64 {
    10 + (s as i64 * 37) % 90
}

/// One order: buy (`+`) or sell (`-`) `qty` shares of security `sec` at `price`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    /// The security.
    pub sec: usize,
    /// Shares bought (positive) or sold (negative).
    pub qty: i64,
    /// The price per share.
    pub price: i64,
}

impl Order {
    /// The order as its column stores it: `sec,qty,price`.
    pub fn encode(&self) -> String {
        format!("{},{},{}", self.sec, self.qty, self.price)
    }

    /// The order of a stored column (`None` if it is not one).
    pub fn decode(s: &str) -> Option<Order> {
        let mut it = s.split(',');
        let sec = it.next()?.parse().ok()?;
        let qty = it.next()?.parse().ok()?;
        let price = it.next()?.parse().ok()?;
        Some(Order { sec, qty, price })
    }

    /// The broker's commission on this order (1%, at least 1).
    pub fn commission(&self) -> i64 {
        (self.qty.abs() * self.price / 100).max(1)
    }
}

/// Brokers kept with their commissions: how many customers there are, and
/// how many each broker serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Brokers {
    /// Customers in all.
    pub customers: usize,
    /// Customers served by one broker.
    pub customers_per_broker: usize,
}

/// What the final invariants depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// Every account's balance before its first trade.
    pub initial_balance: i64,
    /// The brokers, if Trade-Result keeps their commissions.
    pub brokers: Option<Brokers>,
}

/// A snapshot of the store: the newest value by row and column.
pub type Snapshot<'a> = BTreeMap<(&'a str, &'a str), &'a str>;

/// What the settled trades say each account, holding and broker must hold.
#[derive(Default)]
struct Expected {
    balance: BTreeMap<usize, i64>,
    holding: BTreeMap<(usize, usize), i64>,
    commission: BTreeMap<usize, (i64, i64)>,
}

/// Judge one snapshot of the store against its trades: every invariant
/// broken, named (see the module's docs).
pub fn judge(rules: &Rules, store: &Snapshot<'_>) -> Vec<String> {
    let mut bad = Vec::new();
    let want = replay_trades(rules, store, &mut bad);
    judge_accounts(rules, store, &want, &mut bad);
    judge_brokers(rules, store, &want, &mut bad);
    bad
}

/// Sum the settled trades; check each order's status and index entry,
/// and each index entry's order.
fn replay_trades(rules: &Rules, store: &Snapshot<'_>, bad: &mut Vec<String>) -> Expected {
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
            Some("done") => settled(rules, &mut want, c, order),
            Some("pending") | Some("rejected") => {}
            other => bad.push(format!("order {row} has status {other:?}")),
        }
    }
    want
}

/// Count customer `c`'s settled `order` in what the store must hold.
fn settled(rules: &Rules, want: &mut Expected, c: usize, order: Order) {
    *want.balance.entry(c).or_insert(rules.initial_balance) -= order.qty * order.price;
    *want.holding.entry((c, order.sec)).or_default() += order.qty;
    if let Some(b) = rules.brokers {
        let per = b.customers_per_broker.max(1);
        let kept = want.commission.entry(c / per).or_default();
        kept.0 += order.commission();
        kept.1 += 1;
    }
}

/// Every stored balance and holding equals what its trades say, no
/// holding is negative, and every one the trades changed is stored.
fn judge_accounts(rules: &Rules, store: &Snapshot<'_>, want: &Expected, bad: &mut Vec<String>) {
    for (&(row, col), &value) in store {
        let Some((c, kind)) = row.strip_prefix('c').and_then(|r| r.split_once('/')) else {
            continue;
        };
        let c: usize = c.parse().unwrap_or(usize::MAX);
        let v: i64 = value.parse().unwrap_or(i64::MIN);
        if kind == "acct" && col == BALANCE {
            let w = want
                .balance
                .get(&c)
                .copied()
                .unwrap_or(rules.initial_balance);
            if v != w {
                bad.push(format!(
                    "{row}: balance {v}, but its settled trades give {w}"
                ));
            }
        } else if let Some(s) = kind.strip_prefix("hold/") {
            let s: usize = s.parse().unwrap_or(usize::MAX);
            let w = want.holding.get(&(c, s)).copied().unwrap_or(0);
            if v != w || v < 0 {
                bad.push(format!(
                    "{row}: holding {v}, but its settled trades give {w}"
                ));
            }
        }
    }
    for (&c, &w) in &want.balance {
        if !store.contains_key(&(account_row(c).as_str(), BALANCE)) && w != rules.initial_balance {
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

/// With commissions kept, every broker's totals equal its customers' trades.
fn judge_brokers(rules: &Rules, store: &Snapshot<'_>, want: &Expected, bad: &mut Vec<String>) {
    let Some(b) = rules.brokers else {
        return;
    };
    let per = b.customers_per_broker.max(1);
    for broker in 0..b.customers.div_ceil(per) {
        let row = broker_row(broker);
        let get = |col| {
            store
                .get(&(row.as_str(), col))
                .and_then(|v| v.parse::<i64>().ok())
                .unwrap_or(0)
        };
        let got = (get(COMMISSION), get(COUNT));
        let w = want.commission.get(&broker).copied().unwrap_or((0, 0));
        if got != w {
            bad.push(format!(
                "{row}: commission and count {got:?}, but its customers' settled trades give {w:?}"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A consistent store: customer 3 bought 10 of security 2 at 84 (a
    /// commission of 8 for broker 0), and an order to sell 50 was rejected.
    fn consistent() -> Vec<((&'static str, &'static str), &'static str)> {
        vec![
            (("b00000", COMMISSION), "8"),
            (("b00000", COUNT), "1"),
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

    const WITH_BROKERS: Rules = Rules {
        initial_balance: 1_000_000,
        brokers: Some(Brokers {
            customers: 100,
            customers_per_broker: 100,
        }),
    };

    const WITHOUT_BROKERS: Rules = Rules {
        initial_balance: 1_000_000,
        brokers: None,
    };

    fn judged(rules: &Rules, cells: Vec<((&str, &str), &str)>) -> Vec<String> {
        judge(rules, &cells.into_iter().collect())
    }

    #[test]
    fn the_schema_names_rows_and_encodes_orders() {
        assert_eq!(price_of(2), 84);
        assert_eq!(account_row(42), "c0000042/acct");
        assert_eq!(holding_row(42, 7), "c0000042/hold/00007");
        assert_eq!(index_row(7, 42, "x-1"), "s/00007/t/c0000042/x-1");
        let o = Order {
            sec: 2,
            qty: -50,
            price: 84,
        };
        assert_eq!(o.encode(), "2,-50,84");
        assert_eq!(Order::decode(&o.encode()), Some(o));
        assert_eq!(Order::decode("2,x,84"), None);
        assert_eq!(o.commission(), 42);
    }

    #[test]
    fn a_consistent_store_passes() {
        assert_eq!(judged(&WITH_BROKERS, consistent()), Vec::<String>::new());
    }

    #[test]
    fn a_balance_or_a_holding_that_disagrees_with_the_trades_fails() {
        let mut cells = consistent();
        cells[2].1 = "999161";
        assert_eq!(
            judged(&WITH_BROKERS, cells),
            ["c0000003/acct: balance 999161, but its settled trades give 999160"]
        );
        let mut cells = consistent();
        cells.remove(3);
        assert_eq!(
            judged(&WITH_BROKERS, cells),
            ["c0000003/hold/00002: no holding stored, but its settled trades give 10"]
        );
    }

    #[test]
    fn a_missing_index_entry_or_order_fails() {
        let mut cells = consistent();
        cells.remove(9);
        assert_eq!(
            judged(&WITH_BROKERS, cells),
            ["order c0000003/trade/x-1 has no index entry by security"]
        );
        let mut cells = consistent();
        cells.remove(4);
        let bad = judged(&WITH_BROKERS, cells);
        assert!(
            bad.iter()
                .any(|b| b.contains("names a missing order c0000003/trade/x-1")),
            "{bad:?}"
        );
    }

    #[test]
    fn a_broker_off_by_one_fails_only_when_commissions_are_kept() {
        let mut cells = consistent();
        cells[1].1 = "2";
        assert_eq!(
            judged(&WITH_BROKERS, cells.clone()),
            ["b00000: commission and count (8, 2), but its customers' settled trades give (8, 1)"]
        );
        assert!(judged(&WITHOUT_BROKERS, cells).is_empty());
    }
}
