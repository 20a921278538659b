//! What a [`Client`](super::Client) is built from: where the API is, the token, the project,
//! and how long and how often to try.

use std::fmt;
use std::time::Duration;

use zeroize::Zeroizing;

use crate::github::RetryPolicy;

/// GitLab.com's REST API, the default when neither the forge's `api-url` nor `CI_API_V4_URL`
/// names one.
pub const DEFAULT_API_URL: &str = "https://gitlab.com/api/v4";

/// Why the API URL `url` is refused, if it is: the GitHub forge's rule, word for word (`https`,
/// and plain `http` only to this machine for a test server; no credentials or query), so both
/// forges judge an API URL alike. `check` reports it through the forge contract in the same
/// words.
pub fn api_url_refusal(url: &str) -> Option<String> {
    crate::github::api_url_refusal(url)
}

/// Everything a client needs.
#[derive(Clone)]
pub struct ClientConfig {
    /// The REST API's root, e.g. `https://gitlab.com/api/v4` (`CI_API_V4_URL`).
    pub api_url: String,
    /// A project or group access token (or a personal one), sent as `PRIVATE-TOKEN`; `None` for
    /// anonymous reads.
    pub token: Option<Zeroizing<String>>,
    /// The project's numeric id (`CI_PROJECT_ID`) or its full path (`group/project`), encoded
    /// into routes by the client.
    pub project: String,
    /// Per call: one try, sending and reading the whole answer.
    pub timeout: Duration,
    pub retry: RetryPolicy,
}

impl ClientConfig {
    /// A configuration with the default timeout (30 s) and retry policy.
    pub fn new(
        api_url: impl Into<String>,
        token: Option<Zeroizing<String>>,
        project: impl Into<String>,
    ) -> Self {
        Self {
            api_url: api_url.into(),
            token,
            project: project.into(),
            timeout: Duration::from_secs(30),
            retry: RetryPolicy::default(),
        }
    }
}

// By hand, so that the token can never reach a log through `{:?}`.
impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("api_url", &self.api_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("project", &self.project)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_token() {
        let config = ClientConfig::new(
            DEFAULT_API_URL,
            Some(Zeroizing::new("glpat-secretvalue".to_owned())),
            "42",
        );
        let shown = format!("{config:?}");
        assert!(!shown.contains("glpat-secretvalue"), "{shown}");
        assert!(shown.contains("<redacted>"));
    }

    #[test]
    fn the_url_rule_is_the_github_forges() {
        assert_eq!(api_url_refusal("https://gitlab.example.com/api/v4"), None);
        assert_eq!(api_url_refusal("http://127.0.0.1:8080/api/v4"), None);
        let why = api_url_refusal("http://gitlab.example.com/api/v4").unwrap_or_default();
        assert!(why.contains("plain http to another machine"), "{why}");
    }
}
