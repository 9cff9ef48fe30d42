//! A Pulsar transaction as the client runs it: begin at a coordinator,
//! register each partition and subscription before touching it, send and
//! ack inside the transaction, then ask the coordinator to commit or abort
//! (reference text, "事務流程", steps 1-5).

use super::ledger::{ClientEvent, ClientPoint, PulsarHost};
use super::outcome::{AbortReason, ClientError, TxnOutcome};
use super::transport::{BrokerReply, BrokerRequest, PulsarTransport, TcReply, TcRequest};
use crate::common::RpcError;
use crate::pulsar::coordinator::{TcError, TxnState};
use crate::pulsar::subscription::AckTarget;
use crate::pulsar::types::{Message, Participant, Partition, SubscriptionKey, TxnAction, TxnId};
use std::collections::BTreeSet;
use std::future::Future;

/// Retry `call` while it gets no answer, up to the configured retries.
/// Only for requests that are idempotent, or deduplicated by the server.
pub(super) async fn retry<T, R, F, Fut>(t: &T, mut call: F) -> Result<R, RpcError>
where
    T: PulsarTransport,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<R, RpcError>>,
{
    let mut tries = 0;
    loop {
        match call().await {
            Err(_) if tries < t.config().retries => {
                tries += 1;
                t.sleep_ms(t.config().retry_backoff_ms).await;
            }
            other => return other,
        }
    }
}

/// A transaction in progress.
pub struct PulsarTxn<'t, T: PulsarHost> {
    t: &'t T,
    id: TxnId,
    participants: BTreeSet<Participant>,
    /// Why a send or an ack of it failed (refused, or no answer), if one
    /// did: the commit then aborts instead.
    failed: Option<AbortReason>,
}

impl<'t, T: PulsarHost> PulsarTxn<'t, T> {
    /// Begin: a coordinator opens the transaction (OPEN is durable) and
    /// hands out its TxnId.
    pub async fn begin(t: &'t T) -> Result<Self, ClientError> {
        Self::begin_with_timeout(t, t.config().txn_timeout_ms).await
    }

    /// Begin with a timeout of its own (instead of the client's
    /// configured one): the coordinator aborts the transaction if it is
    /// still open this long after it opened.
    pub async fn begin_with_timeout(t: &'t T, timeout_ms: u64) -> Result<Self, ClientError> {
        let req = TcRequest::Open {
            producer: t.producer(),
            timeout_ms,
        };
        // Not retried: a lost answer leaves an OPEN that times out.
        match t.coordinator(req).await? {
            TcReply::Opened(id) => {
                t.event(ClientEvent::Begun { txn: id });
                Ok(PulsarTxn {
                    t,
                    id,
                    participants: BTreeSet::new(),
                    failed: None,
                })
            }
            TcReply::Refused(e) => Err(e.into()),
            _ => Err(ClientError::UnexpectedReply),
        }
    }

    /// The transaction's id.
    pub fn id(&self) -> TxnId {
        self.id
    }

    /// The transport the transaction runs on.
    pub fn transport(&self) -> &'t T {
        self.t
    }

    async fn register(&mut self, participant: Participant) -> Result<(), ClientError> {
        if self.participants.contains(&participant) {
            return Ok(());
        }
        let (t, txn) = (self.t, self.id);
        let call = || {
            t.coordinator(TcRequest::AddParticipant {
                txn,
                participant: participant.clone(),
            })
        };
        match retry(t, call).await? {
            TcReply::Added => {
                self.participants.insert(participant);
                Ok(())
            }
            TcReply::Refused(e) => Err(e.into()),
            _ => Err(ClientError::UnexpectedReply),
        }
    }

    /// Send `payload` to `partition` inside the transaction (registering
    /// the partition first). Returns its offset. Resent after no answer
    /// with the same sequence id (see `send_message`); a failure should
    /// abort the transaction.
    pub async fn send(&mut self, partition: &Partition, payload: &str) -> Result<u64, ClientError> {
        let sent = match self
            .register(Participant::Partition(partition.clone()))
            .await
        {
            Ok(()) => send_message(self.t, partition, &[payload], Some(self.id)).await,
            Err(e) => Err(e),
        };
        self.note(sent)
    }

    /// Remember why a step of the transaction failed (the first reason).
    fn note<R>(&mut self, r: Result<R, ClientError>) -> Result<R, ClientError> {
        if let Err(e) = &r {
            self.failed.get_or_insert(AbortReason::of(e));
        }
        r
    }

    /// Send `payloads` to `partition` as one batch entry inside the
    /// transaction (registering the partition first). Returns the entry's
    /// offset; each message is at its index in the batch.
    pub async fn send_batch(
        &mut self,
        partition: &Partition,
        payloads: &[&str],
    ) -> Result<u64, ClientError> {
        let sent = match self
            .register(Participant::Partition(partition.clone()))
            .await
        {
            Ok(()) => send_message(self.t, partition, payloads, Some(self.id)).await,
            Err(e) => Err(e),
        };
        self.note(sent)
    }

    /// Acknowledge the entry at `offset` on `sub` inside the transaction
    /// (registering the subscription first); pending until the transaction
    /// ends.
    pub async fn ack(&mut self, sub: &SubscriptionKey, offset: u64) -> Result<(), ClientError> {
        self.ack_target(sub, AckTarget::entry(offset)).await
    }

    /// Acknowledge what `target` names (one message of a batch, or every
    /// message up to one, cumulatively) on `sub` inside the transaction.
    pub async fn ack_target(
        &mut self,
        sub: &SubscriptionKey,
        target: AckTarget,
    ) -> Result<(), ClientError> {
        let acked = match self.register(Participant::Subscription(sub.clone())).await {
            Ok(()) => ack_message(self.t, sub, target, Some(self.id)).await,
            Err(e) => Err(e),
        };
        self.note(acked)
    }

    /// Ask the coordinator to commit; wait for its answer (given once every
    /// participant has its marker and COMMITTED is logged). `Aborted` only
    /// when the coordinator says so (it is aborting or has aborted);
    /// `Unknown` when it no longer knows the transaction or never answers.
    ///
    /// A transaction one of whose sends or acks failed (refused, or no
    /// answer: it may still land) is not committed: as Pulsar's client
    /// waits for every operation of the transaction and fails the commit
    /// if one failed, it aborts instead, with that step's reason.
    pub async fn commit(self) -> TxnOutcome {
        if let Some(reason) = self.failed {
            return self.abort(reason).await;
        }
        self.t
            .reached(Some(self.id), ClientPoint::BeforeCommit)
            .await;
        let (t, txn) = (self.t, self.id);
        let call = || {
            t.coordinator(TcRequest::End {
                txn,
                action: TxnAction::Commit,
            })
        };
        let reply = retry(t, call).await;
        let outcome = match reply {
            Ok(TcReply::Ended(TxnAction::Commit)) => TxnOutcome::Committed,
            Ok(TcReply::Ended(TxnAction::Abort)) => TxnOutcome::Aborted {
                reason: AbortReason::TimedOut,
            },
            // The coordinator decided to abort before our commit arrived.
            Ok(TcReply::Refused(TcError::InvalidState {
                state: TxnState::Aborting | TxnState::Aborted,
                ..
            })) => TxnOutcome::Aborted {
                reason: AbortReason::TimedOut,
            },
            // Ended and forgotten (by an earlier try, a duplicated copy of
            // this one, or a timeout): Pulsar cannot tell which (PIP-476,
            // background), and neither can we. No answer at all: the same.
            _ => TxnOutcome::Unknown,
        };
        self.finish(outcome)
    }

    /// Abort: ask the coordinator to abort (best effort: without an answer
    /// the timeout aborts it, since no commit was ever asked for).
    pub async fn abort(self, reason: AbortReason) -> TxnOutcome {
        let (t, txn) = (self.t, self.id);
        let call = || {
            t.coordinator(TcRequest::End {
                txn,
                action: TxnAction::Abort,
            })
        };
        let _ = retry(t, call).await;
        self.finish(TxnOutcome::Aborted { reason })
    }

    fn finish(&self, outcome: TxnOutcome) -> TxnOutcome {
        self.t.event(ClientEvent::Finished {
            txn: self.id,
            outcome,
        });
        outcome
    }
}

/// Send `payloads` to `partition` as one entry (a batch when there are
/// several), inside `txn` if given. A send with no
/// answer is resent, the same message with the same sequence id, up to
/// the configured retries (as Pulsar's producer resends its pending
/// messages): the first try may have landed, and the broker's producer
/// deduplication answers the resend with the offset it landed at instead
/// of appending it again (with deduplication off, it is appended twice).
pub(super) async fn send_message<T: PulsarHost>(
    t: &T,
    partition: &Partition,
    payloads: &[&str],
    txn: Option<TxnId>,
) -> Result<u64, ClientError> {
    let (first, rest) = payloads.split_first().ok_or(ClientError::EmptyBatch)?;
    let message = Message {
        txn,
        producer: t.producer(),
        sequence_id: t.next_sequence_id(),
        payload: first.to_string(),
        batch: rest.iter().map(|p| p.to_string()).collect(),
    };
    let call = || t.broker(partition, BrokerRequest::Send(message.clone()));
    let reply = retry(t, call).await;
    let offset = match &reply {
        Ok(BrokerReply::Sent(o)) => Some(*o),
        _ => None,
    };
    for (index, payload) in payloads.iter().enumerate() {
        t.event(ClientEvent::Sent {
            txn,
            partition: partition.clone(),
            payload: payload.to_string(),
            offset,
            index: index as u32,
        });
    }
    match reply? {
        BrokerReply::Sent(o) => Ok(o),
        BrokerReply::SendRefused(e) => Err(e.into()),
        _ => Err(ClientError::UnexpectedReply),
    }
}

/// Acknowledge what `target` names on `sub`, inside `txn` if given
/// (retried: acks are idempotent).
pub(super) async fn ack_message<T: PulsarHost>(
    t: &T,
    sub: &SubscriptionKey,
    target: AckTarget,
    txn: Option<TxnId>,
) -> Result<(), ClientError> {
    let call = || {
        t.broker(
            &sub.partition,
            BrokerRequest::Ack {
                subscription: sub.name.clone(),
                offset: target.offset,
                txn,
                index: target.index,
                cumulative: target.cumulative,
                kind: target.kind,
            },
        )
    };
    match retry(t, call).await? {
        BrokerReply::Acked => {
            t.event(ClientEvent::Acked {
                subscription: sub.clone(),
                offset: target.offset,
                index: target.index,
                cumulative: target.cumulative,
                txn,
            });
            Ok(())
        }
        BrokerReply::AckRefused(e) => Err(e.into()),
        _ => Err(ClientError::UnexpectedReply),
    }
}
