//! The listening side: a loopback socket served until the try ends, one task per connection.
//!
//! A request is forwarded only when it is addressed to the proxy itself (origin-form target,
//! `Host` the proxy's own address: no absolute URI, no `CONNECT`, no other host) and carries the
//! try's stand-in; the answer streams back frame by frame as the API sends it.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HOST, HeaderValue};
use http::{Method, Request, Response, StatusCode, Version};
use http_body_util::{BodyExt as _, Either, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use super::accounts::say_names;
use super::meter::{Meter, Tapped};
use super::swap::{AuthRefusal, Credential, strip_hop_by_hop, swap_credentials};
use super::upstream::{Forwarder, OutBody, Upstream};

/// An answer: the API's body as it streams, or the proxy's own refusal.
type Answer = Response<Either<Tapped, Full<Bytes>>>;

/// The most of a request's body kept to send it again with the next account (both vendors
/// refuse requests past 32 MB).
const MAX_REPLAYED_BODY: usize = 64 * 1024 * 1024;

/// What one proxy serves with.
pub(super) struct State {
    pub upstream: Upstream,
    pub forwarder: Forwarder,
    pub credentials: Vec<Credential>,
    /// `127.0.0.1:PORT`: the only `Host` a request may name.
    pub own_host: String,
    pub tally: Arc<Tally>,
    /// What the answers reported they cost, and the try's token budget.
    pub meter: Arc<Meter>,
}

/// What the proxy did, in counts and reasons: never a header, a body or a URL.
#[derive(Debug, Default)]
pub struct Tally {
    forwarded: AtomicU64,
    refused: AtomicU64,
    failed: AtomicU64,
    limited: AtomicU64,
    last_refusal: Mutex<Option<&'static str>>,
    last_failure: Mutex<Option<String>>,
}

impl Tally {
    fn refuse(&self, reason: &'static str) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut last) = self.last_refusal.lock() {
            *last = Some(reason);
        }
    }

    fn fail(&self, reason: String) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut last) = self.last_failure.lock() {
            *last = Some(reason);
        }
    }

    /// Requests forwarded (whatever the API answered).
    pub fn forwarded(&self) -> u64 {
        self.forwarded.load(Ordering::Relaxed)
    }

    /// Requests refused by the proxy.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Requests the API answered with an account's rate or usage limit (HTTP 429).
    pub fn limited(&self) -> u64 {
        self.limited.load(Ordering::Relaxed)
    }

    /// Requests the API could not be reached for.
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }

    /// Why the last refused request was refused.
    pub fn last_refusal(&self) -> Option<&'static str> {
        self.last_refusal.lock().ok().and_then(|l| *l)
    }

    /// Why the API could not be reached, the last time.
    pub fn last_failure(&self) -> Option<String> {
        self.last_failure.lock().ok().and_then(|l| l.clone())
    }
}

/// Serves `listener` until the task is aborted; aborting it ends every connection too.
pub(super) async fn serve(listener: TcpListener, state: Arc<State>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let state = Arc::clone(&state);
                    connections.spawn(async move {
                        let service = service_fn(move |r| handle(r, Arc::clone(&state)));
                        // A connection that breaks ends itself; the reviewer sees it break.
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
                // Out of descriptors, or a connection reset before it was accepted: try again
                // a moment later rather than spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn handle(request: Request<Incoming>, state: Arc<State>) -> Result<Answer, Infallible> {
    if let Err(reason) = addressed_to_proxy(&request, &state.own_host) {
        state.tally.refuse(reason);
        let message = format!(
            "reviewflow's model API proxy forwards only to {}: {reason}",
            state.upstream
        );
        return Ok(refusal(StatusCode::FORBIDDEN, "permission_error", &message));
    }
    // The budget is spent: nothing more reaches the API (the try is being stopped).
    if state.meter.is_spent() {
        state.tally.refuse("the try's token budget is spent");
        return Ok(refusal(
            StatusCode::FORBIDDEN,
            "permission_error",
            "reviewflow's model API proxy: the review's token budget is spent",
        ));
    }
    let (mut parts, body) = request.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    // The headers as asked, stand-ins and all (nothing secret): a request sent again with the
    // next account is swapped afresh from them.
    let asked = parts.headers.clone();
    let mut used = match swap_credentials(&mut parts.headers, &state.credentials) {
        Ok(used) => used,
        Err(refused) => return Ok(refuse_credential(&state, refused)),
    };
    let target = parts
        .uri
        .path_and_query()
        .and_then(|p| state.upstream.uri_of(p).ok());
    let (Some(target), Ok(host)) = (
        target,
        HeaderValue::from_str(state.upstream.authority().as_str()),
    ) else {
        state.tally.refuse("its target is not a path");
        return Ok(refusal(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "reviewflow's model API proxy takes a path",
        ));
    };
    // A request another account could take if this one's limit refuses it is read whole
    // first, so it can be sent again; any other streams upstream as it comes. The answer
    // streams back either way: a 429 arrives before anything is passed back.
    let mut outgoing = if used.iter().any(|u| u.pool.has_after(u.index)) {
        match Limited::new(body, MAX_REPLAYED_BODY).collect().await {
            Ok(collected) => Outgoing::Replay(collected.to_bytes()),
            Err(_) => {
                state
                    .tally
                    .refuse("its body was larger than the proxy keeps to send it again");
                return Ok(refusal(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "request_too_large",
                    "reviewflow's model API proxy keeps at most 64 MiB of a request to send it again with another account",
                ));
            }
        }
    } else {
        Outgoing::Stream(Some(body))
    };
    loop {
        let Some(body) = outgoing.next() else {
            // Not reached: only a replayed body is sent twice.
            return Ok(refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                "api_error",
                "reviewflow's model API proxy cannot send a streamed request twice",
            ));
        };
        let mut request = Request::new(body);
        *request.method_mut() = parts.method.clone();
        *request.uri_mut() = target.clone();
        *request.version_mut() = Version::HTTP_11;
        *request.headers_mut() = parts.headers.clone();
        request.headers_mut().insert(HOST, host.clone());
        let answer = match state.forwarder.send(request).await {
            Ok(answer) => answer,
            Err(e) => {
                // The error names the connection's failure (refused, TLS, DNS), never a header.
                let reason = error_chain(&e);
                state.tally.fail(reason.clone());
                let message = format!(
                    "reviewflow's model API proxy could not reach {}: {reason}",
                    state.upstream
                );
                return Ok(refusal(StatusCode::BAD_GATEWAY, "api_error", &message));
            }
        };
        state.tally.forwarded.fetch_add(1, Ordering::Relaxed);
        if answer.status() != StatusCode::TOO_MANY_REQUESTS {
            for u in &used {
                u.pool.answered(u.index);
            }
            return Ok(pass_back(answer, &state.meter));
        }
        // The account's rate or usage limit: skipped for the rest of the run.
        state.tally.limited.fetch_add(1, Ordering::Relaxed);
        for u in &used {
            u.pool.skip(u.index);
        }
        if !outgoing.replays() || used.iter().any(|u| u.pool.is_exhausted()) {
            return Ok(pass_back(answer, &state.meter));
        }
        // Nothing was passed back yet: the same request goes again, with the next account.
        let mut headers = asked.clone();
        match swap_credentials(&mut headers, &state.credentials) {
            Ok(next) => {
                used = next;
                parts.headers = headers;
            }
            Err(_) => return Ok(pass_back(answer, &state.meter)),
        }
    }
}

/// A request's body on its way upstream: streamed once, or kept whole to be sent again.
enum Outgoing {
    Stream(Option<Incoming>),
    Replay(Bytes),
}

impl Outgoing {
    /// The body to send now; `None` for a streamed one already sent.
    fn next(&mut self) -> Option<OutBody> {
        match self {
            Self::Stream(body) => body.take().map(Either::Left),
            Self::Replay(bytes) => Some(Either::Right(Full::new(bytes.clone()))),
        }
    }

    fn replays(&self) -> bool {
        matches!(self, Self::Replay(_))
    }
}

/// The API's answer, as it streams, without its hop-by-hop headers, its usage counted.
fn pass_back(answer: Response<Incoming>, meter: &Arc<Meter>) -> Answer {
    let (mut parts, body) = answer.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    Response::from_parts(parts, Either::Left(Tapped::new(body, Arc::clone(meter))))
}

/// The proxy's answer to a request whose credential it refused.
fn refuse_credential(state: &State, refused: AuthRefusal) -> Answer {
    state.tally.refuse(refused.reason());
    if refused == AuthRefusal::Limited {
        // Said as the API says a limit, so the client reads it as one.
        let names: Vec<&str> = state
            .credentials
            .iter()
            .flat_map(|c| c.accounts.names())
            .collect();
        let message = format!(
            "reviewflow's model API proxy: every account has reached its rate or usage limit ({})",
            say_names(&names)
        );
        return refusal(StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", &message);
    }
    let message = format!(
        "reviewflow's model API proxy refused the request: {}",
        refused.reason()
    );
    refusal(StatusCode::UNAUTHORIZED, "authentication_error", &message)
}

/// Whether the request is addressed to the proxy itself, else why not.
fn addressed_to_proxy<B>(request: &Request<B>, own_host: &str) -> Result<(), &'static str> {
    if request.method() == Method::CONNECT {
        return Err("it asked to tunnel (CONNECT)");
    }
    let uri = request.uri();
    if uri.scheme().is_some() || uri.authority().is_some() {
        return Err("it named a host in its target (absolute-form)");
    }
    if !uri.path().starts_with('/') {
        return Err("its target is not a path");
    }
    let mut hosts = request.headers().get_all(HOST).iter();
    match (hosts.next(), hosts.next()) {
        (Some(host), None) if host.as_bytes().eq_ignore_ascii_case(own_host.as_bytes()) => Ok(()),
        (None, _) => Err("it named no host"),
        _ => Err("it named another host"),
    }
}

/// The proxy's own answer, in the error shape both vendors' clients read (`error.message`).
fn refusal(status: StatusCode, kind: &str, message: &str) -> Answer {
    let body = serde_json::json!({
        "type": "error",
        "error": {"type": kind, "message": message},
    });
    let mut response = Response::new(Either::Right(Full::new(Bytes::from(body.to_string()))));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// `e` and its causes, joined: a connection's failure, never a request's content.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, target: &str, hosts: &[&str]) -> Request<()> {
        let mut r = Request::builder().method(method).uri(target);
        for h in hosts {
            r = r.header(HOST, *h);
        }
        r.body(()).unwrap()
    }

    #[test]
    fn only_requests_for_the_proxy_itself_pass() {
        let own = "127.0.0.1:4000";
        let ok = |m, t, h: &[&str]| addressed_to_proxy(&request(m, t, h), own);
        assert_eq!(ok("POST", "/v1/messages?beta=true", &[own]), Ok(()));
        assert!(ok("POST", "/v1/messages", &["api.anthropic.com"]).is_err());
        assert!(ok("POST", "/v1/messages", &["localhost:4000"]).is_err());
        assert!(ok("POST", "/v1/messages", &[own, "evil.example"]).is_err());
        assert!(ok("POST", "/v1/messages", &[]).is_err());
        assert!(ok("POST", "http://evil.example/v1/messages", &[own]).is_err());
        assert!(ok("POST", "http://127.0.0.1:4000/v1/messages", &[own]).is_err());
        assert!(ok("CONNECT", "evil.example:443", &[own]).is_err());
        assert!(ok("OPTIONS", "*", &[own]).is_err());
    }
}
