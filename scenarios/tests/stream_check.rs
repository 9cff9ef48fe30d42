//! `percsim check` on stream histories (`percsim-stream-history/1`): the
//! format is detected from the file's `format` field; a valid history
//! passes (exit 0), a broken rule is exit 1, bad input exit 2.

use std::path::PathBuf;
use std::process::{Command, Output};

fn check(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_percsim"))
        .arg("check")
        .args(args)
        .output()
        .expect("run percsim")
}

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../checker/tests/fixtures/stream")
        .join(format!("{name}.json"))
        .to_string_lossy()
        .into_owned()
}

#[test]
fn percsim_check_judges_stream_histories() {
    let o = check(&[&fixture("valid_pipeline")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("percsim-stream-history/1): PASS, all 7 rules hold"),
        "{out}"
    );

    let o = check(&[&fixture("aborted_read"), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    assert_eq!(v["history_format"], "percsim-stream-history/1");
    assert_eq!(v["rules"][0]["id"], "aborted_read");
    assert_eq!(v["rules"][0]["passed"], false);

    let dir = std::env::temp_dir().join(format!("percsim-stream-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"format": "percsim-stream-history/1", "transactions": [], "ops": [{"f": "send"}], "final_state": {"partitions": []}}"#,
    )
    .unwrap();
    let o = check(&[bad.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(
        out.contains("is not a valid stream history") && out.contains("missing field"),
        "{out}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
