//! Several observers on one column. The notify entry is one per cell, so
//! clearing it must wait until every observer of the column acknowledged
//! the change: otherwise one observer commits and clears while another's
//! run aborts, and that observer never sees the change.

mod common;

use percsim_checker::History;
use percsim_protocol::percolator::CellKey;
use percsim_protocol::percolator::client::{
    BodyFuture, ObserverBody, ObserverSpec, RpcError, Transaction, TxnError,
};
use percsim_scenarios::campaign::{self, Mix};
use percsim_scenarios::systems::percolator;
use percsim_scenarios::workloads::WorkloadSpec;
use percsim_sim::{BoxFuture, Client, PercolatorConfig, Worker, Workload, WorldConfig};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Write "done" to `row`/`out`; the first run fails instead if `fail_first`.
struct Mark {
    out: &'static str,
    fail_first: AtomicBool,
}

impl ObserverBody<Client> for Mark {
    fn run<'a>(&'a self, txn: &'a mut Transaction<'_, Client>, row: &'a str) -> BodyFuture<'a> {
        Box::pin(async move {
            if self.fail_first.swap(false, Ordering::SeqCst) {
                return Err(TxnError::Rpc(RpcError::Unavailable));
            }
            txn.set(row, self.out, "done".to_string());
            Ok(())
        })
    }
}

/// One write of `x`/`in`, watched by `first` (always succeeds) and then
/// `second` (its first run aborts).
struct Shared {
    first: Arc<Mark>,
    second: Arc<Mark>,
}

impl Workload for Shared {
    fn initial_data(&self) -> Vec<(CellKey, String)> {
        Vec::new()
    }
    fn split_points(&self, _tablets: usize) -> Vec<String> {
        Vec::new()
    }
    fn worker(&self, w: Worker) -> BoxFuture<()> {
        Box::pin(async move {
            if w.index != 0 || w.incarnation != 1 || w.client.index() != 0 {
                return;
            }
            while let Ok(mut txn) = Transaction::begin(w.client.as_ref()).await {
                txn.set("x", "in", "v".to_string());
                if matches!(
                    txn.commit().await,
                    percsim_protocol::percolator::client::CommitOutcome::Committed { .. }
                ) {
                    return;
                }
            }
        })
    }
    fn observers(&self) -> Vec<(ObserverSpec, Arc<dyn ObserverBody<Client>>)> {
        let spec = |name: &str| ObserverSpec {
            name: name.into(),
            col: "in".into(),
            weak: false,
        };
        vec![
            (spec("first"), self.first.clone()),
            (spec("second"), self.second.clone()),
        ]
    }
    fn final_check(&self, _client: Arc<Client>) -> BoxFuture<Vec<String>> {
        Box::pin(async { Vec::new() })
    }
}

fn committed(h: &History, row: &str, col: &str) -> bool {
    h.final_state.cells.iter().any(|c| {
        c.row == row
            && c.col == col
            && c.versions
                .iter()
                .any(|v| v.kind != percsim_checker::VersionKind::Rollback)
    })
}

/// The losing interleaving: `first` commits and clears, `second` aborts.
/// Under one shared, unconditional clear `second` never ran again.
#[test]
fn an_observer_whose_run_aborted_still_processes_the_change() {
    for seed in 0..3 {
        let w = Shared {
            first: Arc::new(Mark {
                out: "a",
                fail_first: AtomicBool::new(false),
            }),
            second: Arc::new(Mark {
                out: "b",
                fail_first: AtomicBool::new(true),
            }),
        };
        let cluster = PercolatorConfig {
            tablet_servers: 1,
            tablets: 1,
            clients: 1,
            workers_per_client: 1,
            scanners_per_client: 1,
            ..PercolatorConfig::default()
        };
        let world = WorldConfig {
            run_ms: 1_000,
            ..WorldConfig::default()
        };
        let second = w.second.clone();
        let w = Arc::new(w);
        let out =
            percsim_sim::run(&world, &cluster, seed, w, serde_json::Value::Null).expect("run");
        assert!(
            !second.fail_first.load(Ordering::SeqCst),
            "seed {seed}: second never ran"
        );
        let history = out.transactions().expect("a transaction history");
        let report = percsim_checker::check(history);
        assert!(report.passed(), "seed {seed}:\n{}", report.render_text());
        assert_eq!(out.summary.liveness_failure, None, "seed {seed}");
        assert!(
            committed(history, "x", "a"),
            "seed {seed}: first did not run"
        );
        assert!(
            committed(history, "x", "b"),
            "seed {seed}: second never processed the change"
        );
    }
}

/// The pipeline with a second observer of `raw` (`audit`) under the
/// campaign's faults: every run passes the checker and both observers keep
/// their columns in step with the documents.
#[test]
fn pipeline_with_two_observers_on_raw_passes_under_faults() {
    let mix = Mix {
        workloads: vec!["pipeline".into()],
        ..Mix::default()
    };
    for seed in common::seeds(12) {
        let mut scenario = campaign::generate(seed, &mix);
        let spec =
            percolator::PercolatorSpec::of_mut(&mut scenario).expect("a Percolator scenario");
        let WorkloadSpec::Pipeline(p) = &mut spec.workload else {
            panic!("seed {seed}: not a pipeline");
        };
        p.audit = true;
        common::run_and_check(&scenario, "shared_column");
    }
}
