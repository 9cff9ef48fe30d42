//! The messages Pulsar's nodes exchange (plain data, moved as values).

use madsim::net::rpc::Request;
use percsim_protocol::pulsar::client::{BrokerReply, BrokerRequest, TcReply, TcRequest};
use percsim_protocol::pulsar::types::{Marker, Partition};
use serde::{Deserialize, Serialize};

macro_rules! request {
    ($name:ident, $id:expr, $resp:ty) => {
        impl Request for $name {
            type Response = $resp;
            const ID: u64 = $id;
        }
    };
}

/// The broker does not own that partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct NotOwner;

/// A client's request to the coordinator.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct TcCall(pub TcRequest);
request!(TcCall, 101, TcReply);

/// A client's request to the broker owning `partition`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct BrokerCall {
    pub partition: Partition,
    pub req: BrokerRequest,
}
request!(BrokerCall, 102, Result<BrokerReply, NotOwner>);

/// The coordinator's marker to the broker owning its participant; the
/// answer acknowledges it (the marker is durable there).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct MarkerCall(pub Marker);
request!(MarkerCall, 103, Result<(), NotOwner>);
