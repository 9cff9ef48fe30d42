//! Running an observer for a notification (paper, "Notifications").
//!
//! The observer's transaction reads the observed cell (with its version)
//! and the observer's acknowledgment column; it runs the observer's body
//! only if the cell changed after the last acknowledgment, and writes its
//! own start_ts as the new acknowledgment, so two concurrent runs for one
//! change conflict and at most one commits. The notify entry is cleared
//! only after the transaction committed (and only if nothing newer came).
//!
//! Several observers may watch one column. The notify entry is one per
//! cell, but each observer keeps its own acknowledgment column, and the
//! entry is cleared only when every one of them has acknowledged the newest
//! version: one observer committing cannot clear a change another observer
//! of the column failed to process (its run aborted), which would otherwise
//! never run again. (Apache Fluo avoids the question by refusing a second
//! observer on a column.)

use super::error::TxnError;
use super::ledger::Host;
use super::outcome::CommitOutcome;
use super::transport::StepPoint;
use super::txn::Transaction;
use crate::percolator::ablation::Ablation;
use crate::percolator::actions::RowRequest;
use crate::percolator::types::Ts;
use std::future::Future;
use std::pin::Pin;

/// An observer's registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObserverSpec {
    /// The observer's name (it names its acknowledgment column).
    pub name: String,
    /// The column it observes.
    pub col: String,
    /// The column only receives weak notifications: no acknowledgment is
    /// kept and several runs may commit for one notification.
    pub weak: bool,
}

impl ObserverSpec {
    /// The acknowledgment column of this observer.
    pub fn ack_col(&self) -> String {
        format!("{}:ack:{}", self.col, self.name)
    }
}

/// A boxed future borrowing its transaction.
pub type BodyFuture<'a> = Pin<Box<dyn Future<Output = Result<(), TxnError>> + Send + 'a>>;

/// What an observer does with a notified row, inside the observer's
/// transaction.
pub trait ObserverBody<T: Host>: Send + Sync {
    /// Run on `row` within `txn`.
    fn run<'a>(&'a self, txn: &'a mut Transaction<'_, T>, row: &'a str) -> BodyFuture<'a>;
}

/// How a notification was handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// The body ran and its transaction committed; the notify entry was
    /// cleared if nothing newer arrived.
    Ran,
    /// The cell had not changed since the last acknowledgment.
    NothingNew,
    /// The transaction aborted or its outcome is unknown; the notify entry stays.
    Failed(CommitOutcome),
    /// A read failed.
    Error(TxnError),
}

/// A weak notification of `row`/`col`: set its notify entry with a fresh
/// timestamp, no transaction.
pub async fn weak_notify<T: Host>(t: &T, row: &str, col: &str) -> Result<(), TxnError> {
    let value = t.timestamp().await?;
    t.row(
        row,
        RowRequest::WeakNotify {
            col: col.to_string(),
            value: value.0,
        },
    )
    .await?;
    Ok(())
}

/// Clear the notify entry of `row`/`col` if every observer of the column
/// with an acknowledgment column (`acks`) has acknowledged the version seen.
async fn clear<T: Host>(
    t: &T,
    row: &str,
    col: &str,
    seen: u64,
    observed: Option<Ts>,
    acks: Vec<String>,
) {
    let req = RowRequest::ClearNotify {
        col: col.to_string(),
        seen,
        observed_commit_ts: observed,
        acks,
    };
    // A failed clear leaves the entry: the cell is simply scanned again.
    let _ = t.row(row, req).await;
}

/// Handle the notification of `row`/`spec.col` whose notify entry held `seen`.
pub async fn run_observer<T: Host, B: ObserverBody<T> + ?Sized>(
    t: &T,
    spec: &ObserverSpec,
    row: &str,
    seen: u64,
    body: &B,
) -> Observed {
    let ablations = t.ablations();
    let mut txn = match Transaction::begin(t).await {
        Ok(txn) => txn,
        Err(e) => return Observed::Error(e),
    };
    let (run, version) = if spec.weak {
        (true, None)
    } else {
        let version = match txn.get_version(row, &spec.col).await {
            Ok((_, v)) => v,
            Err(e) => {
                txn.abort((&e).into());
                return Observed::Error(e);
            }
        };
        let ack = match txn.get(row, &spec.ack_col()).await {
            Ok(a) => a.and_then(|a| a.parse::<u64>().ok()),
            Err(e) => {
                txn.abort((&e).into());
                return Observed::Error(e);
            }
        };
        let changed = version.is_some_and(|v| ack.is_none_or(|a| v.0 > a));
        (
            changed || ablations.has(Ablation::ObserverIgnoresAck),
            version,
        )
    };
    // Every other observer of the column that keeps an acknowledgment must
    // have acknowledged the change before the shared notify entry goes (this
    // run's own acknowledgment is implied by its committed transaction).
    let own = spec.ack_col();
    let acks: Vec<String> = t
        .observer_acks(&spec.col)
        .into_iter()
        .filter(|a| *a != own)
        .collect();
    if !run {
        txn.commit().await;
        clear(t, row, &spec.col, seen, version, acks).await;
        return Observed::NothingNew;
    }
    txn.mark_observer_run(&spec.name, row, &spec.col);
    if ablations.has(Ablation::NotifyClearedEarly) {
        clear(t, row, &spec.col, seen, Some(Ts(u64::MAX)), Vec::new()).await;
    }
    if let Err(e) = body.run(&mut txn, row).await {
        txn.abort((&e).into());
        return Observed::Error(e);
    }
    let id = txn.id();
    t.reached(id, StepPoint::ObserverAfterWrites).await;
    if !spec.weak {
        let start = txn.start_ts().0.to_string();
        txn.set(row, &spec.ack_col(), start);
    }
    match txn.commit().await {
        CommitOutcome::Committed { .. } => {
            t.reached(id, StepPoint::ObserverBeforeClear).await;
            clear(t, row, &spec.col, seen, version, acks).await;
            Observed::Ran
        }
        other => Observed::Failed(other),
    }
}

#[cfg(test)]
mod tests {
    use super::{BodyFuture, Observed, ObserverBody, ObserverSpec, run_observer, weak_notify};
    use crate::percolator::client::test_util::{FakeWorld, run};
    use crate::percolator::client::{CommitOutcome, Host, Transaction};
    use crate::percolator::types::Ts;

    /// The observer's body: write `out`/c = "done" in its transaction.
    struct Done;

    impl<T: Host> ObserverBody<T> for Done {
        fn run<'a>(&'a self, txn: &'a mut Transaction<'_, T>, row: &'a str) -> BodyFuture<'a> {
            Box::pin(async move {
                txn.set(row, "out", "done");
                Ok(())
            })
        }
    }

    fn spec() -> ObserverSpec {
        ObserverSpec {
            name: "o".into(),
            col: "c".into(),
            weak: false,
        }
    }

    /// Commit `cells` (column, value) of row `r` in one transaction.
    fn must_commit(w: &FakeWorld, cells: &[(&str, &str)]) {
        let mut txn = run(Transaction::begin(w)).unwrap();
        for (col, value) in cells {
            txn.set("r", col, *value);
        }
        assert!(matches!(run(txn.commit()), CommitOutcome::Committed { .. }));
    }

    /// `r`/c written at commit_ts 2 (start_ts 1) with ack `ack`, then
    /// notified (entry 3); returns the entry seen.
    fn must_notify(w: &FakeWorld, ack: &str) -> u64 {
        must_commit(w, &[("c", "v"), ("c:ack:o", ack)]);
        run(weak_notify(w, "r", "c")).unwrap();
        let seen = w.row_now("r").notify["c"];
        assert_eq!(seen, 3);
        seen
    }

    /// The newest committed value of `r`/`col`.
    fn must_read(w: &FakeWorld, col: &str) -> Option<String> {
        let mut txn = run(Transaction::begin(w)).unwrap();
        run(txn.get("r", col)).unwrap()
    }

    #[test]
    fn a_change_after_the_ack_runs_the_body_acks_and_clears() {
        let w = FakeWorld::default();
        let seen = must_notify(&w, "1");
        assert_eq!(
            run(run_observer(&w, &spec(), "r", seen, &Done)),
            Observed::Ran
        );
        assert_eq!(must_read(&w, "out"), Some("done".into()));
        // The observer's transaction began at 4: its acknowledgment.
        assert_eq!(must_read(&w, "c:ack:o"), Some("4".into()));
        assert!(w.row_now("r").notify.is_empty());
    }

    #[test]
    fn a_change_already_acked_runs_nothing_and_clears() {
        let w = FakeWorld::default();
        // Acknowledged exactly the version written (commit_ts 2).
        let seen = must_notify(&w, "2");
        let observed = run(run_observer(&w, &spec(), "r", seen, &Done));
        assert_eq!(observed, Observed::NothingNew);
        assert_eq!(must_read(&w, "out"), None);
        assert!(w.row_now("r").notify.is_empty());
    }

    #[test]
    fn another_observers_missing_ack_keeps_the_notify_entry() {
        let w = FakeWorld {
            acks: vec!["c:ack:o".into(), "c:ack:other".into()],
            ..FakeWorld::default()
        };
        let seen = must_notify(&w, "1");
        assert_eq!(
            run(run_observer(&w, &spec(), "r", seen, &Done)),
            Observed::Ran
        );
        assert_eq!(w.row_now("r").notify.get("c"), Some(&seen));
        let clears: Vec<_> = w
            .requests
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(_, req)| match req {
                crate::percolator::actions::RowRequest::ClearNotify {
                    acks,
                    observed_commit_ts,
                    ..
                } => Some((acks.clone(), *observed_commit_ts)),
                _ => None,
            })
            .collect();
        assert_eq!(clears, vec![(vec!["c:ack:other".to_string()], Some(Ts(2)))]);
    }
}
