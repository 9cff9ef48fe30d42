//! The coordinator's transaction log records and the state they build.

use crate::pulsar::types::{Marker, Participant, ProducerRef, TxnAction, TxnId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Where a transaction is in its life (reference text, "Transaction Log").
/// Pulsar also has `ERROR`; the reference names it but describes no way in,
/// so it is not modelled: a step refuses an illegal change with a
/// [`TcError`] instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TxnState {
    /// Producing and acknowledging.
    Open,
    /// Decided to commit; markers are being sent.
    Committing,
    /// Decided to abort; markers are being sent.
    Aborting,
    /// Every participant has its commit marker.
    Committed,
    /// Every participant has its abort marker.
    Aborted,
}

impl TxnState {
    /// Whether the log may move a transaction from `self` to `next`:
    /// OPEN to COMMITTING or ABORTING, COMMITTING to COMMITTED, ABORTING to
    /// ABORTED. Nothing else.
    pub fn can_become(self, next: TxnState) -> bool {
        matches!(
            (self, next),
            (TxnState::Open, TxnState::Committing)
                | (TxnState::Open, TxnState::Aborting)
                | (TxnState::Committing, TxnState::Committed)
                | (TxnState::Aborting, TxnState::Aborted)
        )
    }

    /// The state a transaction ending with `action` passes through.
    pub fn ending(action: TxnAction) -> TxnState {
        match action {
            TxnAction::Commit => TxnState::Committing,
            TxnAction::Abort => TxnState::Aborting,
        }
    }
}

/// One durable record of the transaction log. The coordinator appends a
/// record and waits for it to be durable before it acts on it (reference
/// text, "完成事務": only after COMMITTING/ABORTING is in the log does the
/// real commit or abort start).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogRecord {
    /// A new transaction; its sequence number is never handed out again.
    Open {
        /// The transaction.
        txn: TxnId,
        /// The producer session that opened it.
        producer: ProducerRef,
        /// When (coordinator clock) the transaction times out.
        deadline_ms: u64,
    },
    /// The transaction touches a participant (a partition it produces to or
    /// a subscription it acknowledges on).
    AddParticipant {
        /// The transaction.
        txn: TxnId,
        /// The participant.
        participant: Participant,
    },
    /// The transaction moves to a new state.
    State {
        /// The transaction.
        txn: TxnId,
        /// Its new state.
        state: TxnState,
    },
}

impl LogRecord {
    /// The transaction the record is about.
    pub fn txn(&self) -> TxnId {
        match self {
            LogRecord::Open { txn, .. }
            | LogRecord::AddParticipant { txn, .. }
            | LogRecord::State { txn, .. } => *txn,
        }
    }
}

/// Why the coordinator refused a request. Never a panic: a late, duplicated
/// or wrong request gets one of these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum TcError {
    /// The coordinator holds no such transaction (never opened, or ended
    /// and forgotten, as Pulsar 2.8 forgets ended transactions).
    #[error("transaction {0} not found")]
    NotFound(TxnId),
    /// The request does not fit the transaction's state.
    #[error("transaction {txn} is {state:?}; cannot {wanted:?}")]
    InvalidState {
        /// The transaction.
        txn: TxnId,
        /// Its state now.
        state: TxnState,
        /// What was asked.
        wanted: TcOp,
    },
    /// The transaction belongs to another coordinator.
    #[error("transaction {0} belongs to another coordinator")]
    WrongCoordinator(TxnId),
}

/// A coordinator operation, as named in a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TcOp {
    /// Register a participant.
    AddParticipant,
    /// Commit.
    Commit,
    /// Abort.
    Abort,
    /// Log the end state after the markers.
    Finish,
    /// Abort at the timeout.
    TimeOut,
}

/// What the coordinator must do next, in order. A `Log` must be durable
/// before the next action runs; a crash between two actions is a named
/// crash point (docs/pulsar.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TcAction {
    /// Append a record to the transaction log and wait until it is durable;
    /// then apply it to the in-memory state with [`TcState::apply`].
    Log(LogRecord),
    /// Send every marker and wait until each participant has acknowledged
    /// it (retrying), then run [`crate::pulsar::coordinator::finish`].
    SendMarkers(Vec<Marker>),
    /// Answer the client's end request.
    Reply(TxnAction),
}

/// What the coordinator holds about one transaction in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMeta {
    /// Its state.
    pub state: TxnState,
    /// The producer session that opened it.
    pub producer: ProducerRef,
    /// When it times out (coordinator clock).
    pub deadline_ms: u64,
    /// The partitions and subscriptions it touched.
    pub participants: BTreeSet<Participant>,
}

/// One coordinator's state: everything in it is rebuilt from the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcState {
    coordinator: u16,
    next_seq: u64,
    txns: BTreeMap<TxnId, TxnMeta>,
}

impl TcState {
    /// A coordinator with an empty log.
    pub fn new(coordinator: u16) -> Self {
        TcState {
            coordinator,
            next_seq: 0,
            txns: BTreeMap::new(),
        }
    }

    /// The coordinator's id.
    pub fn coordinator(&self) -> u16 {
        self.coordinator
    }

    /// The sequence number the next transaction gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The transaction `txn`, if the coordinator still holds it.
    pub fn txn(&self, txn: TxnId) -> Option<&TxnMeta> {
        self.txns.get(&txn)
    }

    /// Every transaction held, in TxnId order.
    pub fn txns(&self) -> impl Iterator<Item = (TxnId, &TxnMeta)> {
        self.txns.iter().map(|(id, m)| (*id, m))
    }

    /// Apply a durable record. Total: the log is a fact, so a record that
    /// does not fit (written by an ablated step) is applied as written;
    /// legality is checked by the steps before they log. A final state
    /// removes the transaction from memory (Pulsar 2.8 forgets ended
    /// transactions; see PIP-476's background).
    pub fn apply(&mut self, record: &LogRecord) {
        let txn = record.txn();
        if txn.coordinator != self.coordinator {
            return;
        }
        match record {
            LogRecord::Open {
                producer,
                deadline_ms,
                ..
            } => {
                self.next_seq = self.next_seq.max(txn.seq + 1);
                self.txns.insert(
                    txn,
                    TxnMeta {
                        state: TxnState::Open,
                        producer: *producer,
                        deadline_ms: *deadline_ms,
                        participants: BTreeSet::new(),
                    },
                );
            }
            LogRecord::AddParticipant { participant, .. } => {
                if let Some(m) = self.txns.get_mut(&txn) {
                    m.participants.insert(participant.clone());
                }
            }
            LogRecord::State { state, .. } => match state {
                TxnState::Committed | TxnState::Aborted => {
                    self.txns.remove(&txn);
                }
                _ => {
                    if let Some(m) = self.txns.get_mut(&txn) {
                        m.state = *state;
                    }
                }
            },
        }
    }

    /// The transaction `txn`, or why the coordinator cannot act on it.
    pub(crate) fn lookup(&self, txn: TxnId) -> Result<&TxnMeta, TcError> {
        if txn.coordinator != self.coordinator {
            return Err(TcError::WrongCoordinator(txn));
        }
        self.txns.get(&txn).ok_or(TcError::NotFound(txn))
    }
}

/// The markers ending `txn` (whose metadata is `meta`) with `action`, one
/// per participant, partitions first (participant order).
pub(crate) fn markers(txn: TxnId, meta: &TxnMeta, action: TxnAction) -> Vec<Marker> {
    meta.participants
        .iter()
        .map(|to| Marker {
            txn,
            producer: meta.producer,
            action,
            to: to.clone(),
        })
        .collect()
}
