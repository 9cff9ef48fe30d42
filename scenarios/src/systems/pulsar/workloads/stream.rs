//! `stream`: transactional producers and read-committed consumers.
//!
//! Producers (the first half of the clients, at least one) send batches of
//! unique messages to random partitions of topic `events`, each batch in a
//! transaction that commits or (sometimes) aborts on purpose, and now and
//! then a plain message; some transactions send the messages they have
//! for one partition as one batch entry (`batch_ratio`). Every other
//! client consumes every partition through each of the subscriptions
//! `sub-0`, `sub-1`, ... (all drained): receive, then ack each message
//! (Shared consumers), except the last of two or more subscriptions with
//! `cumulative_acks`, whose Failover consumers ack cumulatively. The
//! stream checker judges what they received.

use super::consume_forever;
use percsim_checker::stream::SubscriptionDecl;
use percsim_protocol::pulsar::client::{AbortReason, PulsarTxn, send};
use percsim_sim::{BoxFuture, Conn, PulsarTask, PulsarWorkload};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::time::Duration;

const TOPIC: &str = "events";

/// Parameters of the `stream` workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Stream {
    /// Subscriptions on the topic (each consumed by every consumer client).
    pub subscriptions: usize,
    /// Largest number of messages in one transaction.
    pub max_batch: usize,
    /// Share of transactions the producer aborts on purpose.
    pub abort_ratio: f64,
    /// Share of sends outside any transaction.
    pub plain_ratio: f64,
    /// Simulated ms a producer waits between batches.
    pub interval_ms: u64,
    /// Share of transactions that send the messages they have for one
    /// partition as one batch entry (a batching producer).
    pub batch_ratio: f64,
    /// With two or more subscriptions, the last is consumed by Failover
    /// consumers that acknowledge cumulatively.
    pub cumulative_acks: bool,
}

impl Default for Stream {
    fn default() -> Self {
        Stream {
            subscriptions: 2,
            max_batch: 3,
            abort_ratio: 0.2,
            plain_ratio: 0.1,
            interval_ms: 10,
            batch_ratio: 0.3,
            cumulative_acks: true,
        }
    }
}

impl Stream {
    /// Check the parameters; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=8).contains(&self.subscriptions) {
            return Err(format!(
                "workload.subscriptions: {} is outside 1..=8",
                self.subscriptions
            ));
        }
        if !(1..=100).contains(&self.max_batch) {
            return Err(format!(
                "workload.max_batch: {} is outside 1..=100",
                self.max_batch
            ));
        }
        for (f, v) in [
            ("abort_ratio", self.abort_ratio),
            ("plain_ratio", self.plain_ratio),
            ("batch_ratio", self.batch_ratio),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("workload.{f}: {v} is not a probability"));
            }
        }
        Ok(())
    }

    fn producers(clients: usize) -> usize {
        (clients / 2).max(1)
    }

    fn sub_name(i: usize) -> String {
        format!("sub-{i}")
    }
}

impl PulsarWorkload for Stream {
    fn topics(&self) -> Vec<String> {
        vec![TOPIC.to_string()]
    }

    fn subscriptions(&self) -> Vec<SubscriptionDecl> {
        (0..self.subscriptions)
            .map(|i| SubscriptionDecl {
                name: Stream::sub_name(i),
                topic: TOPIC.to_string(),
                exactly_once: false,
                drained: true,
            })
            .collect()
    }

    fn tasks(&self, client: usize, clients: usize) -> usize {
        if client < Stream::producers(clients) {
            1
        } else {
            self.subscriptions
        }
    }

    fn task(&self, task: PulsarTask) -> BoxFuture<()> {
        let me = self.clone();
        let clients = task.conn.clients();
        if task.conn.client() < Stream::producers(clients) {
            Box::pin(produce(me, task))
        } else {
            let sub = Stream::sub_name(task.index);
            let cumulative = self.cumulative_acks
                && self.subscriptions >= 2
                && task.index + 1 == self.subscriptions;
            Box::pin(consume_forever(
                task.conn,
                TOPIC.to_string(),
                sub,
                cumulative,
            ))
        }
    }
}

async fn produce(p: Stream, mut task: PulsarTask) {
    let partitions = task.conn.partitions(TOPIC);
    let tag = task.conn.tag();
    let mut n = 0u64;
    while !task.conn.stopping() {
        let mut next = || {
            n += 1;
            format!("m{tag}.{n}")
        };
        if task.rng.random_bool(p.plain_ratio) {
            let part = &partitions[task.rng.random_range(0..partitions.len())];
            let _ = send(&task.conn, part, &next()).await;
        } else {
            let batch = task.rng.random_range(1..=p.max_batch);
            let targets: Vec<usize> = (0..batch)
                .map(|_| task.rng.random_range(0..partitions.len()))
                .collect();
            let abort = task.rng.random_bool(p.abort_ratio);
            let batched = task.rng.random_bool(p.batch_ratio);
            let payloads: Vec<String> = targets.iter().map(|_| next()).collect();
            let sends = match batched {
                true => batches(&targets, &payloads),
                false => targets
                    .iter()
                    .zip(&payloads)
                    .map(|(t, m)| (*t, vec![m.as_str()]))
                    .collect(),
            };
            one_txn(&task.conn, &partitions, &sends, abort).await;
        }
        madsim::time::sleep(Duration::from_millis(p.interval_ms)).await;
    }
}

/// The messages for each partition, as one batch entry each, in the order
/// each partition first appears.
fn batches<'a>(targets: &[usize], payloads: &'a [String]) -> Vec<(usize, Vec<&'a str>)> {
    let mut out: Vec<(usize, Vec<&str>)> = Vec::new();
    for (t, m) in targets.iter().zip(payloads) {
        match out.iter_mut().find(|(p, _)| p == t) {
            Some((_, ms)) => ms.push(m),
            None => out.push((*t, vec![m])),
        }
    }
    out
}

/// One transaction sending each of `sends` (a partition and its messages,
/// one entry each) and then committing, or aborting on purpose.
async fn one_txn(
    conn: &Conn,
    partitions: &[percsim_protocol::pulsar::types::Partition],
    sends: &[(usize, Vec<&str>)],
    abort: bool,
) {
    let Ok(mut txn) = PulsarTxn::begin(conn).await else {
        return;
    };
    for (t, payloads) in sends {
        let sent = match payloads.as_slice() {
            [one] => txn.send(&partitions[*t], one).await,
            many => txn.send_batch(&partitions[*t], many).await,
        };
        if let Err(e) = sent {
            txn.abort(AbortReason::of(&e)).await;
            return;
        }
    }
    if abort {
        txn.abort(AbortReason::User).await;
    } else {
        txn.commit().await;
    }
}
