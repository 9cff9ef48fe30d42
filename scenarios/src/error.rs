//! Why a scenario could not be read or run.

/// Why a scenario could not be read or run.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The JSON is malformed or does not fit the format.
    #[error("bad scenario: {0}")]
    Parse(String),
    /// A value is impossible.
    #[error("bad scenario: {0}")]
    Invalid(String),
    /// The simulation panicked (a bug in the simulator or a tripped
    /// assertion); the message is the panic's.
    #[error("the simulation crashed: {0}")]
    Crashed(String),
    /// The watchdog ended a run that stopped making progress.
    #[error("the run was stuck: {0}")]
    Stuck(String),
}

/// A configuration error of a run as a scenario error. A field named
/// `world.<path>` is the world's; a field named as the system is a problem
/// that names its own field; any other is the system's section's.
pub fn config_error(system: &str, e: percsim_sim::ConfigError) -> ScenarioError {
    if e.field == system {
        ScenarioError::Invalid(e.problem)
    } else if e.field.starts_with("world.") {
        ScenarioError::Invalid(format!("{}: {}", e.field, e.problem))
    } else {
        ScenarioError::Invalid(format!("{system}.{}: {}", e.field, e.problem))
    }
}
