//! The GitHub REST client that the `github` forge and the `github-artifacts` store share.
//!
//! Built on octocrab as the HTTP and auth layer; retries, timeouts, byte caps, pagination and
//! redirects are ours (see [`client`] for why and how). The token goes to the API's origin only:
//! never to a next page on another host, never to artifact storage.
//!
//! The forge-neutral pieces (a capped body read, `Link` parsing and origins, the retry rules,
//! quoting) are `pub(crate)` for the GitLab client, which shares them rather than copies them.

pub(crate) mod body;
mod client;
mod clock;
mod config;
mod download;
mod env;
pub(crate) mod error;
pub(crate) mod link;
mod models;
mod pages;
mod repository;
mod rest;
pub(crate) mod retry;

pub use client::{CallCounts, Client, MAX_JSON_BYTES};
pub use clock::{format_utc, parse_rfc3339};
pub use config::{ClientConfig, DEFAULT_API_URL, RetryPolicy, api_url_refusal};
pub use download::MAX_REDIRECTS;
pub use env::{ActionsEnv, DEFAULT_SERVER_URL, MAX_EVENT_BYTES};
pub use error::{GithubError, MAX_QUOTE};
pub use models::{
    Artifact, ArtifactRun, CheckRun, Commit, CommitDetail, GitActor, IssueComment, PullBase,
    PullHead, PullRequest, RepoName, Review, ReviewComment, User, WorkflowRun,
};
pub use pages::MAX_PAGES;
pub use repository::{InvalidRepository, Repository};
pub use rest::{MAX_COMMENT_CHARS, MAX_COMMENT_PAGES};
