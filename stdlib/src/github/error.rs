//! What a GitHub call can fail with. Every message is one line, quotes at most
//! [`MAX_QUOTE`] characters of anything a server sent, and never holds the token (the token is
//! never handed to this module) or a redirect's query string (a blob URL's signature).

use std::time::{Duration, SystemTime};

use super::clock;

/// The most characters of a server's text an error quotes.
pub const MAX_QUOTE: usize = 200;

#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    /// A configuration or argument refused before any call.
    #[error("{0}")]
    Invalid(String),

    /// GitHub answered with an error status; `message` is its error JSON's `message`.
    #[error("GitHub answered {status} to {method} {route}: {message}")]
    Status {
        method: &'static str,
        route: String,
        status: u16,
        message: String,
        /// Kept for callers, left out of the message.
        documentation_url: Option<String>,
        /// A 403 or 429 that GitHub marked as a rate limit, after the retries ran out.
        rate_limit: bool,
    },

    /// The rate limit ends later than the longest wait accepted.
    #[error("rate limited until {} ({method} {route})", clock::format_utc(*until))]
    RateLimited {
        method: &'static str,
        route: String,
        until: SystemTime,
    },

    #[error("{method} {route} timed out after {}", seconds(*after))]
    Timeout {
        method: &'static str,
        route: String,
        after: Duration,
    },

    /// No HTTP answer: the connection failed or broke.
    #[error("cannot reach {host} for {method} {route}: {error}")]
    Transport {
        method: &'static str,
        route: String,
        host: String,
        error: String,
    },

    /// An answer that is not what GitHub sends (garbage JSON, a missing field).
    #[error("cannot decode {what}: {error}")]
    Decode { what: String, error: String },

    /// A body over its cap; reading stopped there.
    #[error("{what} is over the limit of {limit} bytes")]
    TooLarge { what: String, limit: u64 },

    /// A redirect loop, a redirect without `Location`, or one where none is expected.
    #[error("redirect: {0}")]
    Redirect(String),

    /// A `Link` next page on another host than the API's, or a pagination that does not end.
    #[error("pagination: {0}")]
    Pagination(String),
}

impl GithubError {
    /// Whether this is GitHub's rate limit (primary or secondary).
    pub fn is_rate_limit(&self) -> bool {
        matches!(
            self,
            Self::RateLimited { .. }
                | Self::Status {
                    rate_limit: true,
                    ..
                }
        )
    }

    /// The HTTP status, for an answer GitHub gave.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    pub(crate) fn decode(what: impl Into<String>, error: impl std::fmt::Display) -> Self {
        Self::Decode {
            what: what.into(),
            error: quote(&error.to_string()),
        }
    }
}

/// A server's (or a library's) text made safe for a one-line message: control characters
/// become spaces, and only the first [`MAX_QUOTE`] characters are kept.
pub fn quote(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(MAX_QUOTE)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().nth(MAX_QUOTE).is_some() {
        out.push('…');
    }
    out
}

/// An error and its sources, joined with `: `, quoted. Library errors repeat their source in
/// their own message at times; a part already contained in the previous one is skipped.
pub(crate) fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        let text = e.to_string();
        if !parts.last().is_some_and(|last| last.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    quote(&parts.join(": "))
}

fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_short_and_one_line() {
        let long = format!("line one\nline two\r{}", "x".repeat(500));
        let q = quote(&long);
        assert!(!q.contains('\n') && !q.contains('\r'));
        assert_eq!(q.chars().count(), MAX_QUOTE + 1);
        assert_eq!(quote("short"), "short");
    }

    #[test]
    fn the_documentation_url_stays_out_of_the_message() {
        let e = GithubError::Status {
            method: "GET",
            route: "/repos/o/r/pulls/1".into(),
            status: 404,
            message: "Not Found".into(),
            documentation_url: Some("https://docs.github.com/rest".into()),
            rate_limit: false,
        };
        assert_eq!(
            e.to_string(),
            "GitHub answered 404 to GET /repos/o/r/pulls/1: Not Found"
        );
        assert!(!e.is_rate_limit());
    }

    #[test]
    fn timeouts_say_how_long() {
        let e = GithubError::Timeout {
            method: "GET",
            route: "/x".into(),
            after: Duration::from_millis(300),
        };
        assert_eq!(e.to_string(), "GET /x timed out after 0.3s");
    }
}
