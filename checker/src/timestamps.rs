//! Rule `timestamp_order`: timestamps are unique, every commit_ts follows its
//! start_ts, and a transaction begun after another completed gets a later
//! start_ts than everything that one was handed (strong snapshot isolation).
//! A read-only transaction that committed without a commit_ts (Percolator
//! asks the oracle for none) has only its start_ts to be judged by.

use crate::ctx::Ctx;
use crate::report::{Draft, Sink};
use crate::{FindingClass, Rule};

/// How many transactions one finding describes in full.
const MAX_LISTED: usize = 10;

pub(crate) const ID: Rule = Rule::TimestampOrder;
pub(crate) const NAME: &str = "timestamps are unique, each commit_ts is above its start_ts, and a transaction begun after another completed has a larger start_ts than that one's timestamps";

/// Every commit_ts of each transaction: the client's and the store's,
/// deduplicated, in one flat list.
struct Commits {
    off: Vec<usize>,
    flat: Vec<u64>,
}

impl Commits {
    fn of(ctx: &Ctx<'_>) -> Commits {
        let n = ctx.n();
        let mut off: Vec<usize> = Vec::with_capacity(n + 1);
        let mut flat: Vec<u64> = Vec::with_capacity(n);
        let mut scratch: Vec<u64> = Vec::new();
        off.push(0);
        for t in 0..n as u32 {
            scratch.clear();
            scratch.extend(ctx.txn(t).commit_ts());
            scratch.extend(
                ctx.recs_of(t)
                    .iter()
                    .filter(|r| r.is_commit())
                    .map(|r| r.commit_ts),
            );
            scratch.sort_unstable();
            scratch.dedup();
            flat.extend_from_slice(&scratch);
            off.push(flat.len());
        }
        Commits { off, flat }
    }

    fn get(&self, t: usize) -> &[u64] {
        &self.flat[self.off[t]..self.off[t + 1]]
    }
}

pub(crate) fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    let c = Commits::of(ctx);
    unique(ctx, &c, sink);
    commit_after_start(ctx, &c, sink);
    real_time(ctx, &c, sink);
}

/// Uniqueness: sort every handed-out timestamp, look for equal neighbours.
fn unique(ctx: &Ctx<'_>, c: &Commits, sink: &mut Sink) {
    let n = ctx.n();
    let commits = |t: usize| c.get(t);
    let mut all: Vec<(u64, u32, bool)> = Vec::with_capacity(n * 2);
    for t in 0..n as u32 {
        all.push((ctx.txn(t).start_ts, t, false));
        for &c in commits(t as usize) {
            all.push((c, t, true));
        }
    }
    all.sort_unstable();
    let mut i = 0;
    while i < all.len() {
        let mut j = i + 1;
        while j < all.len() && all[j].0 == all[i].0 {
            j += 1;
        }
        let group = &all[i..j];
        // Sorted, so one transaction's uses are neighbours.
        if group.iter().any(|g| g.1 != group[0].1) {
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
        i = j;
    }
}

/// Every commit_ts above its start_ts.
fn commit_after_start(ctx: &Ctx<'_>, c: &Commits, sink: &mut Sink) {
    let n = ctx.n();
    let commits = |t: usize| c.get(t);
    for t in 0..n as u32 {
        let txn = ctx.txn(t);
        let bad: Vec<u64> = commits(t as usize)
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
/// completions before it, keeping the largest timestamp those were handed.
fn real_time(ctx: &Ctx<'_>, c: &Commits, sink: &mut Sink) {
    let n = ctx.n();
    let commits = |t: usize| c.get(t);
    let last_ts: Vec<u64> = (0..n)
        .map(|t| {
            let s = ctx.h.txns[t].start_ts;
            commits(t).last().map_or(s, |&c| c.max(s))
        })
        .collect();
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
            if best.is_none_or(|(m, _)| last_ts[a as usize] > m) {
                best = Some((last_ts[a as usize], a));
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
            let is_commit = commits(a as usize).last() == Some(&m);
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
                    "T{} was invoked at {} ns, after T{} completed at {} ns, yet its start_ts {} is not above \
                     T{}'s {what}{consequence}",
                    tb.id,
                    tb.invoke_ns,
                    ta.id,
                    ta.complete_ns().unwrap_or_default(),
                    tb.start_ts,
                    ta.id
                ),
                vec![tb.id, ta.id],
                vec![ctx.describe_txn(b), ctx.describe_txn(a)],
            )
        });
    }
}
