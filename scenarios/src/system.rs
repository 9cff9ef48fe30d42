//! The interface a system implements to live in the testbed.
//!
//! The core (scenario files, the run path, campaigns, shrinking, the CLI)
//! knows no system: it asks the registry ([`crate::systems`]) for a
//! [`SystemDef`] by name and works through it. A system brings:
//! - its section of a scenario file and its workloads, parsed into a
//!   [`SystemSpec`] that validates itself against the world's settings and
//!   runs;
//! - what a campaign may draw for it: its workloads, the fault classes it
//!   honours, its planted bugs, and how a seed becomes a scenario;
//! - how a failing scenario of its own shrinks;
//! - what a campaign of it should exercise (its coverage items and named
//!   points) and its own sections of a campaign's summary.
//!
//! See "Adding a system" in `docs/architecture.md`.

pub use crate::coverage::{CoverageItem, WorldCoverage};
use crate::error::ScenarioError;
pub use crate::error::config_error;
use crate::scenario::Scenario;
pub use crate::spec::{SpecValue, SystemSpec, to_json};
use percsim_sim::{NodeKind, NodeName, NodeNameError, Role, RunOutput, WorldConfig};

/// A system the testbed can run, by name: what its scenarios look like and
/// what a campaign may draw for it.
pub trait SystemDef: Send + Sync + 'static {
    /// Its name: a scenario file's `"system"`, the key of its section, and
    /// what `--system` takes.
    fn name(&self) -> &'static str;
    /// What it is, in a sentence.
    fn describe(&self) -> &'static str;
    /// Parse its section of a scenario file (`None` when the file has none:
    /// the defaults) and the scenario's `workload` object. Errors name the
    /// field by its path in the file (`<name>.brokers`, `workload.keys`).
    fn parse(
        &self,
        section: Option<serde_json::Value>,
        workload: serde_json::Value,
    ) -> Result<Box<dyn SystemSpec>, ScenarioError>;
    /// The format of the history its runs are judged on: the transaction
    /// history (`percsim-history/1`, the default) or the stream history
    /// (`percsim-stream-history/1`) a run returns beside the world's events.
    fn history_format(&self) -> &'static str {
        percsim_checker::FORMAT
    }
    /// The keys of a first-format file's `cluster` object that belong to
    /// its section, besides the world's (`None`, the default: every other
    /// key). Keys outside the list had no effect on its runs and are left
    /// out when such a file is read.
    fn v1_cluster_keys(&self) -> Option<&'static [&'static str]> {
        None
    }
    /// Every workload it runs, by name.
    fn workloads(&self) -> &'static [&'static str];
    /// The workloads a campaign draws from when none are named.
    fn campaign_workloads(&self) -> &'static [&'static str];
    /// The world's fault classes its campaign honours (`--faults`), plus
    /// its own (crashes at its named points). A class outside this list is
    /// refused for it, never silently ignored.
    fn fault_classes(&self) -> &'static [&'static str];
    /// The roles its nodes play, each with the name it gives them
    /// (`tablet_server`, `broker`): `--faults kill:<name>` kills a node of
    /// the role. By default every role, under the world's name for it.
    fn roles(&self) -> Vec<(Role, &'static str)> {
        Role::ALL.iter().map(|r| (*r, r.name())).collect()
    }
    /// Its kinds of node (role, label, one node or numbered ones), as the
    /// world names its nodes: what reads a node name of its histories,
    /// events and scripts back into a typed [`NodeName`] (role and index).
    fn node_kinds(&self) -> &'static [NodeKind];
    /// The lanes of a history of `scenario` (its recorded scenario
    /// object) that are no workload client's: each a client id its
    /// histories record such transactions under (a sentinel, such as a
    /// coordinator's own decisions, or a harness's client) with the name a
    /// report shows for that lane. None by default.
    fn lane_names(&self, _scenario: &serde_json::Value) -> Vec<(u64, &'static str)> {
        Vec::new()
    }
    /// The node of it named `name` (`client-3`, `oracle`), read with its
    /// kinds ([`SystemDef::node_kinds`]); the error says what is wrong.
    fn node(&self, name: &str) -> Result<NodeName, NodeNameError> {
        NodeName::parse(name, self.node_kinds())
    }
    /// The world's pause and stall classes aimed at a role that it
    /// honours, by their names now (`pause:data_server`, `stall:client`):
    /// by default derived from its node kinds, a pause of every role its
    /// nodes play and a stall of every role whose nodes honour stalls. A
    /// campaign switches one on only when it is named
    /// (`--faults pause:broker`).
    fn role_classes(&self) -> Vec<String> {
        crate::faultmix::role_classes(self.node_kinds())
    }
    /// Its fault classes as a campaign of it names them: its kills,
    /// pauses and stalls of a role by the role's name (`kill:broker`,
    /// `pause:broker`), the others by their own names.
    fn class_names(&self) -> Vec<String> {
        let roles = self.roles();
        let own = self.fault_classes().iter().map(|c| c.to_string());
        own.chain(self.role_classes())
            .map(|c| crate::faultmix::display(&c, &roles))
            .collect()
    }
    /// Its planted bugs (ablations): name and what each removes.
    fn ablations(&self) -> Vec<(&'static str, &'static str)>;
    /// Seeds of it a campaign over several systems runs per seed of the
    /// range, as (numerator, denominator): (1, 1) as many, (1, 10) a tenth.
    fn campaign_share(&self) -> (u64, u64) {
        (1, 1)
    }
    /// The campaign scenario of `seed`, drawn from `mix` (its workloads,
    /// fault classes and planted bugs, already checked to be its own).
    fn generate(&self, seed: u64, mix: &Mix) -> Scenario;
    /// Lines of its own for a run's summary (`percsim run`), from the run's
    /// counters: (label, value), such as Percolator's cleanups. None by
    /// default.
    fn summary_lines(
        &self,
        _counters: &std::collections::BTreeMap<String, u64>,
    ) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// The world's coverage items a campaign of it should exercise: by
    /// default those whose fault class it honours
    /// ([`SystemDef::fault_classes`]).
    fn world_coverage(&self) -> Vec<WorldCoverage> {
        WorldCoverage::for_classes(self.fault_classes())
    }
    /// Its own coverage items: events of its protocol a campaign of it
    /// should exercise, each with the run counter that shows it happened
    /// (flagged "never happened" in a campaign of it where it did not).
    /// None by default.
    fn coverage(&self) -> Vec<CoverageItem> {
        Vec::new()
    }
    /// Its named points a campaign of it should stop nodes at, each with
    /// the counter of stops there; a campaign of it lists them and reports
    /// each never hit as a finding. None by default.
    fn named_points(&self) -> Vec<CoverageItem> {
        Vec::new()
    }
    /// The workloads of it whose runs alone can reach its coverage item or
    /// named point `name` (of [`SystemDef::coverage`] or
    /// [`SystemDef::named_points`]), when only some of its workloads can:
    /// a campaign that ran none of them does not list it. None (the
    /// default): any of its workloads can.
    fn reached_by(&self, _name: &str) -> Option<&'static [&'static str]> {
        None
    }
    /// The counter of the times its nodes reached its named point `point`
    /// (a name of [`SystemDef::named_points`]), when it counts them: a
    /// campaign then lists each point's reaches beside its stops, and
    /// tells a point never reached from one reached but never stopped at.
    /// None by default.
    fn point_reach_counter(&self, _point: &str) -> Option<String> {
        None
    }
    /// Sections of its own for a campaign's summary, from the campaign's
    /// summed counters (such as Percolator's cleanups and aborts by
    /// reason). None by default.
    fn campaign_sections(
        &self,
        _counters: &std::collections::BTreeMap<String, u64>,
    ) -> Vec<SummarySection> {
        Vec::new()
    }
    /// Reproduce its published evaluation in simulated time (`percsim
    /// paper`), printing each result beside the published figure; `quick`
    /// runs fewer and shorter runs. False (the default): it has none.
    fn evaluation(&self, _quick: bool) -> bool {
        false
    }
    /// Its kill table: run its default campaign under each planted bug of
    /// `opts.only` (every one when empty) and without any, print the table
    /// to standard output; the exit code is 0 when the faithful protocol
    /// passed and every planted bug was caught, 1 otherwise. An unknown
    /// name is an error. Optional: by default an error saying the system
    /// has none (`percsim ablations` then refuses it by name).
    fn kill_table(&self, _opts: &KillTable) -> Result<i32, String> {
        Err(format!("system {} has no kill table", self.name()))
    }
    /// Whether its kill table measures over several disjoint seed ranges
    /// ([`KillTable::ranges`]); not by default.
    fn kill_table_ranges(&self) -> bool {
        false
    }
    /// Its scenario of `percsim compare`'s job (the document pipeline of
    /// [`crate::compare::DOCUMENTS`] documents) in a world set up by
    /// `world` (the comparison's fault mix and phase), with `seed`; `None`
    /// (the default): it takes no part in the comparison.
    fn compare_scenario(&self, _seed: u64, _world: WorldConfig) -> Option<Scenario> {
        None
    }
    /// The comparison's facts of one run of its comparison scenario.
    fn compare_facts(&self, _out: &RunOutput) -> Result<crate::compare::RunFacts, String> {
        Err(format!("system {} has no comparison job", self.name()))
    }
    /// Its run of `percsim compare --scale-out` at `point`: TPC-E-lite
    /// with `point.customers()` customers on `point.servers` data servers
    /// under the CPU cost model, and where its CPU time is counted
    /// ([`crate::compare::scale`]); `None` (the default): it takes no part.
    fn scale_out(&self, _point: &crate::compare::ScalePoint) -> Option<crate::compare::ScaleJob> {
        None
    }
    /// Its measurements for `percsim bench` (its workloads' throughput,
    /// say), each named; `percsim bench --system` runs them. None by
    /// default.
    fn bench(&self) -> Vec<Measurement> {
        Vec::new()
    }
    /// The scenario running `script` (its script workload as a scenario
    /// file's `workload` object, without `name`) on a cluster just large
    /// enough for it, with `seed`: what `regress::script_scenario` builds.
    /// By default an error saying the system cannot size a cluster for a
    /// bare script (its scripts, if it has any, go in a scenario file).
    fn script_scenario(
        &self,
        _script: serde_json::Value,
        _seed: u64,
    ) -> Result<Scenario, ScenarioError> {
        Err(ScenarioError::Invalid(format!(
            "system {} cannot build a scenario from a bare script: write a scenario file with its script workload and cluster",
            self.name()
        )))
    }
    /// Shrink the failing campaign scenario of `seed`: simplify it while
    /// `still_fails` holds, within `budget` runs; returns the smallest
    /// scenario found and the runs it took. By default the generic shrink
    /// ([`crate::shrink::world`]) of the scenario [`SystemDef::generate`]
    /// draws: it simplifies the `world` section only (timed faults, random
    /// fault classes, clocks, the workload phase's length).
    fn shrink(
        &self,
        seed: u64,
        mix: &Mix,
        still_fails: &mut dyn FnMut(&Scenario) -> bool,
        budget: usize,
    ) -> (Scenario, usize) {
        crate::shrink::world(&self.generate(seed, mix), still_fails, budget)
    }
    /// Shrink `failing`, a failing scenario of it given as it is (a
    /// scenario file, a script, a capsule's: `percsim shrink`, `percsim
    /// fuzz --scenario`): simplify it while `still_fails` holds, within
    /// `budget` runs; returns the smallest scenario found and the runs it
    /// took. By default the generic shrink ([`crate::shrink::scenario`]):
    /// a script's steps, then the `world` section.
    fn shrink_scenario(
        &self,
        failing: &Scenario,
        still_fails: &mut dyn FnMut(&Scenario) -> bool,
        budget: usize,
    ) -> (Scenario, usize) {
        crate::shrink::scenario(failing, still_fails, budget)
    }
}

/// A closed enum of a system's planted bugs (ablations), as the interface
/// lists them ([`SystemDef::ablations`]) and picks a campaign's
/// ([`Mix::ablations`]). Implement it with
/// [`planted_bugs!`](crate::planted_bugs) for an enum with `ALL`, `name`
/// and `describe`.
pub trait PlantedBug: Copy + 'static {
    /// Every one, in declaration order.
    fn all() -> &'static [Self];
    /// Its name, as `--ablation` and scenario files spell it.
    fn bug_name(self) -> &'static str;
    /// What it removes, in a sentence.
    fn bug_describe(self) -> &'static str;
    /// Each one's name and description: what [`SystemDef::ablations`]
    /// returns.
    fn list() -> Vec<(&'static str, &'static str)> {
        Self::all()
            .iter()
            .map(|a| (a.bug_name(), a.bug_describe()))
            .collect()
    }
    /// Those named in `names`, in declaration order; names of other
    /// systems' bugs are left out.
    fn chosen(names: &[String]) -> Vec<Self> {
        Self::all()
            .iter()
            .copied()
            .filter(|a| names.iter().any(|n| n == a.bug_name()))
            .collect()
    }
}

/// Implement [`PlantedBug`](crate::system::PlantedBug) for an enum that has
/// `ALL` (every value), `name(self)` and `describe(self)`.
#[macro_export]
macro_rules! planted_bugs {
    ($ty:ty) => {
        impl $crate::system::PlantedBug for $ty {
            fn all() -> &'static [Self] {
                &<$ty>::ALL
            }
            fn bug_name(self) -> &'static str {
                <$ty>::name(self)
            }
            fn bug_describe(self) -> &'static str {
                <$ty>::describe(self)
            }
        }
    };
}

/// One named measurement of `percsim bench`: it runs and prints its own
/// lines.
#[derive(Clone, Copy)]
pub struct Measurement {
    /// Its name.
    pub name: &'static str,
    /// Whether it measures the simulator itself (`percsim bench
    /// --simulator` runs only those).
    pub simulator: bool,
    /// Run it and print its lines.
    pub run: fn(&BenchRun),
}

/// What the measurements of one `percsim bench` run share.
#[derive(Debug, Clone, Copy)]
pub struct BenchRun {
    /// Short runs (`--quick`).
    pub quick: bool,
    /// Simulated milliseconds of a workload phase.
    pub run_ms: u64,
    /// Seeds a throughput measurement runs.
    pub seeds: u64,
    /// No-op madsim RPCs per wall second measured at the start of the same
    /// run: the yardstick ratios are taken against.
    pub noop_rpc_per_s: f64,
}

/// A section of a campaign's summary: a title and labelled counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummarySection {
    /// The title, printed before the rows.
    pub title: &'static str,
    /// Its rows: (label, count); none prints `(none)`.
    pub rows: Vec<(String, u64)>,
}

/// Which systems, workloads, fault classes and planted bugs a campaign
/// draws from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mix {
    /// Systems by name; empty means the registry's default system.
    pub systems: Vec<String>,
    /// Workload names; empty means each system's default workloads.
    pub workloads: Vec<String>,
    /// Fault class names; empty means every class each system honours.
    pub faults: Vec<String>,
    /// Planted bugs (ablations) switched off, by name: each system takes
    /// its own.
    pub ablations: Vec<String>,
}

/// How `percsim ablations` runs a system's kill table.
#[derive(Debug, Clone, Default)]
pub struct KillTable {
    /// Only these planted bugs (empty: every one).
    pub only: Vec<String>,
    /// Seeds per planted bug at most.
    pub budget: u64,
    /// Parallel threads.
    pub jobs: usize,
    /// Runs spent shrinking each first failure.
    pub shrink_budget: usize,
    /// Disjoint seed ranges of `budget` seeds each (range `r` starts `r *
    /// budget` seeds in), for a table of the median and maximum seeds to
    /// the first failure; 1: one range, the plain table. Only a system
    /// whose [`SystemDef::kill_table_ranges`] says so takes more than one.
    pub ranges: u64,
}

/// What a kill table's "rule that fired" column says for a first failure:
/// its violated rules, or its verdict when no rule names it.
pub(crate) fn rules_fired(rules: &[String], verdict: &impl std::fmt::Debug) -> String {
    if rules.is_empty() {
        format!("{verdict:?}").to_lowercase()
    } else {
        rules.join(", ")
    }
}

/// Which middle value a ranged kill table's median takes of an even count
/// of ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Middle {
    /// The lower of the two middle values.
    Lower,
    /// The upper of the two middle values.
    Upper,
}

/// The median of the seeds to the first failure over ranges (`None`: a
/// range without one), such a range counting as more than any: `None`
/// when that is the median.
pub fn ranged_median(seeds: &[Option<u64>], middle: Middle) -> Option<u64> {
    let mut all: Vec<u64> = seeds.iter().map(|n| n.unwrap_or(u64::MAX)).collect();
    all.sort_unstable();
    let at = match middle {
        Middle::Lower => all.len().saturating_sub(1) / 2,
        Middle::Upper => all.len() / 2,
    };
    all.get(at).copied().filter(|n| *n != u64::MAX)
}

/// The most seeds to the first failure over ranges (`None` if a range had
/// no failure).
pub fn ranged_max(seeds: &[Option<u64>]) -> Option<u64> {
    seeds.iter().try_fold(0, |m, n| n.map(|n| m.max(n)))
}

/// The columns of a kill table over seed ranges ([`KillTable::ranges`]):
/// their headings, and which optional ones it has.
#[derive(Debug, Clone, Copy)]
pub struct RangedColumns {
    /// The first column's heading (the planted bug).
    pub name: &'static str,
    /// Whether it has a `safety?` column.
    pub safety: bool,
    /// The maximum's heading.
    pub max: &'static str,
    /// Whether it has a wall time column.
    pub wall: bool,
    /// The last column's heading (the rules that fired).
    pub rules: &'static str,
}

/// One row of a kill table over seed ranges, its cells as they are shown.
#[derive(Debug, Clone)]
pub struct RangedLine {
    /// The planted bug, or the faithful build.
    pub name: String,
    /// The `safety?` cell, when the table has that column.
    pub safety: Option<String>,
    /// The ranges caught.
    pub caught: String,
    /// The median seeds to the first failure.
    pub median: String,
    /// The most seeds to the first failure.
    pub max: String,
    /// The wall time over every range, when the table has that column.
    pub wall: Option<std::time::Duration>,
    /// The rules that fired.
    pub rules: String,
}

/// The seeds-to-failure cell of a ranged table: the count, or `none in
/// {budget}` when no count was reached.
pub fn ranged_cell(n: Option<u64>, budget: u64) -> String {
    n.map_or(format!("none in {budget}"), |n| n.to_string())
}

/// Render a kill table over seed ranges: its heading and one line per row,
/// in Markdown.
pub fn render_ranged(columns: &RangedColumns, lines: &[RangedLine]) -> String {
    let mut heads = vec![columns.name];
    if columns.safety {
        heads.push("safety?");
    }
    heads.extend([
        "ranges caught",
        "median seeds to first failure",
        columns.max,
    ]);
    if columns.wall {
        heads.push("wall time");
    }
    heads.push(columns.rules);
    let mut o = format!(
        "| {} |\n|{}\n",
        heads.join(" | "),
        "---|".repeat(heads.len())
    );
    for l in lines {
        let mut cells = vec![l.name.clone()];
        cells.extend(l.safety.clone().filter(|_| columns.safety));
        cells.extend([l.caught.clone(), l.median.clone(), l.max.clone()]);
        if columns.wall {
            let secs = l.wall.unwrap_or_default().as_secs_f64();
            cells.push(format!("{secs:.1} s"));
        }
        cells.push(l.rules.clone());
        o.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    o
}
