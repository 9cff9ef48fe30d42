//! Observers in scripts, so a script can check notify and acknowledgment
//! entries: an observer watches one column and, in its own transaction,
//! copies the changed cell's value to another column of the row.

use percsim_protocol::percolator::client::{BodyFuture, ObserverBody, ObserverSpec, Transaction};
use percsim_sim::Client;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// An observer of a script: on a change of `col`, copy the row's `col`
/// to `copy_to` (a delete when `col` has no value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptObserver {
    /// Its name (its acknowledgment column is `<col>:ack:<name>`).
    pub name: String,
    /// The column it observes.
    pub col: String,
    /// The column it writes.
    pub copy_to: String,
}

struct CopyTo {
    col: String,
    to: String,
}

impl ObserverBody<Client> for CopyTo {
    fn run<'a>(&'a self, txn: &'a mut Transaction<'_, Client>, row: &'a str) -> BodyFuture<'a> {
        Box::pin(async move {
            match txn.get(row, &self.col).await? {
                Some(v) => txn.set(row, &self.to, v),
                None => txn.delete(row, &self.to),
            }
            Ok(())
        })
    }
}

impl ScriptObserver {
    /// Its registration and body.
    pub(super) fn build(&self) -> (ObserverSpec, Arc<dyn ObserverBody<Client>>) {
        let spec = ObserverSpec {
            name: self.name.clone(),
            col: self.col.clone(),
            weak: false,
        };
        let body = CopyTo {
            col: self.col.clone(),
            to: self.copy_to.clone(),
        };
        (spec, Arc::new(body))
    }
}

/// Check a script's observers: named, one per column, none writing the
/// column it or another observer watches (no loops).
pub(super) fn validate(observers: &[ScriptObserver]) -> Result<(), String> {
    for (i, o) in observers.iter().enumerate() {
        let at = format!("workload.observers[{i}]");
        if o.name.is_empty() || o.name.contains(':') {
            return Err(format!("{at}.name: must be non-empty and without ':'"));
        }
        if observers[..i].iter().any(|p| p.col == o.col) {
            return Err(format!("{at}.col: column {:?} has two observers", o.col));
        }
        if observers.iter().any(|p| p.col == o.copy_to) {
            return Err(format!(
                "{at}.copy_to: column {:?} is observed (an observer would trigger itself)",
                o.copy_to
            ));
        }
    }
    Ok(())
}
