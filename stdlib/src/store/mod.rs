//! Stores of sealed blobs. A blob is kept under a [`StoreName`] (one per review, e.g.
//! `review-<change>-<project>`) as an [`Entry`] with its creation time, its producer record, its
//! size and SHA-256; a reader lists entries newest first, judges their producers, and fetches a
//! blob only within a size limit, verified against its digest. A tombstone entry says "the
//! conversation of this review was not kept".
//!
//! [`LocalStore`] keeps them in a folder, with the engine's atomic writes ([`atomic`], the one
//! recipe for the run directory and the stores).

pub use reviewflow_engine::atomic;
mod blobs;
mod entry;
mod error;
pub mod github_artifacts;
pub mod github_artifacts_rules;
pub mod gitlab_artifacts;
pub mod gitlab_artifacts_rules;
mod local;
mod name;

pub use atomic::{
    AtomicStep, AtomicWriteError, atomic_write, atomic_write_from, atomic_write_with,
};
pub use blobs::{BlobStore, Candidate, Fetched, Judgement, Keep, Kept};
pub use entry::{Entry, EntryId, EntryKind, Producer};
pub use error::StoreError;
pub use github_artifacts::{ArtifactTrust, ArtifactsConfig, GithubArtifacts};
pub use gitlab_artifacts::{GitlabArtifacts, GitlabArtifactsConfig, PipelineTrust};
pub use local::{BlobSource, DEFAULT_DIR, Listing, LocalStore, RetainReport, STALE_AFTER, Skipped};
pub use name::{MAX_NAME_LEN, StoreName, blob_name, name_refusal};
