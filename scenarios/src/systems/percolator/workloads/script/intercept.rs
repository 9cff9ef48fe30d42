//! Message-level faults as script steps: an `intercept` step installs a
//! named rule that drops, delays, holds or duplicates the request or the
//! reply of one kind of call (for one transaction, its primary, its
//! secondaries or one cell, from one client); a `release` step lifts it and
//! delivers what it holds.

use super::CellRef;
use crate::script::{MsgFate, MsgLeg};
use percsim_sim::CallKind;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A kind of call, by its name in scenario files (`commit`, `prewrite`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call(pub CallKind);

impl Serialize for Call {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.name())
    }
}

impl<'de> Deserialize<'de> for Call {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        CallKind::from_name(&name).map(Call).ok_or_else(|| {
            let names: Vec<&str> = CallKind::ALL.iter().map(|k| k.name()).collect();
            serde::de::Error::custom(format!(
                "unknown call {name:?} (calls: {})",
                names.join(", ")
            ))
        })
    }
}

impl Call {
    /// Whether messages of this kind name a cell.
    fn has_cell(self) -> bool {
        matches!(
            self.0,
            CallKind::Get
                | CallKind::Prewrite
                | CallKind::Commit
                | CallKind::Cleanup
                | CallKind::Resolve
                | CallKind::Touch
                | CallKind::Notify
        )
    }

    /// Whether messages of this kind name a transaction.
    fn has_txn(self) -> bool {
        self.has_cell() && self.0 != CallKind::Notify || self.0 == CallKind::Scan
    }
}

/// Which cells of the call a rule matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Target {
    /// The transaction's primary cell (its first write).
    Primary,
    /// Every cell the transaction writes but its primary.
    Secondaries,
    /// One cell.
    Cell(CellRef),
}

/// An `intercept` step: a named targeted message fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageRule {
    /// The rule's name, for its `release` step.
    pub name: String,
    /// The kind of call.
    pub call: Call,
    /// The transaction (for a cleanup or resolve: the one being settled,
    /// whoever sends it); any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn: Option<String>,
    /// The cells; any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<Target>,
    /// The sending client; any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<usize>,
    /// Request or reply.
    pub leg: MsgLeg,
    /// What happens to it.
    pub fate: MsgFate,
    /// How many messages the rule acts on at most; every one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
}

impl MessageRule {
    /// A rule `name` acting on every message of `call` on `leg` with
    /// `fate`, from any client, for any transaction and cell; narrow it
    /// with [`MessageRule::for_txn`], [`MessageRule::on_cells`],
    /// [`MessageRule::from_client`] and [`MessageRule::at_most`].
    pub fn new(name: &str, call: CallKind, leg: MsgLeg, fate: MsgFate) -> Self {
        MessageRule {
            name: name.into(),
            call: Call(call),
            txn: None,
            on: None,
            client: None,
            leg,
            fate,
            times: None,
        }
    }

    /// Hold the messages until the rule's `release` step.
    pub fn holding(name: &str, call: CallKind, leg: MsgLeg) -> Self {
        Self::new(name, call, leg, MsgFate::Hold)
    }

    /// Lose the messages.
    pub fn dropping(name: &str, call: CallKind, leg: MsgLeg) -> Self {
        Self::new(name, call, leg, MsgFate::Drop)
    }

    /// Deliver the messages `ms` simulated ms late.
    pub fn delaying(name: &str, call: CallKind, leg: MsgLeg, ms: u64) -> Self {
        Self::new(name, call, leg, MsgFate::Delay { ms })
    }

    /// Deliver each request, and a copy `after_ms` later (requests only).
    pub fn duplicating(name: &str, call: CallKind, after_ms: u64) -> Self {
        Self::new(name, call, MsgLeg::Request, MsgFate::Duplicate { after_ms })
    }

    /// Only the messages of transaction `txn` (for a cleanup or resolve:
    /// the one being settled).
    pub fn for_txn(mut self, txn: &str) -> Self {
        self.txn = Some(txn.into());
        self
    }

    /// Only the messages naming these cells.
    pub fn on_cells(mut self, target: Target) -> Self {
        self.on = Some(target);
        self
    }

    /// Only the messages client `client` sends.
    pub fn from_client(mut self, client: usize) -> Self {
        self.client = Some(client);
        self
    }

    /// Act on `times` messages at most.
    pub fn at_most(mut self, times: u32) -> Self {
        self.times = Some(times);
        self
    }

    /// Check the rule's targets (the engine checks its times, leg and
    /// fate); `writes` is how many cells its transaction writes (if it
    /// names one).
    pub(super) fn validate(&self, writes: Option<usize>) -> Result<(), String> {
        let call = self.call.0.name();
        if self.txn.is_some() && !self.call.has_txn() {
            return Err(format!(
                ".txn: a {call} message carries no transaction (name the sending client instead)"
            ));
        }
        match &self.on {
            Some(_) if !self.call.has_cell() => Err(format!(".on: a {call} message names no cell")),
            Some(Target::Primary | Target::Secondaries) if self.txn.is_none() => {
                Err(".on: \"primary\" and \"secondaries\" need the transaction (txn)".into())
            }
            Some(Target::Primary) if writes == Some(0) => {
                Err(".on: the transaction writes no cell, so it has no primary".into())
            }
            Some(Target::Secondaries) if writes.is_some_and(|n| n < 2) => Err(
                ".on: the transaction writes fewer than two cells, so it has no secondary".into(),
            ),
            _ => Ok(()),
        }
    }
}

crate::intercept_rule!(MessageRule);
