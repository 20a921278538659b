//! `export github`: the GitHub Actions workflow of a pipeline (`docs/export.md`), written from
//! the engine's partition of its stages into jobs.

pub mod fit;
pub mod workflow;
