//! A script written in Rust, and a seed sweep of a generated workload under
//! faults. `PERCSIM_SEED=N cargo test` runs seed N alone; `PERCSIM_SEEDS=K`
//! widens each sweep to K seeds.

use percsim::Scenario;
use percsim::regress;
use percsim::workloads::{ErrorClass, ExpectOutcome, ScriptBuilder, StepPoint, Stored};

/// Two writers of one cell: the second to commit must abort (no lost
/// update); a third client dies after the first writer's commit point, and
/// its transaction must still end committed in the store.
#[test]
fn no_lost_update_and_a_crashed_commit_rolls_forward() {
    let script = ScriptBuilder::new()
        .initial("x", "v", "0")
        .begin(0, "T1")
        .begin(1, "T2")
        .get("T1", "x", "v", Some("0"))
        .get("T2", "x", "v", Some("0"))
        .set("T1", "x", "v", "1")
        .set("T2", "x", "v", "2")
        .commit("T1", ExpectOutcome::Committed)
        .commit("T2", ExpectOutcome::Aborted)
        .fails(ErrorClass::WriteConflict)
        .begin(2, "T3")
        .set("T3", "y", "v", "3")
        .set("T3", "z", "v", "3")
        .crash_at("T3", StepPoint::AfterCommitPrimary, None)
        .commit_armed("T3")
        .store(Stored::Committed)
        .build();
    let scenario = percsim::systems::percolator::script_scenario(script, 0);
    regress::assert_sweep(&scenario, 0..5, "no_lost_update");
}

/// The bank workload under client kills and lost messages: every seed must
/// keep snapshot isolation and the bank's total.
#[test]
fn the_bank_keeps_its_total_under_client_kills() {
    let scenario = Scenario::parse(
        r#"{
          "format": "percsim-scenario/2",
          "world": {
            "run_ms": 2000,
            "faults": { "random": {
              "kill_client": { "probability": 0.1, "min_duration_ms": 100, "max_duration_ms": 800 },
              "packet_loss": { "probability": 0.05, "min_duration_ms": 100, "max_duration_ms": 500, "rate": 0.2 }
            } }
          },
          "percolator": { "tablet_servers": 2, "tablets": 2, "clients": 3 },
          "workload": { "name": "bank", "accounts": 6 }
        }"#,
    )
    .expect("a valid scenario");
    regress::assert_sweep(&scenario, 0..10, "bank_sweep");
}
