//! Execution: child processes, redaction (the scheduler comes later).

pub mod process;
pub mod redact;
pub mod secret;
