//! What an Omid cluster gives a program it runs instead of a campaign
//! workload (a script): each client's handle to run transactions one call
//! at a time ([`OmidClient`]), and the driver's view of the cluster
//! ([`OmidControl`]): stops armed at Omid's named points for one node and
//! optionally one transaction, targeted message faults, and the durable
//! store (data cells, shadow cells, the commit table).

use super::client::Txn;
use super::types::{Armed, OmidClient, OmidControl, OmidOutcome, Shared, Stop};
use crate::FaultControl;
use crate::world::intercept::{Rule, RuleId};
use crate::world::lock;
use percsim_protocol::omid::{CtEntry, DataVersion, OmidPoint};

/// A transaction a program's client began.
pub struct OmidTxn(pub(super) Txn);

impl OmidTxn {
    /// Its id in the history.
    pub fn id(&self) -> u64 {
        self.0.id
    }

    /// Its start timestamp.
    pub fn start_ts(&self) -> u64 {
        self.0.start_ts
    }
}

impl OmidClient {
    /// The client's index (`client-N`).
    pub fn index(&self) -> usize {
        self.0.index
    }

    /// Whether the workload phase is over (a program's loop that should
    /// end with the phase asks this).
    pub fn stopping(&self) -> bool {
        self.0.shared.world.stopping()
    }

    /// Begin a transaction: its start timestamp from the primary TSO.
    pub async fn begin(&self) -> OmidTxn {
        OmidTxn(self.0.begin().await)
    }

    /// Read (`row`, `col`) in `txn`'s snapshot (`None`: no visible value).
    pub async fn get(&self, txn: &OmidTxn, row: &str, col: &str) -> Option<String> {
        self.0.read(&txn.0, row, col).await
    }

    /// Write `value` to (`row`, `col`): its data cell goes to the store now.
    pub async fn put(&self, txn: &mut OmidTxn, row: &str, col: &str, value: String) {
        self.0.write(&mut txn.0, row, col, Some(value)).await
    }

    /// Delete (`row`, `col`): a tombstone goes to the store now, as a data
    /// cell at the transaction's start timestamp; a snapshot that sees it
    /// reads no value.
    pub async fn delete(&self, txn: &mut OmidTxn, row: &str, col: &str) {
        self.0.write(&mut txn.0, row, col, None).await
    }

    /// Commit `txn` through the TSO and complete it (shadow cells, then the
    /// commit-table entry's deletion); what the client was told.
    pub async fn commit(&self, txn: OmidTxn) -> OmidOutcome {
        self.0.commit(txn.0).await
    }

    /// Roll `txn` back: remove its data cells, without the TSO.
    pub async fn abort(&self, txn: OmidTxn) {
        self.0.rollback(txn.0).await
    }
}

impl OmidControl {
    /// The world's fault control.
    pub fn faults(&self) -> &FaultControl {
        &self.faults
    }

    /// Stop `node` the next time it reaches `point` (about the transaction
    /// of `start_ts`, if named). An error if the same stop is armed already.
    pub fn arm(
        &self,
        point: OmidPoint,
        node: &str,
        start_ts: Option<u64>,
        stop: Stop,
    ) -> Result<(), String> {
        let mut armed = lock(&self.shared.armed);
        if armed
            .iter()
            .any(|a| a.point == point && a.node == node && a.start_ts == start_ts)
        {
            return Err(format!(
                "point {} of node {node:?} is armed already",
                point.name()
            ));
        }
        armed.push(Armed {
            point,
            node: node.to_string(),
            start_ts,
            stop,
        });
        Ok(())
    }

    /// The nodes of the stops armed that never happened.
    pub fn stops_left(&self) -> Vec<String> {
        lock(&self.shared.armed)
            .iter()
            .map(|a| a.node.clone())
            .collect()
    }

    /// Install a targeted message fault.
    pub fn intercept(&self, rule: Rule) -> RuleId {
        self.shared.world.intercept(rule)
    }

    /// Lift a targeted message fault and deliver what it holds.
    pub fn release(&self, rule: RuleId) {
        self.shared.world.release(rule);
    }

    /// The commit-table entry of the transaction of `start_ts` now.
    pub fn commit_table(&self, start_ts: u64) -> Option<CtEntry> {
        lock(&self.shared.store).ct.get(&start_ts).copied()
    }

    /// The versions of (`row`, `col`) in the store now, oldest first.
    pub fn versions(&self, row: &str, col: &str) -> Vec<DataVersion> {
        let key = (row.to_string(), col.to_string());
        let store = lock(&self.shared.store);
        store.cells.get(&key).cloned().unwrap_or_default()
    }
}

impl Shared {
    /// The stop armed for `node` at `point` about `start_ts`, taken out.
    pub(super) fn take_armed(
        &self,
        point: OmidPoint,
        node: &str,
        start_ts: Option<u64>,
    ) -> Option<Stop> {
        let mut armed = lock(&self.armed);
        let i = armed.iter().position(|a| {
            a.point == point && a.node == node && (a.start_ts.is_none() || a.start_ts == start_ts)
        })?;
        Some(armed.remove(i).stop)
    }
}
