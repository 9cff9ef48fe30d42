//! Finding the broker that owns a resource: a lookup at the metadata
//! service, remembered in a [`LookupCache`] until the broker answers "not
//! owner" or does not answer (Pulsar's client lookup and the coordinator's
//! lookup of each participant's partition).

use crate::pulsar::ids::PulsarCounter;
use crate::pulsar::rpc::Lookup;
use crate::pulsar::{Cluster, metadata_addr};
use crate::world::port::Port;
use madsim::time::Duration;
use percsim_protocol::common::RpcError;
use percsim_protocol::pulsar::ownership::{LookupCache, Resource};
use std::sync::Mutex;

/// A lookup cache and the lookups that fill it.
#[derive(Default)]
pub(crate) struct Router {
    cache: Mutex<LookupCache>,
}

impl Router {
    /// The owner of `resource`: cached, or asked of the metadata service
    /// (`Unavailable` if nobody owns it now, `Timeout` if no answer came).
    pub(crate) async fn owner(
        &self,
        cluster: &Cluster,
        ep: &Port,
        resource: &Resource,
    ) -> Result<usize, RpcError> {
        if let Some(b) = crate::world::lock(&self.cache).get(resource) {
            return Ok(b);
        }
        cluster.world.watchdog_tick();
        let timeout = Duration::from_millis(cluster.world.config().rpc_timeout_ms);
        let answer =
            crate::world::deadline::call(ep, metadata_addr(), Lookup(resource.clone()), timeout)
                .await
                .map_err(|_| RpcError::Timeout)?;
        cluster.bump(PulsarCounter::Lookup);
        let broker = answer.ok_or(RpcError::Unavailable)?;
        crate::world::lock(&self.cache).learn(resource, broker);
        Ok(broker)
    }

    /// Forget the owner of `resource` (it said no, or said nothing).
    pub(crate) fn forget(&self, resource: &Resource) {
        crate::world::lock(&self.cache).forget(resource);
    }
}
