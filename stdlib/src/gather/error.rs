//! What can stop a gather.

use std::io;

use crate::forge::LocalForgeError;
use crate::git::GitError;

#[derive(Debug, thiserror::Error)]
pub enum GatherError {
    #[error(transparent)]
    Forge(#[from] LocalForgeError),

    #[error(transparent)]
    Git(#[from] GitError),

    #[error("invalid path {path:?}: {reason}")]
    BadPath { path: String, reason: &'static str },

    #[error(
        "the {what} is {} bytes, over the limit of {limit} bytes (max-bytes); \
         review a smaller change or cut it to a path",
        if *exact { size.to_string() } else { format!("more than {size}") }
    )]
    TooLarge {
        what: &'static str,
        limit: u64,
        /// The size read, exact or (when reading stopped early) a lower bound.
        size: u64,
        exact: bool,
    },

    #[error("cannot read the output of `git diff-tree`: {0}")]
    Read(#[source] io::Error),
}
