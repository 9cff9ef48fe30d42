//! Stream and queue transactions (Pulsar- or Kafka-style): the
//! `percsim-stream-history/1` format and its rules.
//!
//! A stream history records, black-box, what clients observed (sends,
//! receipts with partition and offset, acknowledgments, transaction
//! outcomes) and what the brokers' durable logs and subscriptions hold at
//! the end (messages, commit and abort markers, acknowledged positions). It
//! never trusts the protocol's own bookkeeping. The rules are named after
//! Jepsen's analyses of Kafka-style transactions ("Jepsen: Redpanda
//! 21.10.1", 2022, and "Jepsen: Bufstream 0.1.0", 2024):
//!
//! | id | what must hold |
//! |----|----------------|
//! | `aborted_read` | no consumer receives a message of a transaction that did not commit |
//! | `read_uncommitted` | no consumer receives a message before its transaction commits, or past an open transaction |
//! | `lost_write` | committed messages are visible, and reach every drained subscription |
//! | `duplicate` | no message is written twice; on an exactly-once subscription none is acknowledged by two committed transactions |
//! | `torn_transaction` | a transaction's messages and acknowledgments take effect all together or not at all |
//! | `monotonic_offsets` | offsets grow per consumer and per producer on each partition, and match the log |
//! | `exactly_once` | each committed input of an exactly-once subscription has exactly one committed output |
//!
//! The format and the rules are specified in `docs/history-format.md`,
//! section "Stream histories".
//!
//! ```
//! let json = r#"{"format": "percsim-stream-history/1", "transactions": [], "ops": [],
//!                "final_state": {"partitions": []}}"#;
//! let history = percsim_checker::stream::parse(json).unwrap();
//! assert!(percsim_checker::stream::check(&history).passed());
//! ```

mod class;
mod history;
mod index;
mod liveness;
mod parse;
mod report;
mod rules;

pub use crate::liveness::TxnThresholds;
pub use class::{StreamFindingClass, StreamRule};
pub use history::{
    AckOp, AckedPositions, ConsumerIsolation, CoordinatorDecision, LogEntry, MarkerKind, OpResult,
    PartitionLog, ReceiveOp, STREAM_FORMAT, SendOp, Source, StreamFinalState, StreamHistory,
    StreamOp, StreamTxn, SubscriptionDecl,
};
pub use liveness::check_stream_liveness;
pub use parse::{StreamHistoryError, parse};
pub use report::{StreamReport, StreamStats};

use crate::Outcome;

/// Judges a stream history against every rule. Never panics, even on a
/// history that did not come from [`parse()`].
pub fn check(history: &StreamHistory) -> StreamReport {
    let ix = index::Ix::build(history);
    let rules = rules::run_all(&ix);
    let count = |o: Outcome| {
        history
            .transactions
            .iter()
            .filter(|t| t.outcome == o)
            .count() as u64
    };
    let ops = |f: fn(&StreamOp) -> bool| history.ops.iter().filter(|o| f(o)).count() as u64;
    let entries = history
        .final_state
        .partitions
        .iter()
        .flat_map(|p| &p.entries);
    let markers = entries.clone().filter(|e| e.marker.is_some()).count() as u64;
    let stats = StreamStats {
        transactions: history.transactions.len() as u64,
        committed: count(Outcome::Committed),
        aborted: count(Outcome::Aborted),
        unknown: count(Outcome::Unknown),
        sends: ops(|o| matches!(o, StreamOp::Send(_))),
        receives: ops(|o| matches!(o, StreamOp::Receive(_))),
        acks: ops(|o| matches!(o, StreamOp::Ack(_))),
        partitions: history.final_state.partitions.len() as u64,
        log_messages: entries.count() as u64 - markers,
        log_markers: markers,
        subscriptions: history.subscriptions.len() as u64,
    };
    StreamReport {
        format: "percsim-check/1".to_string(),
        history_format: STREAM_FORMAT.to_string(),
        passed: rules.iter().all(|r| r.passed),
        seed: history.seed,
        stats,
        rules,
    }
}
