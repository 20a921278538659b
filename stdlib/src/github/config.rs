//! What a [`Client`](super::Client) is built from: where the API is, the token, the repository,
//! and how long and how often to try.

use std::fmt;
use std::time::Duration;

use zeroize::Zeroizing;

use super::Repository;

/// GitHub.com's REST API, the default of `GITHUB_API_URL`.
pub const DEFAULT_API_URL: &str = "https://api.github.com";

/// How a failed call is tried again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all, the first included (1 = never retry).
    pub max_attempts: u32,
    /// The first backoff; each further one doubles, with jitter.
    pub base_delay: Duration,
    /// The longest single wait accepted. A `Retry-After` or rate-limit reset further away is
    /// a [`GithubError::RateLimited`](super::GithubError::RateLimited), not a wait.
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_secs(1),
            max_wait: Duration::from_secs(60),
        }
    }
}

/// Everything a client needs.
#[derive(Clone)]
pub struct ClientConfig {
    /// The REST API's root, e.g. `https://api.github.com` or `https://ghe.example/api/v3`.
    pub api_url: String,
    /// A personal token or `GITHUB_TOKEN`; `None` for anonymous reads.
    pub token: Option<Zeroizing<String>>,
    pub repository: Repository,
    /// Per call: one try, sending and reading the whole answer.
    pub timeout: Duration,
    pub retry: RetryPolicy,
}

impl ClientConfig {
    /// A configuration with the default timeout (30 s) and retry policy.
    pub fn new(
        api_url: impl Into<String>,
        token: Option<Zeroizing<String>>,
        repository: Repository,
    ) -> Self {
        Self {
            api_url: api_url.into(),
            token,
            repository,
            timeout: Duration::from_secs(30),
            retry: RetryPolicy::default(),
        }
    }
}

// Hand-written so that the token can never reach a log through `{:?}`.
impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("api_url", &self.api_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("repository", &self.repository)
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
            Some(Zeroizing::new("ghp_secretvalue".to_owned())),
            "o/r".parse().unwrap(),
        );
        let shown = format!("{config:?}");
        assert!(!shown.contains("ghp_secretvalue"), "{shown}");
        assert!(shown.contains("<redacted>"));
    }
}
