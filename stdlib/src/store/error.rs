//! What can go wrong in the local store.

use std::io;
use std::path::PathBuf;

use super::atomic::AtomicWriteError;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A hosted store's failure (an HTTP error, a malformed answer), said in one line.
    #[error("{0}")]
    Remote(String),

    /// The store is kept by a forge the pipeline does not use
    /// (`StoreContract::forge_refusal`'s words).
    #[error("{0}")]
    NeedsForge(String),

    #[error("invalid store name {name:?}: {reason}")]
    InvalidName { name: String, reason: &'static str },

    #[error("invalid entry id {id:?}")]
    InvalidEntryId { id: String },

    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    #[error(transparent)]
    Write(#[from] AtomicWriteError),

    #[error("cannot move {} into the store: it is not a regular file", path.display())]
    NotAFile { path: PathBuf },

    /// An entry's metadata file is unreadable or inconsistent. A listing skips it with this
    /// reason ([`super::Skipped`]) rather than refuse the whole store.
    #[error("corrupt store metadata {}: {reason}", path.display())]
    CorruptMetadata { path: PathBuf, reason: String },

    #[error("entry {id} of {name} is gone")]
    NotFound { name: String, id: String },

    #[error("entry {id} of {name} is a tombstone: it has no blob")]
    Tombstone { name: String, id: String },

    #[error("entry {id} of {name} is {size} bytes, over the limit of {max_bytes}")]
    TooLarge {
        name: String,
        id: String,
        size: u64,
        max_bytes: u64,
    },

    #[error("blob {id} of {name} is corrupt: {expected} bytes expected, {actual} found")]
    SizeMismatch {
        name: String,
        id: String,
        expected: u64,
        actual: u64,
    },

    #[error("blob {id} of {name} is corrupt: sha256 {expected} expected, {actual} found")]
    DigestMismatch {
        name: String,
        id: String,
        expected: String,
        actual: String,
    },
}

impl StoreError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }
}
