//! The client: octocrab as the HTTP and auth layer, with our own retries, timeouts, byte caps
//! and redirect handling around it.
//!
//! What octocrab does and does not do here (read from octocrab 0.54's `build()` and
//! tower-http 0.6's `FollowRedirect`):
//! - A personal token becomes an `Authorization` header added only to requests whose authority
//!   is the base URI's (or none): a request to another host never carries it.
//! - octocrab's own retry layer is switched off (`RetryConfig::None`): retries are decided in
//!   [`retry`](super::retry), with `Retry-After`, rate-limit resets and a cap on waits.
//! - octocrab follows redirects inside its stack (`FollowRedirect`, which strips `Authorization`
//!   on a cross-origin hop, up to 20 hops). We never let it: it follows only when it can clone the
//!   request body, and it clones a body only when the body reports an exact size of zero. A JSON
//!   body is never cloned; every bodyless request gets an empty body of unknown size
//!   ([`uncloneable`]). So a 3xx reaches us as it is: on a JSON call it is an error, and an
//!   artifact's redirect is followed in [`download`](super::download) by a client that holds no
//!   token. (Tested: `a_json_call_never_follows_a_redirect`.)
//! - Timeouts: octocrab's connect/read/write timeouts are set, and each try (sending and reading
//!   the whole answer) runs under `ClientConfig::timeout`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use http::{HeaderMap, Method, Uri};
use http_body_util::BodyExt;
use octocrab::service::middleware::retry::RetryConfig;
use octocrab::{OctoBody, Octocrab};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::body::{ReadError, read_capped};
use super::error::{describe, quote};
use super::link::Origin;
use super::retry::{self, Verdict};
use super::{ClientConfig, GithubError, Repository, RetryPolicy};

/// The largest JSON answer read.
pub const MAX_JSON_BYTES: u64 = 32 << 20;
/// The most of an error answer's body read, for its `message`.
const MAX_ERROR_BODY: u64 = 64 << 10;
/// GitHub's JSON media type.
pub(crate) const ACCEPT_JSON: &str = "application/vnd.github+json";
/// GitHub's diff media type.
pub(crate) const ACCEPT_DIFF: &str = "application/vnd.github.diff";

/// Calls made so far, for the performance figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallCounts {
    /// Requests sent to the API, retries and pages included.
    pub api_calls: u64,
    /// Requests sent to artifact storage (each redirect hop).
    pub downloads: u64,
    /// Waits before a retry.
    pub retries: u64,
}

/// A GitHub REST client for one repository. Cheap to clone; clones share counters.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    /// Holds the token; sends it to the API's origin only.
    api: Octocrab,
    /// Holds no token: artifact storage is another host.
    blobs: Octocrab,
    api_origin: Origin,
    /// The API URL without a trailing `/`, to resolve routes absolutely.
    api_base: String,
    repository: Repository,
    timeout: Duration,
    retry: RetryPolicy,
    api_calls: AtomicU64,
    downloads: AtomicU64,
    retries: AtomicU64,
}

// By hand: what it talks to, never what it holds.
impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("api", &self.inner.api_base)
            .field("repository", &self.inner.repository)
            .field("counts", &self.counts())
            .finish()
    }
}

/// Which client a call goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Via {
    Api,
    /// Token-less, absolute URLs only.
    Storage,
}

/// What a call accepts as success.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expect {
    /// 2xx; a 3xx is an error.
    Success,
    /// 2xx or a 3xx (returned unread, for its `Location`).
    SuccessOrRedirect,
}

/// One logical call, tried up to `max_attempts` times.
pub(crate) struct Call<'a> {
    pub method: Method,
    pub uri: Uri,
    /// How messages name the call: a route, or a host for storage (never a signed query).
    pub label: &'a str,
    pub accept: &'static str,
    pub body: Option<&'a serde_json::Value>,
    pub cap: u64,
    pub expect: Expect,
    pub via: Via,
    /// What `TooLarge` calls the body.
    pub what: &'a str,
}

/// A successful answer.
pub(crate) struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// A failed try: final, or one the retry rules look at.
enum Failure {
    Final(GithubError),
    Status {
        status: u16,
        headers: HeaderMap,
        message: String,
        documentation_url: Option<String>,
    },
    NoAnswer(GithubError),
}

impl Client {
    /// Builds the client. Must run inside a tokio runtime (octocrab spawns its worker there).
    pub fn new(config: ClientConfig) -> Result<Client, GithubError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(GithubError::Invalid(
                "a GitHub client must be built inside a tokio runtime".into(),
            ));
        }
        if config.retry.max_attempts == 0 {
            return Err(GithubError::Invalid(
                "retry.max_attempts must be at least 1".into(),
            ));
        }
        let api_url = config.api_url.trim().trim_end_matches('/');
        if let Some(why) = super::config::api_url_refusal(api_url) {
            return Err(GithubError::Invalid(why));
        }
        let api_uri: Uri = api_url.parse().map_err(|_| {
            GithubError::Invalid(format!("the API URL {:?} is not a URL", quote(api_url)))
        })?;
        let api_origin = Origin::of(&api_uri).ok_or_else(|| {
            GithubError::Invalid(format!(
                "the API URL {:?} is not an absolute http(s) URL",
                quote(api_url)
            ))
        })?;
        if api_uri
            .authority()
            .is_some_and(|a| a.as_str().contains('@'))
            || api_uri.query().is_some()
        {
            return Err(GithubError::Invalid(format!(
                "the API URL {:?} may not hold credentials or a query",
                quote(api_url)
            )));
        }
        let built = |e: octocrab::Error| {
            GithubError::Invalid(format!("cannot build the GitHub client: {}", describe(&e)))
        };
        let mut api = Octocrab::builder()
            .base_uri(api_uri)
            .map_err(built)?
            .add_retry_config(RetryConfig::None)
            .set_connect_timeout(Some(config.timeout))
            .set_read_timeout(Some(config.timeout))
            .set_write_timeout(Some(config.timeout));
        if let Some(token) = &config.token {
            api = api.personal_token(secret_copy(token)?);
        }
        let blobs = Octocrab::builder()
            .add_retry_config(RetryConfig::None)
            .set_connect_timeout(Some(config.timeout))
            .set_read_timeout(Some(config.timeout))
            .set_write_timeout(Some(config.timeout))
            .build()
            .map_err(built)?;
        Ok(Client {
            inner: Arc::new(Inner {
                api: api.build().map_err(built)?,
                blobs,
                api_origin,
                api_base: api_url.to_owned(),
                repository: config.repository,
                timeout: config.timeout,
                retry: config.retry,
                api_calls: AtomicU64::new(0),
                downloads: AtomicU64::new(0),
                retries: AtomicU64::new(0),
            }),
        })
    }

    pub fn repository(&self) -> &Repository {
        &self.inner.repository
    }

    pub fn counts(&self) -> CallCounts {
        CallCounts {
            api_calls: self.inner.api_calls.load(Ordering::Relaxed),
            downloads: self.inner.downloads.load(Ordering::Relaxed),
            retries: self.inner.retries.load(Ordering::Relaxed),
        }
    }

    /// `/repos/{owner}/{name}`, the prefix of this repository's routes.
    pub(crate) fn repo_route(&self) -> String {
        let r = &self.inner.repository;
        format!("/repos/{}/{}", r.owner, r.name)
    }

    pub(crate) fn api_origin(&self) -> &Origin {
        &self.inner.api_origin
    }

    /// The absolute URL of a route, where octocrab sends it.
    pub(crate) fn absolute(&self, route: &str) -> Result<Uri, GithubError> {
        format!("{}{route}", self.inner.api_base)
            .parse()
            .map_err(|_| GithubError::Invalid(format!("an invalid route {:?}", quote(route))))
    }

    /// `GET route` as JSON.
    pub async fn get_json<T: DeserializeOwned>(&self, route: &str) -> Result<T, GithubError> {
        self.json(Method::GET, route, None).await
    }

    /// `POST route` with a JSON body, answered with JSON.
    pub async fn post_json<B, T>(&self, route: &str, body: &B) -> Result<T, GithubError>
    where
        B: Serialize + ?Sized,
        T: DeserializeOwned,
    {
        let body = to_value(body)?;
        self.json(Method::POST, route, Some(&body)).await
    }

    /// `PATCH route` with a JSON body, answered with JSON.
    pub async fn patch_json<B, T>(&self, route: &str, body: &B) -> Result<T, GithubError>
    where
        B: Serialize + ?Sized,
        T: DeserializeOwned,
    {
        let body = to_value(body)?;
        self.json(Method::PATCH, route, Some(&body)).await
    }

    /// `GET route` as a diff (`application/vnd.github.diff`), at most `max_bytes`.
    pub async fn get_diff(&self, route: &str, max_bytes: u64) -> Result<Vec<u8>, GithubError> {
        let reply = self
            .call(&Call {
                method: Method::GET,
                uri: route_uri(route)?,
                label: route,
                accept: ACCEPT_DIFF,
                body: None,
                cap: max_bytes,
                expect: Expect::Success,
                via: Via::Api,
                what: "the diff",
            })
            .await?;
        Ok(reply.body)
    }

    async fn json<T: DeserializeOwned>(
        &self,
        method: Method,
        route: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<T, GithubError> {
        let name = method_name(&method);
        let reply = self
            .call(&Call {
                method,
                uri: route_uri(route)?,
                label: route,
                accept: ACCEPT_JSON,
                body,
                cap: MAX_JSON_BYTES,
                expect: Expect::Success,
                via: Via::Api,
                what: "the answer",
            })
            .await?;
        decode(&reply.body, &format!("the answer to {name} {route}"))
    }

    /// Runs a call with the retry rules.
    pub(crate) async fn call(&self, call: &Call<'_>) -> Result<Reply, GithubError> {
        let method = method_name(&call.method);
        let idempotent = matches!(call.method, Method::GET | Method::HEAD);
        let policy = &self.inner.retry;
        let mut failures = 0u32;
        loop {
            let (verdict, error) = match self.try_once(call).await {
                Ok(reply) => return Ok(reply),
                Err(Failure::Final(e)) => return Err(e),
                Err(Failure::NoAnswer(e)) => {
                    (retry::after_transport(policy, failures + 1, idempotent), e)
                }
                Err(Failure::Status {
                    status,
                    headers,
                    message,
                    documentation_url,
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
                    let rate_limit = retry::is_rate_limit(status, &headers, &message);
                    let error = GithubError::Status {
                        method,
                        route: call.label.to_owned(),
                        status,
                        message: if message.is_empty() {
                            "(no message)".to_owned()
                        } else {
                            message
                        },
                        documentation_url,
                        rate_limit,
                    };
                    (verdict, error)
                }
            };
            failures += 1;
            match verdict {
                Verdict::TooLong(until) => {
                    return Err(GithubError::RateLimited {
                        method,
                        route: call.label.to_owned(),
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
    async fn try_once(&self, call: &Call<'_>) -> Result<Reply, Failure> {
        let method = method_name(&call.method);
        let (crab, counter, host) = match call.via {
            Via::Api => (
                &self.inner.api,
                &self.inner.api_calls,
                self.inner.api_origin.display_host(),
            ),
            Via::Storage => (
                &self.inner.blobs,
                &self.inner.downloads,
                Origin::of(&call.uri)
                    .map(|o| o.display_host())
                    .unwrap_or_default(),
            ),
        };
        let request = self.request(crab, call).map_err(Failure::Final)?;
        counter.fetch_add(1, Ordering::Relaxed);
        let attempt = async {
            let response = crab.execute(request).await.map_err(|e| {
                Failure::NoAnswer(GithubError::Transport {
                    method,
                    route: call.label.to_owned(),
                    host: host.clone(),
                    error: describe(&e),
                })
            })?;
            let (parts, mut body) = response.into_parts();
            let status = parts.status.as_u16();
            if parts.status.is_success() {
                let bytes = read_capped(&parts.headers, &mut body, call.cap)
                    .await
                    .map_err(|e| match e {
                        ReadError::TooLarge => Failure::Final(GithubError::TooLarge {
                            what: format!("{} of {method} {}", call.what, call.label),
                            limit: call.cap,
                        }),
                        ReadError::Transport(error) => Failure::NoAnswer(GithubError::Transport {
                            method,
                            route: call.label.to_owned(),
                            host: host.clone(),
                            error,
                        }),
                    })?;
                return Ok(Reply {
                    status,
                    headers: parts.headers,
                    body: bytes,
                });
            }
            if parts.status.is_redirection() {
                if call.expect == Expect::SuccessOrRedirect {
                    return Ok(Reply {
                        status,
                        headers: parts.headers,
                        body: Vec::new(),
                    });
                }
                return Err(Failure::Final(GithubError::Redirect(format!(
                    "{method} {} answered {status}, a redirect where none is expected",
                    call.label
                ))));
            }
            // The message only; an error body that is too large or broken says nothing.
            let bytes = read_capped(&parts.headers, &mut body, MAX_ERROR_BODY)
                .await
                .unwrap_or_default();
            let (message, documentation_url) = error_message(&bytes);
            Err(Failure::Status {
                status,
                headers: parts.headers,
                message,
                documentation_url,
            })
        };
        match tokio::time::timeout(self.inner.timeout, attempt).await {
            Ok(result) => result,
            Err(_) => Err(Failure::NoAnswer(GithubError::Timeout {
                method,
                route: call.label.to_owned(),
                after: self.inner.timeout,
            })),
        }
    }

    fn request(
        &self,
        crab: &Octocrab,
        call: &Call<'_>,
    ) -> Result<http::Request<OctoBody>, GithubError> {
        let builder = http::Request::builder()
            .method(call.method.clone())
            .uri(call.uri.clone())
            .header(http::header::ACCEPT, call.accept);
        let request = crab.build_request(builder, call.body).map_err(|e| {
            GithubError::Invalid(format!(
                "cannot build {} {}: {}",
                method_name(&call.method),
                call.label,
                describe(&e)
            ))
        })?;
        // Only bodyless requests need it: a JSON body of known size is not re-sent anyway.
        Ok(if call.body.is_none() {
            request.map(uncloneable)
        } else {
            request
        })
    }
}

/// The same empty body, with its size hidden. tower-http's `FollowRedirect` follows a redirect
/// only when it can re-send the body, which it does for a body of exact size zero; a body of
/// unknown size makes it hand the 3xx back to us. hyper still sends no body: it checks
/// `is_end_stream` first, which `map_frame` passes through (and octocrab's `Content-Length: 0`
/// header stays).
fn uncloneable(body: OctoBody) -> OctoBody {
    OctoBody::new(body.map_frame(|frame| frame))
}

/// A token as octocrab wants it, checked first: octocrab turns it into a header with an
/// `unwrap`, so a token that is not a valid header value would panic there.
fn secret_copy(token: &str) -> Result<octocrab::secrecy::SecretString, GithubError> {
    let token = token.trim();
    if token.is_empty() {
        return Err(GithubError::Invalid("the GitHub token is empty".into()));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(GithubError::Invalid(
            "the GitHub token holds characters a token never has".into(),
        ));
    }
    // Exactly sized, so that turning it into a boxed str does not reallocate and leave an
    // unzeroized copy behind.
    let mut copy = String::with_capacity(token.len());
    copy.push_str(token);
    Ok(copy.into())
}

pub(crate) fn route_uri(route: &str) -> Result<Uri, GithubError> {
    if !route.starts_with('/') || route.starts_with("//") {
        return Err(GithubError::Invalid(format!(
            "a route must be a path: {:?}",
            quote(route)
        )));
    }
    route
        .parse()
        .map_err(|_| GithubError::Invalid(format!("an invalid route {:?}", quote(route))))
}

pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, GithubError> {
    serde_json::from_slice(bytes).map_err(|e| GithubError::decode(what, e))
}

fn to_value<B: Serialize + ?Sized>(body: &B) -> Result<serde_json::Value, GithubError> {
    serde_json::to_value(body)
        .map_err(|e| GithubError::Invalid(format!("cannot encode a request body: {e}")))
}

pub(crate) fn method_name(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PATCH => "PATCH",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        _ => "REQUEST",
    }
}

/// GitHub's error JSON: `{"message": "...", "documentation_url": "..."}`, both quoted.
fn error_message(body: &[u8]) -> (String, Option<String>) {
    #[derive(serde::Deserialize)]
    struct GithubErrorBody {
        message: Option<String>,
        documentation_url: Option<String>,
    }
    match serde_json::from_slice::<GithubErrorBody>(body) {
        Ok(e) => (
            e.message.as_deref().map(quote).unwrap_or_default(),
            e.documentation_url.as_deref().map(quote),
        ),
        Err(_) => (String::new(), None),
    }
}
