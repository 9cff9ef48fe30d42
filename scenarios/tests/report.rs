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
