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
use crate::world::lock;
use crate::world::port::Port;
use futures::channel::oneshot;
use madsim::net::rpc::Request;
use madsim::time::{Duration, Instant, sleep, sleep_until};
use serde_json::json;
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

mod route;

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
