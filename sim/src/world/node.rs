//! Typed node names. A system names each kind of node it runs (its role,
//! the label it gives it, whether there are many numbered nodes of the
//! kind or one, and whether its nodes read the world's skewed wall clock or
//! honour stalls); a node's name is its kind and its number. Names are
//! strings only at the edges (scenario files, histories, events), where
//! [`NodeName`]'s `Display` gives them and [`NodeName::parse`] reads them.

use crate::world::ids::Role;
use std::fmt;

/// How a system names and runs the nodes of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeKind {
    /// The part its nodes play, as fault classes target nodes.
    pub role: Role,
    /// What the system calls the kind (`tablet`, `broker`, `oracle`).
    pub label: &'static str,
    /// Whether there are many nodes of the kind, named `label-N`, rather
    /// than one named `label`.
    pub numbered: bool,
    /// Whether its nodes read the world's skewed wall clock (a clock
    /// entry for a node that reads none would be injected in vain).
    pub reads_clock: bool,
    /// Whether its nodes honour a stall fault (hold their transaction
    /// threads while it lasts).
    pub stalls: bool,
}

impl NodeKind {
    /// Node `index` of this kind (numbered kinds).
    pub fn nth(self, index: usize) -> NodeName {
        NodeName {
            kind: self,
            index: Some(index),
        }
    }

    /// The one node of this kind (single kinds).
    pub fn single(self) -> NodeName {
        NodeName {
            kind: self,
            index: None,
        }
    }
}

/// A node's name: its kind and its number among the nodes of that kind
/// (none for a single node such as a timestamp oracle). It displays as the
/// system names it: `tablet-3`, `broker-0`, `oracle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeName {
    kind: NodeKind,
    index: Option<usize>,
}

/// A node name that names no node of a system: the name as written and
/// what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed node name {name:?}: {problem}")]
pub struct NodeNameError {
    /// The name as written.
    pub name: String,
    /// What is wrong with it.
    pub problem: String,
}

impl NodeName {
    /// The node's kind.
    pub fn kind(&self) -> NodeKind {
        self.kind
    }

    /// The part the node plays.
    pub fn role(&self) -> Role {
        self.kind.role
    }

    /// Its number among the nodes of its kind (none for a single node).
    pub fn index(&self) -> Option<usize> {
        self.index
    }

    /// Its index among the clients (its history client id), if it is a
    /// client.
    pub fn client(&self) -> Option<usize> {
        match self.kind.role {
            Role::Client => self.index,
            _ => None,
        }
    }

    /// Whether this is client number `index`.
    pub fn is_client(&self, index: usize) -> bool {
        self.kind.role == Role::Client && self.index == Some(index)
    }

    /// Read `name` as a node of one of `kinds` (a system's kinds): `label`
    /// for a single kind, `label-N` for a numbered one (N in decimal, no
    /// leading zero). Whether such a node runs is not checked here.
    pub fn parse(name: &str, kinds: &[NodeKind]) -> Result<NodeName, NodeNameError> {
        let fail = |problem: String| NodeNameError {
            name: name.to_string(),
            problem,
        };
        if let Some(kind) = kinds.iter().find(|k| k.label == name) {
            return match kind.numbered {
                false => Ok(kind.single()),
                true => Err(fail(format!("{name} nodes are numbered: {name}-N"))),
            };
        }
        let Some((label, number)) = name.rsplit_once('-') else {
            return Err(fail(format!(
                "no kind of node is named so ({})",
                forms(kinds)
            )));
        };
        let Some(kind) = kinds.iter().find(|k| k.label == label) else {
            return Err(fail(format!(
                "no kind of node is labelled {label:?} ({})",
                forms(kinds)
            )));
        };
        if !kind.numbered {
            return Err(fail(format!(
                "{label} is a single node and takes no number"
            )));
        }
        match number.parse::<usize>() {
            Ok(i) if i.to_string() == number => Ok(kind.nth(i)),
            _ => Err(fail(format!(
                "{number:?} is not a node number (0, 1, 2, ...)"
            ))),
        }
    }
}

/// The name forms of `kinds`, for messages: `oracle, tablet-N, client-N`.
fn forms(kinds: &[NodeKind]) -> String {
    let form = |k: &NodeKind| match k.numbered {
        true => format!("{}-N", k.label),
        false => k.label.to_string(),
    };
    kinds.iter().map(form).collect::<Vec<_>>().join(", ")
}

/// A name serializes as it displays (in events and histories).
impl serde::Serialize for NodeName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "{}-{i}", self.kind.label),
            None => f.write_str(self.kind.label),
        }
    }
}

/// One incarnation of a node: its name and its number (1 for the first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Incarnation {
    /// The node's name.
    pub node: String,
    /// Which incarnation.
    pub number: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLET: NodeKind = NodeKind {
        role: Role::DataServer,
        label: "tablet",
        numbered: true,
        reads_clock: false,
        stalls: false,
    };
    const ORACLE: NodeKind = NodeKind {
        role: Role::Coordinator,
        label: "oracle",
        numbered: false,
        reads_clock: false,
        stalls: false,
    };
    const CLIENT: NodeKind = NodeKind {
        role: Role::Client,
        label: "client",
        numbered: true,
        reads_clock: true,
        stalls: true,
    };
    const KINDS: [NodeKind; 3] = [ORACLE, TABLET, CLIENT];

    #[test]
    fn names_display_as_the_system_spells_them_and_parse_back() {
        for (name, text) in [
            (TABLET.nth(3), "tablet-3"),
            (ORACLE.single(), "oracle"),
            (CLIENT.nth(0), "client-0"),
            (CLIENT.nth(12), "client-12"),
        ] {
            assert_eq!(name.to_string(), text);
            assert_eq!(NodeName::parse(text, &KINDS), Ok(name));
        }
        assert_eq!(TABLET.nth(3).role(), Role::DataServer);
        assert_eq!(TABLET.nth(3).index(), Some(3));
        assert!(CLIENT.nth(2).is_client(2) && !TABLET.nth(2).is_client(2));
        assert_eq!(
            (CLIENT.nth(2).client(), TABLET.nth(2).client()),
            (Some(2), None)
        );
        assert_eq!(ORACLE.single().client(), None);
        let fields = serde_json::json!({"node": TABLET.nth(3), "also": ORACLE.single()});
        assert_eq!(fields.to_string(), r#"{"also":"oracle","node":"tablet-3"}"#);
    }

    #[test]
    fn a_malformed_name_is_refused_with_what_is_wrong() {
        let problem = |text: &str| NodeName::parse(text, &KINDS).unwrap_err().to_string();
        let cases = [
            (
                "broker-1",
                "no kind of node is labelled \"broker\" (oracle, tablet-N, client-N)",
            ),
            (
                "wire",
                "no kind of node is named so (oracle, tablet-N, client-N)",
            ),
            ("", "no kind of node is named so"),
            ("tablet", "tablet nodes are numbered: tablet-N"),
            ("oracle-0", "oracle is a single node and takes no number"),
            ("tablet-x", "\"x\" is not a node number"),
            ("tablet-01", "\"01\" is not a node number"),
            ("tablet-+1", "\"+1\" is not a node number"),
            ("client-", "\"\" is not a node number"),
        ];
        for (text, want) in cases {
            let got = problem(text);
            assert!(
                got.starts_with(&format!("malformed node name {text:?}: ")),
                "{got}"
            );
            assert!(got.contains(want), "{text}: {got}");
        }
    }
}
