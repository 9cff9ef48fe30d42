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
use percsim_protocol::pulsar::client::{Consumer, ack};
use percsim_protocol::pulsar::types::SubscriptionKey;
use percsim_sim::Conn;
use std::time::Duration;

/// Consumers of subscription `sub` on every partition of `topic`, each
/// asking for redelivery whenever its forward read is empty (so messages
/// released by another consumer's aborted transaction come back).
fn consumers(conn: &Conn, topic: &str, sub: &str) -> Vec<Consumer> {
    conn.partitions(topic)
        .into_iter()
        .map(|p| {
            let mut c = Consumer::new(SubscriptionKey::new(p, sub));
            c.redeliver_later();
            c
        })
        .collect()
}

/// A read-committed consumer task: receive and ack plainly, forever (it
/// runs through the healed phase, until its subscription is drained).
async fn consume_forever(conn: Conn, topic: String, sub: String) {
    let mut cs = consumers(&conn, &topic, &sub);
    loop {
        let mut got = 0;
        for c in cs.iter_mut() {
            let msgs: Vec<Delivered> = c.receive(&conn, 16).await.unwrap_or_default();
            got += msgs.len();
            for m in msgs {
                let _ = ack(&conn, c.subscription(), m.offset).await;
            }
        }
        if got == 0 {
            madsim::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
