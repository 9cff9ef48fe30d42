//! What a Pulsar workload gives the simulator: its topics and
//! subscriptions, the loop each client task runs, and where its processors
//! may crash.

use crate::pulsar::driver::PulsarControl;
pub use crate::pulsar::nodes::client::PulsarTask;
pub use crate::world::BoxFuture;
use percsim_checker::stream::SubscriptionDecl;
use percsim_protocol::pulsar::client::ClientPoint;

/// A workload the Pulsar cluster can run.
pub trait PulsarWorkload: Send + Sync + 'static {
    /// The topics it uses (each gets the cluster's partition count).
    fn topics(&self) -> Vec<String>;
    /// The subscriptions it declares in the history. A `drained` one must
    /// have consumed every visible message of its topic before the healed
    /// phase can end.
    fn subscriptions(&self) -> Vec<SubscriptionDecl>;
    /// How many tasks client `client` of `clients` runs.
    fn tasks(&self, client: usize, clients: usize) -> usize;
    /// The loop one task runs. Producers should stop once
    /// [`Conn::stopping`](super::nodes::client::Conn::stopping); consumers
    /// keep consuming (the healed phase waits for drained subscriptions).
    fn task(&self, task: PulsarTask) -> BoxFuture<()>;
    /// The probability that a client dies at `point` (a processor crashing
    /// mid-transaction); none by default.
    fn crash_rate(&self, _point: ClientPoint) -> f64 {
        0.0
    }
    /// An optional task on the harness's own node during the workload
    /// phase (a script's driver), which can inject faults and read the
    /// durable logs; when it finishes, the workload phase ends early.
    fn driver(&self, _control: PulsarControl) -> Option<BoxFuture<()>> {
        None
    }
    /// After the healed phase: the workload's own violations (a script's
    /// failed expectations). None by default.
    fn final_check(&self) -> BoxFuture<Vec<String>> {
        Box::pin(async { Vec::new() })
    }
}
