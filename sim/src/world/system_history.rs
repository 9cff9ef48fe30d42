//! The history a system produces for a run, tagged by its format: the
//! checker's formats as one enum. Each system writes its own (see
//! [`crate::Tenant::history`]); the world adds nothing of another format's.

use percsim_checker::stream::StreamHistory;
use percsim_checker::{Event, History, Outcome};
use serde::Serialize;

/// A run's history in one of the checker's formats. It serializes as that
/// format's document (whose `format` field names it).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SystemHistory {
    /// A `percsim-history/1` history: transactions over cells (Percolator).
    Transactions(History),
    /// A `percsim-stream-history/1` history: stream transactions (Pulsar).
    Stream(StreamHistory),
}

/// Client transactions of a history, by outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxnTally {
    /// Reported committed.
    pub committed: u64,
    /// Reported aborted.
    pub aborted: u64,
    /// Whose outcome the client never learnt.
    pub unknown: u64,
}

impl TxnTally {
    fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Committed => self.committed += 1,
            Outcome::Aborted => self.aborted += 1,
            Outcome::Unknown => self.unknown += 1,
        }
    }
}

impl SystemHistory {
    /// The format's tag (`percsim-history/1`, `percsim-stream-history/1`).
    pub fn format(&self) -> &str {
        match self {
            SystemHistory::Transactions(h) => &h.format,
            SystemHistory::Stream(h) => &h.format,
        }
    }

    /// The `percsim-history/1` history, if it is one.
    pub fn transactions(&self) -> Option<&History> {
        match self {
            SystemHistory::Transactions(h) => Some(h),
            SystemHistory::Stream(_) => None,
        }
    }

    /// The `percsim-stream-history/1` history, if it is one.
    pub fn stream(&self) -> Option<&StreamHistory> {
        match self {
            SystemHistory::Stream(h) => Some(h),
            SystemHistory::Transactions(_) => None,
        }
    }

    /// The `percsim-history/1` history, if it is one, taken out.
    pub fn into_transactions(self) -> Option<History> {
        match self {
            SystemHistory::Transactions(h) => Some(h),
            SystemHistory::Stream(_) => None,
        }
    }

    /// The `percsim-stream-history/1` history, if it is one, taken out.
    pub fn into_stream(self) -> Option<StreamHistory> {
        match self {
            SystemHistory::Stream(h) => Some(h),
            SystemHistory::Transactions(_) => None,
        }
    }

    /// The run's events (faults, cluster and protocol events), in time order.
    pub fn events(&self) -> &[Event] {
        match self {
            SystemHistory::Transactions(h) => &h.events,
            SystemHistory::Stream(h) => &h.events,
        }
    }

    /// The seed the history says it was made with.
    pub fn seed(&self) -> u64 {
        match self {
            SystemHistory::Transactions(h) => h.seed,
            SystemHistory::Stream(h) => h.seed,
        }
    }

    /// Replace the informational description of the run.
    pub fn set_scenario(&mut self, scenario: serde_json::Value) {
        match self {
            SystemHistory::Transactions(h) => h.scenario = scenario,
            SystemHistory::Stream(h) => h.scenario = scenario,
        }
    }

    /// The clients' transactions by outcome: every transaction of a stream
    /// history; every one of a `percsim-history/1` history but the initial
    /// load (recorded under [`crate::LOADER_CLIENT`]).
    pub fn tally(&self) -> TxnTally {
        let mut tally = TxnTally::default();
        match self {
            SystemHistory::Transactions(h) => h
                .transactions
                .iter()
                .filter(|t| t.client != crate::LOADER_CLIENT)
                .for_each(|t| tally.add(t.outcome)),
            SystemHistory::Stream(h) => h.transactions.iter().for_each(|t| tally.add(t.outcome)),
        }
        tally
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use percsim_checker::stream::{STREAM_FORMAT, StreamFinalState, StreamTxn};
    use percsim_checker::{FORMAT, FinalState, Transaction};

    fn txn(id: u64, client: u64, outcome: Outcome) -> Transaction {
        Transaction {
            id,
            client,
            start_ts: id + 1,
            commit_ts: None,
            invoke_ns: 0,
            complete_ns: None,
            outcome,
            abort_reason: None,
            ops: Vec::new(),
            scans: Vec::new(),
            observer: None,
        }
    }

    #[test]
    fn the_tally_leaves_out_the_initial_load_of_a_transaction_history() {
        let h = SystemHistory::Transactions(History {
            format: FORMAT.into(),
            model: None,
            seed: 3,
            scenario: serde_json::Value::Null,
            transactions: vec![
                txn(0, crate::LOADER_CLIENT, Outcome::Committed),
                txn(1, 0, Outcome::Committed),
                txn(2, 0, Outcome::Aborted),
                txn(3, 1, Outcome::Unknown),
            ],
            events: Vec::new(),
            final_state: FinalState::default(),
            observers: Vec::new(),
        });
        let want = TxnTally {
            committed: 1,
            aborted: 1,
            unknown: 1,
        };
        assert_eq!((h.tally(), h.format(), h.seed()), (want, FORMAT, 3));
        assert!(h.stream().is_none() && h.transactions().is_some());
    }

    #[test]
    fn a_stream_history_serializes_as_its_own_format_and_counts_every_transaction() {
        let t = StreamTxn {
            id: 1,
            label: None,
            client: u64::MAX,
            invoke_ns: 0,
            commit_request_ns: None,
            complete_ns: None,
            outcome: Outcome::Unknown,
            abort_reason: None,
            coordinator: None,
            commit_logged_ns: None,
            abort_logged_ns: None,
            timeout_ms: None,
        };
        let h = SystemHistory::Stream(StreamHistory {
            format: STREAM_FORMAT.into(),
            seed: 0,
            scenario: serde_json::Value::Null,
            subscriptions: Vec::new(),
            transactions: vec![t],
            ops: Vec::new(),
            final_state: StreamFinalState {
                partitions: Vec::new(),
                acks: Vec::new(),
            },
            events: Vec::new(),
        });
        let json = serde_json::to_value(&h).expect("serializes");
        assert_eq!(json["format"], STREAM_FORMAT);
        assert_eq!(h.tally().unknown, 1);
        assert!(h.transactions().is_none() && h.events().is_empty());
    }
}
