//! What can go wrong in the local forge. Ids and paths echoed back are bounded: they may come
//! from a hostile record.

use std::io;
use std::path::PathBuf;

use crate::git::{GitError, Sha};
use crate::store::AtomicWriteError;

#[derive(Debug, thiserror::Error)]
pub enum LocalForgeError {
    #[error(transparent)]
    Git(#[from] GitError),

    #[error("invalid {what} {value:?}: {reason}")]
    BadId {
        what: &'static str,
        value: String,
        reason: &'static str,
    },

    #[error(
        "the change's head moved since gather: it was {expected}, it is now {current}; \
         the review is not recorded as the current one"
    )]
    HeadMoved { expected: Sha, current: Sha },

    #[error(
        "the review names head {review} but the head to post for is {expected}; \
         the review is not recorded"
    )]
    ReviewHeadMismatch { review: Sha, expected: Sha },

    #[error("the posted-review record {} is not trusted: {reason}", path.display())]
    BadRecord {
        path: PathBuf,
        reason: super::record::RecordError,
    },

    #[error("{} is a symbolic link or not a folder; the local forge does not follow it", path.display())]
    NotAFolder { path: PathBuf },

    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    #[error(transparent)]
    Write(#[from] AtomicWriteError),

    #[error("cannot encode the {what}: {source}")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

/// Longest piece of input echoed back in an error.
pub(crate) const MAX_ECHO: usize = 160;

pub(crate) fn echo(text: &str) -> String {
    text.chars().take(MAX_ECHO).collect()
}
