//! The consume-transform-produce step of an exactly-once processor (the
//! reference's Pulsar Functions use case; PIP-31's motivation): receive one
//! input, and in one transaction produce its outputs and ack the input.

use super::consumer::Consumer;
use super::ledger::{ClientPoint, PulsarHost};
use super::outcome::{AbortReason, ClientError, TxnOutcome};
use super::txn::PulsarTxn;
use crate::pulsar::types::{Partition, TxnId};

/// What one processor step did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Processed {
    /// No input was available.
    Idle,
    /// Input `offset` was processed in transaction `txn` (none if no
    /// transaction could be opened) with this outcome.
    Done {
        /// The input's offset.
        offset: u64,
        /// The transaction, if one was opened.
        txn: Option<TxnId>,
        /// Its outcome.
        outcome: TxnOutcome,
    },
}

/// Receive one message from `consumer`, and in one transaction send
/// `transform(payload)`'s outputs and ack the input, then commit. If the
/// outcome is not `Committed` the consumer is told the input may come back.
pub async fn process_one<T, F>(
    t: &T,
    consumer: &mut Consumer,
    transform: F,
) -> Result<Processed, ClientError>
where
    T: PulsarHost,
    F: Fn(&str) -> Vec<(Partition, String)>,
{
    let Some(input) = consumer.receive(t, 1).await?.into_iter().next() else {
        return Ok(Processed::Idle);
    };
    t.reached(None, ClientPoint::AfterReceive).await;
    let offset = input.offset;
    let mut txn = match PulsarTxn::begin(t).await {
        Ok(txn) => txn,
        Err(_) => {
            consumer.redeliver_later();
            let reason = AbortReason::Unavailable;
            let outcome = TxnOutcome::Aborted { reason };
            return Ok(Processed::Done {
                offset,
                txn: None,
                outcome,
            });
        }
    };
    let id = txn.id();
    let outcome = match produce_and_ack(
        &mut txn,
        consumer,
        offset,
        transform(&input.message.payload),
    )
    .await
    {
        Ok(()) => txn.commit().await,
        Err(e) => txn.abort(AbortReason::of(&e)).await,
    };
    if outcome != TxnOutcome::Committed {
        consumer.redeliver_later();
    }
    Ok(Processed::Done {
        offset,
        txn: Some(id),
        outcome,
    })
}

async fn produce_and_ack<T: PulsarHost>(
    txn: &mut PulsarTxn<'_, T>,
    consumer: &Consumer,
    offset: u64,
    outputs: Vec<(Partition, String)>,
) -> Result<(), ClientError> {
    for (partition, payload) in &outputs {
        txn.send(partition, payload).await?;
    }
    let t = txn.transport();
    t.reached(Some(txn.id()), ClientPoint::AfterProduce).await;
    txn.ack(consumer.subscription(), offset).await?;
    t.reached(Some(txn.id()), ClientPoint::AfterAck).await;
    Ok(())
}
