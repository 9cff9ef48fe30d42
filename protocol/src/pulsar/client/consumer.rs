//! Plain producing and consuming: send without a transaction, receive as a
//! read-committed consumer of one subscription on one partition, and ack.

use super::ledger::{ClientEvent, PulsarHost};
use super::outcome::ClientError;
use super::transport::{BrokerReply, BrokerRequest};
use super::txn::{ack_message, retry, send_message};
use crate::pulsar::buffer::{Delivered, ReadMode};
use crate::pulsar::subscription::AckTarget;
use crate::pulsar::types::{Partition, SubscriptionKey, SubscriptionType};

/// Send `payload` to `partition` outside any transaction. Returns its
/// offset. For a transactional send use [`super::PulsarTxn::send`].
pub async fn send<T: PulsarHost>(
    t: &T,
    partition: &Partition,
    payload: &str,
) -> Result<u64, ClientError> {
    send_message(t, partition, &[payload], None).await
}

/// Send `payloads` to `partition` as one batch entry outside any
/// transaction. Returns the entry's offset.
pub async fn send_batch<T: PulsarHost>(
    t: &T,
    partition: &Partition,
    payloads: &[&str],
) -> Result<u64, ClientError> {
    send_message(t, partition, payloads, None).await
}

/// Acknowledge `offset` on `sub` outside any transaction. For a
/// transactional ack use [`super::PulsarTxn::ack`].
pub async fn ack<T: PulsarHost>(
    t: &T,
    sub: &SubscriptionKey,
    offset: u64,
) -> Result<(), ClientError> {
    ack_message(t, sub, AckTarget::entry(offset), None).await
}

/// Acknowledge what `target` names on `sub` outside any transaction (one
/// message of a batch, or every message up to one, cumulatively).
pub async fn ack_target<T: PulsarHost>(
    t: &T,
    sub: &SubscriptionKey,
    target: AckTarget,
) -> Result<(), ClientError> {
    ack_message(t, sub, target, None).await
}

/// A consumer of one subscription on one partition. It reads forward from
/// its read position; once told that something it received may have to
/// come again ([`Consumer::redeliver_later`]), it also asks for a replay of
/// the unacknowledged messages below its position whenever the forward
/// read finds nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consumer {
    sub: SubscriptionKey,
    position: u64,
    replay: bool,
    kind: SubscriptionType,
}

impl Consumer {
    /// A consumer of `sub` starting at the partition's beginning (a
    /// restarted consumer starts there too: its position is not durable).
    pub fn new(sub: SubscriptionKey) -> Self {
        Self::of_type(sub, SubscriptionType::Shared)
    }

    /// A consumer of `sub` sharing it as `kind`.
    pub fn of_type(sub: SubscriptionKey, kind: SubscriptionType) -> Self {
        Consumer {
            sub,
            position: 0,
            replay: false,
            kind,
        }
    }

    /// How it shares the subscription.
    pub fn kind(&self) -> SubscriptionType {
        self.kind
    }

    /// Close the consumer: the broker detaches it and hands what it held to
    /// the subscription's other consumers (retried: closing twice is
    /// harmless).
    pub async fn close<T: PulsarHost>(&self, t: &T) -> Result<(), ClientError> {
        let call = || {
            t.broker(
                &self.sub.partition,
                BrokerRequest::Close {
                    subscription: self.sub.name.clone(),
                    consumer: t.consumer(),
                },
            )
        };
        match retry(t, call).await? {
            BrokerReply::Closed => Ok(()),
            _ => Err(ClientError::UnexpectedReply),
        }
    }

    /// The subscription.
    pub fn subscription(&self) -> &SubscriptionKey {
        &self.sub
    }

    /// The next offset a forward read starts at.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Something received may come back (its transaction aborted or its
    /// outcome is unknown): replay when the forward read is empty.
    pub fn redeliver_later(&mut self) {
        self.replay = true;
    }

    /// Receive at most `max` messages.
    pub async fn receive<T: PulsarHost>(
        &mut self,
        t: &T,
        max: usize,
    ) -> Result<Vec<Delivered>, ClientError> {
        let got = self.read(t, self.position, ReadMode::Dispatch, max).await?;
        if !got.is_empty() || !self.replay {
            return Ok(got);
        }
        let until = self.position;
        self.read(t, 0, ReadMode::Replay { until }, max).await
    }

    async fn read<T: PulsarHost>(
        &mut self,
        t: &T,
        from: u64,
        mode: ReadMode,
        max: usize,
    ) -> Result<Vec<Delivered>, ClientError> {
        let call = || {
            t.broker(
                &self.sub.partition,
                BrokerRequest::Read {
                    subscription: self.sub.name.clone(),
                    consumer: t.consumer(),
                    from,
                    mode,
                    max,
                    kind: self.kind,
                },
            )
        };
        let d = match retry(t, call).await? {
            BrokerReply::Delivery(d) => d,
            BrokerReply::ReadRefused(e) => return Err(e.into()),
            _ => return Err(ClientError::UnexpectedReply),
        };
        if mode == ReadMode::Dispatch {
            self.position = self.position.max(d.next);
        }
        for m in &d.messages {
            t.event(ClientEvent::Received {
                subscription: self.sub.clone(),
                offset: m.offset,
                index: m.index,
                message: m.message.clone(),
                replay: mode != ReadMode::Dispatch,
            });
        }
        Ok(d.messages)
    }
}
