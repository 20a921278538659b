//! The HTTP connection: hyper's pooled client, TLS (rustls, the system's roots) for an https API
//! and plain only for a loopback one (the config refused any other). hyper follows no redirect:
//! a 3xx reaches the client as it is.

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

pub(crate) type OutBody = Full<Bytes>;

pub(crate) enum Transport {
    Tls(Client<hyper_rustls::HttpsConnector<HttpConnector>, OutBody>),
    Plain(Client<HttpConnector, OutBody>),
}

impl Transport {
    /// `tls`: the API is https (never downgraded: the connector takes https only).
    pub(crate) fn new(tls: bool) -> std::io::Result<Self> {
        let builder = Client::builder(TokioExecutor::new());
        if tls {
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

    pub(crate) async fn send(
        &self,
        request: Request<OutBody>,
    ) -> Result<Response<Incoming>, hyper_util::client::legacy::Error> {
        match self {
            Self::Tls(c) => c.request(request).await,
            Self::Plain(c) => c.request(request).await,
        }
    }
}
