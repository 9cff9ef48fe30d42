//! Properties of the transaction buffer over random histories of sends,
//! markers (duplicated, late, racing) and restarts: a read-committed
//! consumer never sees a message of a transaction that is not committed
//! here, and a restart (from the latest snapshot and the log after it)
//! rebuilds exactly the state it lost.

use crate::pulsar::ablation::{PulsarAblation, PulsarAblations};
use crate::pulsar::buffer::ReadMode;
use crate::pulsar::test_util::*;
use crate::pulsar::types::TxnAction;
use proptest::prelude::*;

/// One step of a partition's life.
#[derive(Debug, Clone)]
enum Op {
    /// A message of transaction `k`, or a plain one.
    Send(Option<u64>),
    /// A marker for transaction `k` (possibly late or repeated).
    Mark(u64, TxnAction),
    /// The buffer takes a snapshot.
    Snapshot,
    /// The owner restarts (from the latest snapshot and the log after it).
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => proptest::option::of(0u64..4).prop_map(Op::Send),
        2 => (0u64..4, any::<bool>()).prop_map(|(k, c)| {
            Op::Mark(k, if c { TxnAction::Commit } else { TxnAction::Abort })
        }),
        1 => Just(Op::Snapshot),
        1 => Just(Op::Restart),
    ]
}

/// Run `ops`; after each, read everything by dispatch and by replay and
/// check that every message delivered is plain or committed here. Returns
/// the first offending message's offset.
fn first_uncommitted_read(ops: &[Op], ablations: PulsarAblations) -> Option<u64> {
    let mut b = Broker {
        ablations,
        ..Broker::default()
    };
    for op in ops {
        match op {
            Op::Send(k) => {
                let _ = b.send(k.map(txn), "m");
            }
            Op::Mark(k, action) => {
                b.mark(txn(*k), *action);
            }
            Op::Snapshot => b.take_snapshot(),
            Op::Restart => {
                let before = b.tb.clone();
                b.restart();
                assert_eq!(b.tb, before, "a restart must rebuild the buffer exactly");
            }
        }
        let until = b.log.len() as u64;
        for mode in [ReadMode::Dispatch, ReadMode::Replay { until }] {
            let d = crate::pulsar::buffer::read(
                &b.log,
                &b.tb,
                b.sub("s"),
                &crate::pulsar::test_util::consumer("c", 1),
                0,
                mode,
                usize::MAX,
                ablations,
            );
            for m in d.messages {
                let committed = m
                    .message
                    .txn
                    .is_none_or(|t| b.tb.ended(t) == Some(TxnAction::Commit));
                if !committed {
                    return Some(m.offset);
                }
            }
        }
    }
    None
}

proptest! {
    #[test]
    fn read_committed_holds(ops in proptest::collection::vec(op(), 0..40)) {
        prop_assert_eq!(first_uncommitted_read(&ops, PulsarAblations::NONE), None);
    }
}

#[test]
fn the_property_fails_without_max_read_position_or_replay_filter() {
    let open = [Op::Send(Some(1))];
    assert_eq!(first_uncommitted_read(&open, PulsarAblations::NONE), None);
    let no_mrp = PulsarAblations::only(PulsarAblation::NoMaxReadPosition);
    assert_eq!(first_uncommitted_read(&open, no_mrp), Some(0));

    let aborted = [Op::Send(Some(1)), Op::Mark(1, TxnAction::Abort)];
    assert_eq!(
        first_uncommitted_read(&aborted, PulsarAblations::NONE),
        None
    );
    let replay = PulsarAblations::only(PulsarAblation::ReplayIgnoresAborted);
    assert_eq!(first_uncommitted_read(&aborted, replay), Some(0));
}
