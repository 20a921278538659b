//! The one trait every stage kind implements, and how a stage reports failure.

use std::future::Future;
use std::pin::Pin;

use super::context::StageCx;
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
}

/// Why a stage did not produce its outputs. The stage's `on-error` decides what follows.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// The stage ran and failed; the message says why (one line, no secret: it is redacted
    /// anyway).
    #[error("{message}")]
    Failed { message: String },
    /// The stage stopped because its cancellation signal fired.
    #[error("cancelled")]
    Cancelled,
    /// A file operation of the stage failed.
    #[error("cannot {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl StageError {
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
        }
    }

    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            what: what.into(),
            source,
        }
    }
}
