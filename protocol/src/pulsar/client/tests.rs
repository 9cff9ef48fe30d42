//! The client procedures against an in-memory world: one coordinator and
//! one broker per partition, every request handled at once by the same
//! steps a simulated server runs (see `crate::pulsar::test_util`).

use super::*;
use crate::common::RpcError;
use crate::pulsar::ablation::{PulsarAblation, PulsarAblations};
use crate::pulsar::coordinator::{self, TcAction, TcError};
use crate::pulsar::test_util::{Broker, Tc};
use crate::pulsar::types::*;
use std::collections::BTreeMap;
use std::future::{Future, ready};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};

/// Run a future whose every await is ready at once.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[derive(Default)]
struct World {
    tc: Option<Tc>,
    brokers: BTreeMap<Partition, Broker>,
    events: Vec<ClientEvent>,
    now_ms: u64,
    /// How many end replies to lose after the end was carried out.
    lose_end_replies: u32,
    /// How many send replies to lose after the send was carried out.
    lose_send_replies: u32,
    /// Planted in every server.
    ablations: PulsarAblations,
    /// Producer deduplication switched off in every broker.
    no_dedup: bool,
}

impl World {
    fn tc(&mut self) -> &mut Tc {
        let ablations = self.ablations;
        self.tc.get_or_insert_with(|| Tc {
            ablations,
            ..Tc::new(0)
        })
    }

    fn broker(&mut self, p: &Partition) -> &mut Broker {
        let (ablations, no_dedup) = (self.ablations, self.no_dedup);
        self.brokers.entry(p.clone()).or_insert_with(|| Broker {
            ablations,
            no_dedup,
            ..Broker::default()
        })
    }

    /// Carry out coordinator actions, delivering markers at once.
    fn run(&mut self, actions: Vec<TcAction>) -> Option<TxnAction> {
        let mut reply = None;
        for a in actions {
            match a {
                TcAction::Log(r) => self.tc().log(r),
                TcAction::Reply(x) => reply = reply.or(Some(x)),
                TcAction::SendMarkers(ms) => {
                    for m in &ms {
                        let p = match &m.to {
                            Participant::Partition(p) => p.clone(),
                            Participant::Subscription(s) => s.partition.clone(),
                        };
                        self.broker(&p).deliver(m);
                    }
                }
            }
        }
        reply
    }

    fn end(&mut self, txn: TxnId, action: TxnAction) -> Result<TcReply, RpcError> {
        let tc = self.tc();
        let plan = match coordinator::end(&tc.state, txn, action, tc.ablations) {
            Ok(plan) => plan,
            Err(e) => return Ok(TcReply::Refused(e)),
        };
        let early = self.run(plan);
        let finish = coordinator::finish(&self.tc().state, txn).expect("finish");
        let reply = early.or(self.run(finish)).expect("a reply");
        if self.lose_end_replies > 0 {
            self.lose_end_replies -= 1;
            return Err(RpcError::Timeout);
        }
        Ok(TcReply::Ended(reply))
    }

    fn coordinator(&mut self, req: TcRequest) -> Result<TcReply, RpcError> {
        let now = self.now_ms;
        Ok(match req {
            TcRequest::Open {
                producer,
                timeout_ms,
            } => {
                let (txn, r) = coordinator::open(&self.tc().state, producer, now + timeout_ms);
                self.tc().log(r);
                TcReply::Opened(txn)
            }
            TcRequest::AddParticipant { txn, participant } => {
                match self.tc().add(txn, &participant) {
                    Ok(_) => TcReply::Added,
                    Err(e) => TcReply::Refused(e),
                }
            }
            TcRequest::End { txn, action } => return self.end(txn, action),
        })
    }

    fn broker_req(&mut self, p: &Partition, req: BrokerRequest) -> BrokerReply {
        self.broker(p).execute(&req)
    }

    /// Run the coordinator's timeouts at `now_ms`; `finish` whether their
    /// markers are acknowledged at once (else they stay ABORTING).
    fn time_passes(&mut self, now_ms: u64, finish: bool) {
        self.now_ms = now_ms;
        for txn in coordinator::due(&self.tc().state, now_ms) {
            let tc = self.tc();
            if let Ok(plan) = coordinator::timeout(&tc.state, txn, now_ms, tc.ablations) {
                self.run(plan);
                if !finish {
                    continue;
                }
                let finish = coordinator::finish(&self.tc().state, txn).expect("finish");
                self.run(finish);
            }
        }
    }
}

struct Mem {
    config: PulsarClientConfig,
    producer: ProducerRef,
    sequence: AtomicU64,
    world: Mutex<World>,
}

impl Mem {
    fn new() -> Self {
        Mem {
            config: PulsarClientConfig::default(),
            producer: ProducerRef {
                producer_id: 7,
                epoch: 0,
            },
            sequence: AtomicU64::new(0),
            world: Mutex::new(World::default()),
        }
    }

    fn w(&self) -> std::sync::MutexGuard<'_, World> {
        self.world.lock().unwrap()
    }

    fn must_receive_all(&self, p: &Partition) -> Vec<String> {
        let mut c = Consumer::new(SubscriptionKey::new(p.clone(), "check"));
        c.redeliver_later();
        let got = block_on(c.receive(self, usize::MAX)).unwrap();
        got.into_iter().map(|d| d.message.payload).collect()
    }
}

impl PulsarTransport for Mem {
    fn config(&self) -> &PulsarClientConfig {
        &self.config
    }
    fn producer(&self) -> ProducerRef {
        self.producer
    }
    fn next_sequence_id(&self) -> u64 {
        self.sequence.fetch_add(1, Ordering::Relaxed)
    }
    fn consumer(&self) -> ConsumerRef {
        ConsumerRef {
            name: "mem".into(),
            session: 1,
        }
    }
    fn coordinator(
        &self,
        req: TcRequest,
    ) -> impl Future<Output = Result<TcReply, RpcError>> + Send {
        ready(self.w().coordinator(req))
    }
    fn broker(
        &self,
        partition: &Partition,
        req: BrokerRequest,
    ) -> impl Future<Output = Result<BrokerReply, RpcError>> + Send {
        let mut w = self.w();
        let send = matches!(req, BrokerRequest::Send(_));
        let reply = w.broker_req(partition, req);
        if send && w.lose_send_replies > 0 {
            w.lose_send_replies -= 1;
            return ready(Err(RpcError::Timeout));
        }
        ready(Ok(reply))
    }
    fn sleep_ms(&self, ms: u64) -> impl Future<Output = ()> + Send {
        self.w().now_ms += ms;
        ready(())
    }
}

impl PulsarLedger for Mem {
    fn reached(&self, _txn: Option<TxnId>, _point: ClientPoint) -> impl Future<Output = ()> + Send {
        ready(())
    }
    fn event(&self, event: ClientEvent) {
        self.w().events.push(event);
    }
}

fn p(topic: &str, i: u32) -> Partition {
    Partition::new(topic, i)
}

#[test]
fn commit_makes_every_message_visible_and_not_before() {
    let t = Mem::new();
    let mut txn = block_on(PulsarTxn::begin(&t)).unwrap();
    block_on(txn.send(&p("out", 0), "a")).unwrap();
    block_on(txn.send(&p("out", 1), "b")).unwrap();
    assert!(
        t.must_receive_all(&p("out", 0)).is_empty(),
        "read uncommitted"
    );
    assert_eq!(block_on(txn.commit()), TxnOutcome::Committed);
    assert_eq!(t.must_receive_all(&p("out", 0)), vec!["a"]);
    assert_eq!(t.must_receive_all(&p("out", 1)), vec!["b"]);
    let events = &t.w().events;
    assert!(matches!(events[0], ClientEvent::Begun { .. }));
    assert!(events.iter().any(|e| matches!(
        e,
        ClientEvent::Finished {
            outcome: TxnOutcome::Committed,
            ..
        }
    )));
}

#[test]
fn abort_hides_messages_for_good() {
    let t = Mem::new();
    let mut txn = block_on(PulsarTxn::begin(&t)).unwrap();
    block_on(txn.send(&p("out", 0), "a")).unwrap();
    block_on(send(&t, &p("out", 0), "plain")).unwrap();
    let reason = AbortReason::User;
    assert_eq!(block_on(txn.abort(reason)), TxnOutcome::Aborted { reason });
    assert_eq!(t.must_receive_all(&p("out", 0)), vec!["plain"]);
}

#[test]
fn lost_commit_reply_is_unknown() {
    let t = Mem::new();
    let mut txn = block_on(PulsarTxn::begin(&t)).unwrap();
    block_on(txn.send(&p("out", 0), "a")).unwrap();
    t.w().lose_end_replies = 1;
    // The retry finds the transaction ended and forgotten: committed by the
    // first try, or aborted by a timeout; the client cannot tell.
    assert_eq!(block_on(txn.commit()), TxnOutcome::Unknown);
    assert_eq!(t.must_receive_all(&p("out", 0)), vec!["a"]);
}

#[test]
fn a_transaction_whose_send_failed_aborts_instead_of_committing() {
    let t = Mem::new();
    let mut txn = block_on(PulsarTxn::begin(&t)).unwrap();
    block_on(txn.send(&p("out", 0), "a")).unwrap();
    // The second send lands, but no answer comes, to it nor to any of
    // its resends: the client cannot know it is there, so it must not
    // commit the transaction.
    t.w().lose_send_replies = 1 + t.config.retries;
    let lost = block_on(txn.send(&p("out", 0), "b")).unwrap_err();
    assert_eq!(lost, ClientError::Rpc(RpcError::Timeout));
    let reason = AbortReason::Unavailable;
    assert_eq!(block_on(txn.commit()), TxnOutcome::Aborted { reason });
    // The abort marker landed: a later plain message is readable, and
    // neither of the transaction's messages ever is.
    block_on(send(&t, &p("out", 0), "after")).unwrap();
    assert_eq!(t.must_receive_all(&p("out", 0)), vec!["after"]);
}

/// A send whose answer is lost is resent with its sequence id; the
/// broker's producer deduplication answers the resend with the offset the
/// first try landed at, and the transaction commits with it once. With
/// deduplication off the resend is appended again: the message is there
/// twice.
#[test]
fn a_resent_send_is_written_once_and_twice_without_deduplication() {
    for no_dedup in [false, true] {
        let t = Mem::new();
        t.w().no_dedup = no_dedup;
        let mut txn = block_on(PulsarTxn::begin(&t)).unwrap();
        t.w().lose_send_replies = 1;
        let offset = block_on(txn.send(&p("out", 0), "a")).unwrap();
        assert_eq!(block_on(txn.commit()), TxnOutcome::Committed);
        let got = t.must_receive_all(&p("out", 0));
        match no_dedup {
            false => assert_eq!((offset, got), (0, vec!["a".to_string()])),
            true => assert_eq!((offset, got), (1, vec!["a".to_string(); 2])),
        }
    }
}

/// The transaction times out before its client asks to commit.
fn commit_after_timeout(finished: bool) -> TxnOutcome {
    let t = Mem::new();
    let mut txn = block_on(PulsarTxn::begin(&t)).unwrap();
    block_on(txn.send(&p("out", 0), "a")).unwrap();
    t.w().time_passes(t.config.txn_timeout_ms, finished);
    let outcome = block_on(txn.commit());
    assert!(t.must_receive_all(&p("out", 0)).is_empty());
    outcome
}

#[test]
fn commit_meeting_a_timeout_abort_is_aborted() {
    let reason = AbortReason::TimedOut;
    assert_eq!(commit_after_timeout(false), TxnOutcome::Aborted { reason });
}

#[test]
fn commit_after_a_finished_timeout_abort_is_unknown() {
    // The coordinator has forgotten the transaction: not found.
    assert_eq!(commit_after_timeout(true), TxnOutcome::Unknown);
}

fn double(payload: &str) -> Vec<(Partition, String)> {
    vec![(p("out", 0), format!("{payload}{payload}"))]
}

#[test]
fn processor_is_exactly_once() {
    let t = Mem::new();
    block_on(send(&t, &p("in", 0), "x")).unwrap();
    block_on(send(&t, &p("in", 0), "y")).unwrap();
    let mut c = Consumer::new(SubscriptionKey::new(p("in", 0), "proc"));
    for offset in [0, 1] {
        match block_on(process_one(&t, &mut c, double)).unwrap() {
            Processed::Done {
                offset: o, outcome, ..
            } => {
                assert_eq!((o, outcome), (offset, TxnOutcome::Committed))
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        block_on(process_one(&t, &mut c, double)).unwrap(),
        Processed::Idle
    );
    assert_eq!(t.must_receive_all(&p("out", 0)), vec!["xx", "yy"]);
    let mut w = t.w();
    let sub = w.broker(&p("in", 0)).sub("proc").clone();
    assert!(sub.is_acked(0) && sub.is_acked(1));
}

#[test]
fn conflicting_processor_aborts_and_the_input_is_redone() {
    let t = Mem::new();
    block_on(send(&t, &p("in", 0), "x")).unwrap();
    let key = SubscriptionKey::new(p("in", 0), "proc");
    let mut c = Consumer::new(key.clone());
    // Another processor, which got the same input (say by a redelivery),
    // pending-acks it while this one transforms it.
    let other = Mutex::new(block_on(PulsarTxn::begin(&t)).unwrap());
    let racing = |payload: &str| {
        block_on(other.lock().unwrap().ack(&key, 0)).unwrap();
        double(payload)
    };
    let Processed::Done { outcome, .. } = block_on(process_one(&t, &mut c, racing)).unwrap() else {
        panic!("no input")
    };
    let reason = AbortReason::AckConflict;
    assert_eq!(outcome, TxnOutcome::Aborted { reason });
    assert!(t.must_receive_all(&p("out", 0)).is_empty());
    // Pending in the other transaction: not redelivered yet.
    assert_eq!(
        block_on(process_one(&t, &mut c, double)).unwrap(),
        Processed::Idle
    );
    let other = other.into_inner().unwrap();
    block_on(other.abort(AbortReason::User));
    let Processed::Done { outcome, .. } = block_on(process_one(&t, &mut c, double)).unwrap() else {
        panic!("the input was not redelivered")
    };
    assert_eq!(outcome, TxnOutcome::Committed);
    assert_eq!(t.must_receive_all(&p("out", 0)), vec!["xx"]);
}

/// Processor A pending-acks input `x` and produces `xx`; the input's broker
/// restarts; processor B (a restarted consumer) looks for work; then A
/// commits. Returns the committed output.
fn restart_between_ack_and_commit(ablations: PulsarAblations) -> Vec<String> {
    let t = Mem::new();
    t.w().ablations = ablations;
    block_on(send(&t, &p("in", 0), "x")).unwrap();
    let key = SubscriptionKey::new(p("in", 0), "proc");
    let mut a = Consumer::new(key.clone());
    assert_eq!(block_on(a.receive(&t, 1)).unwrap().len(), 1);
    let mut txn = block_on(PulsarTxn::begin(&t)).unwrap();
    block_on(txn.send(&p("out", 0), "xx")).unwrap();
    block_on(txn.ack(&key, 0)).unwrap();
    t.w().broker(&p("in", 0)).restart();
    let mut b = Consumer::new(key);
    b.redeliver_later();
    block_on(process_one(&t, &mut b, double)).unwrap();
    assert_eq!(block_on(txn.commit()), TxnOutcome::Committed);
    t.must_receive_all(&p("out", 0))
}

#[test]
fn pending_ack_keeps_a_restarted_broker_exactly_once() {
    let out = restart_between_ack_and_commit(PulsarAblations::NONE);
    assert_eq!(out, vec!["xx"]);
}

#[test]
fn ablated_pending_ack_makes_a_restarted_broker_process_twice() {
    let ablations = PulsarAblations::only(PulsarAblation::PendingAckNotDurable);
    let out = restart_between_ack_and_commit(ablations);
    assert_eq!(
        out,
        vec!["xx", "xx"],
        "the duplicate the checker must catch"
    );
}

/// `retry` on a call that gets no answer its first `failures` times: what
/// it returns, how many calls were made and how long it slept.
fn retried(failures: u32) -> (Result<u32, RpcError>, u32, u64) {
    let t = Mem::new();
    let calls = Mutex::new(0u32);
    let call = || {
        let mut n = calls.lock().unwrap();
        *n += 1;
        assert!(*n <= 10, "retried forever");
        ready(match *n <= failures {
            true => Err(RpcError::Timeout),
            false => Ok(*n),
        })
    };
    let out = block_on(super::txn::retry(&t, call));
    let slept_ms = t.w().now_ms;
    (out, calls.into_inner().unwrap(), slept_ms)
}

#[test]
fn a_call_is_retried_as_many_times_as_configured() {
    // Three retries, 50 ms apart (the defaults).
    assert_eq!(retried(0), (Ok(1), 1, 0));
    assert_eq!(retried(3), (Ok(4), 4, 150));
    assert_eq!(retried(4), (Err(RpcError::Timeout), 4, 150));
}

#[test]
fn abort_reasons_name_the_refusal() {
    use crate::pulsar::coordinator::{TcError, TcOp, TxnState};
    use crate::pulsar::subscription::AckError;
    use crate::pulsar::test_util::txn;
    let of = |e: ClientError| AbortReason::of(&e);
    let conflict = AckError::Conflict {
        offset: 1,
        holder: txn(2),
    };
    assert_eq!(of(conflict.into()), AbortReason::AckConflict);
    assert_eq!(
        of(AckError::AlreadyAcked(1).into()),
        AbortReason::AlreadyAcked
    );
    assert_eq!(of(TcError::NotFound(txn(1)).into()), AbortReason::TimedOut);
    let invalid = TcError::InvalidState {
        txn: txn(1),
        state: TxnState::Aborting,
        wanted: TcOp::AddParticipant,
    };
    assert_eq!(of(invalid.into()), AbortReason::TimedOut);
    assert_eq!(of(RpcError::Timeout.into()), AbortReason::Unavailable);
}

#[test]
fn a_consumer_reads_forward_and_replays_only_when_told() {
    let t = Mem::new();
    for payload in ["a", "b"] {
        block_on(send(&t, &p("in", 0), payload)).unwrap();
    }
    let key = SubscriptionKey::new(p("in", 0), "s");
    let mut c = Consumer::new(key.clone());
    assert_eq!(block_on(c.receive(&t, 5)).unwrap().len(), 2);
    assert_eq!(c.position(), 2);
    let forward = t.w().events.iter().any(|e| {
        matches!(
            e,
            ClientEvent::Received {
                offset: 1,
                replay: false,
                ..
            }
        )
    });
    assert!(forward, "a forward read is no replay");
    // Nothing new, and no replay asked for: nothing.
    assert!(block_on(c.receive(&t, 5)).unwrap().is_empty());
    // Offset 0 acknowledged outside a transaction; told to replay, the
    // consumer gets only offset 1 again.
    block_on(ack(&t, &key, 0)).unwrap();
    c.redeliver_later();
    let again = block_on(c.receive(&t, 5)).unwrap();
    let offsets: Vec<u64> = again.iter().map(|d| d.offset).collect();
    assert_eq!(offsets, vec![1]);
    assert_eq!(c.position(), 2);
}

#[test]
fn refusals_come_back_as_the_servers_errors() {
    let t = Mem::new();
    let mut txn = block_on(PulsarTxn::begin(&t)).unwrap();
    let id = txn.id();
    block_on(txn.send(&p("out", 0), "a")).unwrap();
    // Timed out (aborting, markers not yet acknowledged): registering a
    // new partition is refused by the coordinator.
    t.w().time_passes(t.config.txn_timeout_ms, false);
    let refused = block_on(txn.send(&p("out", 1), "b")).unwrap_err();
    assert!(
        matches!(refused, ClientError::Coordinator(_)),
        "{refused:?}"
    );
    // The partition has its abort marker: a late copy of a send is refused.
    let late = block_on(super::txn::send_message(&t, &p("out", 0), &["c"], Some(id)));
    let ended = crate::pulsar::buffer::AppendError::TxnEnded {
        txn: id,
        action: TxnAction::Abort,
    };
    assert_eq!(late.unwrap_err(), ClientError::Send(ended));
}

/// A coordinator that answers every commit with `Ended(Abort)`, as one
/// whose timeout raced the commit does (`timeout-races-commit`), and, when
/// the flag is set, refuses every open; every other request goes to `Mem`.
struct AbortsCommits(Mem, bool);

impl PulsarTransport for AbortsCommits {
    fn config(&self) -> &PulsarClientConfig {
        self.0.config()
    }
    fn producer(&self) -> ProducerRef {
        self.0.producer()
    }
    fn next_sequence_id(&self) -> u64 {
        self.0.next_sequence_id()
    }
    fn consumer(&self) -> ConsumerRef {
        self.0.consumer()
    }
    fn coordinator(
        &self,
        req: TcRequest,
    ) -> impl Future<Output = Result<TcReply, RpcError>> + Send {
        ready(match req {
            TcRequest::End {
                action: TxnAction::Commit,
                ..
            } => Ok(TcReply::Ended(TxnAction::Abort)),
            TcRequest::Open { .. } if self.1 => Ok(TcReply::Refused(TcError::NotFound(TxnId {
                coordinator: 0,
                seq: 9,
            }))),
            other => self.0.w().coordinator(other),
        })
    }
    fn broker(
        &self,
        partition: &Partition,
        req: BrokerRequest,
    ) -> impl Future<Output = Result<BrokerReply, RpcError>> + Send {
        self.0.broker(partition, req)
    }
    fn sleep_ms(&self, ms: u64) -> impl Future<Output = ()> + Send {
        self.0.sleep_ms(ms)
    }
}

impl PulsarLedger for AbortsCommits {
    fn reached(&self, txn: Option<TxnId>, point: ClientPoint) -> impl Future<Output = ()> + Send {
        self.0.reached(txn, point)
    }
    fn event(&self, event: ClientEvent) {
        self.0.event(event)
    }
}

#[test]
fn a_commit_answered_with_an_abort_is_aborted() {
    let t = AbortsCommits(Mem::new(), false);
    let mut txn = block_on(PulsarTxn::begin(&t)).unwrap();
    block_on(txn.send(&p("out", 0), "a")).unwrap();
    let reason = AbortReason::TimedOut;
    assert_eq!(block_on(txn.commit()), TxnOutcome::Aborted { reason });
    // The send was reported with the offset it got.
    let sent = t.0.w().events.iter().any(|e| {
        matches!(
            e,
            ClientEvent::Sent {
                offset: Some(0),
                ..
            }
        )
    });
    assert!(sent, "{:?}", t.0.w().events);
}

#[test]
fn a_refused_open_is_the_coordinators_error() {
    let t = AbortsCommits(Mem::new(), true);
    let refused = block_on(PulsarTxn::begin(&t)).err();
    let seq9 = TxnId {
        coordinator: 0,
        seq: 9,
    };
    assert_eq!(
        refused,
        Some(ClientError::Coordinator(TcError::NotFound(seq9)))
    );
}
