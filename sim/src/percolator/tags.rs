//! What Percolator tells the world about the messages its clients send, so
//! targeted message faults ([`crate::world::intercept`]) can match them:
//! the kind of call, the transaction (its start_ts) and the cell. Also the
//! typed form of such a fault ([`MessageFault`]), which a workload's driver
//! installs through its [`crate::Controller`].

use crate::percolator::ids::kinds;
use crate::percolator::rpc::{
    IsAlive, KeepAlive, Locate, OpenSession, RawCall, RowCall, RowLockCall, ScanCall, ScanNotify,
    TsCall,
};
use crate::world::intercept::{Fate, Leg, MsgTag, Rule};
use percsim_protocol::percolator::actions::RowRequest;
use percsim_protocol::percolator::{CellKey, Ts};

crate::identities! {
    /// The kinds of call a Percolator client makes, as message faults name them.
    pub enum CallKind {
        /// A snapshot read of one cell (also the read that returns its commit_ts).
        Get => ("get", "a snapshot read of one cell"),
        /// A scan of a row range.
        Scan => ("scan", "a snapshot scan of a row range"),
        /// A prewrite: lock and write one cell.
        Prewrite => ("prewrite", "a prewrite (lock and data) of one cell"),
        /// A commit of one cell: the primary's (the commit point) or a secondary's.
        Commit => ("commit", "the commit record of one cell"),
        /// A cleanup at a transaction's primary (rolls it back if still locked).
        Cleanup => ("cleanup", "a cleanup that settles a transaction at its primary"),
        /// A roll-forward or roll-back of one secondary.
        Resolve => ("resolve", "a roll-forward or roll-back of a secondary"),
        /// A refresh of a primary lock's wall time.
        Touch => ("touch", "a refresh of a primary lock's wall time"),
        /// An observer clears a notify entry, or a weak notification sets one.
        Notify => ("notify", "a notify entry cleared or set"),
        /// A request for timestamps from the oracle.
        Timestamp => ("timestamp", "a request for timestamps from the oracle"),
        /// A question to the liveness service: is a lock's owner alive.
        OwnerAlive => ("owner_alive", "a question to the liveness service about a lock's owner"),
        /// Opening or renewing a liveness session.
        Session => ("session", "opening or renewing a liveness session"),
        /// Finding a tablet's server at the master.
        Locate => ("locate", "finding a tablet's server at the master"),
        /// A raw Bigtable read or write outside any transaction.
        Raw => ("raw", "a raw read or write outside any transaction"),
        /// A notify scanner's scan or row lock.
        Scanner => ("scanner", "a notify scanner's scan or row lock"),
    }
}

/// The item key of a cell in message tags.
fn item(row: &str, col: &str) -> String {
    format!("{}/{row}/{col}", row.len())
}

/// What a message is, for targeted faults.
pub(crate) trait Tagged {
    /// The kind, transaction and cell of this message.
    fn describe(&self) -> (CallKind, Option<Ts>, Option<String>);

    /// Its tag, as the world matches it, sent by node `from`.
    fn tag(&self, from: String) -> MsgTag {
        let (call, txn, item) = self.describe();
        MsgTag {
            call: call.name(),
            txn: txn.map(|t| t.0),
            item,
            from,
        }
    }
}

impl Tagged for RowCall {
    fn describe(&self) -> (CallKind, Option<Ts>, Option<String>) {
        let (kind, col, ts) = match &self.req {
            RowRequest::Get { col, start_ts } | RowRequest::GetVersion { col, start_ts } => {
                (CallKind::Get, col, Some(*start_ts))
            }
            RowRequest::Prewrite(p) => (CallKind::Prewrite, &p.col, Some(p.start_ts)),
            RowRequest::Commit { col, ts } => (CallKind::Commit, col, Some(ts.start_ts)),
            RowRequest::Cleanup { col, start_ts, .. } => (CallKind::Cleanup, col, Some(*start_ts)),
            RowRequest::Resolve { col, start_ts, .. } => (CallKind::Resolve, col, Some(*start_ts)),
            RowRequest::Touch { col, start_ts, .. } => (CallKind::Touch, col, Some(*start_ts)),
            RowRequest::ClearNotify { col, .. } | RowRequest::WeakNotify { col, .. } => {
                (CallKind::Notify, col, None)
            }
        };
        (kind, ts, Some(item(&self.row, col)))
    }
}

macro_rules! tagged {
    ($ty:ty, $kind:expr) => {
        impl Tagged for $ty {
            fn describe(&self) -> (CallKind, Option<Ts>, Option<String>) {
                ($kind, None, None)
            }
        }
    };
}

impl Tagged for ScanCall {
    fn describe(&self) -> (CallKind, Option<Ts>, Option<String>) {
        (CallKind::Scan, Some(self.start_ts), None)
    }
}

tagged!(TsCall, CallKind::Timestamp);
tagged!(IsAlive, CallKind::OwnerAlive);
tagged!(OpenSession, CallKind::Session);
tagged!(KeepAlive, CallKind::Session);
tagged!(Locate, CallKind::Locate);
tagged!(RawCall, CallKind::Raw);
tagged!(ScanNotify, CallKind::Scanner);
tagged!(RowLockCall, CallKind::Scanner);

/// A targeted message fault in Percolator's words. Fields left `None`
/// match any message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageFault {
    /// The kind of call.
    pub call: CallKind,
    /// The transaction, by start_ts (for a cleanup or resolve: the
    /// transaction being settled, whoever sends it).
    pub txn: Option<Ts>,
    /// The cells (any of them).
    pub cells: Option<Vec<CellKey>>,
    /// The sending client.
    pub client: Option<usize>,
    /// Request or reply.
    pub leg: Leg,
    /// What happens to a matched message.
    pub fate: Fate,
    /// How many messages it acts on at most (`None`: every one).
    pub times: Option<u32>,
}

impl MessageFault {
    /// The world's rule for it.
    pub(crate) fn rule(&self) -> Rule {
        Rule {
            call: self.call.name(),
            txn: self.txn.map(|t| t.0),
            items: self
                .cells
                .as_ref()
                .map(|cs| cs.iter().map(|c| item(&c.row, &c.col)).collect()),
            from: self.client.map(|c| kinds::CLIENT.nth(c).to_string()),
            leg: self.leg,
            fate: self.fate,
            times: self.times,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_items_do_not_collide_across_the_separator() {
        assert_ne!(item("a/b", "c"), item("a", "b/c"));
    }

    #[test]
    fn call_kind_names_round_trip() {
        for k in CallKind::ALL {
            assert_eq!(CallKind::from_name(k.name()), Some(*k));
        }
    }
}
