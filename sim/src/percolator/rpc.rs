//! The messages nodes exchange. In the simulator nothing is serialised
//! (messages move as values), but every message is plain data: no shared
//! state travels in one.

use madsim::net::rpc::Request;
use percsim_protocol::percolator::actions::{GetResult, RowReply, RowRequest};
use percsim_protocol::percolator::{CellKey, SessionId, Ts};
use serde::{Deserialize, Serialize};

macro_rules! request {
    ($name:ident, $id:expr, $resp:ty) => {
        impl Request for $name {
            type Response = $resp;
            const ID: u64 = $id;
        }
    };
}

/// The server does not serve that tablet (now).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct NotServing;

/// One row step at a tablet server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RowCall {
    pub tablet: usize,
    pub row: String,
    pub req: RowRequest,
}
request!(RowCall, 1, Result<RowReply, NotServing>);

/// A snapshot scan of one tablet's part of a row range.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ScanCall {
    pub tablet: usize,
    pub start_row: String,
    pub end_row: String,
    pub cols: Vec<String>,
    pub start_ts: Ts,
}
request!(ScanCall, 2, Result<Vec<(CellKey, GetResult)>, NotServing>);

/// The master's heartbeat to a tablet server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Ping;
request!(Ping, 3, ());

/// Dirty cells (notify entries) of one tablet, starting at the row at
/// position `pick` modulo the tablet's row count: (row, column, value).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ScanNotify {
    pub tablet: usize,
    pub pick: u64,
    pub limit: usize,
}
request!(
    ScanNotify,
    9,
    Result<Vec<(String, String, u64)>, NotServing>
);

/// Take (`lock: true`) or release a row in the lightweight scanner lock
/// service; returns whether the caller holds it now (or released it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RowLockCall {
    pub row: String,
    pub holder: u64,
    pub lock: bool,
}
request!(RowLockCall, 10, bool);

/// Ask the oracle for `count` consecutive timestamps; returns the first.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct TsCall {
    pub count: u64,
}
request!(TsCall, 4, Ts);

/// Ask the master which server serves a tablet.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Locate {
    pub tablet: usize,
}
request!(Locate, 5, Option<usize>);

/// Open a liveness session.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct OpenSession {
    pub client: usize,
}
request!(OpenSession, 6, SessionId);

/// Renew a liveness session; false when it has expired.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct KeepAlive {
    pub session: SessionId,
}
request!(KeepAlive, 7, bool);

/// Whether a liveness session is alive.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct IsAlive {
    pub session: SessionId,
}
request!(IsAlive, 8, bool);

/// A raw Bigtable operation outside any transaction (the baseline of the
/// paper's Figure 8): write `value` to a cell, or read it when `write` is
/// `None`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RawCall {
    pub tablet: usize,
    pub row: String,
    pub col: String,
    pub write: Option<String>,
}

/// The reply to a [`RawCall`]: the value read (`None` for a write or an
/// absent cell).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RawReply(pub Option<String>);
request!(RawCall, 11, Result<RawReply, NotServing>);
