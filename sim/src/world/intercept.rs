//! Targeted message faults: rules that drop, delay, hold or duplicate the
//! request or the reply of one kind of call, for one transaction and item,
//! installed and lifted by a workload's driver (the `script` workload's
//! `intercept` and `release` steps).
//!
//! The world stays protocol-neutral: a tenant attaches a [`MsgTag`] to the
//! messages it sends (its own name for the call, its own transaction id and
//! item key) and a [`Rule`] matches on those words without knowing them.
//!
//! Where each fate happens:
//! - a request that is delayed, held or duplicated belongs to the network
//!   from the moment it is sent: it travels on the world's `wire` node, so
//!   the sender's death or pause neither recalls nor freezes it, and it is
//!   delivered even after the sender gave up waiting (a late request). A
//!   link cut by a partition at delivery time loses it.
//! - a dropped request is never delivered; its sender times out.
//! - a reply's fate is applied where the reply would arrive: a dropped
//!   reply is lost after the request took effect; a delayed or held reply
//!   arrives late, and a reply later than the caller's timeout is lost.
//!   (An RPC reply is matched to its call, so a duplicated reply would be
//!   discarded on arrival: rules duplicate requests only.)

use crate::world::deadline::{self, within};
use crate::world::ids::{Counter, EventKind};
use crate::world::port::Port;
use crate::world::{World, lock};
use futures::channel::oneshot;
use madsim::net::rpc::Request;
use madsim::time::{Duration, Instant, sleep, sleep_until};
use serde_json::json;
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// What a tenant says about a message it sends, for rules to match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MsgTag {
    /// The kind of call, in the tenant's words (`"commit"`).
    pub call: &'static str,
    /// The transaction the message belongs to, by the tenant's id.
    pub txn: Option<u64>,
    /// The item it touches, by the tenant's key.
    pub item: Option<String>,
    /// The sending node's name.
    pub from: String,
}

/// Which half of a call a rule acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leg {
    /// The request, on its way to the server.
    Request,
    /// The reply, on its way back.
    Reply,
}

/// What happens to a matched message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Lost.
    Drop,
    /// Delivered this many ms late.
    Delay {
        /// The delay.
        delay_ms: u64,
    },
    /// Held until the rule is released (or the healed phase starts).
    Hold,
    /// Delivered, and a copy delivered this many ms later (requests only).
    Duplicate {
        /// When the copy arrives, after the original.
        after_ms: u64,
    },
}

impl Fate {
    fn name(self) -> &'static str {
        match self {
            Fate::Drop => "drop",
            Fate::Delay { .. } => "delay",
            Fate::Hold => "hold",
            Fate::Duplicate { .. } => "duplicate",
        }
    }
}

/// A targeted message fault. Fields left `None` match anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The call kind to match.
    pub call: &'static str,
    /// The transaction to match.
    pub txn: Option<u64>,
    /// The items to match (any of them).
    pub items: Option<Vec<String>>,
    /// The sender to match.
    pub from: Option<String>,
    /// Request or reply.
    pub leg: Leg,
    /// What happens to a matched message.
    pub fate: Fate,
    /// How many messages the rule acts on at most (`None`: every one).
    pub times: Option<u32>,
}

impl Rule {
    fn matches(&self, tag: &MsgTag, leg: Leg) -> bool {
        self.leg == leg
            && self.call == tag.call
            && self.txn.is_none_or(|t| tag.txn == Some(t))
            && self.from.as_ref().is_none_or(|f| *f == tag.from)
            && self
                .items
                .as_ref()
                .is_none_or(|items| tag.item.as_ref().is_some_and(|i| items.contains(i)))
    }
}

/// The handle of an installed rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct RuleId(u64);

struct Installed {
    rule: Rule,
    /// Messages it acted on.
    used: u32,
    /// Messages it holds: each waits for its sender to fire or drop.
    held: Vec<oneshot::Sender<()>>,
}

/// The rules in force, in installation order (the first match acts).
#[derive(Default)]
pub(crate) struct Intercepts {
    rules: BTreeMap<u64, Installed>,
    next: u64,
}

/// A matched message's fate and, for a held one, what releases it.
struct Decided {
    rule: u64,
    fate: Fate,
    release: Option<oneshot::Receiver<()>>,
}

/// Run `fut` until `deadline`; `Err(())` if it did not finish by then.
async fn timeout_at<F: Future>(deadline: Instant, fut: F) -> Result<F::Output, ()> {
    let left = deadline.saturating_duration_since(Instant::now());
    within(left, fut).await.map_err(|_| ())
}

impl World {
    /// Install `rule`; it acts on messages sent from now on.
    pub fn intercept(&self, rule: Rule) -> RuleId {
        let mut i = lock(&self.intercepts);
        i.next += 1;
        let id = i.next;
        i.rules.insert(
            id,
            Installed {
                rule,
                used: 0,
                held: Vec::new(),
            },
        );
        self.intercepting.store(true, Ordering::Relaxed);
        RuleId(id)
    }

    /// Lift a rule and deliver every message it holds. Returns how many
    /// messages it acted on (0 for an unknown or already lifted rule).
    pub fn release(&self, id: RuleId) -> u32 {
        let mut i = lock(&self.intercepts);
        let Some(r) = i.rules.remove(&id.0) else {
            return 0;
        };
        if i.rules.is_empty() {
            self.intercepting.store(false, Ordering::Relaxed);
        }
        for h in r.held {
            let _ = h.send(());
        }
        r.used
    }

    /// Lift every rule (the healed phase ends all faults).
    pub(crate) fn clear_intercepts(&self) {
        let ids: Vec<u64> = lock(&self.intercepts).rules.keys().copied().collect();
        for id in ids {
            self.release(RuleId(id));
        }
    }

    /// Whether any rule is in force (a tenant tags messages only then).
    pub fn intercepting(&self) -> bool {
        self.intercepting.load(Ordering::Relaxed)
    }

    /// The first rule in force that matches, counted as used.
    fn decide(&self, tag: &MsgTag, leg: Leg) -> Option<Decided> {
        let mut i = lock(&self.intercepts);
        let (id, r) = i
            .rules
            .iter_mut()
            .find(|(_, r)| r.rule.matches(tag, leg) && r.rule.times.is_none_or(|n| r.used < n))?;
        r.used += 1;
        let release = (r.rule.fate == Fate::Hold).then(|| {
            let (tx, rx) = oneshot::channel();
            r.held.push(tx);
            rx
        });
        Some(Decided {
            rule: *id,
            fate: r.rule.fate,
            release,
        })
    }

    fn note(&self, tag: &MsgTag, leg: Leg, d: &Decided) {
        self.recorder().bump(Counter::NetIntercepted.name());
        let leg = match leg {
            Leg::Request => "request",
            Leg::Reply => "reply",
        };
        self.world_event(
            EventKind::Intercepted,
            json!({"rule": d.rule, "call": tag.call, "txn": tag.txn, "item": tag.item,
                   "from": tag.from, "leg": leg, "fate": d.fate.name()}),
        );
    }

    /// Send `req` from `ep` to `dst` and wait for its reply until
    /// `timeout`, applying the rules in force to its request and its
    /// reply. `Err(())` when no reply arrived in time.
    pub async fn call_tagged<R: Request + Clone>(
        self: &Arc<Self>,
        ep: &Port,
        dst: SocketAddr,
        req: R,
        tag: MsgTag,
        timeout: Duration,
    ) -> Result<R::Response, ()> {
        let deadline = Instant::now() + timeout;
        let on_request = self.decide(&tag, Leg::Request);
        if let Some(d) = &on_request {
            self.note(&tag, Leg::Request, d);
        }
        let reply = match on_request {
            Some(Decided {
                fate: Fate::Drop, ..
            }) => None,
            Some(Decided {
                fate: Fate::Duplicate { after_ms },
                ..
            }) => {
                // The copy's reply goes nowhere: its caller takes the original's.
                drop(self.carry_on_wire(
                    dst,
                    req.clone(),
                    Duration::from_millis(after_ms),
                    None,
                    true,
                ));
                timeout_at(deadline, ep.call(dst, req))
                    .await
                    .ok()
                    .and_then(Result::ok)
            }
            Some(Decided {
                fate: Fate::Delay { delay_ms },
                ..
            }) => {
                let rx = self.carry_on_wire(dst, req, Duration::from_millis(delay_ms), None, false);
                timeout_at(deadline, rx).await.ok().and_then(Result::ok)
            }
            Some(Decided {
                release: Some(release),
                ..
            }) => {
                let rx = self.carry_on_wire(dst, req, Duration::ZERO, Some(release), false);
                timeout_at(deadline, rx).await.ok().and_then(Result::ok)
            }
            _ => timeout_at(deadline, ep.call(dst, req))
                .await
                .ok()
                .and_then(Result::ok),
        };
        let Some(reply) = reply else {
            sleep_until(deadline).await;
            return Err(());
        };
        let Some(d) = self.decide(&tag, Leg::Reply) else {
            return Ok(reply);
        };
        self.note(&tag, Leg::Reply, &d);
        self.reply_fate(d, deadline).await.map(|()| reply)
    }

    /// Apply a reply's fate: `Ok` if the reply reaches its caller by `deadline`.
    async fn reply_fate(&self, d: Decided, deadline: Instant) -> Result<(), ()> {
        let arrives = match (d.fate, d.release) {
            (Fate::Delay { delay_ms }, _) => Instant::now() + Duration::from_millis(delay_ms),
            (Fate::Hold, Some(release)) => {
                return match timeout_at(deadline, release).await {
                    Ok(_) => Ok(()),
                    Err(_) => Err(()),
                };
            }
            (Fate::Duplicate { .. }, _) => return Ok(()),
            _ => deadline + Duration::from_nanos(1),
        };
        if arrives > deadline {
            sleep_until(deadline).await;
            return Err(());
        }
        sleep_until(arrives).await;
        Ok(())
    }

    /// Put `req` on the wire now, apart from its sender: it reaches `dst`
    /// even if the sender dies or freezes right after (a request already
    /// sent when its process stops). The reply comes back on the returned
    /// channel; it is counted as a late request when it arrives.
    pub(crate) fn send_apart<R: Request>(
        self: &Arc<Self>,
        dst: SocketAddr,
        req: R,
    ) -> oneshot::Receiver<R::Response> {
        self.carry_on_wire(dst, req, Duration::ZERO, None, false)
    }

    /// Carry `req` on the wire node: deliver it after `delay` (or once
    /// `release` fires) unless a partition then cuts the sender from `dst`;
    /// the reply comes back on the returned channel. The sender's death or
    /// pause does not stop it. A `copy` is counted as a duplicated request
    /// when it arrives, anything else as a late one.
    fn carry_on_wire<R: Request>(
        self: &Arc<Self>,
        dst: SocketAddr,
        req: R,
        delay: Duration,
        release: Option<oneshot::Receiver<()>>,
        copy: bool,
    ) -> oneshot::Receiver<R::Response> {
        let (tx, rx) = oneshot::channel();
        let Some(wire) = self.wire.get().cloned() else {
            return rx;
        };
        let ep = if copy { wire.copies } else { wire.late };
        let from = madsim::plugin::node();
        let world = self.clone();
        world.copy_sent();
        wire.node.spawn(async move {
            sleep(delay).await;
            if let Some(release) = release {
                let _ = release.await;
            }
            if !world.link_cut(from, dst) {
                let timeout = Duration::from_millis(world.cfg.rpc_timeout_ms);
                if let Ok(reply) = deadline::call(&ep, dst, req, timeout).await {
                    let _ = tx.send(reply);
                }
            }
            world.copy_landed();
        });
        rx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(call: &'static str, txn: u64, item: &str) -> MsgTag {
        MsgTag {
            call,
            txn: Some(txn),
            item: Some(item.into()),
            from: "client-0".into(),
        }
    }

    fn rule() -> Rule {
        Rule {
            call: "commit",
            txn: Some(7),
            items: Some(vec!["a".into()]),
            from: None,
            leg: Leg::Reply,
            fate: Fate::Drop,
            times: None,
        }
    }

    #[test]
    fn a_rule_matches_only_its_call_txn_item_sender_and_leg() {
        let r = rule();
        assert!(r.matches(&tag("commit", 7, "a"), Leg::Reply));
        assert!(!r.matches(&tag("commit", 7, "a"), Leg::Request));
        assert!(!r.matches(&tag("prewrite", 7, "a"), Leg::Reply));
        assert!(!r.matches(&tag("commit", 8, "a"), Leg::Reply));
        assert!(!r.matches(&tag("commit", 7, "b"), Leg::Reply));
        let from_other = Rule {
            from: Some("client-1".into()),
            ..rule()
        };
        assert!(!from_other.matches(&tag("commit", 7, "a"), Leg::Reply));
        let any = Rule {
            txn: None,
            items: None,
            ..rule()
        };
        assert!(any.matches(&tag("commit", 8, "b"), Leg::Reply));
    }
}
