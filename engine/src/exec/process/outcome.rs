//! What a finished child reports: how it ended, how long it ran, and its captured output.

use std::process::ExitStatus;
use std::time::Duration;

/// Which output stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    /// The child's standard output.
    Stdout,
    /// The child's standard error.
    Stderr,
}

/// How the child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It exited by itself with this code.
    Exited(i32),
    /// A signal it did not send itself ended it (not one sent for a timeout or cancellation).
    Signalled(i32),
    /// Its timeout passed; it was terminated (see [`ChildResult::forced_kill`]).
    TimedOut,
    /// It was cancelled; it was terminated (see [`ChildResult::forced_kill`]).
    Cancelled,
}

impl Outcome {
    /// Whether the child exited by itself with code 0.
    pub fn success(self) -> bool {
        self == Outcome::Exited(0)
    }
}

/// The result of one supervised child. The child has been reaped when this exists.
#[derive(Debug, Clone)]
pub struct ChildResult {
    /// How it ended.
    pub outcome: Outcome,
    /// The raw wait status (for a timed-out child: how the termination ended it).
    pub status: ExitStatus,
    /// From spawn to reap.
    pub duration: Duration,
    /// Whether SIGKILL was needed because SIGTERM was not obeyed within the grace period.
    pub forced_kill: bool,
    /// Standard output, redacted, up to the spec's `capture_stdout` cap (empty without one).
    pub stdout: Vec<u8>,
    /// Whether standard output was longer than the cap.
    pub stdout_truncated: bool,
}

impl ChildResult {
    /// A child cancelled before it was started (it waited for a slot): nothing ran.
    pub(crate) fn cancelled_before_start() -> Self {
        use std::os::unix::process::ExitStatusExt as _;
        Self {
            outcome: Outcome::Cancelled,
            status: ExitStatus::from_raw(0),
            duration: Duration::ZERO,
            forced_kill: false,
            stdout: Vec::new(),
            stdout_truncated: false,
        }
    }
}
