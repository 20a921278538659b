//! Exporting a pipeline to a CI system's jobs (`docs/export.md`). The partition of stages into
//! jobs is the part every exporter shares; each platform's exporter is its own (the standard
//! library's).

pub mod partition;
pub mod target;

pub use partition::{Carries, Job, Partition, Reason, partition};
pub use target::{ExportOption, Exporter, Request};
