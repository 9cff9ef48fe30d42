//! Liveness rule `notification_pending`: once the healed phase begins, a
//! change to an observed cell is processed by a committed run of each of
//! its observers within a bound (paper, "Notifications": scanners find the
//! dirty cell and run its observers).
//!
//! What it reads is what clients observed and what the store holds: a
//! change is a write (put or delete) by a transaction of the history to a
//! column a (non-weak) observer observes, whose write record the store
//! holds; it can be processed from when its writer learnt it committed
//! (`complete_ns`), or, for a writer that never learnt it, when a cleanup
//! rolled the cell forward (`roll_forward`); a change with neither is not
//! judged (a later change of the cell is). It is processed by the first
//! committed run of the observer on the cell that started after it
//! (`start_ts` above its `commit_ts`), at the time that run's client
//! learnt it committed (a run whose outcome stayed unknown but whose
//! writes the store holds counts from its beginning). A change with no
//! such run is pending until the last moment the history records.
//!
//! A change is due at the later of the heal (`phase_healed`), the end of
//! the last fault still in force after it (a client's stall or pause may
//! outlast the heal), and the time it could be processed; a fault whose
//! end the history does not record leaves the rule unjudged. It must be
//! processed within `scan_interval_ms +
//! observer_run_ms + notify_bound_ms` of that, the thresholds the system
//! records in its `liveness_thresholds` event. A history without them, or
//! without the heal, is not judged by this rule. Weak observers (whose
//! notifications are set without a write) are not judged.

use crate::compact::{Compact, OpKind};
use crate::history::{Event, Outcome, VersionKind};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

const MS: u64 = 1_000_000;

/// The thresholds of `notification_pending`, as the producer recorded them
/// in its `liveness_thresholds` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NotifyThresholds {
    /// The longest a scanner waits before it looks for dirty cells again.
    pub scan_interval_ms: u64,
    /// The longest one observer run may take after the heal (its waits on
    /// locks, its RPC time-outs and retries, the backoff after a failure).
    pub observer_run_ms: u64,
    /// Slack on top: several dirty cells in a scanner's way, round trips.
    pub notify_bound_ms: u64,
}

impl NotifyThresholds {
    /// How long a due change may stay pending, in ms.
    pub fn limit_ms(&self) -> u64 {
        self.scan_interval_ms + self.observer_run_ms + self.notify_bound_ms
    }

    /// The thresholds in words, as printed under the seed.
    pub fn line(&self) -> String {
        format!(
            "scan_interval {} ms, observer_run {} ms, notify_bound {} ms (a change to an \
             observed cell is processed within {} ms of the heal or of its commit, whichever \
             is later)",
            self.scan_interval_ms,
            self.observer_run_ms,
            self.notify_bound_ms,
            self.limit_ms()
        )
    }

    /// The thresholds of event `e`, if it records all three.
    pub(crate) fn of(e: &Event) -> Option<NotifyThresholds> {
        let u = |name: &str| e.fields.get(name)?.as_u64();
        Some(NotifyThresholds {
            scan_interval_ms: u("scan_interval_ms")?,
            observer_run_ms: u("observer_run_ms")?,
            notify_bound_ms: u("notify_bound_ms")?,
        })
    }
}

/// One committed change of an observed cell.
#[derive(Debug, Clone, Copy)]
struct Change {
    commit_ts: u64,
    /// The writer's index in the history.
    writer: usize,
    /// When it could be processed, if the history says.
    visible_ns: Option<u64>,
}

/// One committed observer run: its start_ts, when it was known committed,
/// and its index in the history.
#[derive(Debug, Clone, Copy)]
struct Done {
    start_ts: u64,
    done_ns: u64,
    txn: usize,
}

/// What the rule reads, indexed.
struct Facts<'c> {
    c: &'c Compact,
    /// Committed changes by cell, in commit order.
    changes: BTreeMap<u32, Vec<Change>>,
    /// Committed runs by (observer name, cell), in start_ts order.
    runs: BTreeMap<(&'c str, u32), Vec<Done>>,
    /// The last moment the history records.
    end_ns: u64,
    /// Cells with a notify entry left in the store.
    left: BTreeSet<u32>,
}

/// When the healed phase began, and when the last fault ended (at or
/// after the heal).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Healed {
    pub healed_ns: u64,
    pub whole_ns: u64,
}

/// A notification pending past its bound: the explanation, and the
/// transactions involved (the writer first, then the observer's run, if
/// one came).
pub(crate) struct Pending {
    /// One sentence naming the cell, the observer, the times and the bound.
    pub(crate) summary: String,
    /// The writer, then the late run when there is one.
    pub(crate) txns: Vec<u64>,
}

/// `notification_pending` on the history read into `c`, healed as
/// `healed` says, with thresholds `t`: one finding per observer and cell,
/// its first change pending past the limit.
pub(crate) fn judge(c: &Compact, healed: Healed, t: &NotifyThresholds) -> Vec<Pending> {
    let observed: Vec<(&str, &str)> = c
        .observers
        .iter()
        .filter(|d| !d.weak)
        .map(|d| (d.name.as_str(), d.col.as_str()))
        .collect();
    if observed.is_empty() {
        return Vec::new();
    }
    let facts = Facts::build(c, &observed);
    let mut out = Vec::new();
    for (&cell, changes) in &facts.changes {
        let col = c.cell_name(cell).1;
        for &(name, _) in observed.iter().filter(|(_, oc)| *oc == col) {
            let runs = facts.runs.get(&(name, cell)).map_or(&[][..], Vec::as_slice);
            if let Some(f) = facts.first_late(cell, name, changes, runs, healed, t) {
                out.push(f);
            }
        }
    }
    out
}

impl<'c> Facts<'c> {
    fn build(c: &'c Compact, observed: &[(&str, &str)]) -> Self {
        let is_observed = |cell: u32| observed.iter().any(|(_, col)| *col == c.cell_name(cell).1);
        // The store's put and delete records: (cell, start_ts) -> commit_ts.
        let mut stored: BTreeMap<(u32, u64), u64> = BTreeMap::new();
        for s in &c.state {
            for v in &c.versions[s.lo..s.hi] {
                if v.kind != VersionKind::Rollback {
                    stored.insert((s.cell, v.start_ts), v.commit_ts);
                }
            }
        }
        let rolled = rolled_forward(c);
        let mut facts = Facts {
            c,
            changes: BTreeMap::new(),
            runs: BTreeMap::new(),
            end_ns: c.events.iter().map(|e| e.t_ns).max().unwrap_or(0),
            left: c.notify.iter().copied().collect(),
        };
        for (i, txn) in c.txns.iter().enumerate() {
            let ends = [Some(txn.invoke_ns), txn.complete_ns()];
            facts.end_ns = facts
                .end_ns
                .max(ends.into_iter().flatten().max().unwrap_or(0));
            let written = c.ops(i).iter().filter(|o| o.kind != OpKind::Read);
            let mut in_store = false;
            for op in written {
                let Some(&commit_ts) = stored.get(&(op.cell, txn.start_ts)) else {
                    continue;
                };
                in_store = true;
                if !is_observed(op.cell) {
                    continue;
                }
                let visible_ns = match txn.outcome {
                    Outcome::Committed => txn.complete_ns(),
                    _ => None,
                }
                .or_else(|| rolled.get(&(op.cell, txn.start_ts)).copied());
                facts.changes.entry(op.cell).or_default().push(Change {
                    commit_ts,
                    writer: i,
                    visible_ns,
                });
            }
            facts.note_run(i, in_store);
        }
        for v in facts.changes.values_mut() {
            v.sort_by_key(|ch| (ch.commit_ts, ch.writer));
        }
        for v in facts.runs.values_mut() {
            v.sort_by_key(|r| (r.start_ts, r.txn));
        }
        facts
    }

    /// Index transaction `i` if it is a committed observer run: known
    /// committed by its client, or unknown with writes the store holds
    /// (`in_store`; counted from its beginning).
    fn note_run(&mut self, i: usize, in_store: bool) {
        let c = self.c;
        let txn = &c.txns[i];
        let Some(mark) = c.runs.get(txn.observer as usize) else {
            return;
        };
        let done_ns = match (txn.outcome, txn.complete_ns()) {
            (Outcome::Committed, Some(ns)) => ns,
            (Outcome::Committed, None) => txn.invoke_ns,
            (Outcome::Unknown, _) if in_store => txn.invoke_ns,
            _ => return,
        };
        let name = c.strs.get(mark.name);
        self.runs.entry((name, mark.cell)).or_default().push(Done {
            start_ts: txn.start_ts,
            done_ns,
            txn: i,
        });
    }

    /// The first change of `cell` that observer `name` left pending past
    /// the limit, explained.
    fn first_late(
        &self,
        cell: u32,
        name: &str,
        changes: &[Change],
        runs: &[Done],
        healed: Healed,
        t: &NotifyThresholds,
    ) -> Option<Pending> {
        let limit_ns = t.limit_ms() * MS;
        changes.iter().find_map(|ch| {
            let due_ns = healed.whole_ns.max(ch.visible_ns?);
            let run = runs.iter().find(|r| r.start_ts > ch.commit_ts);
            let until_ns = run.map_or(self.end_ns, |r| r.done_ns);
            (until_ns.saturating_sub(due_ns) > limit_ns)
                .then(|| self.explain(cell, name, ch, run, (healed, due_ns), t))
        })
    }

    /// The finding for change `ch` of `cell`, due at `due_ns` (the heal at
    /// `healed_ns`), processed by `run` if any.
    fn explain(
        &self,
        cell: u32,
        name: &str,
        ch: &Change,
        run: Option<&Done>,
        (healed, due_ns): (Healed, u64),
        t: &NotifyThresholds,
    ) -> Pending {
        let (row, col) = self.c.cell_name(cell);
        let writer = &self.c.txns[ch.writer];
        let healed_ms = healed.healed_ns / MS;
        let since = if due_ns > healed.whole_ns {
            format!("{} ms, after the heal at {healed_ms} ms", due_ns / MS)
        } else if due_ns > healed.healed_ns {
            format!(
                "the end of the last fault at {} ms, after the heal at {healed_ms} ms",
                due_ns / MS
            )
        } else {
            format!("the heal at {healed_ms} ms")
        };
        let (pending_ms, end) = match run {
            Some(r) => (
                r.done_ns.saturating_sub(due_ns) / MS,
                format!(
                    "it was processed only by T{} (start_ts {}), known committed at {} ms",
                    self.c.txns[r.txn].id,
                    r.start_ts,
                    r.done_ns / MS
                ),
            ),
            None => {
                let entry = if self.left.contains(&cell) {
                    "its notify entry is still in the store"
                } else {
                    "no notify entry is left, but no run processed it"
                };
                (
                    self.end_ns.saturating_sub(due_ns) / MS,
                    format!(
                        "no committed run of the observer started after it, up to the end of \
                         the history at {} ms ({entry})",
                        self.end_ns / MS
                    ),
                )
            }
        };
        let mut txns = vec![writer.id];
        txns.extend(run.map(|r| self.c.txns[r.txn].id));
        Pending {
            summary: format!(
                "the notification of {row}/{col} for observer {name:?}, set by T{} (start_ts {}, \
                 committed at {}, known committed at {} ms), was pending {pending_ms} ms from \
                 {since}: {end}; past scan_interval + observer_run + notify_bound = {} + {} + \
                 {} = {} ms",
                writer.id,
                writer.start_ts,
                ch.commit_ts,
                ch.visible_ns.unwrap_or(due_ns) / MS,
                t.scan_interval_ms,
                t.observer_run_ms,
                t.notify_bound_ms,
                t.limit_ms()
            ),
            txns,
        }
    }
}

/// When a cleanup last rolled each (cell, start_ts) forward.
fn rolled_forward(c: &Compact) -> BTreeMap<(u32, u64), u64> {
    let cells: BTreeMap<(&str, &str), u32> = c
        .state
        .iter()
        .map(|s| (c.cell_name(s.cell), s.cell))
        .collect();
    let mut out = BTreeMap::new();
    for e in c.events.iter().filter(|e| e.kind == "roll_forward") {
        let s = |n: &str| e.fields.get(n).and_then(|v| v.as_str());
        let (Some(row), Some(col)) = (s("row"), s("col")) else {
            continue;
        };
        let Some(ts) = e.fields.get("start_ts").and_then(|v| v.as_u64()) else {
            continue;
        };
        if let Some(&cell) = cells.get(&(row, col)) {
            out.insert((cell, ts), e.t_ns);
        }
    }
    out
}
