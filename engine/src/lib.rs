//! reviewflow engine: `syntax → model → check → plan → run`.

pub mod exec;
