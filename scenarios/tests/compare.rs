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
