//! The script engine's tests (`src/script/tests.rs`) built from outside the
//! crate: a system living in a test folder implements the engine's traits
//! with the public surface of `percsim_scenarios::script` alone.

use percsim_scenarios::script::*;
use percsim_sim::Fault;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

#[path = "../src/script/tests.rs"]
mod engine;
