//! Batched messages in stream histories as Pulsar's model writes them:
//! each message of a batch entry at an offset of its own. Hand-made
//! histories of what the model's batch-index and cumulative ack rules
//! prevent: without them, two committed transactions acknowledge one
//! message of a batch, which the checker reports; with them, the second
//! ack fails and the history passes.

use percsim_checker::stream::{StreamReport, check, parse};
use serde_json::{Value, json};

fn judge(v: &Value) -> StreamReport {
    let h = parse(&v.to_string()).unwrap_or_else(|e| panic!("should parse: {e}"));
    check(&h)
}

fn txn(id: u64, t_ns: u64) -> Value {
    json!({"id": id, "client": 2, "invoke_ns": t_ns, "commit_request_ns": t_ns + 50,
           "complete_ns": t_ns + 60, "outcome": "committed"})
}

fn ack(offset: u64, message: &str, t_ns: u64, txn: u64, result: &str, cumulative: bool) -> Value {
    json!({"f": "ack", "client": 2, "subscription": "s", "partition": "in-0", "offset": offset,
           "message": message, "t_ns": t_ns, "txn": txn, "result": result, "cumulative": cumulative})
}

/// Partition `in-0` holds a batch entry of `a`, `b` (offsets 0 and 1) and a
/// message `c` sent alone (offset 2); subscription `s` is exactly-once.
/// Transactions 1 and 2 each send an output made from its input and
/// acknowledge with `acks`; both commit.
fn history(acks: [Value; 2], acked: &[u64]) -> Value {
    let mut ops = vec![
        json!({"f": "send", "client": 1, "t_ns": 10, "txn": null, "partition": "in-0", "message": "a", "result": "ok", "offset": 0}),
        json!({"f": "send", "client": 1, "t_ns": 10, "txn": null, "partition": "in-0", "message": "b", "result": "ok", "offset": 1}),
        json!({"f": "send", "client": 1, "t_ns": 11, "txn": null, "partition": "in-0", "message": "c", "result": "ok", "offset": 2}),
    ];
    for (i, m) in ["a", "b", "c"].iter().enumerate() {
        ops.push(
            json!({"f": "receive", "client": 2, "consumer": "c1", "subscription": "s",
                        "partition": "in-0", "offset": i, "message": m, "t_ns": 20}),
        );
    }
    let [ack1, ack2] = acks;
    ops.push(json!({"f": "send", "client": 2, "t_ns": 110, "txn": 1, "partition": "out-0",
                    "message": "o1", "result": "ok", "offset": 0, "source": {"subscription": "s", "message": "b"}}));
    ops.push(ack1);
    ops.push(json!({"f": "send", "client": 2, "t_ns": 210, "txn": 2, "partition": "out-0",
                    "message": "o2", "result": "ok", "offset": 2, "source": {"subscription": "s", "message": "b"}}));
    ops.push(ack2);
    json!({
        "format": "percsim-stream-history/1",
        "subscriptions": [{"name": "s", "topic": "in", "exactly_once": true}],
        "transactions": [txn(1, 100), txn(2, 200)],
        "ops": ops,
        "final_state": {
            "partitions": [
                {"name": "in-0", "topic": "in", "entries": [
                    {"offset": 0, "message": "a"}, {"offset": 1, "message": "b"}, {"offset": 2, "message": "c"}]},
                {"name": "out-0", "topic": "out", "entries": [
                    {"offset": 0, "message": "o1", "txn": 1}, {"offset": 1, "marker": "commit", "txn": 1},
                    {"offset": 2, "message": "o2", "txn": 2}, {"offset": 3, "marker": "commit", "txn": 2}]}
            ],
            "acks": [{"subscription": "s", "partition": "in-0", "offset": 0, "offsets": acked}]
        }
    })
}

#[test]
fn a_conflicting_batch_index_ack_accepted_is_a_duplicate() {
    // Transaction 2's ack of index 1 (offset 1), which transaction 1 holds
    // pending, accepted: both commit.
    let h = history(
        [
            ack(1, "b", 120, 1, "ok", false),
            ack(1, "b", 220, 2, "ok", false),
        ],
        &[1],
    );
    let r = judge(&h);
    assert!(!r.passed());
    assert!(
        r.violated_rules().contains(&"duplicate"),
        "\n{}",
        r.render_text()
    );
    assert!(
        r.violated_rules().contains(&"exactly_once"),
        "\n{}",
        r.render_text()
    );
    // Refused (the model's rule): transaction 2 aborts instead, no output.
    let mut faithful = history(
        [
            ack(1, "b", 120, 1, "ok", false),
            ack(1, "b", 220, 2, "failed", false),
        ],
        &[1],
    );
    drop_second_output(&mut faithful);
    let r = judge(&faithful);
    assert!(r.passed(), "\n{}", r.render_text());
}

#[test]
fn a_cumulative_ack_crossing_another_transaction_s_pending_ack_is_a_duplicate() {
    // Transaction 1 holds index 1 pending; transaction 2's cumulative ack
    // up to `c` crosses it and is accepted: both commit.
    let h = history(
        [
            ack(1, "b", 120, 1, "ok", false),
            ack(2, "c", 220, 2, "ok", true),
        ],
        &[0, 1, 2],
    );
    let r = judge(&h);
    // Both transactions made an output of `b`: the input was processed twice
    // (the duplicate rule compares individual acks only).
    assert!(
        r.violated_rules() == ["exactly_once"],
        "\n{}",
        r.render_text()
    );
    let mut faithful = history(
        [
            ack(1, "b", 120, 1, "ok", false),
            ack(2, "c", 220, 2, "failed", true),
        ],
        &[1],
    );
    drop_second_output(&mut faithful);
    assert!(judge(&faithful).passed());
}

/// The refused ack's transaction aborts: its output is aborted.
fn drop_second_output(h: &mut Value) {
    h["transactions"][1]["outcome"] = json!("aborted");
    h["transactions"][1]["commit_request_ns"] = Value::Null;
    let out = &mut h["final_state"]["partitions"][1]["entries"];
    out[3] = json!({"offset": 3, "marker": "abort", "txn": 2});
}
