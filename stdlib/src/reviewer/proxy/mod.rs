//! The model API proxy: a reviewer never holds its key.
//!
//! For each try reviewflow starts a forwarding proxy on a loopback socket of the stage
//! ([`listen_loopback`]) and gives the reviewer a [`StandIn`] (a per-try nonce) where its key
//! would be, and the proxy's URL as its API's base URL. The proxy ([`serve`]) forwards only
//! requests addressed to itself, only to the one [`Upstream`] fixed before the reviewer
//! started, and only with a stand-in in the authentication header, which it swaps for the key
//! ([`swap`]); the answer streams back unbuffered. It keeps nothing but counts and reasons
//! ([`Tally`]), and ends with the try: the stand-in then opens nothing.
//!
//! The key it writes is the current account's of an [`AccountPool`] that outlives the try
//! ([`accounts`]): a request the API refuses for that account's limit (HTTP 429) is sent
//! again, before anything was passed back, with the next account.
//!
//! A reviewer's comment is published; a reviewer holding its key could write it there reversed
//! or encoded, past any redactor. Holding a stand-in, it has nothing worth writing.
//!
//! [`listen_loopback`]: reviewflow_engine::exec::confine::listen_loopback

mod accounts;
mod api;
mod meter;
mod serve;
mod swap;
mod upstream;

use std::fmt;
use std::sync::Arc;

use reviewflow_engine::exec::confine;

pub use accounts::{
    Account, AccountPool, account_fact, any_exhausted, limited_accounts, say_names,
};
pub use api::{MODEL_APIS, ModelApi, model_keys};
pub use meter::Meter;
pub use serve::Tally;
pub use swap::StandIn;
pub use upstream::{Upstream, UpstreamError};

use serve::State;
use swap::Credential;

/// Why a proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("cannot listen on loopback for the model API proxy: {0}")]
    Listen(std::io::Error),
    #[error("cannot reach {upstream} over TLS (the system's root certificates): {source}")]
    Tls {
        upstream: Upstream,
        source: std::io::Error,
    },
    #[error("no stand-in for the key: {0}")]
    Random(#[from] crate::reviewer::prompt::RandomError),
}

/// A running proxy. Dropping it stops it and ends its connections.
pub struct ModelProxy {
    port: u16,
    upstream: Upstream,
    stand_ins: Vec<(String, StandIn)>,
    tally: Arc<Tally>,
    meter: Arc<Meter>,
    task: tokio::task::JoinHandle<()>,
}

impl ModelProxy {
    /// Starts a proxy to `upstream` for the accounts `keys` (each pool with the variable it is
    /// given in), on a loopback socket the calling stage's children can reach. Must run inside
    /// the stage's task and a Tokio runtime.
    pub fn start(
        upstream: Upstream,
        keys: &[(String, Arc<AccountPool>)],
    ) -> Result<Self, ProxyError> {
        Self::start_metered(upstream, keys, Arc::new(Meter::default()))
    }

    /// [`Self::start`], counting what the answers report on `meter`, which other proxies of
    /// the try may share: a try's budget is one whichever API it calls.
    pub fn start_metered(
        upstream: Upstream,
        keys: &[(String, Arc<AccountPool>)],
        meter: Arc<Meter>,
    ) -> Result<Self, ProxyError> {
        let forwarder = upstream::Forwarder::new(&upstream).map_err(|source| ProxyError::Tls {
            upstream: upstream.clone(),
            source,
        })?;
        let mut credentials = Vec::with_capacity(keys.len());
        let mut stand_ins = Vec::with_capacity(keys.len());
        for (var, accounts) in keys {
            let stand_in = StandIn::generate()?;
            stand_ins.push((var.clone(), stand_in.clone()));
            credentials.push(Credential {
                stand_in,
                accounts: Arc::clone(accounts),
            });
        }
        let listener = confine::listen_loopback().map_err(ProxyError::Listen)?;
        let port = listener.local_addr().map_err(ProxyError::Listen)?.port();
        let listener = tokio::net::TcpListener::from_std(listener).map_err(ProxyError::Listen)?;
        let tally = Arc::new(Tally::default());
        let state = Arc::new(State {
            upstream: upstream.clone(),
            forwarder,
            credentials,
            own_host: format!("127.0.0.1:{port}"),
            tally: Arc::clone(&tally),
            meter: Arc::clone(&meter),
        });
        let task = tokio::spawn(serve::serve(listener, state));
        Ok(Self {
            port,
            upstream,
            stand_ins,
            tally,
            meter,
            task,
        })
    }

    /// The loopback port the reviewer connects to: its only network.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The base URL the reviewer is given: the proxy, with the upstream's base path.
    pub fn base_url(&self) -> String {
        format!(
            "http://127.0.0.1:{}{}",
            self.port,
            self.upstream.base_path()
        )
    }

    /// Where it forwards.
    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }

    /// Each key's variable and the stand-in the reviewer gets in it.
    pub fn stand_ins(&self) -> &[(String, StandIn)] {
        &self.stand_ins
    }

    /// What it did so far.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// What the answers it passed back reported they cost, and the try's token budget.
    pub fn meter(&self) -> &Arc<Meter> {
        &self.meter
    }

    /// One line for the log: what went through, what was refused and why.
    pub fn summary(&self) -> Summary<'_> {
        Summary(self)
    }
}

impl Drop for ModelProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl fmt::Debug for ModelProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelProxy")
            .field("port", &self.port)
            .field("upstream", &self.upstream)
            .finish_non_exhaustive()
    }
}

/// [`ModelProxy::summary`].
pub struct Summary<'a>(&'a ModelProxy);

impl fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (proxy, tally) = (self.0, &self.0.tally);
        let plural = |n: u64| if n == 1 { "" } else { "s" };
        let n = tally.forwarded();
        write!(
            f,
            "the model API proxy forwarded {n} request{} to {}",
            plural(n),
            proxy.upstream
        )?;
        let refused = tally.refused();
        if refused > 0 {
            write!(f, "; refused {refused}")?;
            if let Some(reason) = tally.last_refusal() {
                write!(f, " (the last: {reason})")?;
            }
        }
        let limited = tally.limited();
        if limited > 0 {
            write!(
                f,
                "; the API answered {limited} with an account's rate or usage limit (HTTP 429)"
            )?;
        }
        let failed = tally.failed();
        if failed > 0 {
            write!(f, "; {failed} could not reach it")?;
            if let Some(reason) = tally.last_failure() {
                write!(f, " ({reason})")?;
            }
        }
        Ok(())
    }
}
