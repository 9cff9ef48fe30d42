//! A toy system that lives outside the testbed's core, as an example of
//! adding a system (see `docs/adding-a-system.md`): a single-key register
//! behind one primary. Everything it is lives in this folder; a test
//! registers it with `percsim_scenarios::systems::register` and drives it
//! through the generic paths (scenario files, campaigns, judging, capsules,
//! shrinking, scripts).
//!
//! - [`protocol`]: its steps, pure (versions, timestamps, crash points, the
//!   planted bug);
//! - [`config`]: its scenario-file section and workload;
//! - [`world`]: its nodes, messages and durable state in the simulated
//!   world (`System`, `Tenant`);
//! - [`def`]: its `SystemDef` and `SystemSpec`;
//! - [`script`]: its verbs for the script engine (`ScriptSystem`).

#![allow(dead_code)]

pub mod config;
pub mod def;
pub mod protocol;
pub mod script;
pub mod world;

pub use def::{NAME, TOY};
