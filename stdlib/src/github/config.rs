//! What a [`Client`](super::Client) is built from: where the API is, the token, the repository,
//! and how long and how often to try.

use std::fmt;
use std::time::Duration;

use zeroize::Zeroizing;

use super::Repository;

/// GitHub.com's REST API, the default of `GITHUB_API_URL`.
pub const DEFAULT_API_URL: &str = "https://api.github.com";

/// Why the API URL `url` is refused, if it is: the one rule for every API URL a run meets
/// (`forge "github" api-url=…`, `GITHUB_API_URL`), applied by [`Client::new`](super::Client::new)
/// and, for a URL written in the file, by `check` (`run-refusal`, through the forge contract), in
/// the same words. An allow-list (principle 3): `https`, and plain `http` only to this machine
/// (a test server); every other scheme, one never seen included, is refused, as are
/// credentials and a query in the URL.
pub fn api_url_refusal(url: &str) -> Option<String> {
    let url = url.trim().trim_end_matches('/');
    let quoted = super::error::quote(url);
    let Ok(uri) = url.parse::<http::Uri>() else {
        return Some(format!("the API URL {quoted:?} is not a URL"));
    };
    let (Some(scheme), Some(host)) = (uri.scheme_str(), uri.host().filter(|h| !h.is_empty()))
    else {
        return Some(format!(
            "the API URL {quoted:?} is not an absolute https URL"
        ));
    };
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) || uri.query().is_some() {
        return Some(format!(
            "the API URL {quoted:?} may not hold credentials or a query"
        ));
    }
    match scheme.to_ascii_lowercase().as_str() {
        "https" => None,
        "http" if loopback(host) => None,
        "http" => Some(format!(
            "the API URL {quoted:?} is plain http to another machine: the token and every review would cross the network in the clear (https only; plain http only to this machine, 127.0.0.1, ::1 or localhost, for a test server)"
        )),
        other => Some(format!(
            "the API URL {quoted:?} has the scheme `{}`: only https is admitted (and plain http to this machine, 127.0.0.1, ::1 or localhost, for a test server)",
            super::error::quote(other)
        )),
    }
}

/// `localhost`, `127.0.0.0/8` or `::1`.
fn loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

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

#[cfg(test)]
mod url_tests {
    use super::api_url_refusal;

    #[test]
    fn https_and_loopback_http_are_admitted_everything_else_refused() {
        for good in [
            "https://api.github.com",
            "HTTPS://github.example.com/api/v3/",
            "http://127.0.0.1:8080",
            "http://127.3.4.5",
            "http://[::1]:9000/api",
            "http://localhost:3000",
        ] {
            assert_eq!(api_url_refusal(good), None, "{good}");
        }
        for (bad, words) in [
            (
                "http://github.example.com/api/v3",
                "plain http to another machine",
            ),
            ("http://10.0.0.1", "plain http to another machine"),
            (
                "http://localhost.evil.example",
                "plain http to another machine",
            ),
            ("ftp://github.example.com", "the scheme `ftp`"),
            ("gopher://x", "the scheme `gopher`"),
            ("ws://127.0.0.1", "the scheme `ws`"),
            ("/api/v3", "not an absolute https URL"),
            ("not a url", "not a URL"),
            (
                "https://user:pw@github.example.com",
                "credentials or a query",
            ),
            ("https://github.example.com/?a=b", "credentials or a query"),
        ] {
            let why = api_url_refusal(bad).unwrap_or_default();
            assert!(why.contains(words), "{bad}: {why}");
        }
    }
}
