//! `percsim compare` end to end with a tiny seed count: the table, its
//! JSON, and clear errors for bad flags.

use std::process::{Command, Output};

fn percsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_percsim"))
        .args(args)
        .output()
        .expect("run percsim")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn compare_measures_percolator_under_two_mixes_as_json() {
    let args = [
        "compare",
        "--system",
        "percolator",
        "--mixes",
        "none,crash-clients",
    ];
    let o = percsim(&[&args[..], &["--count", "1", "--json"]].concat());
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let cells = v["cells"].as_array().expect("cells");
    let names: Vec<(&str, &str)> = cells
        .iter()
        .map(|c| (c["system"].as_str().unwrap(), c["mix"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [("percolator", "none"), ("percolator", "crash-clients")]
    );
    for c in cells {
        let m = &c["metrics"];
        assert_eq!(m["runs"], 1, "{c}");
        assert!(m["docs_per_sim_s"].as_f64().unwrap() > 0.0, "{c}");
        assert!(m["commit_p50_ms"].as_f64().unwrap() > 0.0, "{c}");
    }
    assert_eq!(cells[0]["metrics"]["deaths"], 0);
    assert!(cells[1]["metrics"]["deaths"].as_u64().unwrap() > 0);
    // Same seeds, same build: the same numbers.
    let again = percsim(&[&args[..], &["--count", "1", "--json"]].concat());
    assert_eq!(o.stdout, again.stdout);
}

#[test]
fn compare_prints_one_table_with_a_column_per_mix() {
    let o = percsim(&[
        "compare",
        "--system",
        "percolator",
        "--mixes",
        "lossy",
        "--seeds",
        "3..4",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("| metric | percolator lossy |"), "{out}");
    assert!(
        out.contains("| commit latency p99 ms (begin to outcome) |"),
        "{out}"
    );
}

#[test]
fn bad_compare_flags_are_named_with_exit_code_2() {
    for (args, says) in [
        (
            &["compare", "--system", "tidb"][..],
            "unknown system \"tidb\"",
        ),
        (
            &["compare", "--mixes", "storm"][..],
            "unknown fault mix \"storm\"",
        ),
        (
            &["compare", "--count", "0"][..],
            "--count must be at least 1",
        ),
        (
            &["compare", "--run-ms", "10", "--count", "1"][..],
            "too short",
        ),
        (
            &["compare", "--scale-out", "--count", "3"][..],
            "--scale-out runs no fault mix and one seed",
        ),
        (
            &["compare", "--scale-out", "--system", "pulsar"][..],
            "system pulsar has no scale-out run",
        ),
    ] {
        let o = percsim(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
    }
}

#[test]
fn compare_all_puts_every_system_on_the_same_job_and_mix() {
    let args = [
        "compare",
        "--mixes",
        "crash-coordinator",
        "--count",
        "1",
        "--json",
    ];
    let o = percsim(&args);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let cells = v["cells"].as_array().expect("cells");
    let systems: Vec<&str> = cells
        .iter()
        .map(|c| c["system"].as_str().unwrap())
        .collect();
    assert_eq!(systems, ["percolator", "pulsar", "omid"]);
    for c in cells {
        let m = &c["metrics"];
        assert!(m["docs_per_sim_s"].as_f64().unwrap() > 0.0, "{c}");
        assert!(m["deaths"].as_u64().unwrap() > 0, "{c}");
        assert!(m["recovery_max_ms"].as_f64().is_some(), "{c}");
    }
}

/// A small scale-out point: both systems with a scale-out run take part,
/// commit, and charge their central component and their servers CPU time.
#[test]
fn the_scale_out_measures_each_system_at_a_small_point() {
    use percsim_scenarios::compare::{ScalePoint, scale};
    let point = ScalePoint {
        servers: 2,
        customers_per_server: 20_000,
        workers_per_server: 16,
        run_ms: 1_000,
    };
    let systems: Vec<&str> = percsim_scenarios::systems::all()
        .into_iter()
        .filter_map(|s| {
            let row = scale::measure(s, point)?.unwrap_or_else(|e| panic!("{e}"));
            assert!(row.txns_per_s > 20.0, "{row:?}");
            assert!(row.central_cores > 0.0, "{row:?}");
            assert!(row.server_cores > row.central_cores, "{row:?}");
            assert!(row.violations.is_empty(), "{row:?}");
            Some(s.name())
        })
        .collect();
    assert_eq!(systems, ["percolator", "omid"]);
}

/// The measurement shows a bend when the central component runs out of
/// CPU: a TSO charged 1 ms a request serves at most 1,000 requests (500
/// transactions) per simulated second; at 1 server the load needs less
/// than 60% of it, at 4 servers more than all of it, so its core is busy
/// all the time and throughput grows well short of fourfold (about 3.2
/// times), staying under the core's 500 transactions per second, while
/// requests queue for the core and the mean latency grows.
#[test]
fn a_tso_out_of_cpu_bends_the_scale_out_line() {
    use percsim_scenarios::compare::{ScalePoint, scale};
    use percsim_scenarios::systems::omid::scale_out_costed;
    use percsim_sim::omid::config::OmidCosts;
    let costs = OmidCosts {
        enabled: true,
        tso_request_us: 1_000,
        ..OmidCosts::default()
    };
    let row = |servers| {
        let point = ScalePoint {
            servers,
            customers_per_server: 50_000,
            workers_per_server: 64,
            run_ms: 2_000,
        };
        let job = scale_out_costed(&point, costs);
        scale::measure_job("omid", &job, point).unwrap_or_else(|e| panic!("{e}"))
    };
    let (one, four) = (row(1), row(4));
    assert!(one.central_cores < 0.6, "{one:?}");
    assert!(four.central_cores > 0.9, "{four:?}");
    assert!(four.txns_per_s < 3.5 * one.txns_per_s, "{one:?} {four:?}");
    assert!(four.txns_per_s < 520.0, "{four:?}");
    assert!(four.mean_ms > 1.2 * one.mean_ms, "{one:?} {four:?}");
}
