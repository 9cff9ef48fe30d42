//! The world's side of targeted message faults: installing and lifting
//! rules, and routing each message through the rules in force.

use super::*;
use crate::world::World;

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
