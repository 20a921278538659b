//! The one trait every stage kind implements.

use std::future::Future;
use std::pin::Pin;

use super::context::StageCx;
use super::stage_error::StageError;
use super::value::StageOutputs;

/// A boxed, sendable future: what [`StageImpl::run`] returns, so the trait stays dyn-compatible.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The implementation of one stage kind (`run`, `std/seal`, …), registered in
/// [`Implementations`](super::Implementations).
///
/// `run` returns the stage's outputs; the builtin `ok` is added by the executor. It must honour
/// `cx.cancel`: once it fires, end any child process (SIGTERM, grace, SIGKILL) and return
/// [`StageError::Cancelled`]. Every message it returns or reports is redacted before it is shown.
/// A stage that finds nothing left to do asks the run to stop with
/// [`StageCx::request_stop`](super::StageCx::request_stop) and returns its outputs.
pub trait StageImpl: Send + Sync {
    fn run<'a>(&'a self, cx: StageCx<'a>) -> BoxFuture<'a, Result<StageOutputs, StageError>>;

    /// Whether the stage's work is the one program it starts, so that it takes its slot of the
    /// run's `--jobs` only for that program's life (prepared before, kept after: docs/executor.md,
    /// "Scheduling"). A stage that does work of its own holds its slot for its whole run.
    fn slot_per_program(&self) -> bool {
        false
    }
}
