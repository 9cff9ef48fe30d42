//! What a report shows, derived from a history: lanes, transaction bars with
//! their timestamp marks, fault bands, and the checker's findings.

use crate::histfile::{Lane, lanes};
use percsim_checker::{Event, Finding, History, Outcome, Report};
use percsim_sim::{NodeKind, NodeName};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One transaction's bar on the timeline.
pub(crate) struct Bar {
    /// Index in the history's transactions (the page's data uses it).
    pub(crate) txn: usize,
    /// The transaction's id, as findings name it (`T<id>`).
    pub(crate) id: u64,
    /// What its client was told.
    pub(crate) outcome: Outcome,
    /// Row on the timeline.
    pub(crate) row: usize,
    pub(crate) from_ns: u64,
    /// `None`: the client never learnt the outcome (the bar runs to the end).
    pub(crate) to_ns: Option<u64>,
    /// A thin mark: when the start timestamp was taken (estimated), or
    /// when a stream transaction's commit was requested.
    pub(crate) start_mark_ns: Option<u64>,
    /// A tall mark: when the commit timestamp was taken (estimated), or
    /// when a coordinator decided on its own.
    pub(crate) commit_mark_ns: Option<u64>,
    /// Named by a finding of the checker.
    pub(crate) flagged: bool,
}

/// What the timeline draws, whatever the system: lanes, bars, fault bands.
pub(crate) struct Timeline {
    /// Each lane's label, top to bottom.
    pub(crate) lanes: Vec<String>,
    pub(crate) bars: Vec<Bar>,
    pub(crate) bands: Vec<Band>,
    /// The instant the healed phase began, if recorded.
    pub(crate) healed_ns: Option<u64>,
    pub(crate) end_ns: u64,
}

/// A fault active over a time span on some rows.
pub(crate) struct Band {
    pub(crate) from_ns: u64,
    pub(crate) to_ns: u64,
    /// Rows it hits (every row when the fault is not specific to a client).
    pub(crate) rows: Vec<usize>,
    pub(crate) label: String,
}

/// Everything the page and the SVG draw.
pub(crate) struct Model<'h> {
    pub(crate) history: &'h History,
    pub(crate) report: Report,
    pub(crate) timeline: Timeline,
}

/// Every violation (then every allowed anomaly) the report shows in full.
pub(crate) fn findings(report: &Report) -> impl Iterator<Item = (&Finding, bool)> {
    report
        .rules
        .iter()
        .flat_map(|r| r.violations.iter().map(|f| (f, false)))
        .chain(report.allowed.examples.iter().map(|f| (f, true)))
}

impl<'h> Model<'h> {
    pub(crate) fn build(history: &'h History) -> Model<'h> {
        let report = percsim_checker::check(history);
        let txn_lanes = lanes(history);
        let distinct: BTreeSet<Lane> = txn_lanes.iter().copied().collect();
        let lanes: Vec<Lane> = distinct.into_iter().collect();
        let row_of: HashMap<Lane, usize> = lanes.iter().enumerate().map(|(i, l)| (*l, i)).collect();
        let end_ns = end_of(
            &history.events,
            history
                .transactions
                .iter()
                .map(|t| t.complete_ns.unwrap_or(t.invoke_ns)),
        );
        let flagged = flagged(&report);
        let marks = timestamp_marks(history);
        let bars = history
            .transactions
            .iter()
            .enumerate()
            .map(|(i, t)| Bar {
                txn: i,
                id: t.id,
                outcome: t.outcome,
                row: row_of[&txn_lanes[i]],
                from_ns: t.invoke_ns,
                to_ns: t.complete_ns,
                start_mark_ns: Some(marks[i].0),
                commit_mark_ns: marks[i].1,
                flagged: flagged.contains(&t.id),
            })
            .collect();
        let timeline = Timeline {
            lanes: lane_labels(&lanes, &txn_lane_names(&history.scenario)),
            bars,
            bands: fault_bands(
                &history.events,
                node_kinds_of(&history.scenario),
                &lanes,
                end_ns,
            ),
            healed_ns: healed_at(&history.events),
            end_ns,
        };
        Model {
            history,
            report,
            timeline,
        }
    }
}

/// The ids of the transactions a violation (not an allowed anomaly) names.
pub(crate) fn flagged(report: &Report) -> BTreeSet<u64> {
    findings(report)
        .filter(|(_, allowed)| !allowed)
        .flat_map(|(f, _)| f.txns.iter().copied())
        .collect()
}

/// The last instant worth drawing: the latest of `times` and of the
/// events (at least 1 ns).
pub(crate) fn end_of(events: &[Event], times: impl Iterator<Item = u64>) -> u64 {
    times
        .chain(events.iter().map(|e| e.t_ns))
        .max()
        .unwrap_or(0)
        .max(1)
}

/// The instant the healed phase began, if the events record it.
pub(crate) fn healed_at(events: &[Event]) -> Option<u64> {
    events
        .iter()
        .find(|e| e.kind == "phase_healed")
        .map(|e| e.t_ns)
}

/// Each lane's label: the client and, when it ran several workers, which;
/// a client id in `named` (a history's sentinel, such as the initial load's
/// or a coordinator's own decisions) is labelled by its name instead.
pub(crate) fn lane_labels(lanes: &[Lane], named: &[(u64, &str)]) -> Vec<String> {
    lanes
        .iter()
        .map(|l| {
            let workers = lanes.iter().filter(|x| x.client == l.client).count();
            let name = named.iter().find(|(c, _)| *c == l.client).map(|n| n.1);
            if let Some(name) = name {
                name.to_string()
            } else if workers > 1 {
                format!("client {} / {}", l.client, l.slot)
            } else {
                format!("client {}", l.client)
            }
        })
        .collect()
}

/// The earliest time at which each transaction's timestamps can have been
/// handed out, consistent with the oracle's order: a timestamp is issued
/// after its own transaction was invoked and after every smaller timestamp,
/// hence after the invocations of their transactions. (Histories record
/// timestamps, not when they were taken: these marks are estimates.)
fn timestamp_marks(h: &History) -> Vec<(u64, Option<u64>)> {
    let mut issued: Vec<(u64, u64)> = Vec::with_capacity(2 * h.transactions.len());
    for t in &h.transactions {
        issued.push((t.start_ts, t.invoke_ns));
        if let Some(c) = t.commit_ts {
            issued.push((c, t.invoke_ns));
        }
    }
    issued.sort_unstable();
    let mut floor = Vec::with_capacity(issued.len());
    let mut best = 0;
    for &(ts, inv) in &issued {
        best = best.max(inv);
        floor.push((ts, best));
    }
    let earliest = |ts: u64, t: &percsim_checker::Transaction| {
        let p = floor.partition_point(|x| x.0 <= ts);
        let f = p.checked_sub(1).map_or(t.invoke_ns, |q| floor[q].1);
        let hi = t.complete_ns.unwrap_or(u64::MAX);
        f.max(t.invoke_ns).min(hi)
    };
    h.transactions
        .iter()
        .map(|t| (earliest(t.start_ts, t), t.commit_ts.map(|c| earliest(c, t))))
        .collect()
}

/// The client an event designates: its `"client"` field, or its `"node"`
/// when that names a client of the system (read with the system's `kinds`).
fn client_of(e: &Event, kinds: &[NodeKind]) -> Option<u64> {
    if let Some(c) = e.fields.get("client").and_then(|v| v.as_u64()) {
        return Some(c);
    }
    client_named(e.fields.get("node")?, kinds)
}

/// The client index a node name designates, read with the system's
/// `kinds` (`None` for a node of another role or a name of no node).
fn client_named(name: &serde_json::Value, kinds: &[NodeKind]) -> Option<u64> {
    let name = NodeName::parse(name.as_str()?, kinds).ok()?;
    name.client().map(|c| c as u64)
}

/// The kinds of node of the system a recorded `scenario` ran (none for a
/// system not registered here: no node name is then read as a client's).
/// The special lanes of a transaction history: the world's initial load
/// (any system's), then those its system names.
fn txn_lane_names(scenario: &serde_json::Value) -> Vec<(u64, &'static str)> {
    let mut names = vec![(percsim_sim::LOADER_CLIENT, "initial load")];
    names.extend(lane_names_of(scenario));
    names
}

/// The names the scenario's system gives its special lanes (none for a
/// system not registered here).
pub(crate) fn lane_names_of(scenario: &serde_json::Value) -> Vec<(u64, &'static str)> {
    crate::systems::of_scenario(scenario)
        .map(|s| s.lane_names(scenario))
        .unwrap_or_default()
}

pub(crate) fn node_kinds_of(scenario: &serde_json::Value) -> &'static [NodeKind] {
    crate::systems::of_scenario(scenario)
        .map(|s| s.node_kinds())
        .unwrap_or_default()
}

fn field_str(e: &Event, k: &str) -> String {
    e.fields
        .get(k)
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
        .unwrap_or_default()
}

/// Faults as bands: kills until the restart, session expiries until the
/// reopening, anything with a `duration_ms` for that long. A fault of one
/// client covers its lanes; a partition, the lanes of the clients it names;
/// anything else, every lane. Node names are read with the system's
/// `kinds`.
pub(crate) fn fault_bands(
    events: &[Event],
    kinds: &[NodeKind],
    lanes: &[Lane],
    end_ns: u64,
) -> Vec<Band> {
    let rows_of = |client: Option<u64>| -> Vec<usize> {
        (0..lanes.len())
            .filter(|&r| client.is_none_or(|c| lanes[r].client == c))
            .collect()
    };
    let mut bands = Vec::new();
    let mut open: BTreeMap<(String, String), (u64, Vec<usize>)> = BTreeMap::new();
    for e in events {
        let client = client_of(e, kinds);
        let dur = e.fields.get("duration_ms").and_then(|v| v.as_u64());
        match (e.kind.as_str(), dur) {
            ("kill", _) => {
                open.insert(
                    ("kill".into(), field_str(e, "node")),
                    (e.t_ns, rows_of(client)),
                );
            }
            ("session_expired", _) => {
                open.insert(
                    ("session".into(), client.unwrap_or(0).to_string()),
                    (e.t_ns, rows_of(client)),
                );
            }
            ("restart", _) | ("session_reopened", _) => {
                let key = if e.kind == "restart" {
                    ("kill".to_string(), field_str(e, "node"))
                } else {
                    ("session".to_string(), client.unwrap_or(0).to_string())
                };
                if let Some((from, rows)) = open.remove(&key) {
                    let what = if key.0 == "kill" {
                        format!("{} killed", key.1)
                    } else {
                        format!("client {} session expired", key.1)
                    };
                    bands.push(Band {
                        from_ns: from,
                        to_ns: e.t_ns,
                        rows,
                        label: what,
                    });
                }
            }
            ("partition", Some(d)) => bands.push(partition_band(e, d, kinds, lanes)),
            (kind, Some(d)) => {
                let who = client.map_or(String::new(), |c| format!(" client {c}"));
                let node = field_str(e, "node");
                let label = if node.is_empty() {
                    format!("{kind}{who}")
                } else {
                    format!("{kind} {node}")
                };
                bands.push(Band {
                    from_ns: e.t_ns,
                    to_ns: e.t_ns + d * 1_000_000,
                    rows: rows_of(client),
                    label,
                });
            }
            _ => {}
        }
    }
    for ((kind, who), (from, rows)) in open {
        let label = if kind == "kill" {
            format!("{who} killed")
        } else {
            format!("client {who} session expired")
        };
        bands.push(Band {
            from_ns: from,
            to_ns: end_ns,
            rows,
            label,
        });
    }
    bands.sort_by_key(|b| (b.from_ns, b.to_ns));
    bands
}

/// A partition covers the lanes of the clients it names, or every lane.
fn partition_band(e: &Event, duration_ms: u64, kinds: &[NodeKind], lanes: &[Lane]) -> Band {
    let named: BTreeSet<u64> = ["a", "b"]
        .iter()
        .filter_map(|k| e.fields.get(*k)?.as_array())
        .flatten()
        .filter_map(|n| client_named(n, kinds))
        .collect();
    let rows: Vec<usize> = (0..lanes.len())
        .filter(|&r| named.is_empty() || named.contains(&lanes[r].client))
        .collect();
    let one_way = e.fields.get("one_way").and_then(|v| v.as_bool()) == Some(true);
    let label = format!(
        "{}partition {} | {}",
        if one_way { "one-way " } else { "" },
        field_str(e, "a"),
        field_str(e, "b")
    );
    Band {
        from_ns: e.t_ns,
        to_ns: e.t_ns + duration_ms * 1_000_000,
        rows,
        label,
    }
}

#[cfg(test)]
mod lane_tests {
    use super::lane_labels;
    use crate::histfile::Lane;

    #[test]
    fn a_sentinel_client_gets_its_name_and_others_their_number() {
        let lanes = [
            Lane { client: 0, slot: 0 },
            Lane { client: 2, slot: 0 },
            Lane { client: 2, slot: 1 },
            Lane {
                client: u64::MAX,
                slot: 0,
            },
        ];
        let labels = lane_labels(&lanes, &[(u64::MAX, "coordinator")]);
        assert_eq!(
            labels,
            ["client 0", "client 2 / 0", "client 2 / 1", "coordinator"]
        );
        let unnamed = lane_labels(&lanes, &[]);
        assert_eq!(unnamed[3], format!("client {}", u64::MAX));
    }
}

#[cfg(test)]
mod band_tests {
    use super::{fault_bands, node_kinds_of};
    use crate::histfile::Lane;
    use percsim_checker::Event;
    use percsim_sim::{NodeKind, Role};
    use serde_json::json;

    const WORKER: NodeKind = NodeKind {
        role: Role::Client,
        label: "worker",
        numbered: true,
        reads_clock: false,
        stalls: true,
    };
    const STORE: NodeKind = NodeKind {
        role: Role::DataServer,
        label: "client",
        numbered: true,
        reads_clock: false,
        stalls: false,
    };

    fn event(t_ns: u64, kind: &str, fields: serde_json::Value) -> Event {
        Event {
            t_ns,
            kind: kind.to_string(),
            fields: serde_json::from_value(fields).expect("fields"),
        }
    }

    /// A node is a client's by its kind's role, not by how its name
    /// begins: here clients are `worker-N`, and `client-N` are data
    /// servers, whose faults cover every lane.
    #[test]
    fn a_fault_covers_the_lanes_of_the_client_its_node_is() {
        let lanes = [Lane { client: 0, slot: 0 }, Lane { client: 1, slot: 0 }];
        let kinds = [WORKER, STORE];
        let events = [
            event(10, "pause", json!({"node": "worker-1", "duration_ms": 5})),
            event(20, "pause", json!({"node": "client-1", "duration_ms": 5})),
            event(30, "pause", json!({"node": "nobody", "duration_ms": 5})),
            event(
                40,
                "partition",
                json!({"a": ["worker-0"], "b": ["client-0"], "duration_ms": 5}),
            ),
        ];
        let bands = fault_bands(&events, &kinds, &lanes, 100);
        let rows: Vec<Vec<usize>> = bands.iter().map(|b| b.rows.clone()).collect();
        assert_eq!(rows, [vec![1], vec![0, 1], vec![0, 1], vec![0]]);
    }

    #[test]
    fn a_recorded_scenario_gives_its_systems_kinds() {
        let default = node_kinds_of(&json!({"seed": 1}));
        assert!(default.iter().any(|k| k.role == Role::Client));
        assert!(node_kinds_of(&json!({"system": "no-such-system"})).is_empty());
    }
}
