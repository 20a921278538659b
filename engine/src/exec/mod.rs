//! Execution: child processes, their confinement, and redaction.

pub mod confine;
pub mod egress;
pub mod process;
pub mod redact;
pub mod secret;
pub mod slot;
mod stack;

/// Schemas of the executor's formats: the run directory's manifest and events.
pub fn schemas() -> Vec<(&'static str, serde_json::Value)> {
    crate::run::schemas()
}
