//! How a stage and a run ended.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How one stage ended (see docs/executor.md, "Outcomes").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Ran and returned its outputs.
    Succeeded,
    /// Taken from the parent run, outputs verified by digest.
    Reused,
    /// Failed under `on-error="fallback"`, or disabled by a missing secret: fallback outputs.
    FellBack,
    /// Its `when` was false, it failed under `on-error="skip"`, or a producer was skipped.
    Skipped,
    /// Failed under `on-error="fail"`: the run fails.
    Failed,
    /// Running when the run was interrupted.
    Cancelled,
    /// Never started: the run stopped first (a failure, an interruption, a stage's stop).
    NotRun,
}

impl Outcome {
    /// Completed with its real outputs: reusable by a resume.
    pub fn completed(self) -> bool {
        matches!(self, Self::Succeeded | Self::Reused)
    }

    /// How a sentence says it: `` `review` fell back ``.
    pub fn past(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Reused => "was reused",
            Self::FellBack => "fell back",
            Self::Skipped => "was skipped",
            Self::Failed => "failed",
            Self::Cancelled => "was cancelled",
            Self::NotRun => "did not run",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Reused => "reused",
            Self::FellBack => "fell-back",
            Self::Skipped => "skipped",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::NotRun => "not-run",
        }
    }
}

/// How the run ended; `Running` in the manifest written at the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    Running,
    // Also a run a stage stopped: the manifest's `stopped` says so.
    Succeeded,
    Failed,
    /// Interrupted by SIGINT or SIGTERM.
    Cancelled,
}

impl RunStatus {
    pub fn name(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// Exit codes (docs/executor.md).
pub const EXIT_OK: u8 = 0;
pub const EXIT_FAILED: u8 = 1;
pub const EXIT_UNUSABLE: u8 = 2;
pub const EXIT_SIGINT: u8 = 130;
pub const EXIT_SIGTERM: u8 = 143;

/// The exit code of a run interrupted by `signal`.
pub fn exit_for_signal(signal: i32) -> u8 {
    match signal {
        libc::SIGINT => EXIT_SIGINT,
        libc::SIGTERM => EXIT_SIGTERM,
        other => 128u8.saturating_add(u8::try_from(other).unwrap_or(0)),
    }
}
