//! Execution: child processes, redaction, and (soon) the scheduler.

pub mod process;
pub mod redact;
pub mod secret;

/// Schemas of the executor's formats (none yet).
pub fn schemas() -> Vec<(&'static str, serde_json::Value)> {
    Vec::new()
}
