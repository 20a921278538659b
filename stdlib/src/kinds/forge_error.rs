//! What a forge can fail with, for every forge kind: the cases a caller tells apart (the head
//! moved, a precondition refused, the token lacks a capability, a rate limit) are variants, and
//! each message is the one line the run prints. A REST client's error is classified once, here
//! ([`From`]), and kept as the source; the call site adds what it was doing and the capability
//! the call needs ([`Calling::calling`]).

use crate::forge::LocalForgeError;
use crate::forge::github::MarkerError;
use crate::gather::GatherError;
use crate::git::{GitError, Sha};
use crate::github::GithubError;
use crate::gitlab::GitlabError;

/// A REST client's own error, kept whole (boxed: a forge's results stay small).
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Github(Box<GithubError>),
    #[error(transparent)]
    Gitlab(Box<GitlabError>),
}

impl From<GithubError> for ApiError {
    fn from(e: GithubError) -> Self {
        Self::Github(Box::new(e))
    }
}

impl From<GitlabError> for ApiError {
    fn from(e: GitlabError) -> Self {
        Self::Gitlab(Box::new(e))
    }
}

impl ApiError {
    /// The HTTP status, for an answer the forge gave.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Github(e) => e.status(),
            Self::Gitlab(e) => e.status(),
        }
    }

    /// What the forge said with an error status (its error JSON's message, quoted).
    pub fn message(&self) -> Option<&str> {
        match self {
            Self::Github(e) => match e.as_ref() {
                GithubError::Status { message, .. } => Some(message),
                _ => None,
            },
            Self::Gitlab(e) => match e.as_ref() {
                GitlabError::Status { message, .. } => Some(message),
                _ => None,
            },
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    /// `require-head`: the change's head is not the one reviewed; nothing was written.
    #[error(
        "the change's head moved since gather: it was {}, it is now {}; nothing was posted or kept",
        expected.short(),
        current.short()
    )]
    HeadMoved { expected: Sha, current: Sha },

    /// The forge holds a review of this head by a newer run or attempt; nothing was written.
    #[error("{0}: nothing was posted, and that review stands")]
    Superseded(crate::forge::Superseded),

    /// The newest diff version is not of the head pinned when the forge opened (GitLab).
    #[error(
        "the change's head moved since the forge opened: it was {}, GitLab's newest diff is of {newest}; nothing was reviewed",
        pinned.short()
    )]
    DiffMoved {
        pinned: Sha,
        /// What the forge named, quoted and cut to a short sha's length.
        newest: String,
    },

    /// A push landed while the diff's pages were read (GitLab): the pages may mix two heads.
    #[error(
        "merge request !{change} was pushed to while its diff was read (diff version {before}, now {after}): nothing was reviewed; run again"
    )]
    PushedDuringRead {
        change: u64,
        before: u64,
        after: u64,
    },

    /// `require-author`: the head's author is none of those named.
    #[error("`require-author`: {0}: nothing published")]
    AuthorRefused(#[from] crate::forge::AuthorMismatch),

    /// `require-author`: the head commit's author could not be read, so nothing vouches for it.
    #[error("`require-author`: cannot read the head commit {head}: {source}: nothing published")]
    AuthorUnreadable {
        head: String,
        #[source]
        source: Box<ForgeError>,
    },

    /// The forge has no such thing (a pull request, a commit): 404 or 410.
    #[error("{}{source}", prefix(doing))]
    NotFound { doing: String, source: ApiError },

    /// The token was refused (401): missing, expired or revoked.
    #[error("{}{source}", prefix(doing))]
    Unauthorized { doing: String, source: ApiError },

    /// The token is valid but may not do this (403): it lacks `capability`, when the call site
    /// named it.
    #[error("{}{source}", prefix(doing))]
    Forbidden {
        doing: String,
        capability: Option<&'static str>,
        source: ApiError,
    },

    /// The forge's rate limit (a 429, a 403 marked as one), after the client's waits.
    #[error("{}{source}", prefix(doing))]
    RateLimited { doing: String, source: ApiError },

    /// Any other error status, a timeout, or no answer at all.
    #[error("{}{source}", prefix(doing))]
    Http { doing: String, source: ApiError },

    /// An answer that is not what the forge sends: it does not decode, redirects, pages
    /// without end, or is over its cap.
    #[error("{}{source}", prefix(doing))]
    Malformed { doing: String, source: ApiError },

    /// A call refused by the client before it was made (its configuration or an argument).
    #[error("{}{source}", prefix(doing))]
    Invalid { doing: String, source: ApiError },

    /// An answer that decodes but does not hold what the run needs: a marker that does not
    /// parse, a head that is not a commit, a diff the forge left out.
    #[error("{0}")]
    Unusable(String),

    /// The forge's settings, its environment or the request, refused when the forge opens or
    /// before it writes.
    #[error("{0}")]
    Config(String),

    #[error("cannot write the review's marker: {0}")]
    Marker(#[from] MarkerError),

    #[error("cannot encode the {what}: {source}")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },

    /// Gathering the change refused it (too large, a bad path) or failed.
    #[error(transparent)]
    Gather(#[from] GatherError),

    /// The local forge's files: its record, its folder, a write.
    #[error("{}{source}", prefix(doing))]
    Local {
        doing: String,
        source: LocalForgeError,
    },

    /// git, for the local forge.
    #[error("{}{source}", prefix(doing))]
    Git { doing: String, source: GitError },

    /// The blocking thread running git or file work ended without an answer.
    #[error("a worker thread failed: {0}")]
    Worker(#[from] tokio::task::JoinError),
}

/// What the call site said it was doing, as the message's start.
fn prefix(doing: &str) -> String {
    if doing.is_empty() {
        String::new()
    } else {
        format!("{doing}: ")
    }
}

impl ForgeError {
    /// Says what the run was doing, before the message; variants without a context are kept.
    pub fn doing(mut self, what: impl Into<String>) -> Self {
        match &mut self {
            Self::NotFound { doing, .. }
            | Self::Unauthorized { doing, .. }
            | Self::Forbidden { doing, .. }
            | Self::RateLimited { doing, .. }
            | Self::Http { doing, .. }
            | Self::Malformed { doing, .. }
            | Self::Invalid { doing, .. }
            | Self::Local { doing, .. }
            | Self::Git { doing, .. } => *doing = what.into(),
            _ => {}
        }
        self
    }

    /// Names the capability the call needed, for a refusal of the token.
    pub fn needs(mut self, what: &'static str) -> Self {
        if let Self::Forbidden { capability, .. } = &mut self {
            *capability = Some(what);
        }
        self
    }

    /// Whether nothing was published because the change moved under the run: a later run
    /// reviews the new head.
    pub fn head_moved(&self) -> bool {
        matches!(
            self,
            Self::HeadMoved { .. }
                | Self::DiffMoved { .. }
                | Self::PushedDuringRead { .. }
                | Self::Local {
                    source: LocalForgeError::HeadMoved { .. },
                    ..
                }
        )
    }

    /// The capability a refused token lacks, when the call site named it.
    pub fn capability(&self) -> Option<&'static str> {
        match self {
            Self::Forbidden { capability, .. } => *capability,
            _ => None,
        }
    }

    /// The REST client's error, for a failed call.
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            Self::NotFound { source, .. }
            | Self::Unauthorized { source, .. }
            | Self::Forbidden { source, .. }
            | Self::RateLimited { source, .. }
            | Self::Http { source, .. }
            | Self::Malformed { source, .. }
            | Self::Invalid { source, .. } => Some(source),
            _ => None,
        }
    }

    /// The HTTP status, for an answer the forge gave.
    pub fn status(&self) -> Option<u16> {
        self.api().and_then(ApiError::status)
    }

    /// A client's error in the variant a caller tells apart.
    fn classify(source: ApiError, rate_limit: bool, invalid: bool, malformed: bool) -> Self {
        let doing = String::new();
        if invalid {
            return Self::Invalid { doing, source };
        }
        if rate_limit {
            return Self::RateLimited { doing, source };
        }
        if malformed {
            return Self::Malformed { doing, source };
        }
        match source.status() {
            Some(404 | 410) => Self::NotFound { doing, source },
            Some(401) => Self::Unauthorized { doing, source },
            Some(403) => Self::Forbidden {
                doing,
                capability: None,
                source,
            },
            Some(429) => Self::RateLimited { doing, source },
            _ => Self::Http { doing, source },
        }
    }
}

impl From<GithubError> for ForgeError {
    fn from(e: GithubError) -> Self {
        let rate_limit = e.is_rate_limit();
        let invalid = matches!(e, GithubError::Invalid(_));
        let malformed = matches!(
            e,
            GithubError::Decode { .. }
                | GithubError::TooLarge { .. }
                | GithubError::Redirect(_)
                | GithubError::Pagination(_)
        );
        Self::classify(e.into(), rate_limit, invalid, malformed)
    }
}

impl From<GitlabError> for ForgeError {
    fn from(e: GitlabError) -> Self {
        let rate_limit = matches!(e, GitlabError::RateLimited { .. });
        let invalid = matches!(e, GitlabError::Invalid(_));
        let malformed = matches!(
            e,
            GitlabError::Decode { .. }
                | GitlabError::TooLarge { .. }
                | GitlabError::Redirect(_)
                | GitlabError::Pagination(_)
        );
        Self::classify(e.into(), rate_limit, invalid, malformed)
    }
}

impl From<LocalForgeError> for ForgeError {
    fn from(source: LocalForgeError) -> Self {
        Self::Local {
            doing: String::new(),
            source,
        }
    }
}

impl From<GitError> for ForgeError {
    fn from(source: GitError) -> Self {
        Self::Git {
            doing: String::new(),
            source,
        }
    }
}

// A stage fails with the forge's message, as it did when the message was all there was.
impl From<ForgeError> for reviewflow_engine::run::StageError {
    fn from(e: ForgeError) -> Self {
        Self::failed(e.to_string())
    }
}

/// A call's error as a [`ForgeError`], with what the run was doing and the capability the call
/// needs (the token's permission or scope, named when the forge refuses it).
pub(crate) trait Calling<T> {
    fn calling(self, needs: &'static str, doing: impl FnOnce() -> String) -> Result<T, ForgeError>;
}

impl<T, E: Into<ForgeError>> Calling<T> for Result<T, E> {
    fn calling(self, needs: &'static str, doing: impl FnOnce() -> String) -> Result<T, ForgeError> {
        self.map_err(|e| e.into().needs(needs).doing(doing()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn github_status(status: u16, rate_limit: bool) -> GithubError {
        GithubError::Status {
            method: "POST",
            route: "/repos/o/r/check-runs".into(),
            status,
            message: "Resource not accessible by integration".into(),
            documentation_url: None,
            rate_limit,
        }
    }

    fn gitlab_status(status: u16) -> GitlabError {
        GitlabError::Status {
            method: "POST",
            route: "/projects/42/merge_requests/7/notes".into(),
            status,
            message: "403 Forbidden".into(),
        }
    }

    #[test]
    fn a_403_is_forbidden_and_names_the_capability_the_call_needs() {
        let r: Result<(), _> = Err(github_status(403, false));
        let e = r
            .calling("checks:write", || "the check run is not posted".into())
            .unwrap_err();
        assert!(matches!(e, ForgeError::Forbidden { .. }), "{e:?}");
        assert_eq!(e.capability(), Some("checks:write"));
        assert_eq!(e.status(), Some(403));
        // The message is the one the run printed before the errors were typed.
        assert_eq!(
            e.to_string(),
            "the check run is not posted: GitHub answered 403 to POST /repos/o/r/check-runs: \
             Resource not accessible by integration"
        );
        let e = ForgeError::from(gitlab_status(403)).needs("the `api` scope");
        assert_eq!(e.capability(), Some("the `api` scope"));
    }

    #[test]
    fn statuses_are_told_apart() {
        let kind = |e: ForgeError| match e {
            ForgeError::NotFound { .. } => "not found",
            ForgeError::Unauthorized { .. } => "unauthorized",
            ForgeError::Forbidden { .. } => "forbidden",
            ForgeError::RateLimited { .. } => "rate limited",
            ForgeError::Http { .. } => "http",
            ForgeError::Malformed { .. } => "malformed",
            ForgeError::Invalid { .. } => "invalid",
            _ => "other",
        };
        assert_eq!(kind(github_status(404, false).into()), "not found");
        assert_eq!(kind(github_status(401, false).into()), "unauthorized");
        // GitHub marks a secondary rate limit as a 403: it is a wait, not a missing permission.
        assert_eq!(kind(github_status(403, true).into()), "rate limited");
        let unprocessable = ForgeError::from(github_status(422, false));
        assert_eq!(
            unprocessable.api().and_then(ApiError::message),
            Some("Resource not accessible by integration")
        );
        assert_eq!(kind(unprocessable), "http");
        assert_eq!(kind(github_status(502, false).into()), "http");
        assert_eq!(kind(gitlab_status(429).into()), "rate limited");
        assert_eq!(kind(gitlab_status(410).into()), "not found");
        assert_eq!(
            kind(GithubError::decode("the pull request", "expected value").into()),
            "malformed"
        );
        assert_eq!(kind(GitlabError::Invalid("no".into()).into()), "invalid");
        let timeout = GithubError::Timeout {
            method: "GET",
            route: "/x".into(),
            after: std::time::Duration::from_secs(30),
        };
        assert_eq!(kind(timeout.into()), "http");
    }

    #[test]
    fn a_capability_is_named_only_on_a_refusal() {
        let r: Result<(), _> = Err(github_status(404, false));
        let e = r.calling("pull-requests:read", String::new).unwrap_err();
        assert_eq!(e.capability(), None);
        // No context: the client's message alone.
        assert_eq!(
            e.to_string(),
            "GitHub answered 404 to POST /repos/o/r/check-runs: Resource not accessible by integration"
        );
    }

    #[test]
    fn the_head_moved_refusal_is_a_variant_with_its_message() {
        let a = Sha::parse(&"a".repeat(40)).unwrap();
        let b = Sha::parse(&"b".repeat(40)).unwrap();
        let e = ForgeError::HeadMoved {
            expected: a.clone(),
            current: b.clone(),
        };
        assert!(e.head_moved());
        assert_eq!(
            e.to_string(),
            format!(
                "the change's head moved since gather: it was {}, it is now {}; nothing was posted or kept",
                a.short(),
                b.short()
            )
        );
        let local = ForgeError::from(LocalForgeError::HeadMoved {
            expected: a,
            current: b,
        });
        assert!(local.head_moved());
        assert!(!ForgeError::Config("x".into()).head_moved());
    }
}
