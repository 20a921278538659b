//! What a GitLab call can fail with. Every message is one line, quotes at most
//! [`MAX_QUOTE`](crate::github::MAX_QUOTE) characters of anything a server sent, and never holds
//! the token (the token is never handed to this module).

use std::time::{Duration, SystemTime};

use crate::github::error::quote;

#[derive(Debug, thiserror::Error)]
pub enum GitlabError {
    /// A configuration or argument refused before any call.
    #[error("{0}")]
    Invalid(String),

    /// GitLab answered with an error status; `message` is read from its error JSON
    /// (`{"message": …}`, `{"error": …, "error_description": …}`).
    #[error("GitLab answered {status} to {method} {route}: {message}")]
    Status {
        method: &'static str,
        route: String,
        status: u16,
        message: String,
    },

    /// The rate limit ends later than the longest wait accepted.
    #[error("rate limited until {} ({method} {route})", crate::github::format_utc(*until))]
    RateLimited {
        method: &'static str,
        route: String,
        until: SystemTime,
    },

    #[error("{method} {route} timed out after {}s", after.as_secs_f64())]
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

    /// An answer that is not what GitLab sends (garbage JSON, a missing field).
    #[error("cannot decode {what}: {error}")]
    Decode { what: String, error: String },

    /// A body over its cap; reading stopped there.
    #[error("{what} is over the limit of {limit} bytes")]
    TooLarge { what: String, limit: u64 },

    /// A redirect: a JSON call never follows one.
    #[error("redirect: {0}")]
    Redirect(String),

    /// A next page on another host than the API's, a page read twice, or a listing past its cap.
    #[error("pagination: {0}")]
    Pagination(String),
}

impl GitlabError {
    /// The HTTP status, for an answer GitLab gave.
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

/// The message of GitLab's error JSON, quoted: `{"message": "404 Not found"}`, a validation
/// error's `{"message": {"body": ["is too long"]}}` (each field and its reasons), an
/// authentication error's `{"error": "invalid_token", "error_description": "…"}`. Empty when
/// the body is none of these.
pub(crate) fn error_message(body: &[u8]) -> String {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return String::new();
    };
    let text = match (value.get("message"), value.get("error")) {
        (Some(serde_json::Value::String(s)), _) => s.clone(),
        (Some(serde_json::Value::Object(fields)), _) => fields
            .iter()
            .map(|(field, reasons)| match reasons {
                serde_json::Value::Array(list) => {
                    let words: Vec<String> = list
                        .iter()
                        .map(|r| r.as_str().map_or_else(|| r.to_string(), str::to_owned))
                        .collect();
                    format!("{field} {}", words.join(", "))
                }
                other => format!("{field} {}", other.as_str().unwrap_or_default()),
            })
            .collect::<Vec<_>>()
            .join("; "),
        (Some(serde_json::Value::Array(list)), _) => list
            .iter()
            .filter_map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join("; "),
        (_, Some(serde_json::Value::String(error))) => {
            match value.get("error_description").and_then(|d| d.as_str()) {
                Some(d) => format!("{error}: {d}"),
                None => error.clone(),
            }
        }
        _ => String::new(),
    };
    quote(text.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_of_gitlabs_error_json_is_read() {
        assert_eq!(
            error_message(br#"{"message":"404 Not found"}"#),
            "404 Not found"
        );
        assert_eq!(
            error_message(
                br#"{"message":{"body":["is too long (maximum is 1000000 characters)"]}}"#
            ),
            "body is too long (maximum is 1000000 characters)"
        );
        assert_eq!(
            error_message(br#"{"error":"invalid_token","error_description":"Token was revoked. You have to re-authorize from the user."}"#),
            "invalid_token: Token was revoked. You have to re-authorize from the user."
        );
        assert_eq!(
            error_message(br#"{"error":"insufficient_scope"}"#),
            "insufficient_scope"
        );
        assert_eq!(error_message(b"<html>502</html>"), "");
        let long = format!("{{\"message\":\"{}\\n{}\"}}", "x".repeat(300), "y");
        let m = error_message(long.as_bytes());
        assert!(!m.contains('\n') && m.chars().count() <= 201, "{m}");
    }

    #[test]
    fn messages_are_one_line() {
        let e = GitlabError::Status {
            method: "GET",
            route: "/projects/42/merge_requests/7".into(),
            status: 404,
            message: "404 Not found".into(),
        };
        assert_eq!(
            e.to_string(),
            "GitLab answered 404 to GET /projects/42/merge_requests/7: 404 Not found"
        );
        assert_eq!(e.status(), Some(404));
    }
}
