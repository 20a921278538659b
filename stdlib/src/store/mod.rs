//! Stores of sealed blobs. A blob is kept under a [`StoreName`] (one per review, e.g.
//! `review-<change>-<project>`) as an [`Entry`] with its creation time, its producer record, its
//! size and SHA-256; a reader lists entries newest first, judges their producers, and fetches a
//! blob only within a size limit, verified against its digest. A tombstone entry says "the
//! conversation of this review was not kept".
//!
//! [`LocalStore`] keeps them in a folder. [`atomic`] is the atomic-write helper it is built on,
//! shared with the rest of reviewflow (run manifests, reports).

pub mod atomic;
mod blobs;
mod entry;
mod error;
pub mod github_artifacts;
mod local;
mod name;
mod unique;

pub use atomic::{
    AtomicStep, AtomicWriteError, atomic_write, atomic_write_from, atomic_write_with,
};
pub use blobs::{BlobStore, Candidate, Fetched, Judgement, Keep, Kept};
pub use entry::{Entry, EntryId, EntryKind, Producer};
pub use error::StoreError;
pub use github_artifacts::{ArtifactTrust, ArtifactsConfig, GithubArtifacts};
pub use local::{BlobSource, DEFAULT_DIR, LocalStore, RetainReport, STALE_AFTER};
pub use name::{MAX_NAME_LEN, StoreName};
