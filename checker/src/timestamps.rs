//! Rule `timestamp_order`: timestamps are unique, every commit_ts follows its
//! start_ts, and a transaction begun after another completed gets a later
//! start_ts than everything that one was handed (strong snapshot isolation).
//! A read-only transaction that committed without a commit_ts (Percolator
//! asks the oracle for none) has only its start_ts to be judged by.

use crate::ctx::Ctx;
use crate::report::{Draft, Sink};
use crate::units::Ms;
use crate::{FindingClass, Rule};

/// How many transactions one finding describes in full.
const MAX_LISTED: usize = 10;

pub(crate) const ID: Rule = Rule::TimestampOrder;
pub(crate) const NAME: &str = "timestamps are unique, each commit_ts is above its start_ts, and a transaction begun after another completed has a larger start_ts than that one's timestamps";

/// Every commit_ts of transaction `t` (the client's and the store's),
/// sorted and deduplicated, into `out` (worked out when asked: a list of
/// them all was 16 bytes a transaction).
fn commits_of(ctx: &Ctx<'_>, t: u32, out: &mut Vec<u64>) {
    out.clear();
    out.extend(ctx.txn(t).commit_ts());
    // Usually every record repeats the client's commit_ts: a short list is
    // kept free of repeats as it grows, a long one sorted once.
    for r in ctx.recs_of(t).iter().filter(|r| r.is_commit()) {
        if out.len() > SHORT || !out.contains(&r.commit_ts) {
            out.push(r.commit_ts);
        }
    }
    if out.len() > 1 {
        out.sort_unstable();
        out.dedup();
    }
}

/// How long a list [`commits_of`] keeps free of repeats as it grows.
const SHORT: usize = 8;

/// The largest timestamp transaction `t` was handed.
fn last_ts(ctx: &Ctx<'_>, t: u32) -> u64 {
    let s = ctx.txn(t).start_ts;
    let client = ctx.txn(t).commit_ts().unwrap_or(s);
    let store = ctx
        .recs_of(t)
        .iter()
        .filter(|r| r.is_commit())
        .map(|r| r.commit_ts)
        .max()
        .unwrap_or(s);
    s.max(client).max(store)
}

pub(crate) fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    let early = unique(ctx, sink);
    commit_after_start(ctx, &early, sink);
    real_time(ctx, sink);
}

/// Uniqueness: sort every handed-out timestamp alone (8 bytes each), look
/// for equal neighbours; only the timestamps found twice are then matched
/// to the transactions that were handed them. Returns the transactions
/// with a commit_ts not above their start_ts (seen on the way, for
/// [`commit_after_start`]).
fn unique(ctx: &Ctx<'_>, sink: &mut Sink) -> Vec<u32> {
    let n = ctx.n();
    let mut scratch = Vec::new();
    let mut early = Vec::new();
    let mut all: Vec<u64> = Vec::with_capacity(n * 2);
    for t in 0..n as u32 {
        let start = ctx.txn(t).start_ts;
        all.push(start);
        commits_of(ctx, t, &mut scratch);
        if scratch.first().is_some_and(|&c| c <= start) {
            early.push(t);
        }
        all.extend_from_slice(&scratch);
    }
    // In place, and fast on the nearly sorted order of a real history.
    all.sort_unstable();
    let mut twice: Vec<u64> = all
        .windows(2)
        .filter(|p| p[0] == p[1])
        .map(|p| p[0])
        .collect();
    drop(all);
    if twice.is_empty() {
        return early;
    }
    twice.dedup();
    // (timestamp, txn, is a commit_ts) of each use of a timestamp found twice.
    let mut uses: Vec<(u64, u32, bool)> = Vec::new();
    for t in 0..n as u32 {
        let s = ctx.txn(t).start_ts;
        if twice.binary_search(&s).is_ok() {
            uses.push((s, t, false));
        }
        commits_of(ctx, t, &mut scratch);
        for &c in &scratch {
            if twice.binary_search(&c).is_ok() {
                uses.push((c, t, true));
            }
        }
    }
    uses.sort_unstable();
    let mut i = 0;
    while i < uses.len() {
        let mut j = i + 1;
        while j < uses.len() && uses[j].0 == uses[i].0 {
            j += 1;
        }
        duplicate(ctx, &uses[i..j], sink);
        i = j;
    }
    early
}

/// Files one timestamp's uses (sorted), when more than one transaction
/// was handed it.
fn duplicate(ctx: &Ctx<'_>, group: &[(u64, u32, bool)], sink: &mut Sink) {
    // Sorted, so one transaction's uses are neighbours.
    if group.iter().all(|g| g.1 == group[0].1) {
        return;
    }
    let mut txns: Vec<u32> = group.iter().map(|g| g.1).collect();
    txns.dedup();
    sink.add(FindingClass::DuplicateTimestamp, || {
        let mut uses: Vec<String> = group
            .iter()
            .take(MAX_LISTED)
            .map(|&(_, t, is_commit)| {
                format!(
                    "{} of T{}",
                    if is_commit { "commit_ts" } else { "start_ts" },
                    ctx.id(t)
                )
            })
            .collect();
        if group.len() > MAX_LISTED {
            uses.push(format!("{} more", group.len() - MAX_LISTED));
        }
        Draft::new(
            format!(
                "timestamp {} was handed out more than once: it is the {}",
                group[0].0,
                uses.join(" and the ")
            ),
            txns.iter().map(|&t| ctx.id(t)).collect(),
            txns.iter()
                .take(MAX_LISTED)
                .map(|&t| ctx.describe_txn(t))
                .collect(),
        )
    });
}

/// Every commit_ts above its start_ts: files each of `early`, the
/// transactions found otherwise, in order.
fn commit_after_start(ctx: &Ctx<'_>, early: &[u32], sink: &mut Sink) {
    let mut commits = Vec::new();
    for &t in early {
        let txn = ctx.txn(t);
        commits_of(ctx, t, &mut commits);
        let bad: Vec<u64> = commits
            .iter()
            .copied()
            .filter(|&c| c <= txn.start_ts)
            .collect();
        if !bad.is_empty() {
            sink.add(FindingClass::CommitNotAfterStart, || {
                let from_client = txn.commit_ts().is_some_and(|c| c <= txn.start_ts);
                let source = if from_client {
                    "its client reported"
                } else {
                    "the store records"
                };
                let mut details = vec![ctx.describe_txn(t)];
                details.extend(ctx.describe_store(t));
                Draft::new(
                    format!(
                        "T{} has start_ts {} but {source} commit_ts {}: a commit timestamp must be above the start timestamp",
                        txn.id,
                        txn.start_ts,
                        bad.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
                    ),
                    vec![txn.id],
                    details,
                )
            });
        }
    }
}

/// Real-time order, by a sweep: transactions by invocation time against the
/// completions before it, keeping the largest timestamp those were handed
/// (worked out as each completion is passed, not kept for all).
fn real_time(ctx: &Ctx<'_>, sink: &mut Sink) {
    let n = ctx.n();
    // (time, txn) pairs sorted in place: fast on the nearly sorted order of
    // a real history (a radix sort of bare indices by a key looked up in
    // the transactions was 3x slower at 10 million: a cache miss a look).
    let mut done: Vec<(u64, u32)> = (0..n as u32)
        .filter_map(|t| ctx.txn(t).complete_ns().map(|d| (d, t)))
        .collect();
    done.sort_unstable();
    let mut by_invoke: Vec<(u64, u32)> = (0..n as u32).map(|t| (ctx.txn(t).invoke_ns, t)).collect();
    by_invoke.sort_unstable();
    let mut next = 0;
    let mut best: Option<(u64, u32)> = None;
    for &(invoke, b) in &by_invoke {
        while next < done.len() && done[next].0 < invoke {
            let a = done[next].1;
            let last = last_ts(ctx, a);
            if best.is_none_or(|(m, _)| last > m) {
                best = Some((last, a));
            }
            next += 1;
        }
        let Some((m, a)) = best else {
            continue;
        };
        let tb = ctx.txn(b);
        if a == b || tb.start_ts > m {
            continue;
        }
        let ta = ctx.txn(a);
        let class = if ta.client == tb.client {
            FindingClass::ClientOrder
        } else {
            FindingClass::RealtimeOrder
        };
        sink.add(class, || {
            let mut commits = Vec::new();
            commits_of(ctx, a, &mut commits);
            let is_commit = commits.last() == Some(&m);
            let what = if is_commit {
                format!("commit_ts {m}")
            } else {
                format!("start_ts {m}")
            };
            let consequence = if class == FindingClass::ClientOrder {
                format!(
                    "; both ran on client {}, whose timestamps must grow with its time",
                    tb.client
                )
            } else if is_commit {
                format!(", so its snapshot can miss what T{} did", ta.id)
            } else {
                format!(", so its snapshot is older than the one T{} read", ta.id)
            };
            Draft::new(
                format!(
                    "T{} was invoked at {}, after T{} completed at {}, yet its start_ts {} is not above \
                     T{}'s {what}{consequence}",
                    tb.id,
                    Ms(tb.invoke_ns),
                    ta.id,
                    Ms(ta.complete_ns().unwrap_or_default()),
                    tb.start_ts,
                    ta.id
                ),
                vec![tb.id, ta.id],
                vec![ctx.describe_txn(b), ctx.describe_txn(a)],
            )
        });
    }
}
