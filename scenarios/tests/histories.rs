//! Each system writes its own history: a Pulsar run's is one stream
//! history, with the run's events and nothing of Percolator's format, and
//! a Percolator run counts the transactions its format cannot hold.

use percsim_scenarios::Scenario;
use percsim_scenarios::campaign::{self, Mix};
use percsim_scenarios::capsule::Capsule;
use percsim_scenarios::fuzz;
use percsim_sim::LOADER_CLIENT;
use serde_json::Value;
use std::path::Path;

fn example(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    Scenario::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fields of the `percsim-history/1` format found in a history's
/// JSON: its tag, its top-level `observers`, its final state's `cells`, and
/// its transactions' timestamps, reads and writes.
fn percolator_fields(h: &Value) -> Vec<String> {
    let mut found = Vec::new();
    if h["format"] == percsim_checker::FORMAT {
        found.push("format".to_string());
    }
    for key in ["observers", "cells"] {
        if h.get(key).is_some() || h["final_state"].get(key).is_some() {
            found.push(key.to_string());
        }
    }
    let txns = h["transactions"].as_array().cloned().unwrap_or_default();
    for key in ["start_ts", "commit_ts", "ops", "scans", "observer"] {
        if txns.iter().any(|t| t.get(key).is_some()) {
            found.push(format!("transactions[].{key}"));
        }
    }
    found
}

#[test]
fn a_pulsar_history_carries_no_percolator_field() {
    let out = example("pulsar/stream.json").run().expect("runs");
    let json = serde_json::to_value(&out.history).expect("JSON");
    assert_eq!(json["format"], percsim_checker::stream::STREAM_FORMAT);
    assert_eq!(percolator_fields(&json), Vec::<String>::new());
    // The world's events are in it, and it is still a valid stream history.
    let kinds: Vec<&str> = json["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"phase_healed"), "{kinds:?}");
    percsim_checker::stream::parse(&json.to_string()).expect("a valid stream history");
    assert!(out.transactions().is_none());

    // The same search finds Percolator's fields in a Percolator history.
    let out = example("register.json").run().expect("runs");
    let json = serde_json::to_value(&out.history).expect("JSON");
    let found = percolator_fields(&json);
    for key in [
        "format",
        "cells",
        "transactions[].start_ts",
        "transactions[].ops",
    ] {
        assert!(found.iter().any(|f| f == key), "{key} not found: {found:?}");
    }
}

#[test]
fn a_pulsar_capsule_holds_only_its_stream_history() {
    let scenario = example("pulsar/stream.json");
    let judged = fuzz::judge(&scenario, false);
    let capsule = Capsule::new(Path::new("c.json"), &scenario, &judged, None);
    let json = serde_json::to_value(&capsule).expect("JSON");
    assert_eq!(json["history"], Value::Null, "no percsim-history/1");
    let stream = &json["stream_history"];
    assert_eq!(percolator_fields(stream), Vec::<String>::new());
    assert!(!stream["events"].as_array().expect("events").is_empty());
}

#[test]
fn a_percolator_run_counts_the_transactions_its_format_cannot_hold() {
    let mix = Mix {
        workloads: vec!["bank".to_string()],
        ..Mix::default()
    };
    // Seed 6 of the bank workload aborts transactions before the oracle
    // granted their start timestamp.
    let out = campaign::generate(6, &mix).run().expect("runs");
    let s = &out.summary;
    assert!(s.unwritten > 0, "{s:?}");
    let history = out.transactions().expect("a transaction history");
    let clients = history
        .transactions
        .iter()
        .filter(|t| t.client != LOADER_CLIENT)
        .count() as u64;
    assert_eq!(s.committed + s.aborted + s.unknown, clients);
    // The summary's JSON (the behaviour fingerprint) does not carry it.
    let json = serde_json::to_value(s).expect("JSON");
    assert!(json.get("unwritten").is_none(), "{json}");
}

/// Percolator and Omid promise snapshot isolation, and their histories say
/// so: `percsim check` judges them against it as the history's own model,
/// not as the checker's default. A stream history names none (its rules
/// take no model).
#[test]
fn each_system_names_the_model_it_promises() {
    use percsim_checker::{Model, ModelSource};
    for name in ["register.json", "omid/bank.json"] {
        let out = example(name).run().expect("runs");
        let history = out.transactions().expect("a transaction history");
        assert_eq!(history.model, Some(Model::SnapshotIsolation), "{name}");
        let json = serde_json::to_value(history).expect("JSON");
        assert_eq!(json["model"], "snapshot-isolation", "{name}");
        let report = percsim_checker::check(history);
        assert_eq!(report.model_source, ModelSource::History.name(), "{name}");
    }
    let out = example("pulsar/stream.json").run().expect("runs");
    let json = serde_json::to_value(&out.history).expect("JSON");
    assert_eq!(json.get("model"), None);
}
