//! The stream rules and the classes of what they find. Reports carry them
//! as strings ([`crate::RuleReport::id`], [`crate::Finding::class`]): those
//! strings are [`StreamRule::name`] and [`StreamFindingClass::name`].

use crate::identity::{ClassOf, Named, RuleOf};
use std::fmt;

/// A rule of stream histories (`percsim-stream-history/1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StreamRule {
    /// No consumer receives a message of a transaction that did not commit.
    AbortedRead,
    /// No consumer receives a message before its transaction commits, or past an open one.
    ReadUncommitted,
    /// Committed messages are visible and reach every drained subscription.
    LostWrite,
    /// No message is written twice or acknowledged by two committed transactions.
    Duplicate,
    /// A transaction's messages and acknowledgments take effect together or not at all.
    TornTransaction,
    /// Offsets grow per consumer and producer on each partition, and match the log.
    MonotonicOffsets,
    /// Each committed input of an exactly-once subscription has one committed output.
    ExactlyOnce,
}

impl StreamRule {
    /// Every stream rule, in report order.
    pub const ALL: [StreamRule; 7] = [
        StreamRule::AbortedRead,
        StreamRule::ReadUncommitted,
        StreamRule::LostWrite,
        StreamRule::Duplicate,
        StreamRule::TornTransaction,
        StreamRule::MonotonicOffsets,
        StreamRule::ExactlyOnce,
    ];

    /// The rule's id, as reports spell it.
    pub fn name(self) -> &'static str {
        match self {
            StreamRule::AbortedRead => "aborted_read",
            StreamRule::ReadUncommitted => "read_uncommitted",
            StreamRule::LostWrite => "lost_write",
            StreamRule::Duplicate => "duplicate",
            StreamRule::TornTransaction => "torn_transaction",
            StreamRule::MonotonicOffsets => "monotonic_offsets",
            StreamRule::ExactlyOnce => "exactly_once",
        }
    }

    /// What must hold, in a sentence.
    pub fn describe(self) -> &'static str {
        match self {
            StreamRule::AbortedRead => {
                "no consumer receives a message of a transaction that did not commit"
            }
            StreamRule::ReadUncommitted => {
                "no consumer receives a message before its transaction commits, or past an open transaction"
            }
            StreamRule::LostWrite => {
                "committed messages are visible, and reach every drained subscription"
            }
            StreamRule::Duplicate => {
                "no message is written twice; on an exactly-once subscription none is acknowledged by two committed transactions"
            }
            StreamRule::TornTransaction => {
                "a transaction's messages and acknowledgments take effect all together or not at all"
            }
            StreamRule::MonotonicOffsets => {
                "offsets grow per consumer and per producer on each partition, and match the log"
            }
            StreamRule::ExactlyOnce => {
                "each committed input of an exactly-once subscription has exactly one committed output"
            }
        }
    }
}

impl Named for StreamRule {
    const ALL: &'static [StreamRule] = &StreamRule::ALL;
    fn name(self) -> &'static str {
        StreamRule::name(self)
    }
}

impl RuleOf for StreamRule {
    type Class = StreamFindingClass;
}

impl fmt::Display for StreamRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A class of violation of a stream rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StreamFindingClass {
    /// A receipt of a message whose transaction's client was told it aborted.
    AbortedByClient,
    /// A receipt of a message with no commit marker after it in the final log.
    NotCommitted,
    /// A receipt before the client asked to commit the message's transaction.
    BeforeCommitRequest,
    /// A receipt past a message of a transaction still open.
    PastOpenTransaction,
    /// A committed message is not visible in its partition's log.
    NotVisible,
    /// A committed message never reached a drained subscription.
    NeverDelivered,
    /// A committed transaction's acknowledgment never took effect, nor did
    /// any other effect of it.
    LostAck,
    /// A message is in the logs twice.
    DuplicateInLog,
    /// A message acknowledged by two committed transactions on an exactly-once subscription.
    AckedTwice,
    /// Some of a transaction's messages took effect, others did not.
    PartlyVisible,
    /// A transaction's acknowledgments took effect, its messages did not.
    AcksWithoutMessages,
    /// A transaction's messages took effect, its acknowledgments did not.
    MessagesWithoutAcks,
    /// A transaction has both a commit and an abort marker.
    ConflictingMarkers,
    /// The coordinator's recorded decision is contradicted by a marker.
    CoordinatorContradicted,
    /// A transaction whose decision to commit was durable in the
    /// coordinator's log was aborted.
    LoggedCommitReversed,
    /// A consumer received a smaller or equal offset after a larger one.
    NonmonotonicReceive,
    /// A producer was told a smaller or equal offset after a larger one.
    NonmonotonicSend,
    /// An offset does not name what the log holds there.
    InconsistentOffset,
    /// A committed input has several committed outputs.
    DuplicateOutput,
    /// A committed input of a drained subscription has no committed output.
    MissingOutput,
    /// A committed output has no committed input.
    OutputWithoutInput,
}

impl StreamFindingClass {
    /// Every class, grouped by rule in report order.
    pub const ALL: [StreamFindingClass; 21] = [
        StreamFindingClass::AbortedByClient,
        StreamFindingClass::NotCommitted,
        StreamFindingClass::BeforeCommitRequest,
        StreamFindingClass::PastOpenTransaction,
        StreamFindingClass::NotVisible,
        StreamFindingClass::NeverDelivered,
        StreamFindingClass::LostAck,
        StreamFindingClass::DuplicateInLog,
        StreamFindingClass::AckedTwice,
        StreamFindingClass::PartlyVisible,
        StreamFindingClass::AcksWithoutMessages,
        StreamFindingClass::MessagesWithoutAcks,
        StreamFindingClass::ConflictingMarkers,
        StreamFindingClass::CoordinatorContradicted,
        StreamFindingClass::LoggedCommitReversed,
        StreamFindingClass::NonmonotonicReceive,
        StreamFindingClass::NonmonotonicSend,
        StreamFindingClass::InconsistentOffset,
        StreamFindingClass::DuplicateOutput,
        StreamFindingClass::MissingOutput,
        StreamFindingClass::OutputWithoutInput,
    ];

    /// The class's name, as reports spell it.
    pub fn name(self) -> &'static str {
        use StreamFindingClass::*;
        match self {
            AbortedByClient => "aborted_by_client",
            NotCommitted => "not_committed",
            BeforeCommitRequest => "before_commit_request",
            PastOpenTransaction => "past_open_transaction",
            NotVisible => "not_visible",
            NeverDelivered => "never_delivered",
            LostAck => "lost_ack",
            DuplicateInLog => "duplicate_in_log",
            AckedTwice => "acked_twice",
            PartlyVisible => "partly_visible",
            AcksWithoutMessages => "acks_without_messages",
            MessagesWithoutAcks => "messages_without_acks",
            ConflictingMarkers => "conflicting_markers",
            CoordinatorContradicted => "coordinator_contradicted",
            LoggedCommitReversed => "logged_commit_reversed",
            NonmonotonicReceive => "nonmonotonic_receive",
            NonmonotonicSend => "nonmonotonic_send",
            InconsistentOffset => "inconsistent_offset",
            DuplicateOutput => "duplicate_output",
            MissingOutput => "missing_output",
            OutputWithoutInput => "output_without_input",
        }
    }

    /// What the class means, in a sentence.
    pub fn describe(self) -> &'static str {
        use StreamFindingClass::*;
        match self {
            AbortedByClient => {
                "A receipt of a message whose transaction's client was told it aborted"
            }
            NotCommitted => {
                "A receipt of a message with no commit marker after it in the final log"
            }
            BeforeCommitRequest => {
                "A receipt before the client asked to commit the message's transaction"
            }
            PastOpenTransaction => "A receipt past a message of a transaction still open",
            NotVisible => "A committed message is not visible in its partition's log",
            NeverDelivered => "A committed message never reached a drained subscription",
            LostAck => {
                "A committed transaction's acknowledgment never took effect, nor did any other effect of it"
            }
            DuplicateInLog => "A message is in the logs twice",
            AckedTwice => {
                "A message acknowledged by two committed transactions on an exactly-once subscription"
            }
            PartlyVisible => "Some of a transaction's messages took effect, others did not",
            AcksWithoutMessages => {
                "A transaction's acknowledgments took effect, its messages did not"
            }
            MessagesWithoutAcks => {
                "A transaction's messages took effect, its acknowledgments did not"
            }
            ConflictingMarkers => "A transaction has both a commit and an abort marker",
            CoordinatorContradicted => {
                "A marker contradicts the outcome recorded at the coordinator"
            }
            LoggedCommitReversed => {
                "A transaction whose decision to commit was durable in the coordinator's log was aborted"
            }
            NonmonotonicReceive => {
                "A consumer received a smaller or equal offset after a larger one"
            }
            NonmonotonicSend => "A producer was told a smaller or equal offset after a larger one",
            InconsistentOffset => "An offset does not name what the log holds there",
            DuplicateOutput => "A committed input has several committed outputs",
            MissingOutput => "A committed input of a drained subscription has no committed output",
            OutputWithoutInput => "A committed output has no committed input",
        }
    }

    /// The rule that reports this class.
    pub fn rule(self) -> StreamRule {
        use StreamFindingClass::*;
        match self {
            AbortedByClient | NotCommitted => StreamRule::AbortedRead,
            BeforeCommitRequest | PastOpenTransaction => StreamRule::ReadUncommitted,
            NotVisible | NeverDelivered | LostAck => StreamRule::LostWrite,
            DuplicateInLog | AckedTwice => StreamRule::Duplicate,
            PartlyVisible
            | AcksWithoutMessages
            | MessagesWithoutAcks
            | ConflictingMarkers
            | CoordinatorContradicted
            | LoggedCommitReversed => StreamRule::TornTransaction,
            NonmonotonicReceive | NonmonotonicSend | InconsistentOffset => {
                StreamRule::MonotonicOffsets
            }
            DuplicateOutput | MissingOutput | OutputWithoutInput => StreamRule::ExactlyOnce,
        }
    }

    /// Whether a finding of this class can come from nothing worse than a
    /// run that did not converge (work left unfinished when the run ended),
    /// so that in a run judged not converged it restates the liveness
    /// failure rather than proving a safety violation:
    /// * `never_delivered` and `missing_output` judge what drained
    ///   subscriptions and exactly-once processors had done by the end of
    ///   the healed phase: unfinished work looks exactly like this;
    /// * `partly_visible`, `acks_without_messages` and
    ///   `messages_without_acks` and `lost_ack` judge the final logs: a transaction whose
    ///   coordinator decided it but could not yet reach every participant
    ///   (one with no live owner, say) has some markers and not others.
    ///
    /// Every other class is a safety violation whether or not the run
    /// converged: a receipt of an undecided or aborted message, a message
    /// the client was told committed and is not in the log, a duplicate, two
    /// outcomes for one transaction, offsets out of order, an output made
    /// from an input that did not commit. None of these is a state on the
    /// way to a converged one.
    pub fn restates_non_convergence(self) -> bool {
        use StreamFindingClass::*;
        matches!(
            self,
            NeverDelivered
                | LostAck
                | MissingOutput
                | PartlyVisible
                | AcksWithoutMessages
                | MessagesWithoutAcks
        )
    }

    /// The class with this name, if there is one ([`Named::from_name`],
    /// callable without the trait in scope).
    pub fn from_name(name: &str) -> Option<StreamFindingClass> {
        <StreamFindingClass as Named>::from_name(name)
    }
}

impl Named for StreamFindingClass {
    const ALL: &'static [StreamFindingClass] = &StreamFindingClass::ALL;
    fn name(self) -> &'static str {
        StreamFindingClass::name(self)
    }
}

impl ClassOf for StreamFindingClass {
    type Rule = StreamRule;
    fn rule_of(self) -> StreamRule {
        self.rule()
    }
}

impl fmt::Display for StreamFindingClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the classes that unfinished work produces restate a run's
    /// failure to converge; every other class stays a safety finding.
    #[test]
    fn only_unfinished_work_restates_non_convergence() {
        use StreamFindingClass::*;
        let restating: Vec<_> = StreamFindingClass::ALL
            .into_iter()
            .filter(|c| c.restates_non_convergence())
            .collect();
        assert_eq!(
            restating,
            vec![
                NeverDelivered,
                LostAck,
                PartlyVisible,
                AcksWithoutMessages,
                MessagesWithoutAcks,
                MissingOutput
            ]
        );
        for rule in [
            StreamRule::AbortedRead,
            StreamRule::ReadUncommitted,
            StreamRule::Duplicate,
            StreamRule::MonotonicOffsets,
        ] {
            assert!(
                rule.classes().all(|c| !c.restates_non_convergence()),
                "{rule}"
            );
        }
    }

    #[test]
    fn every_variant_is_listed_and_described() {
        for (i, r) in StreamRule::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i, "{r:?}");
            assert!(!r.describe().is_empty());
        }
        assert_eq!(StreamRule::ALL.len(), StreamRule::ExactlyOnce as usize + 1);
        for (i, c) in StreamFindingClass::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i, "{c:?}");
            assert!(!c.describe().is_empty());
        }
        assert_eq!(
            StreamFindingClass::ALL.len(),
            StreamFindingClass::OutputWithoutInput as usize + 1
        );
        assert_eq!(StreamFindingClass::from_name("lost_write"), None);
    }
}
