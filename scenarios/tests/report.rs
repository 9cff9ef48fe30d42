//! `percsim report`: the page is self-contained, shows the violation with
//! its cycle drawn, highlights the transactions involved, and draws fault
//! bands; lanes never run two transactions at once.

use percsim_checker::parse;
use percsim_scenarios::histfile::{Loaded, lanes};
use percsim_scenarios::report;
use std::path::PathBuf;

fn fixture(name: &str) -> Loaded {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../checker/tests/fixtures")
        .join(name);
    let history = parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    Loaded {
        history,
        capsule: None,
        warning: None,
    }
}

#[test]
fn a_cycle_is_drawn_and_its_transactions_flagged() {
    let page = report::html(&fixture("cycle_g_single.json"), "cycle_g_single.json");
    assert!(
        page.contains("class=\"finding violation\""),
        "the violation is shown"
    );
    assert!(page.contains(">G-single<"), "its class is named");
    assert!(
        page.contains("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"cycle\""),
        "the cycle is drawn"
    );
    assert!(
        page.contains(" flagged\" data-i="),
        "its transactions are outlined on the timeline"
    );
    assert!(page.contains("verdict-fail"));
    // Self-contained: nothing is fetched.
    for needle in [
        "<script src",
        "<link",
        "@import",
        "url(http",
        "src=\"http",
        "href=\"http",
    ] {
        assert!(!page.contains(needle), "external reference {needle}");
    }
    let without_ns = page.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(!without_ns.contains("http://") && !without_ns.contains("https://"));
}

#[test]
fn a_passing_history_shows_no_violation() {
    let page = report::html(&fixture("valid_basic.json"), "valid_basic.json");
    assert!(!page.contains("class=\"finding violation\""));
    assert!(page.contains("verdict-pass"));
    assert!(page.contains("No violation"));
}

#[test]
fn faults_become_bands_and_lanes_never_overlap() {
    let mut loaded = fixture("valid_basic.json");
    let h = &mut loaded.history;
    let ev = |t_ns: u64, kind: &str, mut fields: serde_json::Value| {
        fields["t_ns"] = t_ns.into();
        fields["kind"] = kind.into();
        serde_json::from_value::<percsim_checker::Event>(fields).unwrap()
    };
    h.events = vec![
        ev(150, "kill", serde_json::json!({"node": "client-3"})),
        ev(650, "restart", serde_json::json!({"node": "client-3"})),
        ev(
            700,
            "pause",
            serde_json::json!({"node": "tablet-0", "duration_ms": 0}),
        ),
    ];
    let svg = report::svg(&loaded.history);
    assert!(svg.contains("<title>client-3 killed</title>"), "{svg}");
    assert!(svg.contains("<title>pause tablet-0</title>"));
    // Two transactions of one client that overlap in time get two lanes.
    let mut h = fixture("valid_basic.json").history;
    h.transactions[1].client = 1;
    h.transactions[1].invoke_ns = 150;
    let l = lanes(&h);
    assert_eq!(l[0].client, l[1].client);
    assert_ne!(
        l[0].slot, l[1].slot,
        "overlapping transactions share a lane"
    );
    for (i, a) in h.transactions.iter().enumerate() {
        for (j, b) in h.transactions.iter().enumerate() {
            if i < j && l[i] == l[j] {
                let a_end = a.complete_ns.unwrap_or(u64::MAX);
                let b_end = b.complete_ns.unwrap_or(u64::MAX);
                assert!(
                    a_end <= b.invoke_ns || b_end <= a.invoke_ns,
                    "T{} and T{} overlap in one lane",
                    a.id,
                    b.id
                );
            }
        }
    }
}

/// A scenario of `system` from its JSON text.
fn scenario(text: serde_json::Value) -> percsim_scenarios::Scenario {
    percsim_scenarios::Scenario::parse(&text.to_string()).expect("a valid scenario")
}

/// Every lane of a report is named by what it is: Pulsar's transactions
/// no client began (recorded under the coordinator's sentinel client id)
/// show on the coordinator's lane, and Percolator's final read sweep on
/// its own; no report shows the sentinel ids as client numbers.
#[test]
fn special_lanes_are_named_by_the_system() {
    use percsim_scenarios::judge::judge;
    let pulsar = scenario(serde_json::json!({
        "format": "percsim-scenario/2", "seed": 3, "system": "pulsar",
        "world": {"run_ms": 600, "quiesce_ms": 5000},
        "pulsar": {"clients": 2, "brokers": 1, "partitions": 1},
        "workload": {"name": "stream"}
    }));
    let judged = judge(&pulsar, false);
    let mut stream = judged.stream().expect("a stream history").clone();
    // One transaction as the coordinator records one whose client is
    // unknown (its open's answer was lost, then it timed out).
    stream.transactions[0].client = percsim_sim::COORDINATOR_CLIENT;
    let page = report::stream_report(&stream, &[], None, "p.json", false);
    let sentinel = format!("client {}", percsim_sim::COORDINATOR_CLIENT);
    assert!(!page.contains(&sentinel), "{sentinel} shown");
    assert!(page.contains("coordinator (no known client)"));

    let percolator = scenario(serde_json::json!({
        "format": "percsim-scenario/2", "seed": 3,
        "world": {"run_ms": 600, "quiesce_ms": 5000},
        "percolator": {"clients": 2},
        "workload": {"name": "bank", "accounts": 4}
    }));
    let judged = judge(&percolator, false);
    let history = judged
        .transactions()
        .expect("a transaction history")
        .clone();
    let sweep = history
        .transactions
        .iter()
        .filter(|t| t.client == 2)
        .count();
    assert!(sweep > 0, "the final read sweep ran as client 2");
    let loaded = Loaded {
        history,
        capsule: None,
        warning: None,
    };
    let page = report::html(&loaded, "h.json");
    for number in [2, percsim_sim::LOADER_CLIENT] {
        let lane = format!(">client {number}<");
        assert!(!page.contains(&lane), "{lane} shown");
    }
    assert!(page.contains("final read sweep"));
    assert!(page.contains("initial load"));
}

/// Runs the percsim binary; its exit code and standard output.
fn percsim(args: &[&str]) -> (Option<i32>, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_percsim"))
        .args(args)
        .output()
        .expect("percsim runs");
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let err = String::from_utf8_lossy(&o.stderr);
    (o.status.code(), format!("{text}{err}"))
}

/// The labels of a report's lanes, top to bottom.
fn lane_labels(page: &str) -> Vec<String> {
    page.split("<text x=\"4\" y=\"")
        .skip(1)
        .filter_map(|rest| {
            let (_, label) = rest.split_once("\">")?;
            Some(label.split("</text>").next()?.to_string())
        })
        .collect()
}

/// Whether `label` names a workload client below `clients` (`client 3`,
/// `client 3 / 1` for one of its workers).
fn a_client_below(label: &str, clients: u64) -> bool {
    let Some(rest) = label.strip_prefix("client ") else {
        return false;
    };
    let number = rest.split(" / ").next().unwrap_or("");
    number.parse::<u64>().is_ok_and(|n| n < clients)
}

/// `percsim report` on a Pulsar script's failure capsule (from `percsim
/// run`) and on a Percolator run's history names every lane by what it
/// is: a workload client by its number, the coordinator's own decisions,
/// the initial load and the final read sweep by name; no lane shows a
/// sentinel client id as a number.
#[test]
fn percsim_report_names_every_lane_of_both_systems() {
    let dir = std::env::temp_dir().join(format!("percsim-report-lanes-{}", std::process::id()));
    let out = dir.to_str().expect("a UTF-8 path");
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let script = examples.join("pulsar/script/bug-no-max-read-position.json");
    let script = script.to_str().expect("UTF-8");
    let run = percsim(&[
        "run",
        script,
        "--ablate",
        "no-max-read-position",
        "--out",
        out,
    ]);
    assert_eq!(run.0, Some(1), "{}", run.1);
    let capsule = dir.join("pulsar-seed-1.json");
    let page = dir.join("pulsar.html");
    let drawn = percsim(&[
        "report",
        capsule.to_str().expect("UTF-8"),
        "-o",
        page.to_str().expect("UTF-8"),
    ]);
    assert_eq!(drawn.0, Some(0), "{}", drawn.1);
    let page = std::fs::read_to_string(page).expect("the page");
    let labels = lane_labels(&page);
    assert!(labels.iter().any(|l| l == "client 0"), "{labels:?}");
    assert!(labels.iter().any(|l| l == "client 1"), "{labels:?}");
    for l in &labels {
        assert!(
            a_client_below(l, 2) || l == "coordinator (no known client)",
            "{l} in {labels:?}"
        );
    }
    let sentinel = format!("client {}", percsim_sim::COORDINATOR_CLIENT);
    assert!(!page.contains(&sentinel), "{sentinel} shown");

    let history = dir.join("bank-history.json");
    let bank = examples.join("bank.json");
    let ran = percsim(&[
        "run",
        bank.to_str().expect("UTF-8"),
        "--history",
        history.to_str().expect("UTF-8"),
    ]);
    assert_eq!(ran.0, Some(0), "{}", ran.1);
    let page = dir.join("bank.html");
    let drawn = percsim(&[
        "report",
        history.to_str().expect("UTF-8"),
        "-o",
        page.to_str().expect("UTF-8"),
    ]);
    assert_eq!(drawn.0, Some(0), "{}", drawn.1);
    let page = std::fs::read_to_string(page).expect("the page");
    let labels = lane_labels(&page);
    assert!(labels.iter().any(|l| l == "final read sweep"), "{labels:?}");
    for l in &labels {
        let named = ["final read sweep", "initial load"].contains(&l.as_str());
        assert!(a_client_below(l, 4) || named, "{l} in {labels:?}");
    }
    assert!(
        !labels
            .iter()
            .any(|l| l == "client 4" || l.starts_with("client 4 /"))
    );
    let _ = std::fs::remove_dir_all(&dir);
}
