//! Why a run could not start (exit 2). A run that starts and fails is a [`RunReport`] instead.
//!
//! [`RunReport`]: super::RunReport

use std::path::PathBuf;

use super::resume::ResumeError;
use crate::exec::redact::RedactError;
use crate::finding::Finding;
use crate::inputs::InputError;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The pipeline has live error-level findings.
    #[error("the pipeline does not pass check ({} error(s))", findings.len())]
    Check { findings: Vec<Finding> },
    /// Stage kinds with no implementation in this build, with the stages that use them.
    #[error("{}", unimplemented_message(kinds))]
    Unimplemented { kinds: Vec<(String, Vec<String>)> },
    #[error("{}", errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Inputs { errors: Vec<InputError> },
    #[error(transparent)]
    Redactor(#[from] RedactError),
    #[error(transparent)]
    Resume(#[from] ResumeError),
    /// `--stages` names no stage of the pipeline, or needs what the parent did not complete.
    #[error("{message}")]
    Stages { message: String },
    /// The async runtime or the signal handlers could not be set up.
    #[error("cannot start the runtime: {source}")]
    Runtime {
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create the run directory {}: {source}", path.display())]
    RunDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn unimplemented_message(kinds: &[(String, Vec<String>)]) -> String {
    kinds
        .iter()
        .map(|(k, stages)| {
            format!(
                "{k} has no implementation in this build (used by {})",
                stages
                    .iter()
                    .map(|s| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
