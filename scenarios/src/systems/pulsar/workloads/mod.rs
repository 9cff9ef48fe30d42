//! Pulsar workloads: `stream` (transactional producers and read-committed
//! consumers over several partitions and subscriptions) and
//! `stream-pipeline` (the exactly-once consume-transform-produce job).

mod pipeline;
pub mod script;
mod stream;

pub use pipeline::StreamPipeline;
pub use script::{PulsarScriptFile, ScriptWorkload};
pub use stream::Stream;

use percsim_protocol::pulsar::buffer::Delivered;
use percsim_protocol::pulsar::client::{Consumer, ack_target};
use percsim_protocol::pulsar::subscription::AckTarget;
use percsim_protocol::pulsar::types::{SubscriptionKey, SubscriptionType};
use percsim_sim::Conn;
use std::time::Duration;

/// Consumers of subscription `sub` on every partition of `topic`, each
/// sharing it as `kind` and asking for redelivery whenever its forward
/// read is empty (so messages released by another consumer's aborted
/// transaction come back).
fn consumers_of_type(conn: &Conn, topic: &str, sub: &str, kind: SubscriptionType) -> Vec<Consumer> {
    conn.partitions(topic)
        .into_iter()
        .map(|p| {
            let mut c = Consumer::of_type(SubscriptionKey::new(p, sub), kind);
            c.redeliver_later();
            c
        })
        .collect()
}

/// Shared consumers of subscription `sub` on every partition of `topic`
/// ([`consumers_of_type`]).
fn consumers(conn: &Conn, topic: &str, sub: &str) -> Vec<Consumer> {
    consumers_of_type(conn, topic, sub, SubscriptionType::Shared)
}

/// A read-committed consumer task: receive and ack plainly, forever (it
/// runs through the healed phase, until its subscription is drained).
/// Shared consumers ack each message; `cumulative` ones are Failover
/// consumers that ack the last message of each read cumulatively.
async fn consume_forever(conn: Conn, topic: String, sub: String, cumulative: bool) {
    let kind = match cumulative {
        true => SubscriptionType::Failover,
        false => SubscriptionType::Shared,
    };
    let mut cs = consumers_of_type(&conn, &topic, &sub, kind);
    loop {
        let mut got = 0;
        for c in cs.iter_mut() {
            let msgs: Vec<Delivered> = c.receive(&conn, 16).await.unwrap_or_default();
            got += msgs.len();
            let acks = match (cumulative, msgs.last()) {
                (true, Some(last)) => vec![(last, true)],
                (true, None) => vec![],
                (false, _) => msgs.iter().map(|m| (m, false)).collect(),
            };
            for (m, cumulative) in acks {
                let target = AckTarget {
                    offset: m.offset,
                    index: Some(m.index),
                    cumulative,
                    kind,
                };
                let _ = ack_target(&conn, c.subscription(), target).await;
            }
        }
        if got == 0 {
            madsim::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
