//! Exporting a pipeline to a CI system's jobs (`docs/export.md`). The partition of stages into
//! jobs is the part every exporter shares.

pub mod fit;
pub mod github;
pub mod partition;

pub use partition::{Carries, Job, Partition, Reason, partition};
