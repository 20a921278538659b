//! The GitLab REST v4 client that the `gitlab` forge uses.
//!
//! No SDK: hyper (the HTTP stack under the GitHub client too), with the forge-neutral pieces of
//! [`crate::github`] shared rather than copied: the capped body read, `Link` parsing and
//! origins, the retry rules and quoting. The token goes in the `PRIVATE-TOKEN` header, to the
//! API's origin only: never in a URL, never to a next page on another host, never logged.

mod ci;
mod client;
mod config;
mod diff;
mod error;
mod models;
mod pages;
mod rest;
mod transport;

pub use ci::{Job, JobArtifact, PipelineFilter, PipelineInfo};
pub use client::{CallCounts, Client, MAX_JSON_BYTES};
pub use config::{ClientConfig, DEFAULT_API_URL, api_url_refusal};
pub use diff::unified_diff;
pub use error::GitlabError;
pub use models::{
    CommitStatus, Comparison, DiffFile, DiffRefs, DiffVersion, Discussion, MergeRequest, Note,
    Position, RepoCommit, User,
};
pub use pages::{MAX_PAGES, Paging};
pub use rest::{MAX_DIFF_PAGES, MAX_DISCUSSION_PAGES, MAX_NOTE_CHARS, MAX_NOTE_PAGES};
