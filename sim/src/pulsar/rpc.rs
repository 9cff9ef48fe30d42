//! The messages Pulsar's nodes exchange (plain data, moved as values).

use madsim::net::rpc::Request;
use percsim_protocol::pulsar::client::{BrokerReply, BrokerRequest, TcReply, TcRequest};
use percsim_protocol::pulsar::ownership::{HeartbeatReply, Resource, SessionId};
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

/// The broker does not own that resource (never did, lost it, or was
/// fenced): the request was not applied; look the owner up again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct NotOwner;

/// Why a broker did not apply a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Refusal {
    /// It does not own the resource: look the owner up again.
    NotOwner,
    /// It owns the resource and is still recovering it (Pulsar's
    /// retriable `ServiceUnitNotReadyException` of a transaction buffer,
    /// and the coordinator's "not in Ready status"): try again later.
    Recovering,
}

impl From<NotOwner> for Refusal {
    fn from(_: NotOwner) -> Refusal {
        Refusal::NotOwner
    }
}

/// A client's request to the coordinator, sent to the broker that owns it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct TcCall(pub TcRequest);
request!(TcCall, 101, Result<TcReply, Refusal>);

/// A client's request to the broker owning `partition`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct BrokerCall {
    pub partition: Partition,
    pub req: BrokerRequest,
}
request!(BrokerCall, 102, Result<BrokerReply, Refusal>);

/// The coordinator's marker to the broker owning its participant; the
/// answer acknowledges it (the marker is durable there).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct MarkerCall(pub Marker);
request!(MarkerCall, 103, Result<(), Refusal>);

/// A broker's heartbeat to the metadata service for its session.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Heartbeat(pub SessionId);
request!(Heartbeat, 104, HeartbeatReply);

/// Which broker owns a resource (None: nobody live, try again later).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Lookup(pub Resource);
request!(Lookup, 105, Option<usize>);
