//! A fake world for trace tests of the client procedures: rows in memory
//! (every step goes through [`crate::percolator::actions::execute`], as a tablet
//! server's would), a wall clock that moves only when a procedure sleeps,
//! and owners that are alive unless declared dead. Its futures never wait,
//! so [`run`] polls a procedure to completion in one go.

use super::ledger::{CleanupEvent, Ledger, TxnEvent};
use super::transport::{ClientConfig, StepPoint, Transport};
use crate::common::RpcError;
use crate::percolator::ablation::Ablations;
use crate::percolator::actions::{GetResult, RowReply, RowRequest, execute};
use crate::percolator::row::Row;
use crate::percolator::types::{CellKey, SessionId, Ts};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

/// Run a future whose every await is ready at once (all of [`FakeWorld`]'s are).
pub fn run<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("a fake-world future waited"),
    }
}

/// The fake world.
#[derive(Default)]
pub struct FakeWorld {
    pub cfg: ClientConfig,
    pub rows: Mutex<BTreeMap<String, Row>>,
    /// The wall clock (ms).
    pub now_ms: Mutex<u64>,
    /// Every sleep, in order (ms).
    pub sleeps_ms: Mutex<Vec<u64>>,
    /// Sessions whose owner is dead.
    pub dead: Vec<SessionId>,
    /// Every cleanup event, in order.
    pub cleanups: Mutex<Vec<CleanupEvent>>,
    /// The last timestamp the oracle handed out (the next is one more).
    pub last_ts: Mutex<u64>,
    /// How many transactions began (the next gets this plus one as its id).
    pub txns: Mutex<u64>,
    /// Every transaction event, in order, with its transaction's id.
    pub events: Mutex<Vec<(u64, TxnEvent)>>,
    /// Every point reached, in order, with its transaction's id.
    pub points: Mutex<Vec<(u64, StepPoint)>>,
    /// Mechanisms switched off.
    pub ablations: Ablations,
    /// Every row request sent through the transport, in order, with its row.
    pub requests: Mutex<Vec<(String, RowRequest)>>,
    /// This many `Commit` requests are refused (not applied) before the
    /// next one goes through.
    pub refuse_commits: Mutex<u32>,
    /// The acknowledgment columns of the observers of every column.
    pub acks: Vec<String>,
    /// Called at every point reached (to change the world in between steps).
    #[allow(clippy::type_complexity)]
    pub on_point: Option<Box<dyn Fn(&FakeWorld, StepPoint) + Send + Sync>>,
    /// Called after every sleep, with how many sleeps there have been.
    #[allow(clippy::type_complexity)]
    pub on_sleep: Option<Box<dyn Fn(&FakeWorld, usize) + Send + Sync>>,
}

impl FakeWorld {
    /// Apply `req` to `row` as a tablet server would.
    pub fn step(&self, row: &str, req: RowRequest) -> RowReply {
        let mut rows = self.rows.lock().unwrap();
        let r = rows.entry(row.to_string()).or_default();
        let (reply, m) = execute(r, row, &req, self.ablations());
        r.apply(&m);
        reply
    }

    /// The sleeps so far.
    pub fn sleeps(&self) -> Vec<u64> {
        self.sleeps_ms.lock().unwrap().clone()
    }

    /// The events of transaction `txn` so far.
    pub fn events_of(&self, txn: u64) -> Vec<TxnEvent> {
        let events = self.events.lock().unwrap();
        events
            .iter()
            .filter(|(id, _)| *id == txn)
            .map(|(_, e)| e.clone())
            .collect()
    }

    /// The requests so far, each as its row and the name of its step.
    pub fn request_names(&self) -> Vec<String> {
        let requests = self.requests.lock().unwrap();
        requests
            .iter()
            .map(|(row, req)| {
                let debug = format!("{req:?}");
                let name = debug.split(|c: char| !c.is_alphanumeric()).next();
                format!("{row} {}", name.unwrap_or_default())
            })
            .collect()
    }

    /// A copy of row `row` as it is now.
    pub fn row_now(&self, row: &str) -> Row {
        self.rows
            .lock()
            .unwrap()
            .get(row)
            .cloned()
            .unwrap_or_default()
    }
}

impl Transport for FakeWorld {
    fn config(&self) -> &ClientConfig {
        &self.cfg
    }
    fn session(&self) -> SessionId {
        SessionId(99)
    }
    fn wall_ms(&self) -> u64 {
        *self.now_ms.lock().unwrap()
    }
    async fn row(&self, row: &str, req: RowRequest) -> Result<RowReply, RpcError> {
        {
            let mut requests = self.requests.lock().unwrap();
            // A procedure that retries without waiting never ends: fail
            // instead of hanging the test.
            assert!(requests.len() < 10_000, "the procedure spins");
            requests.push((row.to_string(), req.clone()));
        }
        if matches!(req, RowRequest::Commit { .. }) {
            let mut refuse = self.refuse_commits.lock().unwrap();
            if *refuse > 0 {
                *refuse -= 1;
                return Err(RpcError::Unavailable);
            }
        }
        Ok(self.step(row, req))
    }
    async fn scan(
        &self,
        start_row: &str,
        end_row: &str,
        cols: &[String],
        start_ts: Ts,
    ) -> Result<Vec<(CellKey, GetResult)>, RpcError> {
        let rows: Vec<String> = {
            let rows = self.rows.lock().unwrap();
            let range = start_row.to_string()..end_row.to_string();
            rows.range(range).map(|(k, _)| k.clone()).collect()
        };
        let mut out = Vec::new();
        for row in rows {
            for col in cols {
                let req = RowRequest::Get {
                    col: col.clone(),
                    start_ts,
                };
                match self.step(&row, req) {
                    RowReply::Get(GetResult::Value(None)) => {}
                    RowReply::Get(found) => out.push((CellKey::new(&row, col), found)),
                    other => panic!("Get answered {other:?}"),
                }
            }
        }
        Ok(out)
    }
    async fn timestamp(&self) -> Result<Ts, RpcError> {
        let mut last = self.last_ts.lock().unwrap();
        *last += 1;
        Ok(Ts(*last))
    }
    async fn owner_alive(&self, owner: SessionId) -> Result<bool, RpcError> {
        Ok(!self.dead.contains(&owner))
    }
    async fn sleep_ms(&self, ms: u64) {
        let count = {
            let mut sleeps = self.sleeps_ms.lock().unwrap();
            sleeps.push(ms);
            sleeps.len()
        };
        *self.now_ms.lock().unwrap() += ms;
        if let Some(f) = &self.on_sleep {
            f(self, count);
        }
    }
    fn ablations(&self) -> Ablations {
        self.ablations
    }
}

impl Ledger for FakeWorld {
    async fn reached(&self, txn: u64, point: StepPoint) {
        self.points.lock().unwrap().push((txn, point));
        if let Some(hook) = &self.on_point {
            hook(self, point);
        }
    }
    fn begin_txn(&self) -> u64 {
        let mut txns = self.txns.lock().unwrap();
        *txns += 1;
        *txns
    }
    fn txn_event(&self, txn: u64, event: TxnEvent) {
        self.events.lock().unwrap().push((txn, event));
    }
    fn cleanup_event(&self, event: CleanupEvent) {
        self.cleanups.lock().unwrap().push(event);
    }
    fn observer_acks(&self, _col: &str) -> Vec<String> {
        self.acks.clone()
    }
}
