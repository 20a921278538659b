//! How a stage reports failure: [`StageError`], which the stage's context and the keeping of
//! its outputs return too.

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
