//! A fake world for trace tests of the client procedures: rows in memory
//! (every step goes through [`crate::actions::execute`], as a tablet
//! server's would), a wall clock that moves only when a procedure sleeps,
//! and owners that are alive unless declared dead. Its futures never wait,
//! so [`run`] polls a procedure to completion in one go.

use super::transport::{CleanupEvent, ClientConfig, RpcError, StepPoint, Transport, TxnEvent};
use crate::actions::{GetResult, RowReply, RowRequest, execute};
use crate::row::Row;
use crate::types::{CellKey, SessionId, Ts};
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
        Ok(self.step(row, req))
    }
    async fn scan(
        &self,
        _start_row: &str,
        _end_row: &str,
        _cols: &[String],
        _start_ts: Ts,
    ) -> Result<Vec<(CellKey, GetResult)>, RpcError> {
        unimplemented!("no scans in the fake world")
    }
    async fn timestamp(&self) -> Result<Ts, RpcError> {
        unimplemented!("no oracle in the fake world")
    }
    async fn owner_alive(&self, owner: SessionId) -> Result<bool, RpcError> {
        Ok(!self.dead.contains(&owner))
    }
    async fn sleep_ms(&self, ms: u64) {
        self.sleeps_ms.lock().unwrap().push(ms);
        *self.now_ms.lock().unwrap() += ms;
    }
    async fn reached(&self, _txn: u64, _point: StepPoint) {}
    fn begin_txn(&self) -> u64 {
        1
    }
    fn txn_event(&self, _txn: u64, _event: TxnEvent) {}
    fn cleanup_event(&self, event: CleanupEvent) {
        self.cleanups.lock().unwrap().push(event);
    }
    fn observer_acks(&self, _col: &str) -> Vec<String> {
        Vec::new()
    }
}
