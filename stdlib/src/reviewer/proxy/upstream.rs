//! Where the proxy forwards: one model API per proxy, fixed before the reviewer starts.
//!
//! The upstream is the vendor's API (`https://api.anthropic.com`, `https://api.openai.com/v1`)
//! or the one the stage declares. A declared one is HTTPS, or plain HTTP to a loopback address
//! written as an IP (a fake API in a test, a gateway on the runner): the key never crosses a
//! network in clear text, and a name is never resolved to decide that it is local.

use std::fmt;
use std::net::IpAddr;

use http::uri::{Authority, PathAndQuery, Scheme};
use http::{Request, Response, Uri};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// The body the proxy sends upstream: the reviewer's request body, streamed as it comes, or
/// kept whole to be sent again with the next account.
pub(super) type OutBody = http_body_util::Either<Incoming, http_body_util::Full<bytes::Bytes>>;

/// A model API's origin and the path its clients put before their endpoints.
#[derive(Clone, PartialEq, Eq)]
pub struct Upstream {
    tls: bool,
    authority: Authority,
    /// Empty, or `/v1`: no trailing `/`.
    base_path: String,
}

/// A declared upstream that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UpstreamError {
    #[error("{0:?} is not an absolute http or https URL")]
    NotAUrl(String),
    #[error("{0:?} carries a user name, a query or a fragment")]
    Extra(String),
    #[error(
        "{0:?} is plain HTTP to a host that is not a loopback address (HTTPS, or http://127.0.0.1:PORT)"
    )]
    PlainRemote(String),
}

impl Upstream {
    /// Parses a base URL (`https://api.anthropic.com`, `http://127.0.0.1:8080/v1`).
    pub fn parse(url: &str) -> Result<Self, UpstreamError> {
        let not_url = || UpstreamError::NotAUrl(url.to_owned());
        if url.contains(['?', '#', '@']) {
            return Err(UpstreamError::Extra(url.to_owned()));
        }
        let uri: Uri = url.parse().map_err(|_| not_url())?;
        let tls = match uri.scheme() {
            Some(s) if *s == Scheme::HTTPS => true,
            Some(s) if *s == Scheme::HTTP => false,
            _ => return Err(not_url()),
        };
        let authority = uri.authority().ok_or_else(not_url)?.clone();
        if authority.host().is_empty() {
            return Err(not_url());
        }
        if !tls && !is_loopback_ip(authority.host()) {
            return Err(UpstreamError::PlainRemote(url.to_owned()));
        }
        let base_path = uri.path().trim_end_matches('/').to_owned();
        Ok(Self {
            tls,
            authority,
            base_path,
        })
    }

    /// `https://host[:port]`.
    pub fn origin(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.authority)
    }

    /// The path the API's clients put before their endpoints (`/v1` for OpenAI's).
    pub fn base_path(&self) -> &str {
        &self.base_path
    }

    /// The URI of `path_and_query` (origin-form, from the reviewer's request) at this origin.
    pub(super) fn uri_of(&self, path_and_query: &PathAndQuery) -> Result<Uri, http::Error> {
        Uri::builder()
            .scheme(if self.tls {
                Scheme::HTTPS
            } else {
                Scheme::HTTP
            })
            .authority(self.authority.clone())
            .path_and_query(path_and_query.clone())
            .build()
    }

    /// The `Host` header of a forwarded request.
    pub(super) fn authority(&self) -> &Authority {
        &self.authority
    }
}

impl fmt::Display for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.origin(), self.base_path)
    }
}

impl fmt::Debug for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Upstream({self})")
    }
}

/// `127.0.0.0/8` or `::1`, written as an address (`[::1]` in a URL).
fn is_loopback_ip(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The client that reaches the upstream: TLS only for an HTTPS upstream (never downgraded),
/// plain only for a loopback one.
pub(super) enum Forwarder {
    Tls(Client<hyper_rustls::HttpsConnector<HttpConnector>, OutBody>),
    Plain(Client<HttpConnector, OutBody>),
}

impl Forwarder {
    /// The client for `upstream`. An HTTPS one trusts the system's root certificates.
    pub(super) fn new(upstream: &Upstream) -> std::io::Result<Self> {
        let builder = Client::builder(TokioExecutor::new());
        if upstream.tls {
            let connector = hyper_rustls::HttpsConnectorBuilder::new()
                .with_provider_and_native_roots(rustls::crypto::ring::default_provider())?
                .https_only()
                .enable_http1()
                .build();
            Ok(Self::Tls(builder.build(connector)))
        } else {
            Ok(Self::Plain(builder.build(HttpConnector::new())))
        }
    }

    pub(super) async fn send(
        &self,
        request: Request<OutBody>,
    ) -> Result<Response<Incoming>, hyper_util::client::legacy::Error> {
        match self {
            Self::Tls(c) => c.request(request).await,
            Self::Plain(c) => c.request(request).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_anywhere_and_plain_http_to_loopback_only() {
        let ok = |u: &str| Upstream::parse(u).map(|u| u.to_string());
        assert_eq!(
            ok("https://api.anthropic.com"),
            Ok("https://api.anthropic.com".into())
        );
        assert_eq!(
            ok("https://api.openai.com/v1/"),
            Ok("https://api.openai.com/v1".into())
        );
        assert_eq!(
            ok("http://127.0.0.1:8080/v1"),
            Ok("http://127.0.0.1:8080/v1".into())
        );
        assert_eq!(ok("http://[::1]:9"), Ok("http://[::1]:9".into()));
        for plain in [
            "http://api.anthropic.com",
            "http://localhost:8080",
            "http://10.0.0.1",
        ] {
            assert!(
                matches!(Upstream::parse(plain), Err(UpstreamError::PlainRemote(_))),
                "{plain}"
            );
        }
        for extra in [
            "https://u:p@api.anthropic.com",
            "https://api.openai.com/v1?x=1",
            "https://h/#f",
        ] {
            assert!(
                matches!(Upstream::parse(extra), Err(UpstreamError::Extra(_))),
                "{extra}"
            );
        }
        for bad in ["api.anthropic.com", "ftp://h", "/v1", ""] {
            assert!(
                matches!(Upstream::parse(bad), Err(UpstreamError::NotAUrl(_))),
                "{bad}"
            );
        }
    }
}
