//! The store Omid runs on, as its tablet servers serve it: data cells
//! written at their writer's start timestamp, shadow cells beside them, and
//! the commit table. Rows are spread over the tablet servers by a hash of
//! the row; a transaction's commit-table entry lives on the tablet server
//! its start timestamp picks. A write is durable once applied (the
//! server's log is synced per write); the store survives every crash.

use super::config::OmidCosts;
use super::rpc::{self, OmidCounter, StoreOp, StoreReply, TABLET_KIND};
use super::types::{Shared, Store};
use crate::world::intercept::MsgTag;
use crate::world::port::Port;
use crate::world::serve::{Cpu, spend};
use crate::world::{Carried, NodeName, lock};
use madsim::net::rpc::Request;
use madsim::time::{Duration, Instant, sleep, sleep_until};
use percsim_checker as history;
use percsim_protocol::omid::actions::commit_table::put_if_absent;
use percsim_protocol::omid::actions::lease;
use percsim_protocol::omid::{CtEntry, DataVersion, OmidPoint};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

/// A committed version of a cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Committed {
    /// Its writer's start timestamp.
    pub start_ts: u64,
    /// Its commit timestamp.
    pub commit_ts: u64,
    /// Its value (`None`: a tombstone, the cell deleted).
    pub value: Option<String>,
}

/// Every cell's committed versions, by (row, column), oldest commit first.
pub(super) type CommittedCells = BTreeMap<(String, String), Vec<Committed>>;

impl Store {
    /// Apply `op` on tablet server `tablet`; answer what it answers.
    pub fn apply(&mut self, tablet: usize, op: &StoreOp) -> StoreReply {
        match op {
            StoreOp::CtPut {
                start_ts,
                entry,
                epoch,
            } => {
                let fence = self.fences.get(&tablet).copied().unwrap_or(0);
                if !lease::admits(fence, *epoch) {
                    return StoreReply::Fenced;
                }
                let mut slot = self.ct.get(start_ts).copied();
                let now = put_if_absent(&mut slot, *entry);
                self.ct.insert(*start_ts, now);
                StoreReply::Entry(Some(now))
            }
            StoreOp::CtFence { epoch } => {
                let fence = self.fences.entry(tablet).or_default();
                *fence = (*fence).max(*epoch);
                StoreReply::Done
            }
            other => self.apply_data(other),
        }
    }

    /// Apply a step on data cells, or a commit-table read or delete.
    fn apply_data(&mut self, op: &StoreOp) -> StoreReply {
        match op {
            StoreOp::Write {
                row,
                col,
                start_ts,
                value,
            } => {
                let versions = self.cells.entry((row.clone(), col.clone())).or_default();
                if !versions.iter().any(|v| v.start_ts == *start_ts) {
                    versions.push(DataVersion {
                        start_ts: *start_ts,
                        value: value.clone(),
                        shadow_ts: None,
                    });
                    versions.sort_by_key(|v| v.start_ts);
                }
                StoreReply::Done
            }
            StoreOp::Remove { row, col, start_ts } => {
                if let Some(versions) = self.cells.get_mut(&(row.clone(), col.clone())) {
                    versions.retain(|v| v.start_ts != *start_ts);
                }
                StoreReply::Done
            }
            StoreOp::Shadow {
                row,
                col,
                start_ts,
                commit_ts,
            } => {
                let key = (row.clone(), col.clone());
                if let Some(v) = self
                    .cells
                    .get_mut(&key)
                    .and_then(|vs| vs.iter_mut().find(|v| v.start_ts == *start_ts))
                {
                    v.shadow_ts = Some(*commit_ts);
                }
                StoreReply::Done
            }
            StoreOp::Read { row, col, below_ts } => {
                let key = (row.clone(), col.clone());
                let mut out: Vec<DataVersion> = self
                    .cells
                    .get(&key)
                    .map(|vs| {
                        vs.iter()
                            .filter(|v| v.start_ts < *below_ts)
                            .cloned()
                            .collect()
                    })
                    .unwrap_or_default();
                out.reverse();
                StoreReply::Versions(out)
            }
            StoreOp::CtGet { start_ts } => StoreReply::Entry(self.ct.get(start_ts).copied()),
            StoreOp::CtDelete { start_ts } => {
                self.ct.remove(start_ts);
                StoreReply::Done
            }
            StoreOp::CtPut { .. } | StoreOp::CtFence { .. } => {
                crate::invariant::violated("a commit-table put reached the data path")
            }
        }
    }

    /// The commit timestamp of `v`: its shadow cell, else its writer's
    /// commit-table entry; `None` if it is not committed.
    pub fn commit_ts(&self, v: &DataVersion) -> Option<u64> {
        v.shadow_ts.or(match self.ct.get(&v.start_ts) {
            Some(CtEntry::Committed { commit_ts }) => Some(*commit_ts),
            _ => None,
        })
    }

    /// Each cell's committed versions, oldest commit first.
    pub fn committed(&self) -> CommittedCells {
        let mut out = BTreeMap::new();
        for (key, versions) in &self.cells {
            let mut vs: Vec<Committed> = versions
                .iter()
                .filter_map(|v| {
                    Some(Committed {
                        start_ts: v.start_ts,
                        commit_ts: self.commit_ts(v)?,
                        value: v.value.clone(),
                    })
                })
                .collect();
            vs.sort_by_key(|v| (v.commit_ts, v.start_ts));
            if !vs.is_empty() {
                out.insert(key.clone(), vs);
            }
        }
        out
    }

    /// The committed versions as the history's final state.
    pub fn final_state(&self) -> history::FinalState {
        let cells = self
            .committed()
            .into_iter()
            .map(|((row, col), vs)| history::CellState {
                row,
                col,
                versions: vs
                    .into_iter()
                    .map(|v| history::Version {
                        start_ts: v.start_ts,
                        commit_ts: v.commit_ts,
                        kind: match v.value {
                            Some(_) => history::VersionKind::Put,
                            None => history::VersionKind::Delete,
                        },
                        value: v.value,
                        data_missing: false,
                    })
                    .collect(),
            })
            .collect();
        history::FinalState {
            cells,
            ..history::FinalState::default()
        }
    }
}

/// The tablet server that holds `row`, of `tablets`.
pub(super) fn tablet_of_row(row: &str, tablets: usize) -> usize {
    let h = row.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (h % tablets as u64) as usize
}

/// The tablet server that holds the commit-table entry of the transaction
/// that started at `start_ts`, of `tablets`.
pub(super) fn tablet_of_txn(start_ts: u64, tablets: usize) -> usize {
    (start_ts % tablets as u64) as usize
}

/// The counter of the tablet servers' busy CPU microseconds (cost model on).
pub(super) const TABLET_CPU: &str = "cpu.busy_us.tablet";

/// What store step `op` costs a tablet server under `costs`: the request,
/// and a read's row and cell or a cell written or erased.
fn op_cost_us(costs: &OmidCosts, op: &StoreOp) -> u64 {
    let work = match op {
        StoreOp::Read { .. } | StoreOp::CtGet { .. } => costs.tablet_read_us,
        _ => costs.tablet_write_us,
    };
    costs.tablet_request_us + work
}

/// Run one incarnation of tablet server `index`: serve store steps.
pub(super) async fn run(shared: Arc<Shared>, index: usize) {
    let port = Port::bind(&shared.world, rpc::tablet_addr(index));
    let me = TABLET_KIND.nth(index);
    let cpu = Cpu::new(TABLET_CPU, shared.cfg.costs.tablet_cores);
    crate::world::serve::serve_counting(&port, move |op: StoreOp| {
        let (shared, cpu) = (shared.clone(), cpu.clone());
        async move {
            let costs = &shared.cfg.costs;
            if costs.enabled {
                spend(&shared.world, &cpu, op_cost_us(costs, &op)).await;
            }
            sleep(Duration::from_millis(shared.cfg.store_ms)).await;
            let reply = lock(&shared.store).apply(index, &op);
            if op.writes() {
                let start_ts = op.start_ts();
                shared
                    .point(OmidPoint::TabletAfterApply, &me, start_ts)
                    .await;
            }
            reply
        }
    });
    std::future::pending::<()>().await
}

/// Who sends a call: the node, its port, and whether it honours stalls.
pub(super) struct Caller<'a> {
    /// The shared state.
    pub shared: &'a Shared,
    /// The sender's port.
    pub port: &'a Port,
    /// The sender's node name.
    pub name: &'a NodeName,
}

impl Caller<'_> {
    /// Send `req` (call `call` of transaction `txn` about `item`) to `dst`
    /// until it is answered.
    pub async fn call<R: Request + Clone>(
        &self,
        dst: SocketAddr,
        call: &'static str,
        txn: Option<u64>,
        item: Option<String>,
        req: R,
    ) -> R::Response {
        loop {
            let tag = MsgTag {
                call,
                txn,
                item: item.clone(),
                from: self.name.to_string(),
            };
            if let Some(reply) = self.try_call(dst, tag, req.clone()).await {
                return reply;
            }
        }
    }

    /// Send `req` tagged `tag` to `dst` once: its answer, or `None` (and the
    /// retry counted) if none came within the world's call timeout.
    pub async fn try_call<R: Request + Clone>(
        &self,
        dst: SocketAddr,
        tag: MsgTag,
        req: R,
    ) -> Option<R::Response> {
        let world = &self.shared.world;
        let timeout = Duration::from_millis(world.config().rpc_timeout_ms);
        world.watchdog_tick();
        self.wait_if_stalled().await;
        if world.carry(dst, &req) == Carried::Late {
            sleep(timeout).await;
        } else if let Ok(reply) = world.call_tagged(self.port, dst, req, tag, timeout).await {
            return Some(reply);
        }
        self.shared.bump(OmidCounter::CallRetried.name());
        None
    }

    /// Send store step `op` of transaction `txn` to tablet server `tablet`.
    pub async fn store(&self, tablet: usize, txn: Option<u64>, op: StoreOp) -> StoreReply {
        let item = match &op {
            StoreOp::Write { row, .. }
            | StoreOp::Remove { row, .. }
            | StoreOp::Shadow { row, .. }
            | StoreOp::Read { row, .. } => Some(row.clone()),
            _ => None,
        };
        self.call(rpc::tablet_addr(tablet), op.call(), txn, item, op)
            .await
    }

    async fn wait_if_stalled(&self) {
        if !self.name.kind().stalls {
            return;
        }
        let world = &self.shared.world;
        while let Some(t) = world.stalled_until(self.name) {
            if t <= Instant::now() {
                return;
            }
            sleep_until(t).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(row: &str, start_ts: u64, value: &str) -> StoreOp {
        StoreOp::Write {
            row: row.into(),
            col: "v".into(),
            start_ts,
            value: Some(value.into()),
        }
    }

    #[test]
    fn committed_versions_come_from_shadow_cells_or_the_commit_table() {
        let mut s = Store::default();
        s.apply(0, &write("x", 3, "a"));
        s.apply(0, &write("x", 5, "b"));
        s.apply(0, &write("x", 7, "dead"));
        s.apply(
            0,
            &StoreOp::Shadow {
                row: "x".into(),
                col: "v".into(),
                start_ts: 3,
                commit_ts: 4,
            },
        );
        let put = |s: &mut Store, start_ts, entry| {
            s.apply(
                0,
                &StoreOp::CtPut {
                    start_ts,
                    entry,
                    epoch: None,
                },
            )
        };
        put(&mut s, 5, CtEntry::Committed { commit_ts: 6 });
        put(&mut s, 7, CtEntry::Invalid);
        let late = put(&mut s, 7, CtEntry::Committed { commit_ts: 8 });
        assert_eq!(late, StoreReply::Entry(Some(CtEntry::Invalid)));
        let key = ("x".to_string(), "v".to_string());
        let committed = s.committed();
        assert_eq!(
            committed[&key]
                .iter()
                .map(|v| (v.start_ts, v.commit_ts, v.value.as_deref()))
                .collect::<Vec<_>>(),
            [(3, 4, Some("a")), (5, 6, Some("b"))]
        );
        let StoreReply::Versions(vs) = s.apply(
            0,
            &StoreOp::Read {
                row: "x".into(),
                col: "v".into(),
                below_ts: 6,
            },
        ) else {
            panic!("versions")
        };
        assert_eq!(vs.iter().map(|v| v.start_ts).collect::<Vec<_>>(), [5, 3]);
    }

    #[test]
    fn a_fenced_tablet_refuses_a_deposed_epoch_and_only_there() {
        let mut s = Store::default();
        let put = |s: &mut Store, tablet, start_ts, epoch| {
            let entry = CtEntry::Committed {
                commit_ts: start_ts + 1,
            };
            s.apply(
                tablet,
                &StoreOp::CtPut {
                    start_ts,
                    entry,
                    epoch,
                },
            )
        };
        assert_eq!(s.apply(0, &StoreOp::CtFence { epoch: 2 }), StoreReply::Done);
        assert_eq!(put(&mut s, 0, 4, Some(1)), StoreReply::Fenced);
        assert!(s.ct.is_empty());
        let committed = StoreReply::Entry(Some(CtEntry::Committed { commit_ts: 5 }));
        assert_eq!(put(&mut s, 1, 4, Some(1)), committed);
        let committed = StoreReply::Entry(Some(CtEntry::Committed { commit_ts: 7 }));
        assert_eq!(put(&mut s, 0, 6, Some(2)), committed);
        let invalid = StoreOp::CtPut {
            start_ts: 8,
            entry: CtEntry::Invalid,
            epoch: None,
        };
        assert_eq!(
            s.apply(0, &invalid),
            StoreReply::Entry(Some(CtEntry::Invalid))
        );
    }

    #[test]
    fn rows_and_transactions_spread_over_every_tablet_server() {
        let rows: std::collections::BTreeSet<usize> = (0..20)
            .map(|i| tablet_of_row(&format!("k{i}"), 3))
            .collect();
        assert_eq!(rows.len(), 3);
        assert_eq!(tablet_of_txn(7, 3), 1);
    }
}
