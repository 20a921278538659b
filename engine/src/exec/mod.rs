//! Execution: child processes, redaction (the scheduler comes later).

pub mod process;
pub mod redact;

/// Schemas of the executor's formats (none yet).
pub fn schemas() -> Vec<(&'static str, serde_json::Value)> {
    Vec::new()
}
