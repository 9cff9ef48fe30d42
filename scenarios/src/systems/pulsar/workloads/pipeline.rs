//! `stream-pipeline`: the document job of the Percolator `pipeline`
//! workload, as an exactly-once stream processor.
//!
//! A loader (client 0) sends crawled documents (`doc/<i>` with one of a few
//! contents) to topic `in`. Processors (every other client) consume `in`
//! through the exactly-once subscription `proc`: for each document they
//! parse it (the content's hash, as `pipeline`'s `parse` observer does) and,
//! in one transaction, send the index record to topic `out` and ack the
//! document (the protocol's `process_one`). Processors die at random at the
//! client's named points (after receive, after produce, after ack, before
//! commit) and restart. An audit consumer (client 0) reads `out` through
//! `audit`. Both subscriptions are drained: every document must end up
//! indexed exactly once (`exactly_once` rule).

use super::{consume_forever, consumers};
use crate::common::fnv1a;
use percsim_checker::stream::{Source, SubscriptionDecl};
use percsim_protocol::pulsar::client::{ClientPoint, process_one, send};
use percsim_protocol::pulsar::types::Partition;
use percsim_sim::{BoxFuture, Conn, PulsarTask, PulsarWorkload};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const INPUT: &str = "in";
const OUTPUT: &str = "out";
const PROC: &str = "proc";
const AUDIT: &str = "audit";

/// Parameters of the `stream-pipeline` workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StreamPipeline {
    /// Documents the loader sends (per loader life).
    pub documents: usize,
    /// Distinct page contents.
    pub contents: usize,
    /// Simulated ms the loader waits between documents.
    pub load_interval_ms: u64,
    /// Probability that a processor dies at each of its named points.
    pub crash_rate: f64,
}

impl Default for StreamPipeline {
    fn default() -> Self {
        StreamPipeline {
            documents: 60,
            contents: 5,
            load_interval_ms: 20,
            crash_rate: 0.02,
        }
    }
}

impl StreamPipeline {
    /// Check the parameters; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=100_000).contains(&self.documents) {
            return Err(format!(
                "workload.documents: {} is outside 1..=100000",
                self.documents
            ));
        }
        if self.contents == 0 {
            return Err("workload.contents: must be at least 1".into());
        }
        if !(0.0..=0.5).contains(&self.crash_rate) {
            return Err(format!(
                "workload.crash_rate: {} is outside 0..=0.5",
                self.crash_rate
            ));
        }
        Ok(())
    }
}

impl PulsarWorkload for StreamPipeline {
    fn topics(&self) -> Vec<String> {
        vec![INPUT.to_string(), OUTPUT.to_string()]
    }

    fn subscriptions(&self) -> Vec<SubscriptionDecl> {
        vec![
            SubscriptionDecl {
                name: PROC.into(),
                topic: INPUT.into(),
                exactly_once: true,
                drained: true,
            },
            SubscriptionDecl {
                name: AUDIT.into(),
                topic: OUTPUT.into(),
                exactly_once: false,
                drained: true,
            },
        ]
    }

    fn tasks(&self, client: usize, _clients: usize) -> usize {
        if client == 0 { 2 } else { 1 }
    }

    fn task(&self, task: PulsarTask) -> BoxFuture<()> {
        match (task.conn.client(), task.index) {
            (0, 0) => Box::pin(load(self.clone(), task.conn)),
            (0, _) => Box::pin(consume_forever(
                task.conn,
                OUTPUT.into(),
                AUDIT.into(),
                false,
            )),
            _ => Box::pin(process(task.conn)),
        }
    }

    fn crash_rate(&self, _point: ClientPoint) -> f64 {
        self.crash_rate
    }
}

async fn load(p: StreamPipeline, conn: Conn) {
    let partitions = conn.partitions(INPUT);
    let tag = conn.tag();
    for i in 0..p.documents {
        if conn.stopping() {
            return;
        }
        let doc = format!("doc/{tag}.{i}:content-{}", i % p.contents);
        let _ = send(&conn, &partitions[i % partitions.len()], &doc).await;
        madsim::time::sleep(Duration::from_millis(p.load_interval_ms)).await;
    }
}

/// Parse a document into its index record: the URL and its content's hash.
fn index_record(doc: &str) -> String {
    let (url, content) = doc.split_once(':').unwrap_or((doc, ""));
    format!("{url}#{:016x}", fnv1a(content))
}

async fn process(conn: Conn) {
    let outputs = conn.partitions(OUTPUT);
    let tag = conn.tag();
    let attempt = AtomicU64::new(0);
    let mut cs = consumers(&conn, INPUT, PROC);
    loop {
        let mut busy = false;
        for c in cs.iter_mut() {
            let transform = |doc: &str| -> Vec<(Partition, String)> {
                let n = attempt.fetch_add(1, Ordering::Relaxed);
                // Unique per attempt: a retry after an abort sends anew.
                let out = format!("{}@{tag}.{n}", index_record(doc));
                let source = Source {
                    subscription: PROC.into(),
                    message: doc.to_string(),
                };
                conn.source(&out, source);
                let at = (fnv1a(doc) % outputs.len() as u64) as usize;
                vec![(outputs[at].clone(), out)]
            };
            match process_one(&conn, c, transform).await {
                Ok(percsim_protocol::pulsar::client::Processed::Idle) => {}
                Ok(_) => busy = true,
                Err(_) => {}
            }
        }
        if !busy {
            madsim::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
