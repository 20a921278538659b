//! The client: one project's routes under the API's root, each call tried under the retry rules
//! of the GitHub client ([`crate::github::retry`]: backoff on 5xx and broken connections for
//! reads only, `Retry-After` on 429), each try under a timeout, each body read under a cap.
//!
//! The token: a project or group access token (or a personal one) goes in the `PRIVATE-TOKEN`
//! header, marked sensitive, and only on requests to the API's own origin (a next page elsewhere
//! is refused before it is asked for). `Authorization: Bearer` would do for the same tokens;
//! `PRIVATE-TOKEN` is the header GitLab documents for them, and a `CI_JOB_TOKEN` (which needs
//! `JOB-TOKEN`) is refused by the forge before a client is built: it cannot write a note or a
//! commit status on most instances.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Uri};
use http_body_util::Full;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::error_message;
use super::transport::Transport;
use super::{ClientConfig, GitlabError};
use crate::github::RetryPolicy;
use crate::github::body::{ReadError, read_capped};
use crate::github::error::{describe, quote};
use crate::github::link::Origin;
use crate::github::retry::{self, Verdict};

/// The largest JSON answer read.
pub const MAX_JSON_BYTES: u64 = 32 << 20;
/// The most of an error answer's body read, for its message.
const MAX_ERROR_BODY: u64 = 64 << 10;
/// What a JSON call accepts.
const ACCEPT_JSON: &str = "application/json";
/// What a file download accepts: the file's own bytes.
pub(crate) const ACCEPT_ANY: &str = "*/*";
/// What the client says it is.
const USER_AGENT: &str = concat!("reviewflow/", env!("CARGO_PKG_VERSION"));

/// Calls made so far, for the performance figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallCounts {
    /// Requests sent to the API, retries and pages included.
    pub api_calls: u64,
    /// Waits before a retry.
    pub retries: u64,
}

/// A GitLab REST client for one project. Cheap to clone; clones share counters.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    transport: Transport,
    api_origin: Origin,
    /// The API URL without a trailing `/` (`https://gitlab.com/api/v4`).
    api_base: String,
    /// The project's id or path, percent-encoded for a route.
    project: String,
    /// `PRIVATE-TOKEN`'s value, marked sensitive.
    token: Option<HeaderValue>,
    timeout: Duration,
    retry: RetryPolicy,
    api_calls: AtomicU64,
    retries: AtomicU64,
}

// By hand: what it talks to, never what it holds.
impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("api", &self.inner.api_base)
            .field("project", &self.inner.project)
            .field("counts", &self.counts())
            .finish()
    }
}

/// A successful answer.
pub(crate) struct Reply {
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// A failed try: final, or one the retry rules look at.
enum Failure {
    Final(GitlabError),
    Status {
        status: u16,
        headers: HeaderMap,
        message: String,
    },
    NoAnswer(GitlabError),
}

impl Client {
    /// Builds the client; refuses an API URL [`super::api_url_refusal`] refuses, a project that
    /// is empty, and a token that could not be a header.
    pub fn new(config: ClientConfig) -> Result<Client, GitlabError> {
        if config.retry.max_attempts == 0 {
            return Err(GitlabError::Invalid(
                "retry.max_attempts must be at least 1".into(),
            ));
        }
        let api_url = config.api_url.trim().trim_end_matches('/');
        if let Some(why) = super::api_url_refusal(api_url) {
            return Err(GitlabError::Invalid(why));
        }
        let api_uri: Uri = api_url.parse().map_err(|_| {
            GitlabError::Invalid(format!("the API URL {:?} is not a URL", quote(api_url)))
        })?;
        let api_origin = Origin::of(&api_uri).ok_or_else(|| {
            GitlabError::Invalid(format!(
                "the API URL {:?} is not an absolute http(s) URL",
                quote(api_url)
            ))
        })?;
        let project = config.project.trim();
        if project.is_empty() || project.len() > 255 {
            return Err(GitlabError::Invalid(
                "the GitLab project is empty or longer than 255 bytes: name it by its id (CI_PROJECT_ID) or its path".into(),
            ));
        }
        let token = config
            .token
            .as_deref()
            .map(|t| token_header(t))
            .transpose()?;
        let transport = Transport::new(api_origin.is_https()).map_err(|e| {
            GitlabError::Invalid(format!(
                "cannot build the GitLab client (TLS roots): {}",
                describe(&e)
            ))
        })?;
        Ok(Client {
            inner: Arc::new(Inner {
                transport,
                api_origin,
                api_base: api_url.to_owned(),
                project: percent_encode(project),
                token,
                timeout: config.timeout,
                retry: config.retry,
                api_calls: AtomicU64::new(0),
                retries: AtomicU64::new(0),
            }),
        })
    }

    pub fn counts(&self) -> CallCounts {
        CallCounts {
            api_calls: self.inner.api_calls.load(Ordering::Relaxed),
            retries: self.inner.retries.load(Ordering::Relaxed),
        }
    }

    /// The project's numeric id, when the client names the project by it (not by its path).
    pub fn numeric_project(&self) -> Option<u64> {
        self.inner.project.parse().ok()
    }

    /// `/projects/{id}`, the prefix of this project's routes.
    pub(crate) fn project_route(&self) -> String {
        format!("/projects/{}", self.inner.project)
    }

    pub(crate) fn api_origin(&self) -> &Origin {
        &self.inner.api_origin
    }

    /// The absolute URL of a route under the API's root.
    pub(crate) fn absolute(&self, route: &str) -> Result<Uri, GitlabError> {
        if !route.starts_with('/') || route.starts_with("//") {
            return Err(GitlabError::Invalid(format!(
                "a route must be a path: {:?}",
                quote(route)
            )));
        }
        format!("{}{route}", self.inner.api_base)
            .parse()
            .map_err(|_| GitlabError::Invalid(format!("an invalid route {:?}", quote(route))))
    }

    /// `GET route` as JSON.
    pub async fn get_json<T: DeserializeOwned>(&self, route: &str) -> Result<T, GitlabError> {
        self.json(Method::GET, route, None).await
    }

    /// `POST route` with a JSON body, answered with JSON.
    pub async fn post_json<B, T>(&self, route: &str, body: &B) -> Result<T, GitlabError>
    where
        B: Serialize + ?Sized,
        T: DeserializeOwned,
    {
        let body = to_value(body)?;
        self.json(Method::POST, route, Some(&body)).await
    }

    /// `PUT route` with a JSON body, answered with JSON.
    pub async fn put_json<B, T>(&self, route: &str, body: &B) -> Result<T, GitlabError>
    where
        B: Serialize + ?Sized,
        T: DeserializeOwned,
    {
        let body = to_value(body)?;
        self.json(Method::PUT, route, Some(&body)).await
    }

    async fn json<T: DeserializeOwned>(
        &self,
        method: Method,
        route: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<T, GitlabError> {
        let name = method_name(&method);
        let uri = self.absolute(route)?;
        let reply = self.call(method, &uri, route, body, MAX_JSON_BYTES).await?;
        decode(&reply.body, &format!("the answer to {name} {route}"))
    }

    /// Runs a call with the retry rules. `label` names it in messages (a route, never a host's
    /// query it did not write).
    pub(crate) async fn call(
        &self,
        method: Method,
        uri: &Uri,
        label: &str,
        body: Option<&serde_json::Value>,
        cap: u64,
    ) -> Result<Reply, GitlabError> {
        self.call_accepting(method, uri, label, body, cap, ACCEPT_JSON)
            .await
    }

    /// [`Self::call`] asking for `accept`: a file a job kept is not JSON.
    pub(crate) async fn call_accepting(
        &self,
        method: Method,
        uri: &Uri,
        label: &str,
        body: Option<&serde_json::Value>,
        cap: u64,
        accept: &'static str,
    ) -> Result<Reply, GitlabError> {
        let name = method_name(&method);
        let idempotent = matches!(method, Method::GET | Method::HEAD | Method::PUT);
        let policy = &self.inner.retry;
        let mut failures = 0u32;
        loop {
            let attempt = self.try_once(&method, uri, label, body, cap, accept);
            let (verdict, error) = match attempt.await {
                Ok(reply) => return Ok(reply),
                Err(Failure::Final(e)) => return Err(e),
                Err(Failure::NoAnswer(e)) => {
                    (retry::after_transport(policy, failures + 1, idempotent), e)
                }
                Err(Failure::Status {
                    status,
                    headers,
                    message,
                }) => {
                    let verdict = retry::after_status(
                        policy,
                        failures + 1,
                        status,
                        &headers,
                        &message,
                        idempotent,
                        SystemTime::now(),
                    );
                    let error = GitlabError::Status {
                        method: name,
                        route: label.to_owned(),
                        status,
                        message: if message.is_empty() {
                            "(no message)".to_owned()
                        } else {
                            message
                        },
                    };
                    (verdict, error)
                }
            };
            failures += 1;
            match verdict {
                Verdict::TooLong(until) => {
                    return Err(GitlabError::RateLimited {
                        method: name,
                        route: label.to_owned(),
                        until,
                    });
                }
                Verdict::Retry(wait) if failures < policy.max_attempts => {
                    self.inner.retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(wait).await;
                }
                _ => return Err(error),
            }
        }
    }

    /// One try: send, then read the answer, all under the per-call timeout.
    async fn try_once(
        &self,
        method: &Method,
        uri: &Uri,
        label: &str,
        body: Option<&serde_json::Value>,
        cap: u64,
        accept: &'static str,
    ) -> Result<Reply, Failure> {
        let name = method_name(method);
        let host = self.inner.api_origin.display_host();
        let request = self
            .request(method, uri, label, body, accept)
            .map_err(Failure::Final)?;
        let attempt = async {
            self.inner.api_calls.fetch_add(1, Ordering::Relaxed);
            let response = self.inner.transport.send(request).await.map_err(|e| {
                Failure::NoAnswer(GitlabError::Transport {
                    method: name,
                    route: label.to_owned(),
                    host: host.clone(),
                    error: describe(&e),
                })
            })?;
            let (parts, mut incoming) = response.into_parts();
            let status = parts.status.as_u16();
            if parts.status.is_success() {
                let bytes = read_capped(&parts.headers, &mut incoming, cap)
                    .await
                    .map_err(|e| match e {
                        ReadError::TooLarge => Failure::Final(GitlabError::TooLarge {
                            what: format!("the answer to {name} {label}"),
                            limit: cap,
                        }),
                        ReadError::Transport(error) => Failure::NoAnswer(GitlabError::Transport {
                            method: name,
                            route: label.to_owned(),
                            host: host.clone(),
                            error,
                        }),
                    })?;
                return Ok(Reply {
                    headers: parts.headers,
                    body: bytes,
                });
            }
            if parts.status.is_redirection() {
                return Err(Failure::Final(GitlabError::Redirect(format!(
                    "{name} {label} answered {status}, a redirect where none is expected (is the API URL GitLab's /api/v4?)"
                ))));
            }
            // The message only; an error body that is too large or broken says nothing.
            let bytes = read_capped(&parts.headers, &mut incoming, MAX_ERROR_BODY)
                .await
                .unwrap_or_default();
            Err(Failure::Status {
                status,
                headers: parts.headers,
                message: error_message(&bytes),
            })
        };
        match tokio::time::timeout(self.inner.timeout, attempt).await {
            Ok(result) => result,
            Err(_) => Err(Failure::NoAnswer(GitlabError::Timeout {
                method: name,
                route: label.to_owned(),
                after: self.inner.timeout,
            })),
        }
    }

    fn request(
        &self,
        method: &Method,
        uri: &Uri,
        label: &str,
        body: Option<&serde_json::Value>,
        accept: &'static str,
    ) -> Result<http::Request<Full<Bytes>>, GitlabError> {
        // The token's one place: the API's origin. Every URI is built from the API's root or
        // checked against its origin before it gets here; this is the last guard.
        if Origin::of(uri).as_ref() != Some(&self.inner.api_origin) {
            return Err(GitlabError::Invalid(format!(
                "{} {label} is not on the API's origin: not sent",
                method_name(method)
            )));
        }
        let mut builder = http::Request::builder()
            .method(method.clone())
            .uri(uri.clone())
            .header(http::header::ACCEPT, accept)
            .header(http::header::USER_AGENT, USER_AGENT);
        if let Some(token) = &self.inner.token {
            builder = builder.header("PRIVATE-TOKEN", token.clone());
        }
        let bytes = match body {
            Some(value) => {
                builder = builder.header(http::header::CONTENT_TYPE, "application/json");
                Bytes::from(serde_json::to_vec(value).map_err(|e| {
                    GitlabError::Invalid(format!("cannot encode a request body: {e}"))
                })?)
            }
            None => Bytes::new(),
        };
        builder.body(Full::new(bytes)).map_err(|e| {
            GitlabError::Invalid(format!(
                "cannot build {} {label}: {}",
                method_name(method),
                describe(&e)
            ))
        })
    }
}

/// The token as a sensitive header value, checked first: empty, or holding what a token never
/// holds (a space, a newline), is refused without quoting it.
fn token_header(token: &str) -> Result<HeaderValue, GitlabError> {
    let token = token.trim();
    if token.is_empty() {
        return Err(GitlabError::Invalid("the GitLab token is empty".into()));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(GitlabError::Invalid(
            "the GitLab token holds characters a token never has".into(),
        ));
    }
    let mut value = HeaderValue::from_str(token)
        .map_err(|_| GitlabError::Invalid("the GitLab token is not a header value".into()))?;
    value.set_sensitive(true);
    Ok(value)
}

pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, GitlabError> {
    serde_json::from_slice(bytes).map_err(|e| GitlabError::decode(what, e))
}

fn to_value<B: Serialize + ?Sized>(body: &B) -> Result<serde_json::Value, GitlabError> {
    serde_json::to_value(body)
        .map_err(|e| GitlabError::Invalid(format!("cannot encode a request body: {e}")))
}

pub(crate) fn method_name(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        _ => "REQUEST",
    }
}

/// RFC 3986 percent-encoding of a path segment or query value: unreserved characters pass,
/// every other byte becomes `%XX` (a project path's `/` is `%2F`, as GitLab wants it).
pub(crate) fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_paths_are_one_segment() {
        assert_eq!(percent_encode("42"), "42");
        assert_eq!(percent_encode("group/sub/project"), "group%2Fsub%2Fproject");
        assert_eq!(percent_encode("a b?#"), "a%20b%3F%23");
    }

    #[test]
    fn a_token_is_checked_and_sensitive() {
        let value = token_header("  glpat-abc_DEF-123  ").unwrap();
        assert!(value.is_sensitive());
        assert_eq!(value.to_str().unwrap(), "glpat-abc_DEF-123");
        for bad in ["", "   ", "glpat abc", "glpat\nabc"] {
            let e = token_header(bad).unwrap_err().to_string();
            assert!(!e.contains("glpat"), "{e}");
        }
    }
}
