//! Pulsar's assertions on what must never happen (on in release builds;
//! see [`crate::invariant`]). Each holds for the faithful model; a planted
//! bug that switches off the mechanism behind one disarms it, so that the
//! stream checker, not the assertion, is what catches the ablated model.
//!
//! They watch the durable logs as each append lands, through [`Watch`],
//! the simulator's own record of them (no step reads it):
//!
//! - the coordinator's log: every TxnId it opens is new (its sequence
//!   number exceeds every one opened before, across restarts and moves),
//!   and every state change is a move `TxnState::can_become` allows from the
//!   transaction's last logged state (never COMMITTING to ABORTING, nor out
//!   of COMMITTED or ABORTED); disarmed by `timeout-races-commit`;
//! - a participant's log (a partition's or a subscription's): every
//!   marker carries the outcome the coordinator logged for its
//!   transaction (so never commit on one participant and abort on
//!   another), and a repeated marker of a transaction the outcome of the
//!   first (a marker resent while the first one's append callback is
//!   pending finds the transaction still open in memory and is appended
//!   again, as Pulsar's transaction buffer appends a marker for every
//!   end it is sent); both checks are disarmed by `timeout-races-commit`
//!   (the outcome changes), and for partitions also by
//!   `marker-by-producer-epoch` (a marker lands on another transaction),
//!   leaving conflicting markers to the stream checker
//!   (`conflicting_markers`);
//! - every append comes from the owner that opened the log last (same
//!   node, same epoch: a fenced owner's write is never accepted), and a
//!   partition's new entry lands at the offset its owner's memory expects
//!   (offsets only grow, each is given once);
//! - an ownership assignment's epoch exceeds the resource's last one;
//! - a transaction buffer recovered from its latest snapshot and the log
//!   after it equals the one a replay of the whole log rebuilds.

use crate::invariant;
use percsim_protocol::pulsar::buffer::TbState;
use percsim_protocol::pulsar::coordinator::{LogRecord, TxnState};
use percsim_protocol::pulsar::ownership::{MetaRecord, OwnershipTable, Resource};
use percsim_protocol::pulsar::types::{Participant, TxnAction, TxnId};
use percsim_protocol::pulsar::{PulsarAblation, PulsarAblations};
use std::collections::BTreeMap;

/// Whether every state change the coordinator logs is a legal move: the
/// timeout checks the transaction's state (unless `timeout-races-commit`),
/// so a decided transaction never changes its outcome.
pub(crate) fn moves_legal(ablations: PulsarAblations) -> bool {
    !ablations.has(PulsarAblation::TimeoutRacesCommit)
}

/// Whether every marker written to `participant` carries the outcome the
/// coordinator logged for the transaction it names.
pub(crate) fn markers_follow_decisions(ablations: PulsarAblations, to: &Participant) -> bool {
    let by_id = match to {
        Participant::Partition(_) => !ablations.has(PulsarAblation::MarkerByProducerEpoch),
        Participant::Subscription(_) => true,
    };
    moves_legal(ablations) && by_id
}

/// A log's writer: a server and the epoch it opened the log at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Writer {
    /// The server's node name.
    pub node: String,
    /// The epoch.
    pub epoch: u64,
}

/// What the assertions remember of the durable logs, updated as each
/// append lands: the simulator's own record, read by no step.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    ablations: PulsarAblations,
    /// The highest sequence number the coordinator's log has opened.
    high_seq: Option<u64>,
    /// Each transaction's last state in the coordinator's log (kept after
    /// it ends, when the coordinator forgets it).
    states: BTreeMap<TxnId, TxnState>,
    /// The marker each participant's log holds for each transaction.
    markers: BTreeMap<(Participant, TxnId), TxnAction>,
    /// Who opened each resource's logs last.
    opened: BTreeMap<Resource, Writer>,
}

impl Watch {
    /// Nothing seen yet, in a run with `ablations` planted.
    pub(crate) fn new(ablations: PulsarAblations) -> Self {
        Watch {
            ablations,
            ..Watch::default()
        }
    }

    /// `writer` opened `resource`'s logs (its fence is now at its epoch).
    pub(crate) fn opened(&mut self, resource: Resource, writer: Writer) {
        self.opened.insert(resource, writer);
    }

    /// Assert that `writer`, whose append to `resource`'s logs was
    /// accepted, is the owner that opened them last.
    pub(crate) fn append(&self, resource: &Resource, writer: &Writer) {
        check_writer(resource, self.opened.get(resource), writer);
    }

    /// Check `record`, appended to the coordinator's log, and remember it.
    pub(crate) fn tc_record(&mut self, record: &LogRecord) {
        match record {
            LogRecord::Open { txn, .. } => {
                check_new_txn(*txn, self.high_seq);
                self.high_seq = Some(txn.seq);
                self.states.insert(*txn, TxnState::Open);
            }
            LogRecord::AddParticipant { .. } => {}
            LogRecord::State { txn, state } => {
                if moves_legal(self.ablations) {
                    check_move(*txn, self.states.get(txn).copied(), *state);
                }
                self.states.insert(*txn, *state);
            }
        }
    }

    /// Check a marker of `txn` with `action` appended to `to`'s log, and
    /// remember the first one.
    pub(crate) fn marker(&mut self, to: &Participant, txn: TxnId, action: TxnAction) {
        let key = (to.clone(), txn);
        if markers_follow_decisions(self.ablations, to) {
            check_marker_repeats(to, txn, action, self.markers.get(&key).copied());
            check_marker_decided(to, txn, action, self.states.get(&txn).copied());
        }
        self.markers.entry(key).or_insert(action);
    }
}

/// Assert that a TxnId the coordinator opens was never handed out: its
/// sequence number exceeds the highest opened before (`high_seq`).
pub(crate) fn check_new_txn(txn: TxnId, high_seq: Option<u64>) {
    invariant::check(high_seq.is_none_or(|high| txn.seq > high), || {
        format!(
            "the coordinator opened transaction {txn} after already opening sequence number {}",
            high_seq.unwrap_or_default()
        )
    });
}

/// Assert that the coordinator's log moves `txn` from its last logged
/// state (`from`; `None` if never opened) to `to` legally.
pub(crate) fn check_move(txn: TxnId, from: Option<TxnState>, to: TxnState) {
    invariant::check(from.is_some_and(|f| f.can_become(to)), || match from {
        Some(f) => format!("the coordinator logged transaction {txn} moving from {f:?} to {to:?}"),
        None => format!("the coordinator logged transaction {txn} as {to:?} without opening it"),
    });
}

/// Assert that a marker of `txn` with `action` written to `to` repeats
/// the outcome of the first marker `to`'s log holds for `txn` (`earlier`,
/// if any).
pub(crate) fn check_marker_repeats(
    to: &Participant,
    txn: TxnId,
    action: TxnAction,
    earlier: Option<TxnAction>,
) {
    invariant::check(earlier.is_none_or(|e| e == action), || {
        format!(
            "{} got a {action:?} marker of transaction {txn} after a {:?} marker of it",
            participant_name(to),
            earlier.expect("a first marker")
        )
    });
}

/// Assert that a marker of `txn` with `action` written to `to` carries
/// the outcome the coordinator's log holds for `txn` (`logged`, its last
/// state there).
pub(crate) fn check_marker_decided(
    to: &Participant,
    txn: TxnId,
    action: TxnAction,
    logged: Option<TxnState>,
) {
    let decided = match action {
        TxnAction::Commit => [TxnState::Committing, TxnState::Committed],
        TxnAction::Abort => [TxnState::Aborting, TxnState::Aborted],
    };
    invariant::check(logged.is_some_and(|s| decided.contains(&s)), || {
        format!(
            "{} got a {action:?} marker of transaction {txn}, which the coordinator's log has as {logged:?}",
            participant_name(to)
        )
    });
}

/// Assert that a partition's log and its owner's memory agree on its
/// length after an append (`memory_len`, `log_len`): each new entry landed
/// at the offset the owner gave it, and no other writer appended.
pub(crate) fn check_next_offset(resource: &Resource, memory_len: u64, log_len: u64) {
    invariant::check(memory_len == log_len, || {
        format!("{resource}'s log holds {log_len} entries, but its owner's memory {memory_len}")
    });
}

/// Assert that `resource`'s transaction buffer recovered from its latest
/// snapshot and the log after it is the one a replay of the whole log
/// rebuilds.
pub(crate) fn check_snapshot_recovery(resource: &Resource, recovered: &TbState, full: &TbState) {
    invariant::check(recovered == full, || {
        format!(
            "{resource}'s buffer recovered from its snapshot is {recovered:?}, the whole log's {full:?}"
        )
    });
}

/// Assert that an assignment of `resource` at epoch `next` comes after
/// its last epoch (`last`; `None` if never owned).
pub(crate) fn check_epoch_grows(resource: &Resource, last: Option<u64>, next: u64) {
    invariant::check(last.is_none_or(|l| next > l), || {
        format!(
            "{resource} was assigned at epoch {next} after epoch {}",
            last.unwrap_or_default()
        )
    });
}

/// Assert that `record`, about to be applied to the ownership table
/// `meta`, keeps every resource's epoch growing.
pub(crate) fn check_assignment(meta: &OwnershipTable, record: &MetaRecord) {
    if let MetaRecord::Assigned {
        resource, epoch, ..
    } = record
    {
        let last = meta.owner(resource).map(|a| a.epoch);
        check_epoch_grows(resource, last, *epoch);
    }
}

/// Assert that `writer`, whose append to `resource`'s logs was accepted,
/// is the one that opened them last (`opener`).
pub(crate) fn check_writer(resource: &Resource, opener: Option<&Writer>, writer: &Writer) {
    invariant::check(opener == Some(writer), || {
        let last = opener.map_or("nobody".to_string(), |o| {
            format!("{} at epoch {}", o.node, o.epoch)
        });
        format!(
            "{resource}'s log accepted an append from {} at epoch {}, but {last} opened it last",
            writer.node, writer.epoch
        )
    });
}

/// A participant as the assertions' messages name it.
fn participant_name(p: &Participant) -> String {
    match p {
        Participant::Partition(p) => format!("partition {p}"),
        Participant::Subscription(s) => format!("subscription {s}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use percsim_protocol::pulsar::types::Partition;
    use percsim_protocol::pulsar::types::{ProducerRef, SubscriptionKey};

    fn txn(seq: u64) -> TxnId {
        TxnId {
            coordinator: 0,
            seq,
        }
    }

    fn open(seq: u64) -> LogRecord {
        LogRecord::Open {
            txn: txn(seq),
            producer: ProducerRef {
                producer_id: 1,
                epoch: 0,
            },
            deadline_ms: 1_000,
        }
    }

    fn state(seq: u64, state: TxnState) -> LogRecord {
        LogRecord::State {
            txn: txn(seq),
            state,
        }
    }

    fn part() -> Participant {
        Participant::Partition(Partition::new("t", 0))
    }

    fn sub() -> Participant {
        Participant::Subscription(SubscriptionKey {
            partition: Partition::new("t", 0),
            name: "s".into(),
        })
    }

    fn writer(node: &str, epoch: u64) -> Writer {
        let node = node.to_string();
        Writer { node, epoch }
    }

    /// A watch that has seen transaction 0 opened and committed, and
    /// transaction 1 opened.
    fn committed_and_open(ablations: PulsarAblations) -> Watch {
        let mut w = Watch::new(ablations);
        for r in [
            open(0),
            state(0, TxnState::Committing),
            state(0, TxnState::Committed),
            open(1),
        ] {
            w.tc_record(&r);
        }
        w
    }

    #[test]
    fn a_faithful_history_passes() {
        let mut w = committed_and_open(PulsarAblations::NONE);
        w.marker(&part(), txn(0), TxnAction::Commit);
        w.marker(&sub(), txn(0), TxnAction::Commit);
        w.tc_record(&state(1, TxnState::Aborting));
        w.marker(&part(), txn(1), TxnAction::Abort);
        w.tc_record(&state(1, TxnState::Aborted));
        w.opened(Resource::Coordinator(0), writer("broker-0", 1));
        w.append(&Resource::Coordinator(0), &writer("broker-0", 1));
        check_next_offset(&Resource::Coordinator(0), 3, 3);
        check_epoch_grows(&Resource::Coordinator(0), None, 1);
        check_epoch_grows(&Resource::Coordinator(0), Some(1), 2);
    }

    #[test]
    #[should_panic(
        expected = "invariant violated: the coordinator opened transaction (0,1) after already opening sequence number 1"
    )]
    fn a_repeated_txn_id_trips() {
        committed_and_open(PulsarAblations::NONE).tc_record(&open(1));
    }

    #[test]
    #[should_panic(
        expected = "invariant violated: the coordinator logged transaction (0,0) moving from Committed to Aborting"
    )]
    fn a_committed_transaction_moving_to_aborting_trips() {
        committed_and_open(PulsarAblations::NONE).tc_record(&state(0, TxnState::Aborting));
    }

    #[test]
    #[should_panic(expected = "moving from Committing to Aborting")]
    fn a_committing_transaction_moving_to_aborting_trips() {
        let mut w = committed_and_open(PulsarAblations::NONE);
        w.tc_record(&state(1, TxnState::Committing));
        w.tc_record(&state(1, TxnState::Aborting));
    }

    #[test]
    #[should_panic(expected = "logged transaction (0,7) as Aborting without opening it")]
    fn a_move_of_a_transaction_never_opened_trips() {
        committed_and_open(PulsarAblations::NONE).tc_record(&state(7, TxnState::Aborting));
    }

    /// A marker resent while the first one's callback is pending is
    /// appended again: a repeat of the same outcome passes.
    #[test]
    fn a_repeated_marker_of_the_same_outcome_passes() {
        let mut w = committed_and_open(PulsarAblations::NONE);
        w.marker(&part(), txn(0), TxnAction::Commit);
        w.marker(&part(), txn(0), TxnAction::Commit);
        w.tc_record(&state(1, TxnState::Aborting));
        w.marker(&sub(), txn(1), TxnAction::Abort);
        w.marker(&sub(), txn(1), TxnAction::Abort);
    }

    #[test]
    #[should_panic(
        expected = "invariant violated: partition t-partition-0 got a Commit marker of transaction (0,1) after a Abort marker of it"
    )]
    fn a_second_marker_of_another_outcome_trips() {
        check_marker_repeats(&part(), txn(1), TxnAction::Commit, Some(TxnAction::Abort));
    }

    #[test]
    #[should_panic(
        expected = "invariant violated: subscription t-partition-0/s got a Abort marker of transaction (0,0), which the coordinator's log has as Some(Committed)"
    )]
    fn a_marker_against_the_decision_trips() {
        committed_and_open(PulsarAblations::NONE).marker(&sub(), txn(0), TxnAction::Abort);
    }

    #[test]
    #[should_panic(
        expected = "got a Commit marker of transaction (0,1), which the coordinator's log has as Some(Open)"
    )]
    fn a_marker_before_the_decision_trips() {
        committed_and_open(PulsarAblations::NONE).marker(&part(), txn(1), TxnAction::Commit);
    }

    #[test]
    fn timeout_races_commit_disarms_the_moves_and_the_outcomes() {
        let a = PulsarAblations::only(PulsarAblation::TimeoutRacesCommit);
        let mut w = committed_and_open(a);
        w.tc_record(&state(1, TxnState::Committing));
        w.marker(&part(), txn(1), TxnAction::Commit);
        w.tc_record(&state(1, TxnState::Aborting));
        w.marker(&sub(), txn(1), TxnAction::Commit);
    }

    /// The outcome changes under `timeout-races-commit`: a commit and an
    /// abort marker on one partition are the stream checker's to judge
    /// (`conflicting_markers`), not a stop of the simulator.
    #[test]
    fn timeout_races_commit_leaves_conflicting_markers_to_the_checker() {
        let a = PulsarAblations::only(PulsarAblation::TimeoutRacesCommit);
        let mut w = committed_and_open(a);
        w.tc_record(&state(1, TxnState::Committing));
        w.marker(&part(), txn(1), TxnAction::Commit);
        w.tc_record(&state(1, TxnState::Aborting));
        w.marker(&part(), txn(1), TxnAction::Abort);
    }

    /// Armed, the repeat check trips on a second marker of another
    /// outcome even where the coordinator's log would allow it.
    #[test]
    #[should_panic(expected = "got a Abort marker of transaction (0,1) after a Commit marker")]
    fn a_faithful_run_trips_on_conflicting_markers() {
        let mut w = committed_and_open(PulsarAblations::NONE);
        w.tc_record(&state(1, TxnState::Committing));
        w.marker(&part(), txn(1), TxnAction::Commit);
        w.marker(&part(), txn(1), TxnAction::Abort);
    }

    #[test]
    fn marker_by_producer_epoch_disarms_the_partitions_outcomes_only() {
        let a = PulsarAblations::only(PulsarAblation::MarkerByProducerEpoch);
        let mut w = committed_and_open(a);
        // A late abort marker of transaction 0 landed on transaction 1.
        w.marker(&part(), txn(1), TxnAction::Abort);
        assert!(!markers_follow_decisions(a, &part()));
        assert!(markers_follow_decisions(a, &sub()));
        assert!(moves_legal(a));
    }

    #[test]
    #[should_panic(expected = "moving from Committed to Aborting")]
    fn marker_by_producer_epoch_keeps_the_moves_armed() {
        let a = PulsarAblations::only(PulsarAblation::MarkerByProducerEpoch);
        committed_and_open(a).tc_record(&state(0, TxnState::Aborting));
    }

    #[test]
    fn the_other_ablations_disarm_nothing() {
        for a in [
            PulsarAblation::ReplayIgnoresAborted,
            PulsarAblation::NoMaxReadPosition,
            PulsarAblation::PendingAckNotDurable,
            PulsarAblation::CommitBeforeLogDurable,
        ] {
            let set = PulsarAblations::only(a);
            assert!(moves_legal(set), "{a}");
            assert!(markers_follow_decisions(set, &part()), "{a}");
            assert!(markers_follow_decisions(set, &sub()), "{a}");
        }
    }

    #[test]
    #[should_panic(
        expected = "invariant violated: t-partition-0's log holds 4 entries, but its owner's memory 3"
    )]
    fn a_log_ahead_of_its_owner_trips() {
        check_next_offset(&Resource::Partition(Partition::new("t", 0)), 3, 4);
    }

    #[test]
    #[should_panic(
        expected = "invariant violated: coordinator-0 was assigned at epoch 2 after epoch 2"
    )]
    fn an_epoch_that_does_not_grow_trips() {
        check_epoch_grows(&Resource::Coordinator(0), Some(2), 2);
    }

    #[test]
    fn assignments_of_the_next_epoch_pass_and_a_repeated_one_trips() {
        let mut meta = OwnershipTable::new([Resource::Coordinator(0)]);
        let session = percsim_protocol::pulsar::ownership::SessionId {
            broker: 0,
            generation: 1,
        };
        let assigned = |epoch| MetaRecord::Assigned {
            resource: Resource::Coordinator(0),
            session,
            epoch,
        };
        check_assignment(&meta, &assigned(1));
        meta.apply(&assigned(1));
        check_assignment(&meta, &MetaRecord::Opened { session, now_ms: 0 });
        let again = std::panic::catch_unwind(|| check_assignment(&meta, &assigned(1)));
        let message = again.expect_err("epoch 1 again trips");
        let text = message.downcast_ref::<String>().expect("a message");
        assert!(
            text.contains("coordinator-0 was assigned at epoch 1 after epoch 1"),
            "{text}"
        );
    }

    #[test]
    #[should_panic(
        expected = "invariant violated: coordinator-0's log accepted an append from broker-0 at epoch 1, but broker-1 at epoch 2 opened it last"
    )]
    fn a_fenced_owner_s_accepted_append_trips() {
        let mut w = Watch::new(PulsarAblations::NONE);
        w.opened(Resource::Coordinator(0), writer("broker-0", 1));
        w.opened(Resource::Coordinator(0), writer("broker-1", 2));
        w.append(&Resource::Coordinator(0), &writer("broker-0", 1));
    }

    #[test]
    #[should_panic(
        expected = "accepted an append from broker-1 at epoch 2, but broker-0 at epoch 2"
    )]
    fn an_epoch_shared_by_two_owners_trips() {
        let mut w = Watch::new(PulsarAblations::NONE);
        w.opened(Resource::Coordinator(0), writer("broker-0", 2));
        w.append(&Resource::Coordinator(0), &writer("broker-1", 2));
    }

    #[test]
    #[should_panic(
        expected = "accepted an append from broker-0 at epoch 1, but nobody opened it last"
    )]
    fn an_append_to_a_log_never_opened_trips() {
        Watch::new(PulsarAblations::NONE).append(&Resource::Coordinator(0), &writer("broker-0", 1));
    }
}
